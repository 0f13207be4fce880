"""Resolve a role's token budget: ModelConfig row > environment > defaults.

The arithmetic (reserve, floor) lives in ``contextmgmt.core.budget``; this module only
decides where the two inputs come from, and carries the model's calibrated class weights
(``contextmgmt.calibration``), which a run estimates with, so that a model whose tokenizer
counts more than fimone's estimate does not overflow. Sync: it may hit the database; call it through
``sync_to_async`` from async code.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Literal

from django.conf import settings

from contextmgmt.calibration import weights_of
from contextmgmt.core.budget import (
    DEFAULT_CONTEXT_SIZE,
    DEFAULT_MAX_OUTPUT_TOKENS,
    MIN_INPUT_BUDGET,
    SYSTEM_PROMPT_RESERVE,
    effective_input_tokens,
    usable_input_tokens,
)
from contextmgmt.env_window import env_window, output_for
from contextmgmt.models import ModelConfig

logger = logging.getLogger(__name__)

BudgetRole = Literal["main", "fast"]
BudgetSource = Literal["db", "env", "endpoint", "default"]


@dataclass(frozen=True, slots=True)
class Budget:
    role: BudgetRole
    context_size: int
    max_output_tokens: int
    usable_input_tokens: int
    source: BudgetSource
    # Provider-reported / estimated input tokens for this model (1.0 = uncalibrated).
    token_ratio: float = 1.0
    token_ratio_samples: int = 0
    model_config_id: int | None = None
    # Class weights fitted to this model's usage reports; None: the base weights.
    token_weights: tuple[float, ...] | None = None

    @property
    def effective_input_tokens(self) -> int:
        """The budget in fimone-estimated tokens: shrunk when the provider counts more."""
        if self.token_weights is not None:
            return self.usable_input_tokens  # the estimate itself is calibrated
        return effective_input_tokens(self.usable_input_tokens, self.token_ratio)


def _checked_usable(role: str, context_size: int, max_output_tokens: int, source: str) -> int:
    usable = usable_input_tokens(context_size, max_output_tokens)
    raw = context_size - max_output_tokens - SYSTEM_PROMPT_RESERVE
    if raw < MIN_INPUT_BUDGET:
        # Clamp to the floor, but say so — a misconfiguration must never be a silent failure.
        logger.warning(
            "%s budget from %s: context %s - output %s - reserve %s = %s tokens; "
            "clamped to the %s-token floor",
            role,
            source,
            context_size,
            max_output_tokens,
            SYSTEM_PROMPT_RESERVE,
            raw,
            MIN_INPUT_BUDGET,
        )
    return usable


_BUDGET_FIELDS = (
    "id",
    "context_size",
    "max_output_tokens",
    "token_ratio",
    "token_ratio_samples",
    "token_weights",
)


def _from_db(role: BudgetRole) -> Budget | None:
    row = ModelConfig.objects.filter(role=role, is_active=True).only(*_BUDGET_FIELDS).first()
    return None if row is None else _row_budget(row, role)


def budget_for_config(config_id: int) -> Budget:
    """The budget of one main-role ModelConfig row, active or not (a conversation's pick);
    the main role's budget when the row is gone."""
    row = ModelConfig.objects.filter(pk=config_id, role="main").only(*_BUDGET_FIELDS).first()
    return resolve_budget("main") if row is None else _row_budget(row, "main")


def builtin_budget(role: BudgetRole = "main") -> Budget:
    """The budget of the built-in offline model when a conversation picked it beside the
    configured models: fimone's defaults (the configured figures belong to those models)."""
    return Budget(
        role=role,
        context_size=DEFAULT_CONTEXT_SIZE,
        max_output_tokens=DEFAULT_MAX_OUTPUT_TOKENS,
        usable_input_tokens=usable_input_tokens(DEFAULT_CONTEXT_SIZE, DEFAULT_MAX_OUTPUT_TOKENS),
        source="default",
    )


def _row_budget(row: ModelConfig, role: BudgetRole) -> Budget:
    return Budget(
        role=role,
        context_size=row.context_size,
        max_output_tokens=row.max_output_tokens,
        usable_input_tokens=_checked_usable(
            role, row.context_size, row.max_output_tokens, f"ModelConfig {row.pk}"
        ),
        source="db",
        token_ratio=row.token_ratio,
        token_ratio_samples=row.token_ratio_samples,
        model_config_id=row.pk,
        token_weights=weights_of(row.token_weights),
    )


def _env_values(role: BudgetRole) -> tuple[int | None, int | None]:
    main = (
        getattr(settings, "LLM_CONTEXT_SIZE", None),
        getattr(settings, "LLM_MAX_OUTPUT_TOKENS", None),
    )
    if role == "main":
        return main
    fast = (
        getattr(settings, "FAST_LLM_CONTEXT_SIZE", None),
        getattr(settings, "FAST_LLM_MAX_OUTPUT_TOKENS", None),
    )
    # Each FAST_ value falls back to its main twin on its own.
    return (
        fast[0] if fast[0] is not None else main[0],
        fast[1] if fast[1] is not None else main[1],
    )


def _has_fast_env() -> bool:
    """A fast model or fast budget configured through the environment."""
    if getattr(settings, "FAST_LLM_MODEL", ""):
        return True
    return any(
        getattr(settings, name, None) is not None
        for name in ("FAST_LLM_CONTEXT_SIZE", "FAST_LLM_MAX_OUTPUT_TOKENS")
    )


def resolve_budget(role: BudgetRole = "main") -> Budget:
    """The budget for ``role``.

    Order: the active ModelConfig row of that role; else ``LLM_CONTEXT_SIZE`` /
    ``LLM_MAX_OUTPUT_TOKENS`` (for ``fast``: the ``FAST_`` twins, each falling back to the
    main value); else 128K / 64K. A fast role with nothing fast-specific at all (no active
    fast row, no ``FAST_`` budget variable) runs on the main model, so it gets the main
    budget — including a main ModelConfig row — labelled with role ``fast``. (A fast model
    named by ``FAST_LLM_MODEL`` alone is a different model: it gets env/default values.)
    """
    if role not in ("main", "fast"):
        raise ValueError(f"unknown budget role {role!r}; expected 'main' or 'fast'")
    db = _from_db(role)
    if db is not None:
        return db
    if role == "fast" and not _has_fast_env():
        main_db = _from_db("main")
        if main_db is not None:
            return replace(main_db, role="fast")
    context_size, max_output = _env_values(role)
    if context_size is None and max_output is None:
        source: BudgetSource = "default"
    else:
        source = "env"
    found = env_window(role) if context_size is None else None
    if found is not None and found.context_size:
        # Read from the endpoint at start-up (contextmgmt.env_window).
        max_output = output_for(found, max_output, DEFAULT_MAX_OUTPUT_TOKENS)
        context_size, source = found.context_size, "endpoint"
    context_size = DEFAULT_CONTEXT_SIZE if context_size is None else context_size
    max_output = DEFAULT_MAX_OUTPUT_TOKENS if max_output is None else max_output
    return Budget(
        role=role,
        context_size=context_size,
        max_output_tokens=max_output,
        usable_input_tokens=_checked_usable(role, context_size, max_output, source),
        source=source,
    )
