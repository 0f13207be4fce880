"""The context window of an environment-configured endpoint, read once at start-up.

When ``LLM_CONTEXT_SIZE`` (or, for a fast model of its own, ``FAST_LLM_CONTEXT_SIZE``) is not
set and ``LLM_BASE_URL`` names an endpoint, each server process asks that endpoint for its
window once, in a thread started with the process (``config/asgi.py``), by the same reading
as the admin's "Read context size" (``contextmgmt.discovery``). The budget of the
environment's model then uses it (``Budget.source`` ``"endpoint"``) instead of the 128K
default; a figure set in the environment always wins, and a Model config row wins over
both. ``LLM_DISCOVER_CONTEXT=false`` turns it off. What was found, or why nothing was, is
logged (an Ollama ``num_ctx`` smaller than the model's window as a warning).
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

from contextmgmt.core.budget import MIN_INPUT_BUDGET, SYSTEM_PROMPT_RESERVE
from contextmgmt.discovery import Discovery, discover

log = logging.getLogger(__name__)

_found: dict[str, Discovery] = {}
_lock = threading.Lock()
# How many times what was found changed: what a process derived from a window it read
# earlier (the budgets runs reuse, chat/runs/preparation.py) is derived again.
_changes = [0]


def _fast_endpoint_configured() -> bool:
    return bool(settings.FAST_LLM_MODEL or settings.FAST_LLM_BASE_URL)


def _endpoint(role: str) -> tuple[str, str, str]:
    """(base URL, model, key) of the environment's model for ``role``."""
    base_url, model, key = settings.LLM_BASE_URL, settings.LLM_MODEL, settings.LLM_API_KEY
    if role == "fast":
        base_url = settings.FAST_LLM_BASE_URL or base_url
        model = settings.FAST_LLM_MODEL or model
        key = settings.FAST_LLM_API_KEY or key
    return base_url, model or "default", key


def read_env_windows() -> None:
    """Ask the environment's endpoints for their windows (blocking; call it in a thread)."""
    if not getattr(settings, "LLM_DISCOVER_CONTEXT", True):
        return
    roles = ["main"]
    if _fast_endpoint_configured() and settings.FAST_LLM_CONTEXT_SIZE is None:
        roles.append("fast")
    for role in roles:
        if role == "main" and settings.LLM_CONTEXT_SIZE is not None:
            continue
        base_url, model, key = _endpoint(role)
        if not base_url:
            continue
        try:
            found = discover(base_url, model, key)
        except Exception:  # the default budget serves; a start-up must not fail for this
            log.exception("could not read the context size of %s", base_url)
            continue
        if found.context_size is None:
            log.info("%s model %s: %s; the default budget applies", role, model, found.source)
            continue
        with _lock:
            _found[role] = found
            _changes[0] += 1
        log.info(
            "%s model %s: context size %s from the endpoint (%s)",
            role,
            model,
            found.context_size,
            found.source,
        )
        if found.note.startswith("Warning"):
            log.warning("%s model %s: %s", role, model, found.note)


def env_window(role: str) -> Discovery | None:
    """What the endpoint of ``role``'s environment model said of its window, if read."""
    with _lock:
        found = _found.get(role)
        if found is None and role == "fast" and not _fast_endpoint_configured():
            found = _found.get("main")
    return found


def output_for(found: Discovery, configured: int | None, default: int) -> int:
    """The output limit beside a discovered window: the configured one, else the reported
    one, else the default; a quarter of the window when that would leave too little input."""
    output = configured or found.max_output_tokens or default
    size = found.context_size or 0
    if size - output - SYSTEM_PROMPT_RESERVE >= MIN_INPUT_BUDGET:
        return output
    return max(1, size // 4)


def changes() -> int:
    """A count that grows whenever what was found changes (``env_window`` answers anew)."""
    with _lock:
        return _changes[0]


def forget() -> None:
    """Tests: start again from nothing read."""
    with _lock:
        _found.clear()
        _changes[0] += 1
