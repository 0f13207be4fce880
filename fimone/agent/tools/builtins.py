"""The built-in tools (their names are a contract — the offline model calls them):
``calculator``, ``current_time`` and ``recall``.

``recall`` is backed by an injected ``async recall_search(query, limit) -> list[str |
RecalledImage]``; the chat layer gives one that searches the whole persisted conversation,
including what compaction summarised away and images that are no longer sent: a
``RecalledImage`` is named in the tool's text and its pixels go to the model with the next
call (``ToolOutput.images``; the loop adds them as a user message after the tool results,
since a tool message can only carry text).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..calculator import CalculatorError, evaluate, format_number
from .registry import (
    KeptResult,
    RecalledImage,
    RecallSearch,
    Tool,
    ToolOutput,
    ToolRegistry,
    ToolResults,
)

RECALL_LIMIT = 5
# ``async fetch_result(id) -> KeptResult | None``: an earlier run's stored tool result.
FetchResult = Callable[[str], Awaitable[KeptResult | None]]


def calculator_tool() -> Tool:
    async def calculator(expression: str) -> str:
        try:
            return format_number(evaluate(expression))
        except CalculatorError as exc:
            return f"Error: {exc}"

    return Tool(
        name="calculator",
        description=(
            "Evaluate an arithmetic expression exactly. Supports numbers, + - * / // % **, "
            "parentheses, unary minus, pi, e and sqrt, log, log10, log2, exp, sin, cos, tan, "
            "floor, ceil, abs, round, min, max. Use it for every calculation."
        ),
        parameters={
            "type": "object",
            "properties": {
                "expression": {"type": "string", "description": "e.g. (1234 * 5.5) / 3"}
            },
            "required": ["expression"],
        },
        func=calculator,
        timeout=5.0,
    )


def current_time_tool(clock: Callable[[], datetime] | None = None) -> Tool:
    """``clock`` returns an aware UTC datetime (injectable for tests)."""
    now_utc = clock or (lambda: datetime.now(UTC))

    async def current_time(timezone: str = "UTC") -> str:
        try:
            zone = ZoneInfo(timezone.strip() or "UTC")
        except (ZoneInfoNotFoundError, ValueError):
            return (
                f"Error: unknown time zone {timezone!r}; use an IANA name such as "
                "'Europe/Berlin' or 'Asia/Shanghai'."
            )
        now = now_utc().astimezone(zone)
        return f"{now.isoformat(timespec='seconds')} ({now:%A, %d %B %Y, %H:%M} {zone.key})"

    return Tool(
        name="current_time",
        description="The current date and time, in UTC or in the given IANA time zone.",
        parameters={
            "type": "object",
            "properties": {
                "timezone": {
                    "type": "string",
                    "description": "IANA time zone such as 'Europe/Berlin'; default UTC",
                }
            },
        },
        func=current_time,
        timeout=5.0,
    )


def recall_tool(
    recall_search: RecallSearch,
    limit: int = RECALL_LIMIT,
    *,
    results: ToolResults | None = None,
    fetch_result: FetchResult | None = None,
    scope: str = "this conversation",
) -> Tool:
    async def recall(  # noqa: A002
        query: str = "", id: str = "", start: int = 0
    ) -> str | ToolOutput:
        if id.strip():
            return await _whole_result(id.strip(), results, fetch_result, start)
        query = query.strip()
        if not query:
            return "Error: give a word or phrase to look for, or the id of a masked result."
        found = await recall_search(query, limit)
        if not found:
            return f"No passage of {scope} matches {query!r}."
        texts = [f.label if isinstance(f, RecalledImage) else f for f in found]
        blocks = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(texts, 1))
        result = f"Passages of {scope} matching {query!r}, quoted exactly:\n\n{blocks}"
        images = tuple(f.part for f in found if isinstance(f, RecalledImage) and f.part)
        if not images:
            return result
        note = (
            "The image found is attached to this conversation again, after this result."
            if len(images) == 1
            else "The images found are attached to this conversation again, after this result."
        )
        return ToolOutput(f"{result}\n\n{note}", images)

    return Tool(
        name="recall",
        description=(
            "Search the whole conversation, including earlier parts that were summarised, "
            "for a word or phrase, and return the matching passages verbatim. Use it when "
            "the user refers to something said earlier and the exact detail is not in view. "
            "Earlier images shown only as [image: …] text are found by their name or "
            "description, and are shown to you again. A masked tool result is brought back "
            "whole by its id."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "word or phrase"},
                "id": {"type": "string", "description": "the id a masked tool result names"},
                "start": {
                    "type": "integer",
                    "description": "with id: the character to read on from, as a result cut "
                    "to fit says (default 0)",
                },
            },
        },
        func=recall,
        timeout=10.0,
    )


async def _whole_result(
    result_id: str, results: ToolResults | None, fetch_result: FetchResult | None, start: int = 0
) -> str:
    """A masked tool result, whole: this run's own, else an earlier run's stored one; from
    ``start`` on for a result that was cut to fit (its read-on line names the start)."""
    kept = results.get(result_id) if results is not None else None
    if kept is None and fetch_result is not None:
        kept = await fetch_result(result_id)
    if kept is None:
        return f"Error: no tool result has the id {result_id!r}."
    call = f"{kept.name}({kept.arguments}), id {result_id!r}"
    if not start:
        return f"The whole result of {call}:\n\n{kept.text}"
    if not 0 < start < len(kept.text):
        return f"Error: start must be between 0 and {len(kept.text) - 1} for result {result_id!r}."
    return (
        f"The result of {call}, from character {start:,} of {len(kept.text):,}:\n\n"
        f"{kept.text[start:]}"
    )


def default_tools(
    recall_search: RecallSearch | None = None,
    *,
    results: ToolResults | None = None,
    fetch_result: FetchResult | None = None,
    recall_scope: str = "this conversation",
) -> ToolRegistry:
    """The built-in tools; ``recall`` only when a search is given (a tool that cannot work
    would only mislead the model). ``results``: the run's whole tool results, which the
    registry keeps and ``recall`` brings back by id (``fetch_result`` for earlier runs').
    ``recall_scope`` names what ``recall`` searches, in its answers."""
    results = results if results is not None else ToolResults()
    registry = ToolRegistry([calculator_tool(), current_time_tool()], results=results)
    if recall_search is not None:
        registry.register(
            recall_tool(
                recall_search, results=results, fetch_result=fetch_result, scope=recall_scope
            )
        )
    return registry
