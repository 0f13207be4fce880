"""Preparing a run: what its engine needs from the registry and the database (models,
budgets, the query as the agent sees it, the history), read in one thread hop into a frozen
``PreparedRun``; it raises when that cannot be had, and the run reports that as its own
failure. A new message's run is opened and prepared in one hop (``open_and_prepare``).
Also the follow-ups as the engine takes them, and whether a run's history carries pixels.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import weakref
from dataclasses import dataclass
from typing import Any

from django.utils import translation

from chat import selectors
from chat.documents.context import has_documents
from chat.history import load_history, query_message
from chat.models import Message
from chat.projects.context import ProjectFiles, project_files_for, with_project_files
from chat.runs import storage
from chat.runs.deps import RunDeps
from chat.runs.storage import OpenedRun
from chat.tool_servers import pool as tool_servers
from contextmgmt import env_window, generations
from contextmgmt.budget import Budget
from contextmgmt.core.llm import LLM
from contextmgmt.core.messages import ChatMessage
from contextmgmt.db_memory import LoadedHistory
from fimone.agent.tools.finder import tools_called
from fimone.llm import OfflineLLM

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PreparedRun:
    """Everything the engine needs that comes from the registry and the database."""

    main: LLM
    fast: LLM
    main_tokens: int  # input budgets in estimated tokens (calibrated)
    fast_tokens: int
    main_config_id: int | None  # the ModelConfig rows, for the calibration samples
    fast_config_id: int | None
    main_weights: tuple[float, ...] | None  # the main model's calibrated token weights
    fast_weights: tuple[float, ...] | None  # the fast (summarising) model's
    vision: bool  # the main model is sent the query's images as pixels
    history_vision: bool  # and the history's newest ones (``history_has_pixels``)
    query: ChatMessage  # pinned, images inline
    history: LoadedHistory  # read in the same thread hop; the memory fits it to the budget
    follow_ups: tuple[ChatMessage, ...] = ()
    has_documents: bool = False  # a document was sent: the run offers read_document
    # The project's files as this run shows them, read once (its outline or whole text).
    project_files: ProjectFiles = ProjectFiles()
    disabled_tool_sources: frozenset[str] = frozenset()  # switched off in the conversation
    # Tools the history's earlier runs called, most recent first (the tool tier).
    used_tools: tuple[str, ...] = ()
    # The standing instructions every model call carries (``OpenedRun.instructions``).
    instructions: str = ""


@dataclass(frozen=True)
class ModelsAndBudgets:
    """The models and budgets of the two roles, as configured (no conversation's pick)."""

    main: LLM
    fast: LLM
    main_budget: Budget
    fast_budget: Budget


class _HeldWeakly:
    """One ``RunDeps`` as part of a cache key: equal only to itself, and held weakly, so
    that replaced collaborators (a test's, with what they recorded of its runs) are freed
    at once, not kept until the next lookup replaces them. A freed one equals nothing (a
    new object at its address gets a lookup of its own)."""

    __slots__ = ("_hash", "ref")

    def __init__(self, deps: RunDeps) -> None:
        self.ref = weakref.ref(deps)
        self._hash = id(deps)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _HeldWeakly):
            return NotImplemented
        deps = self.ref()
        return deps is not None and deps is other.ref()


# Which models and budgets to use changes only when a ModelConfig row changes; four
# lookups per run were a third of a run's database time. So they are looked up once per
# generation of the rows (contextmgmt.generations: replaced on every save or delete of a
# row, chat/signals.py, and by the bulk writes of the admin's actions and of calibration),
# per reading of the environment endpoints' windows and per collaborators (a test's get a
# lookup of their own): an admin's switch of the active model or an edited budget reaches
# the next run, in every process.
@functools.lru_cache(maxsize=1)
def _looked_up(generation: str, windows: int, held: _HeldWeakly) -> ModelsAndBudgets:
    deps = held.ref()
    if deps is None:  # the caller holds it while it looks up
        raise RuntimeError("the collaborators were freed during their own lookup")
    return ModelsAndBudgets(
        main=deps.get_llm("main"),
        fast=deps.get_llm("fast"),
        main_budget=deps.resolve_budget("main"),
        fast_budget=deps.resolve_budget("fast"),
    )


def models_and_budgets(deps: RunDeps) -> ModelsAndBudgets:
    """The configured models and budgets, looked up again only when something they come
    from changed (no query at all otherwise)."""
    generation = generations.current(generations.MODEL_CONFIGS)
    return _looked_up(generation, env_window.changes(), _HeldWeakly(deps))


def forget_models() -> None:
    """This process looks the models up again on its next run (a setting changed)."""
    _looked_up.cache_clear()


def _input_tokens(budget: Budget) -> int:
    return int(budget.effective_input_tokens)


