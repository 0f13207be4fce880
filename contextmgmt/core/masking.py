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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from . import tokens
from .compact import tool_units
from .messages import ChatMessage, ToolCall
from .readon import READ_ON, read_on_lines
from .textcut import clip_to_tokens

# The newest tool rounds (an assistant message calling tools, with its results) stay whole.
# Two, not more: each round kept whole is sent again on every call until it is masked, and
# read afresh after each masking; bench/tool_heavy.py measured three rounds at a fifth
# more input tokens than two and 70% more uncached ones (docs/architecture.md).
KEEP_TOOL_ROUNDS = 2
# The newest rounds stay whole only while together they take at most this share of the
# budget: at a small window two rounds of long pages alone fill it, and keeping them would
# leave a summary as the only way to fit (the round not answered yet always stays).
KEEP_ROUNDS_SHARE = 0.5
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
# The metadata key of a result the guard cut to fit: its whole size and what is shown.
CUT_KEY = "cut"
# However little room is left, a cut result keeps at least this many tokens of its start.
MIN_CUT_TOKENS = 64
# A stub carries at most this many read-on lines of the result it replaces (the newest).
STUB_READ_ON_LINES = 2
ARGUMENT_CHARS = 120
FIRST_LINE_CHARS = 200
# How recall finds a result besides its id: a run's results are indexed when it is stored.
THIS_RUN_NOTE = " (from the next turn on, also with words from it)"
STORED_NOTE = " (or with words from it)"
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


def stub_for(
    call: ToolCall,
    *,
    chars: int,
    first_line: str,
    result_id: str,
    read_on: Sequence[str] = (),
    recall_note: str = THIS_RUN_NOTE,
) -> str:
    """The one stub format: the tool and its arguments (short), the result's size, its first
    line, the way back to the whole result (``recall_note`` says when words find it too),
    and the read-on lines of the result it replaces (where a long page stood and how to
    read on: ``readon``). Every stub is made here."""
    first = first_line.strip()
    if len(first) > FIRST_LINE_CHARS:
        first = first[: FIRST_LINE_CHARS - 1] + "…"
    args = short_arguments(call.arguments)
    if call.name in DOCUMENT_TOOLS:
        back = f"call {call.name}({args}) again"
    else:
        back = f'call recall with id "{result_id}"' + recall_note
    stub = (
        f"{MASK_PREFIX}: {call.name}({args}) returned {chars:,} characters. "
        f"First line: {first}. For the whole result, {back}.]"
    )
    lines = list(read_on)[-STUB_READ_ON_LINES:]
    return "\n".join([stub, *lines]) if lines else stub


def stub_text(call: ToolCall, text: str, *, result_id: str | None = None) -> str:
    """The stub that stands for ``text``, the result of ``call``."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return stub_for(
        call,
        chars=len(text),
        first_line=first,
        result_id=result_id or call.id,
        read_on=read_on_lines(text),
    )


def record_stub(call: ToolCall, chars: int, first_line: str, result_id: str) -> str:
    """The stub of an earlier run's result, from what is stored of it (size, first line):
    what the next runs' history carries for each of its tool calls."""
    return stub_for(
        call, chars=chars, first_line=first_line, result_id=result_id, recall_note=STORED_NOTE
    )


def _stub_of(msg: ChatMessage, call: ToolCall) -> str:
    """The stub of the result ``msg``: a result the guard cut counts its whole size."""
    text = msg.text()
    cut = msg.metadata.get(CUT_KEY)
    if not isinstance(cut, dict):
        return stub_text(call, text, result_id=msg.metadata.get("result_id"))
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return stub_for(
        call,
        chars=int(cut.get("chars") or len(text)),
        first_line=first,
        result_id=msg.metadata.get("result_id") or call.id,
        read_on=read_on_lines(text),
    )


