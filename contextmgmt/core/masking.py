"""Masking: the cheap tier before any summary — old tool results become stubs.

A tool result the model has read and acted on is rarely needed word for word many steps
later, yet it costs its tokens on every call. Before an LLM is asked for a summary, tool
results older than the newest ``keep_rounds`` tool rounds are replaced by a stub naming
the tool, its arguments (short), the result's size and first line, and how to get the whole
back (``recall`` with the result's id; ``read_document`` for a document's text). Only what
is still over budget is summarised afterwards (docs/architecture.md, "Context tiers").

The rules, each property-tested (tests/contextmgmt/core/test_masking_properties.py):

- only ``tool`` messages change, and only their content: the message keeps its place and
  its ``tool_call_id``, so every tool call keeps its result for every provider;
- the newest ``keep_rounds`` tool rounds, pinned units and the current query are never
  touched;
- deterministic and idempotent: the same messages mask the same way, and masking a masked
  list changes nothing (a stub is never masked again);
- a stub replaces a result only when it is smaller, so the token count never grows;
- oldest first, and only until the total is at ``target_tokens`` (the low-water mark the
  caller gives), so later calls find the same prefix and the provider's cache holds.

Plain Python; the caller's messages are never mutated, unchanged ones stay the same objects.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from . import tokens
from .compact import tool_units
from .messages import ChatMessage, ToolCall

# The newest tool rounds (an assistant message calling tools, with its results) stay whole.
KEEP_TOOL_ROUNDS = 3
# When a compaction is needed, it goes down to this share of the budget, not to just under
# it: the following calls then fit as they are and send the same prefix.
LOW_WATER_SHARE = 0.3
MASK_PREFIX = "[Tool result masked"
# The metadata key a stub carries: what it replaced (for the divider and the receipt).
MASKED_KEY = "masked"
ARGUMENT_CHARS = 120
FIRST_LINE_CHARS = 200
# Tools whose results are read again with another tool, not with recall.
DOCUMENT_TOOLS = frozenset({"read_document"})


@dataclass(frozen=True, slots=True)
class MaskedResult:
    """One tool result masked: its call, tool, size and the tokens the stub saved."""

    call_id: str
    tool: str
    chars: int
    tokens_saved: int

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclass(slots=True)
class MaskOutcome:
    messages: list[ChatMessage]
    masked: list[MaskedResult] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def tokens_saved(self) -> int:
        return sum(m.tokens_saved for m in self.masked)


# A compact event lists at most this many masked results (it counts them all).
MAX_MASKED_LISTED = 50


def masked_facts(masked: list[MaskedResult]) -> dict[str, object]:
    """What a ``compact`` event and the stored facts say about masked results: each (tool,
    size, tokens saved), their number and the tokens they saved together."""
    return {
        "masked": [m.as_dict() for m in masked[:MAX_MASKED_LISTED]],
        "masked_count": len(masked),
        "masked_tokens_saved": sum(m.tokens_saved for m in masked),
    }


def low_water(budget: int) -> int:
    """The level a compaction brings the context down to."""
    return int(budget * LOW_WATER_SHARE)


def is_masked(message: ChatMessage) -> bool:
    return message.role == "tool" and MASKED_KEY in message.metadata


def short_arguments(arguments: str, limit: int = ARGUMENT_CHARS) -> str:
    """A call's JSON arguments on one line, cut at ``limit`` characters."""
    try:
        text = json.dumps(json.loads(arguments or "{}"), ensure_ascii=False, sort_keys=True)
    except ValueError:
        text = " ".join((arguments or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stub_text(call: ToolCall, text: str, *, result_id: str | None = None) -> str:
    """The stub that stands for ``text``, the result of ``call``."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if len(first) > FIRST_LINE_CHARS:
        first = first[: FIRST_LINE_CHARS - 1] + "…"
    args = short_arguments(call.arguments)
    if call.name in DOCUMENT_TOOLS:
        back = f"call {call.name}({args}) again"
    else:
        back = f'call recall with id "{result_id or call.id}"'
    return (
        f"{MASK_PREFIX}: {call.name}({args}) returned {len(text):,} characters. "
        f"First line: {first}. For the whole result, {back}.]"
    )


def record_stub(call: ToolCall, chars: int, first_line: str, result_id: str) -> str:
    """The stub of an earlier run's result, from what is stored of it (size, first line):
    what the next runs' history carries for each of its tool calls."""
    first = first_line if len(first_line) <= FIRST_LINE_CHARS else first_line[:199] + "…"
    args = short_arguments(call.arguments)
    back = (
        f"call {call.name}({args}) again"
        if call.name in DOCUMENT_TOOLS
        else f'call recall with id "{result_id}"'
    )
    return (
        f"{MASK_PREFIX}: {call.name}({args}) returned {chars:,} characters. "
        f"First line: {first}. For the whole result, {back}.]"
    )


def mask_tool_results(
    messages: list[ChatMessage],
    *,
    target_tokens: int | None = None,
    keep_rounds: int = KEEP_TOOL_ROUNDS,
) -> MaskOutcome:
    """``messages`` with old tool results masked, oldest first, until the estimate is at
    ``target_tokens`` (all that may be masked when None)."""
    messages = list(messages)
    before = tokens.estimate_messages_tokens(messages)
    outcome = MaskOutcome(messages, tokens_before=before, tokens_after=before)
    if target_tokens is not None and before <= target_tokens:
        return outcome
    units = tool_units(messages)
    rounds = [u for u in units if u[0].role == "assistant" and u[0].tool_calls]
    old = rounds[: max(0, len(rounds) - keep_rounds)]
    position = {id(m): i for i, m in enumerate(messages)}
    total = before
    for msg, call in _candidates(old):
        if target_tokens is not None and total <= target_tokens:
            break
        text = msg.text()
        stub = dataclasses.replace(
            msg,
            content=stub_text(call, text, result_id=msg.metadata.get("result_id")),
            metadata={**msg.metadata, MASKED_KEY: {"tool": call.name, "chars": len(text)}},
        )
        saved = tokens.estimate_message_tokens(msg) - tokens.estimate_message_tokens(stub)
        if saved <= 0:
            continue  # the result is no bigger than its stub: it stays
        messages[position[id(msg)]] = stub
        total -= saved
        outcome.masked.append(MaskedResult(msg.tool_call_id or "", call.name, len(text), saved))
    if outcome.masked:
        outcome.tokens_after = tokens.estimate_messages_tokens(messages)
    return outcome


def _candidates(rounds: list[list[ChatMessage]]):
    """(result, its call) of every tool result of ``rounds`` that may be masked, oldest
    first: not in a pinned unit, not masked already."""
    for unit in rounds:
        if any(m.pinned for m in unit):
            continue
        calls = {tc.id: tc for tc in unit[0].tool_calls or []}
        for msg in unit[1:]:
            if msg.role != "tool" or msg.tool_call_id not in calls:
                continue
            if is_masked(msg) or msg.text().startswith(MASK_PREFIX):
                continue
            yield msg, calls[msg.tool_call_id]
