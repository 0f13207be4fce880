"""Masking: the cheap tier before any summary — old tool results become stubs.

A tool result the model has read and acted on is rarely needed word for word many steps
later, yet it costs its tokens on every call. Before an LLM is asked for a summary, tool
results older than the newest ``keep_rounds`` tool rounds are replaced by a stub naming
the tool, its arguments (short), the result's size and first line, and how to get the whole
back (``recall`` with the result's id, or with words from it, since a run's whole results are
stored and indexed; ``read_document`` for a document's text). Only what
is still over budget is summarised afterwards (docs/architecture.md, "Context tiers").

The rules, each property-tested (tests/contextmgmt/core/test_masking_properties.py):

- only ``tool`` messages change, and only their content: the message keeps its place and
  its ``tool_call_id``, so every tool call keeps its result for every provider;
- the newest ``keep_rounds`` tool rounds, pinned units and the current query are never
  touched;
- deterministic and idempotent: the same messages mask the same way, and masking a masked
  list changes nothing (a stub is never masked again);
- a stub replaces a result only when it is smaller, so the token count never grows;
- oldest first, and only until the total is at ``target_tokens`` when the caller gives one
  (the turn-level history masks down to a low-water mark); without one, every result
  older than the newest rounds is masked. The guard does the latter once the context
  passes ``MASK_MARK_SHARE`` of its budget: a stub never changes again and masking only
  ever moves forward, so everything up to the last masked result is byte-identical from
  call to call and the provider's prompt cache holds (docs/architecture.md, "Context
  tiers", with bench/tool_heavy.py's figures).

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
# Two, not more: each round kept whole is sent again on every call until it is masked, and
# read afresh after each masking; bench/tool_heavy.py measured three rounds at a fifth
# more input tokens than two and 70% more uncached ones (docs/architecture.md).
KEEP_TOOL_ROUNDS = 2
# Once a run's context passes this share of the guard's budget, every tool result older
# than the newest rounds is masked at once (not one at a time, not only at the budget):
# the context drops well below the budget, the calls after it send the same prefix, and
# the masking that comes next only appends stubs after the ones already sent.
MASK_MARK_SHARE = 0.5
# When the turn-level history is over budget, masking goes down to this share of it, not
# to just under it: the following turns then fit as they are and send the same prefix.
LOW_WATER_SHARE = 0.3
MASK_PREFIX = "[Tool result masked"
# The metadata key a stub carries: what it replaced (for the divider and the receipt).
MASKED_KEY = "masked"
# A result this short costs about what its stub would: it is never masked (and looking at
# it on every call would cost more than it saves).
MIN_MASKED_CHARS = 400
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


def mask_mark(budget: int) -> int:
    """The context size above which the guard masks old tool results."""
    return int(budget * MASK_MARK_SHARE)


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
        back += " (from the next turn on, also with words from it)"
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
        else f'call recall with id "{result_id}" (or with words from it)'
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
    if not _anything_to_mask(messages, keep_rounds):
        return outcome  # the common case once old results are stubs: one cheap pass
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


def _anything_to_mask(messages: list[ChatMessage], keep_rounds: int) -> bool:
    """Whether a tool result long enough to mask, not masked yet, comes before the newest
    ``keep_rounds`` tool rounds (results follow their call, so position tells)."""
    cutoff = len(messages)
    seen = 0
    if keep_rounds > 0:
        for i in range(len(messages) - 1, -1, -1):
            msg = messages[i]
            if msg.role == "assistant" and msg.tool_calls:
                seen += 1
                if seen == keep_rounds:
                    cutoff = i
                    break
        else:
            return False  # no more rounds than the newest ones
    for msg in messages[:cutoff]:
        if msg.role != "tool" or MASKED_KEY in msg.metadata:
            continue
        content = msg.content
        size = len(content) if isinstance(content, str) else len(msg.text())
        if size >= MIN_MASKED_CHARS:
            return True
    return False


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
            if len(msg.text()) < MIN_MASKED_CHARS:
                continue
            yield msg, calls[msg.tool_call_id]
