"""Per-call options every fimone LLM accepts: the same set, checked the same way."""

from __future__ import annotations

from typing import Any

ALLOWED_OPTS = frozenset({"timeout", "max_tokens", "temperature", "response_format"})


def check_opts(opts: dict[str, Any]) -> None:
    """Refuse unknown options: a typo must fail in tests, not be dropped on the floor."""
    unknown = set(opts) - ALLOWED_OPTS
    if unknown:
        raise TypeError(f"unknown LLM option(s) {sorted(unknown)}; allowed: {sorted(ALLOWED_OPTS)}")
