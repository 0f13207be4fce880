"""JSON from clients (HTTP bodies and websocket frames), with a nesting limit.

``json.loads`` recurses once per nesting level: a 2 KB document of ``[[[[…`` raises
``RecursionError``, which nothing downstream expects (a 500 page, a socket closed with 1011).
Every client document is parsed here instead. Nesting deeper than ``MAX_DEPTH`` is refused
with the same ``invalid_json`` code as a syntax error; no fimone document nests past 3.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from chat.errors import InvalidInput

MAX_DEPTH = 32


def parse_json(data: str | bytes, *, what: str = "The request body") -> Any:
    """``data`` parsed, or ``InvalidInput("invalid_json")`` saying what was wrong."""
    try:
        value = json.loads(data)
    except RecursionError as exc:
        raise _too_deep(what) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput("invalid_json", f"{what} is not valid JSON.") from exc
    if _depth_exceeds(value, MAX_DEPTH):
        raise _too_deep(what)
    return value


def _too_deep(what: str) -> InvalidInput:
    return InvalidInput("invalid_json", f"{what} nests deeper than {MAX_DEPTH} levels.")


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether containers nest more than ``limit`` deep (iterative: no recursion to blow)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