def mask_tool_results(
    messages: list[ChatMessage],
    *,
    target_tokens: int | None = None,
    keep_rounds: int = KEEP_TOOL_ROUNDS,
    keep_tokens: int | None = None,
) -> MaskOutcome:
    """``messages`` with old tool results masked, oldest first, until the estimate is at
    ``target_tokens`` (all that may be masked when None).

    The newest ``keep_rounds`` tool rounds stay whole while together they take at most
    ``keep_tokens`` (no limit when None); the round the model has not answered yet always
    stays (``unanswered_round``), even with ``keep_rounds=0``."""
    messages = list(messages)
    before = tokens.estimate_messages_tokens(messages)
    outcome = MaskOutcome(messages, tokens_before=before, tokens_after=before)
    if target_tokens is not None and before <= target_tokens:
        return outcome
    window = kept_window_start(messages, keep_rounds=keep_rounds, keep_tokens=keep_tokens)
    if not _anything_to_mask(messages, window):
        return outcome  # the common case once old results are stubs: one cheap pass
    position = {id(m): i for i, m in enumerate(messages)}
    old = [
        u
        for u in tool_units(messages)
        if u[0].role == "assistant" and u[0].tool_calls and position[id(u[0])] < window
    ]
    total = before
    for msg, call in _candidates(old):
        if target_tokens is not None and total <= target_tokens:
            break
        text = msg.text()
        cut = msg.metadata.get(CUT_KEY)
        chars = int(cut["chars"]) if isinstance(cut, dict) and cut.get("chars") else len(text)
        stub = dataclasses.replace(
            msg,
            content=_stub_of(msg, call),
            metadata={**msg.metadata, MASKED_KEY: {"tool": call.name, "chars": chars}},
        )
        saved = tokens.estimate_message_tokens(msg) - tokens.estimate_message_tokens(stub)
        if saved <= 0:
            continue  # the result is no bigger than its stub: it stays
        messages[position[id(msg)]] = stub
        total -= saved
        outcome.masked.append(MaskedResult(msg.tool_call_id or "", call.name, chars, saved))
    if outcome.masked:
        outcome.tokens_after = tokens.estimate_messages_tokens(messages)
    return outcome


