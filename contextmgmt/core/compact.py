"""CompactUtils: stateless estimation, smart truncation and LLM compaction.

Both strategies work on *units*, not single messages: an assistant message that calls tools
together with the tool results answering it is one unit, kept or dropped whole (the OpenAI
API rejects a tool result without its call and a call without its result). A tool result
with no call before it, or a call missing a result, is an invalid unit: never kept
verbatim (smart_truncate drops it, llm_compact summarises it).

Neither function mutates its input: they return new lists holding the caller's message
objects (untouched) plus, for llm_compact, one new summary message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from . import tokens
from .instructions import has_instructions
from .llm import Usage, input_window_of
from .messages import ChatMessage
from .summarise import SummaryOutcome, summarise_rounds
from .textcut import clip_to_tokens

# "mask": only old tool results were masked (contextmgmt.core.masking); no summary.
Strategy = Literal["none", "mask", "llm", "truncate"]

# The summary may take at most this share of the budget: history must keep room.
SUMMARY_BUDGET_SHARE = 4
# Below this many tokens of room a summary is not worth an LLM call.
MIN_SUMMARY_TOKENS = 48
# The compactor's input window when the caller does not give one: the budget, or this.
DEFAULT_WINDOW_TOKENS = 4_000


@dataclass(slots=True)
class CompactResult:
    """What one compaction did; ``error`` says why an LLM attempt fell back."""

    messages: list[ChatMessage]
    strategy: Strategy
    original_count: int
    compacted_count: int
    tokens_before: int
    tokens_after: int
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    # Summary fact check: facts of the summarised messages the summary dropped / re-added.
    facts_missing: int = 0
    facts_appended: int = 0
    missing_facts: list[str] = field(default_factory=list)
    appended_facts: list[str] = field(default_factory=list)
    # How many messages the new summary stands for (earlier summaries' counts included).
    summarized_count: int = 0
    # Messages cut at max_message_chars by the guard.
    oversized_cut: int = 0
    # Exactly the messages the new summary stands for (earlier summaries it folded
    # included), the caller's objects: a persisted summary covers these and no others.
    summarized: list[ChatMessage] = field(default_factory=list)
    # The summary's token cap and actual size (content), the summariser calls it took
    # (rounds: 1 = one call), and replies that overshot their cap and were cut back.
    summary_cap: int = 0
    summary_tokens: int = 0
    summary_calls: int = 0
    summary_rounds: int = 0
    summary_overshoots: int = 0
    # Tool results masked before any summary (masking.MaskedResult), oldest first.
    masked: list[Any] = field(default_factory=list)
    # Results of the round not read yet, cut to fit with a read-on line (masking.CutResult).
    results_cut: list[Any] = field(default_factory=list)


# ---------------------------------------------------------------------------- units


@dataclass(slots=True)
class _Unit:
    start: int  # index of the first message in the input
    messages: list[ChatMessage]
    valid: bool
    # Read several times per unit by a compaction of thousands: computed once, by _units.
    pinned: bool
    system: bool

    @property
    def lead_role(self) -> str:
        return self.messages[0].role

    def tokens(self) -> int:
        return sum(tokens.estimate_message_tokens(m) for m in self.messages)


def _units(messages: list[ChatMessage]) -> list[_Unit]:
    """Group a conversation into units: tool-call blocks, or single messages."""
    units: list[_Unit] = []
    i, n = 0, len(messages)
    while i < n:
        msg = messages[i]
        if msg.role == "assistant" and msg.tool_calls:
            wanted = {tc.id for tc in msg.tool_calls}
            block = [msg]
            j = i + 1
            while j < n and messages[j].role == "tool" and messages[j].tool_call_id in wanted:
                block.append(messages[j])
                wanted.discard(messages[j].tool_call_id)
                j += 1
            pinned = any(m.pinned for m in block)
            units.append(_Unit(i, block, not wanted, pinned, False))
            i = j
        else:
            # A tool message here has no call before it: an orphan.
            role = msg.role
            units.append(_Unit(i, [msg], role != "tool", msg.pinned, role == "system"))
            i += 1
    return units


def tool_units(messages: list[ChatMessage]) -> list[list[ChatMessage]]:
    """``messages`` grouped as compaction sees them: an assistant message calling tools with
    the results answering it, or one message; kept, pinned or dropped together."""
    return [u.messages for u in _units(list(messages))]


def _flatten(units: list[_Unit]) -> list[ChatMessage]:
    return [m for u in sorted(units, key=lambda u: u.start) for m in u.messages]


# ----------------------------------------------------------------- smart truncation


def _smart_truncate_units(units: list[_Unit], max_tokens: int) -> list[_Unit]:
    keep = [u for u in units if u.system or u.pinned]
    room = max_tokens - sum(u.tokens() for u in keep)
    suffix: list[_Unit] = []
    for unit in reversed(units):
        if unit.system or unit.pinned:
            continue
        if not unit.valid:
            continue  # never kept verbatim; does not end the suffix
        cost = unit.tokens()
        if cost > room:
            break
        room -= cost
        suffix.append(unit)
    suffix.reverse()
    # The first non-system message must not be an assistant (or tool) turn: a reply with
    # no question before it confuses models. Drop leading units of the suffix until it is.
    kept = keep + suffix
    while suffix:
        first = min((u for u in kept if not u.system), key=lambda u: u.start)
        if first.lead_role == "user" or first is not suffix[0]:
            break
        suffix.pop(0)
        kept = keep + suffix
    return kept


# ---------------------------------------------------------------------- CompactUtils


class CompactUtils:
    """Static helpers only: no instances, no state."""

    @staticmethod
    def estimate_tokens(content: Any) -> int:
        return tokens.estimate_tokens(content)

    @staticmethod
    def estimate_messages_tokens(messages: list[ChatMessage]) -> int:
        return tokens.estimate_messages_tokens(messages)

    @staticmethod
    def smart_truncate(messages: list[ChatMessage], max_tokens: int) -> list[ChatMessage]:
        """Keep system and pinned messages, then the newest suffix that fits.

        The suffix walks back over whole units and stops at the first that does not fit;
        the result never starts (after system messages) with an assistant or tool message.
        If system + pinned alone exceed ``max_tokens`` they are still all returned.
        """
        return _flatten(_smart_truncate_units(_units(list(messages)), max_tokens))

    @staticmethod
    def cut_for_request(messages: list[ChatMessage], max_tokens: int) -> list[ChatMessage]:
        """A copy of a fitted history cut to ``max_tokens`` for one request, no LLM call.

        A summary is clipped to at most half of ``max_tokens`` (left out when that is too
        little to be worth reading), then the newest whole units that fit are kept
        (smart_truncate). Nothing here is meant to be stored: it is the view of a request
        whose own content leaves the history less room than usual.
        """
        if tokens.estimate_messages_tokens(messages) <= max_tokens:
            return list(messages)
        room = max_tokens // 2 - tokens.MESSAGE_OVERHEAD
        out: list[ChatMessage] = []
        for msg in messages:
            if msg.is_summary:
                if room < MIN_SUMMARY_TOKENS:
                    continue
                if tokens.estimate_message_tokens(msg) > max_tokens // 2:
                    # Marked: a summary of this copy must not be stored in place of the
                    # whole one.
                    msg = dataclasses.replace(
                        msg,
                        content=clip_to_tokens(msg.text(), room),
                        metadata={**msg.metadata, "clipped": True},
                    )
            out.append(msg)
        return CompactUtils.smart_truncate(out, max_tokens)

    @staticmethod
    async def llm_compact(
        messages: list[ChatMessage],
        llm: Any,
        max_tokens: int,
        keep_recent: int = 4,
        hint: str = "general",
        *,
        timeout: float | None = None,  # noqa: ASYNC109 — bounds each LLM call only
        window_tokens: int | None = None,
        instructions: bool | None = None,
    ) -> CompactResult:
        """Summarise the oldest compactable messages into one summary message.

        System messages and pinned messages are kept; earlier summaries are folded into
        the new one; the ``keep_recent`` newest compactable messages stay verbatim (whole
        units, so possibly a few more). If the result still exceeds ``max_tokens``, it is
        smart-truncated. Any LLM fault (exception, ``timeout`` seconds passed, empty reply)
        gives a plain smart_truncate with ``strategy="truncate"`` and ``error`` set.

        ``window_tokens`` is the most one summariser call may send (default: the input
        window the summariser's LLM carries, else ``max_tokens`` or 4,000, whichever is
        larger); more is summarised in rounds, never left out.

        ``instructions``: whether the context has standing instructions (default: whether
        ``messages`` carry them). They are kept like every system message; the summariser
        is told they exist and are kept elsewhere (``instructions``).
        """
        messages = list(messages)
        if instructions is None:
            instructions = has_instructions(messages)
        before = tokens.estimate_messages_tokens(messages)
        n = len(messages)
        if before <= max_tokens:
            return CompactResult(messages, "none", n, n, before, before)

        plan = _plan(messages, max_tokens, keep_recent)

        def fallback(error: str | None) -> CompactResult:
            out = CompactUtils.smart_truncate(messages, max_tokens)
            after = tokens.estimate_messages_tokens(out)
            return CompactResult(out, "truncate", n, len(out), before, after, error=error)

        if not plan.to_summarise and len(plan.old_summaries) < 2:
            return fallback(None)  # nothing new to summarise: an LLM call would not help
        if plan.summary_tokens < MIN_SUMMARY_TOKENS:
            return fallback(None)  # no room for a summary next to system + pinned

        source = _flatten(plan.old_summaries + plan.to_summarise)
        window = window_tokens or input_window_of(llm) or max(max_tokens, DEFAULT_WINDOW_TOKENS)

        async def summarised(messages: list[ChatMessage]) -> SummaryOutcome:
            return await summarise_rounds(
                messages,
                llm,
                hint=hint,
                max_summary_tokens=plan.summary_tokens,
                window_tokens=window,
                timeout=timeout,
                instructions=instructions,
            )

        outcome = await summarised(source)
        kept = plan.kept
        if outcome.summary is not None:
            # The kept window and the summary together over budget: the oldest kept units
            # are folded into the summary (one more call) rather than cut off unseen.
            room = plan.room - tokens.estimate_message_tokens(outcome.summary)
            fitting = _window_that_fits(kept, plan.fixed, room)
            staying = {id(u) for u in fitting}
            moved = _flatten([u for u in kept if id(u) not in staying])
            if moved:
                kept = fitting
                folded = await summarised([outcome.summary, *moved])
                outcome = _folded(outcome, folded)
                source = [*source, *moved]
        if outcome.summary is None:
            result = fallback(outcome.error)
            result.usage = outcome.usage
            result.summary_calls = outcome.calls
            return result
        out = _with_summary(_flatten(plan.fixed + kept), outcome.summary)
        if tokens.estimate_messages_tokens(out) > max_tokens:
            out = CompactUtils.smart_truncate(out, max_tokens)
        return _summary_result(out, outcome, source, original_count=n, tokens_before=before)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a summary compaction keeps and summarises: units kept as they are (system and
    pinned), earlier summaries to fold, the recent window kept verbatim, the rest to
    summarise; the room beside the fixed units and the summary's cap."""

    fixed: list[_Unit]
    old_summaries: list[_Unit]
    kept: list[_Unit]
    to_summarise: list[_Unit]
    room: int
    summary_tokens: int