def prepare(opened: OpenedRun, deps: RunDeps) -> PreparedRun:
    """Models, budgets, the query as the agent sees it and the history (sync)."""
    configured = models_and_budgets(deps)
    main, fast = configured.main, configured.fast
    main_budget, fast_budget = configured.main_budget, configured.fast_budget
    picked = opened.model_config_id
    if opened.builtin_model:
        # The user picked the built-in model: it answers and summarises, whatever is set up.
        main = fast = deps.get_builtin_llm()
        main_budget = deps.resolve_builtin_budget("main")
        fast_budget = deps.resolve_builtin_budget("fast")
    elif picked is not None:
        # The conversation's own choice of main model (the model picker).
        main, main_budget = deps.get_model_llm(picked), deps.resolve_model_budget(picked)
    main, fast = _speaking_user_language(main), _speaking_user_language(fast)
    vision = supports_vision(main)
    history_vision = history_has_pixels(opened.mode, vision)
    query = query_message(opened.query, vision=vision)
    follow_ups: tuple[ChatMessage, ...] = ()
    if opened.follow_up_ids:
        rows = Message.objects.filter(pk__in=opened.follow_up_ids).order_by("created_at", "id")
        follow_ups = tuple(query_message(m, vision=vision) for m in rows)
    history = load_history(opened.query.conversation_id, vision=history_vision)
    files = project_files_for(
        project_id=opened.project_id, owner_id=opened.owner_id, budget=_input_tokens(main_budget)
    )
    return PreparedRun(
        main=main,
        fast=fast,
        main_tokens=_input_tokens(main_budget),
        fast_tokens=_input_tokens(fast_budget),
        main_config_id=main_budget.model_config_id,
        fast_config_id=fast_budget.model_config_id,
        main_weights=main_budget.token_weights,
        fast_weights=fast_budget.token_weights,
        vision=vision,
        history_vision=history_vision,
        query=dataclasses.replace(query, injected=False),  # the run's current query
        history=history,
        follow_ups=follow_ups,
        has_documents=files.any or has_documents(opened.query.conversation_id),
        project_files=files,
        disabled_tool_sources=opened.disabled_tool_sources,
        # The tools the history's records call: no query of its own.
        used_tools=tools_called(history.messages),
        # The project's files go after the instructions, in the same pinned part.
        instructions=with_project_files(opened.instructions, files),
    )


def prepare_work(opened: OpenedRun, deps: RunDeps) -> PreparedRun:
    """``prepare``, and the tool servers read in the same thread hop: no second hop before
    the engine starts (``tool_servers.current_servers``)."""
    prepared = prepare(opened, deps)
    tool_servers.warm()
    return prepared


@dataclass(frozen=True)
class ReadyRun:
    """A new message's run, opened and prepared in one thread hop."""

    opened: OpenedRun
    # None when preparing failed: the work prepares again and reports that as its failure.
    prepared: PreparedRun | None


def open_and_prepare(*, deps: RunDeps, **open_args: Any) -> ReadyRun:
    """``open_run`` and, once it committed, ``prepare_work``: a run for a new message costs
    one database thread hop before its engine starts instead of two (under load each hop
    is a hand-over between the loop and the database thread; docs/operations.md,
    "Throughput")."""
    opened = storage.open_run(**open_args)
    try:
        prepared = prepare_work(opened, deps)
    except Exception:
        logger.debug("run %s: its work prepares it again", opened.run_id, exc_info=True)
        prepared = None
    return ReadyRun(opened=opened, prepared=prepared)


def reload_history(opened: OpenedRun, prepared: PreparedRun) -> LoadedHistory:
    """The history read again as ``prepare`` read it (after images got descriptions)."""
    return load_history(opened.query.conversation_id, vision=prepared.history_vision)


def _speaking_user_language(llm: LLM) -> LLM:
    """The offline model writes its own sentences in the user's interface language (the
    run's active language: the socket's) when a request does not show its own."""
    if isinstance(llm, OfflineLLM):
        return llm.speaking(translation.get_language() or "en")
    return llm


def supports_vision(llm: LLM) -> bool:
    return bool(getattr(llm, "supports_vision", True))


def history_has_pixels(mode: str, vision: bool) -> bool:
    """Whether a run's history keeps its newest turns' images as pixels: only where the
    engine sends the history as messages (ReAct) to a model that sees. The DAG planner
    reads the history as text, so there every image is its description from the load on,
    and is fitted and counted as that text."""
    return vision and mode != "dag"


def history_sees_images(
    *, mode: str, model_config_id: int | None, deps: RunDeps, builtin_model: bool = False
) -> bool:
    """Whether the next run of a conversation (its mode, its pick of main model, if any)
    sends its history's newest images as pixels: ``prepare``'s decision, for the context
    gauge to count what will be sent."""
    if builtin_model:
        main = deps.get_builtin_llm()
    elif model_config_id is None:
        main = deps.get_llm("main")
    else:
        main = deps.get_model_llm(model_config_id)
    return history_has_pixels(mode, supports_vision(main))


def load_injection(message_id: int, *, vision: bool) -> ChatMessage:
    return query_message(Message.objects.get(pk=message_id), vision=vision)


def stored_follow_ups(
    *, conversation_id: Any, run_id: str, taken_ids: frozenset[int], vision: bool
) -> list[ChatMessage]:
    """The follow-ups stored for the run (by any process) but ``taken_ids``, oldest first."""
    rows = selectors.run_follow_ups(conversation_id=conversation_id, run_id=run_id)
    return [query_message(row, vision=vision) for row in rows if row.pk not in taken_ids]