def unanswered_round(messages: list[ChatMessage]) -> int | None:
    """Where the tool round the model has not answered yet starts: the last assistant
    message when it calls tools (what follows it is its results, perhaps a follow-up or a
    note); None when the last assistant message calls none."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.role == "assistant":
            return i if msg.tool_calls else None
    return None


def kept_window_start(
    messages: list[ChatMessage], *, keep_rounds: int, keep_tokens: int | None = None
) -> int:
    """The index from which tool rounds stay whole: the round not answered yet, then the
    newest answered rounds while they are at most ``keep_rounds`` rounds in all and take at
    most ``keep_tokens`` together (len(messages) when nothing stays)."""
    n = len(messages)
    start = n
    kept = used = 0
    answered = False  # an assistant message without tool calls was met walking back
    for i in range(n - 1, -1, -1):
        msg = messages[i]
        if msg.role != "assistant":
            continue
        if not msg.tool_calls:
            answered = True
            continue
        end = i + 1
        while end < n and messages[end].role == "tool":
            end += 1
        cost = tokens.estimate_messages_tokens(messages[i:end])
        if not answered and kept == 0:
            start, kept, used = i, 1, cost  # the round the model has not answered yet
            answered = True
            continue
        if kept >= keep_rounds or (keep_tokens is not None and used + cost > keep_tokens):
            break
        start, kept, used = i, kept + 1, used + cost
    return start


def keep_share(budget: int) -> int:
    """The most the newest whole tool rounds may take together under ``budget``."""
    return int(budget * KEEP_ROUNDS_SHARE)


def _anything_to_mask(messages: list[ChatMessage], window: int) -> bool:
    """Whether a tool result long enough to mask, not masked yet, comes before ``window``
    (results follow their call, so position tells)."""
    for msg in messages[:window]:
        if msg.role != "tool" or MASKED_KEY in msg.metadata:
            continue
        content = msg.content
        size = len(content) if isinstance(content, str) else len(msg.text())
        if size >= MIN_MASKED_CHARS:
            return True
    return False


def _candidates(rounds: list[list[ChatMessage]]) -> Iterator[tuple[ChatMessage, ToolCall]]:
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


# --- results larger than the room left ----------------------------------------------


@dataclass(frozen=True, slots=True)
class CutResult:
    """One unread tool result cut to fit: its call, its whole size, what is shown of it."""

    call_id: str
    chars: int
    shown: int


@dataclass(slots=True)
class CutOutcome:
    messages: list[ChatMessage]
    cut: list[CutResult] = field(default_factory=list)
    tokens_after: int = 0


def cut_line(result_id: str, shown: int, chars: int) -> str:
    """The read-on line a cut result ends with: what is shown and how to read on."""
    return (
        f"[Cut to fit the context: characters 0–{shown:,} of {chars:,} of this result shown; "
        f'{READ_ON}recall(id="{result_id}", start={shown})]'
    )


def cut_unread_results(messages: list[ChatMessage], *, room_tokens: int) -> CutOutcome:
    """``messages`` with the results of the round the model has not answered yet cut so
    that together they take at most ``room_tokens``, each fairly (the smaller ones whole).

    A cut result keeps its beginning, then a line saying what is shown and how to read on
    (``recall`` with its id and where to start), then the tool's own read-on lines: the
    model reads what fits and knows where the rest is — nothing it has not read is
    summarised. Pinned rounds and results too small to cut are left as they are."""
    messages = list(messages)
    outcome = CutOutcome(messages, tokens_after=tokens.estimate_messages_tokens(messages))
    start = unanswered_round(messages)
    if start is None or messages[start].pinned:
        return outcome
    wanted = {tc.id for tc in messages[start].tool_calls or ()}
    results = [
        i
        for i in range(start + 1, len(messages))
        if messages[i].role == "tool"
        and messages[i].tool_call_id in wanted
        and isinstance(messages[i].content, str)
        and not is_masked(messages[i])
    ]
    sizes = {i: tokens.estimate_message_tokens(messages[i]) for i in results}
    if sum(sizes.values()) <= room_tokens:
        return outcome
    # Fair shares: the smallest results whole while they fit their share, the rest split
    # what is left equally.
    shares: dict[int, int] = {}
    left = max(0, room_tokens)
    order = sorted(results, key=lambda i: sizes[i])
    for k, i in enumerate(order):
        share = left // (len(order) - k)
        shares[i] = min(sizes[i], share)
        left -= shares[i]
    for i in results:
        if shares[i] >= sizes[i]:
            continue
        copy = _cut_to(messages[i], shares[i])
        if copy is None:
            continue
        messages[i] = copy
        cut = copy.metadata[CUT_KEY]
        outcome.cut.append(CutResult(copy.tool_call_id or "", cut["chars"], cut["shown"]))
    if outcome.cut:
        outcome.tokens_after = tokens.estimate_messages_tokens(messages)
    return outcome


def cut_to_chars(msg: ChatMessage, max_chars: int) -> ChatMessage | None:
    """A copy of the tool result ``msg`` at most ``max_chars`` characters long, cut like an
    unread result (its beginning, the read-on line, the tool's own lines), or None when it
    is no longer than that or is not plain text."""
    if msg.role != "tool" or not isinstance(msg.content, str) or len(msg.content) <= max_chars:
        return None
    head, chars, own, result_id = _cut_parts(msg)
    tail = _cut_tail(result_id, chars, chars, own)
    kept = head[: max(0, max_chars - len(tail))]
    return _cut_copy(msg, kept, chars, own, result_id)


def _cut_parts(msg: ChatMessage) -> tuple[str, int, list[str], str]:
    """(what may be shown, the whole result's size, the tool's own read-on lines, the id
    recall finds it by) of a result about to be cut, cut before or not."""
    text = msg.text()
    previous = msg.metadata.get(CUT_KEY)
    if isinstance(previous, dict):
        chars, shown = int(previous["chars"]), int(previous["shown"])
        head = text[:shown]
        own = [line for line in read_on_lines(text[shown:]) if not line.startswith("[Cut to fit")]
    else:
        chars, head = len(text), text
        own = read_on_lines(text)
    return head, chars, own, str(msg.metadata.get("result_id") or msg.tool_call_id or "")


def _cut_tail(result_id: str, shown: int, chars: int, own: list[str]) -> str:
    return "\n\n" + "\n".join([cut_line(result_id, shown, chars), *own])


def _cut_copy(
    msg: ChatMessage, kept: str, chars: int, own: list[str], result_id: str
) -> ChatMessage:
    return dataclasses.replace(
        msg,
        content=kept + _cut_tail(result_id, len(kept), chars, own),
        metadata={**msg.metadata, CUT_KEY: {"chars": chars, "shown": len(kept)}},
    )


def _cut_to(msg: ChatMessage, share: int) -> ChatMessage | None:
    """A copy of the result ``msg`` cut to about ``share`` tokens (message overhead and the
    read-on lines included), or None when it would not get smaller."""
    text = msg.text()
    head, chars, own, result_id = _cut_parts(msg)
    tail_tokens = tokens.estimate_tokens(_cut_tail(result_id, chars, chars, own))
    room = max(MIN_CUT_TOKENS, share - tokens.MESSAGE_OVERHEAD - tail_tokens)
    kept = clip_to_tokens(head, room, marker="")
    if len(kept) >= len(head):
        return None
    copy = _cut_copy(msg, kept, chars, own, result_id)
    content = copy.text()
    if len(content) >= len(text) or tokens.estimate_tokens(content) >= tokens.estimate_tokens(text):
        return None  # too short to gain anything by cutting it
    return copy