def _plan(messages: list[ChatMessage], max_tokens: int, keep_recent: int) -> _Plan:
    units = _units(messages)
    fixed = [u for u in units if (u.system and not u.messages[0].is_summary) or u.pinned]
    old_summaries = [u for u in units if u.system and u.messages[0].is_summary]
    pool = [u for u in units if not u.system and not u.pinned]
    room = max_tokens - sum(u.tokens() for u in fixed)
    summary_tokens = min(max_tokens // SUMMARY_BUDGET_SHARE, room) - tokens.MESSAGE_OVERHEAD
    # The verbatim window leaves the summary its room: what does not fit beside it is
    # summarised too, never cut off afterwards unseen by the summariser.
    kept = _window_that_fits(
        _recent_units(pool, fixed, keep_recent),
        fixed,
        room - MIN_SUMMARY_TOKENS - tokens.MESSAGE_OVERHEAD,
    )
    if len(kept) == len(pool) and len(old_summaries) == 1:
        # Nothing new to summarise, so the earlier summary would stay as it is: the window
        # must fit beside it at its real size. What does not is folded into it, never cut
        # off afterwards unseen.
        kept = _window_that_fits(kept, fixed, room - old_summaries[0].tokens())
    kept_ids = {id(u) for u in kept}
    return _Plan(
        fixed=fixed,
        old_summaries=old_summaries,
        kept=kept,
        to_summarise=[u for u in pool if id(u) not in kept_ids],
        room=room,
        summary_tokens=summary_tokens,
    )


def _folded(first: SummaryOutcome, folded: SummaryOutcome) -> SummaryOutcome:
    """The fold's outcome, counting the first summary's calls and usage too."""
    folded.usage.add(first.usage)
    folded.calls += first.calls
    folded.rounds += first.rounds
    folded.overshoots += first.overshoots
    return folded


def _with_summary(rest: list[ChatMessage], summary: ChatMessage) -> list[ChatMessage]:
    """``rest`` with the summary after its leading system messages."""
    lead = 0
    while lead < len(rest) and rest[lead].role == "system":
        lead += 1
    return rest[:lead] + [summary] + rest[lead:]


def _summary_result(
    out: list[ChatMessage],
    outcome: SummaryOutcome,
    source: list[ChatMessage],
    *,
    original_count: int,
    tokens_before: int,
) -> CompactResult:
    summary = outcome.summary
    assert summary is not None
    return CompactResult(
        out,
        "llm",
        original_count,
        len(out),
        tokens_before,
        tokens.estimate_messages_tokens(out),
        usage=outcome.usage,
        facts_missing=outcome.facts_missing,
        facts_appended=outcome.facts_appended,
        missing_facts=outcome.missing_facts,
        appended_facts=outcome.appended_facts,
        summarized_count=summary.metadata["summarized_count"],
        summarized=source,
        summary_cap=outcome.cap,
        summary_tokens=tokens.estimate_tokens(summary.content),
        summary_calls=outcome.calls,
        summary_rounds=outcome.rounds,
        summary_overshoots=outcome.overshoots,
    )


def _window_that_fits(kept: list[_Unit], fixed: list[_Unit], room: int) -> list[_Unit]:
    """``kept`` without its oldest units until it takes at most ``room`` tokens, still
    starting (after system messages) with a user turn; the units let go are summarised."""
    kept = list(kept)
    total = sum(u.tokens() for u in kept)
    if total <= room:
        return kept
    while kept and total > room:
        total -= kept.pop(0).tokens()
    while kept and kept[0].lead_role != "user" and _starts_badly(kept, fixed):
        kept.pop(0)
    return kept


def _starts_badly(candidate: list[_Unit], fixed: list[_Unit]) -> bool:
    """Whether the first non-system unit of ``fixed`` and ``candidate`` is not a user turn."""
    others = [u for u in fixed if not u.system] + candidate
    first = min(others, key=lambda u: u.start)
    return first.lead_role != "user"


def _recent_units(pool: list[_Unit], fixed: list[_Unit], keep_recent: int) -> list[_Unit]:
    """The newest valid units of ``pool`` holding at least ``keep_recent`` messages.

    If the output would then start (after system messages) with an assistant turn, the
    boundary moves forward to the next user message, or, when the kept part has none,
    back to the nearest earlier one.
    """
    if keep_recent <= 0:
        return []
    kept: list[_Unit] = []
    count = 0
    i = len(pool)
    while i > 0 and count < keep_recent:
        i -= 1
        if not pool[i].valid:
            break
        kept.insert(0, pool[i])
        count += len(pool[i].messages)
    if not kept:
        return kept

    if not _starts_badly(kept, fixed):
        return kept
    for k, unit in enumerate(kept):
        if unit.lead_role == "user":
            return kept[k:]
    start = pool.index(kept[0])
    for j in range(start - 1, -1, -1):
        if not pool[j].valid:
            break
        if pool[j].lead_role == "user":
            return pool[j:]
    return kept
