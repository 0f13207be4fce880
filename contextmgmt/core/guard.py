"""ContextGuard: the per-iteration enforcer in front of every LLM call.

    guard = ContextGuard(compact_llm=fast_llm, budget=60_000)
    messages = await guard.check_and_compact(messages, hint="react_iteration")

1. A message longer than ``max_message_chars`` is cut with a ``[Truncated]`` suffix
   (string content and the text parts of part lists; on copies); a tool result ends
   instead with a line saying how to read on (``recall`` with its id and a start).
2. Within budget and under the masking mark (half of it) → the caller's list is returned
   as it is, the common case. Token estimates are cached per message, so this costs one
   cheap pass.
3. Over the masking mark → every tool result older than the newest rounds is masked
   (``masking``: stubs saying how to get them back); the newest rounds stay whole only
   while they fit their share of the budget. Still over budget → every round the model
   has answered is masked too, and then the results of the round it has not read yet are
   cut to the room left, each ending with a line saying how to read on (``recall`` with
   its id and a start). Stubs never change and masking only moves forward, so the prefix
   up to the last stub stays byte-identical from call to call (the provider's cache
   holds). If that fits the budget, no LLM is asked (strategy "mask", or "none" when there
   was nothing to mask or cut).
4. Still over budget → injected pinned messages are unpinned oldest-first while pinned content
   exceeds half the budget (the current query stays pinned), then LLM compaction
   with the hint's prompt, or ``smart_truncate`` without a compaction LLM. Any LLM
   fault falls back to ``smart_truncate`` silently and is recorded in ``last``. When
   only system prompts and pinned messages remain, nothing can shrink: the messages go
   as they are (strategy "none").

``last`` holds the CompactResult of the latest call; ``usage`` the cumulative usage of the
guard's compaction calls (accounted to the run's usage).
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

from . import tokens
from .compact import CompactResult, CompactUtils, Strategy
from .llm import Usage
from .masking import (
    KEEP_TOOL_ROUNDS,
    cut_to_chars,
    cut_unread_results,
    keep_share,
    mask_mark,
    mask_tool_results,
    unanswered_round,
)
from .messages import ChatMessage, ToolCall

TRUNCATED_SUFFIX = "\n[Truncated]"
PINNED_CAP_SHARE = 0.5
# The results the model has not read yet keep at least this share of the budget when the
# rest of the context leaves them less: the rest is then summarised, not them.
UNREAD_FLOOR_SHARE = 0.5
CUT_ATTEMPTS = 3
DEFAULT_COMPACT_TIMEOUT = 60.0


def _cut_text(text: str, limit: int) -> str:
    return text[:limit] + TRUNCATED_SUFFIX


def _cut_oversized(msg: ChatMessage, limit: int) -> ChatMessage | None:
    """A copy of ``msg`` with over-long text cut at ``limit`` characters, or None if none is.
    A tool result is cut the way an unread result is (``masking.cut_to_chars``): it ends
    with how to read on, within the same length as a ``[Truncated]`` cut. Where the limit is
    too small to hold the read-on line itself, it is cut plainly: the limit comes first."""
    content = msg.content
    if msg.role == "tool" and isinstance(content, str):
        cut = cut_to_chars(msg, limit + len(TRUNCATED_SUFFIX))
        if cut is None or len(cut.text()) <= limit + len(TRUNCATED_SUFFIX):
            return cut
    if isinstance(content, str):
        if len(content) <= limit:
            return None
        new_content: Any = _cut_text(content, limit)
    elif isinstance(content, list):
        changed = False
        parts = []
        for part in content:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and len(text) > limit:
                part = {**part, "text": _cut_text(text, limit)}
                changed = True
            parts.append(part)
        if not changed:
            return None
        new_content = parts
    else:
        return None
    return dataclasses.replace(msg, content=new_content, metadata=dict(msg.metadata))


def _has_oversized(msg: ChatMessage, limit: int) -> bool:
    content = msg.content
    if isinstance(content, list):
        return any(
            isinstance(p, dict) and isinstance(p.get("text"), str) and len(p["text"]) > limit
            for p in content
        )
    return isinstance(content, str) and len(content) > limit


def apply_pinned_cap(messages: list[ChatMessage], budget: int) -> tuple[list[ChatMessage], int]:
    """Unpin injected messages oldest-first until pinned tokens ≤ 50% of ``budget``.

    The current query (pinned, not injected) is never unpinned. Unpinned messages are
    copies; the input is not touched. Returns (messages, how many were unpinned).
    """
    cap = int(budget * PINNED_CAP_SHARE)
    pinned = sum(tokens.estimate_message_tokens(m) for m in messages if m.pinned)
    if pinned <= cap:
        return messages, 0
    out = list(messages)
    unpinned = 0
    for i, msg in enumerate(out):
        if pinned <= cap:
            break
        if msg.pinned and msg.injected:
            out[i] = dataclasses.replace(msg, pinned=False, metadata=dict(msg.metadata))
            pinned -= tokens.estimate_message_tokens(msg)
            unpinned += 1
    return out, unpinned


def _unread_tokens(messages: list[ChatMessage]) -> int:
    """The tokens of the results of the round the model has not answered yet."""
    start = unanswered_round(messages)
    if start is None:
        return 0
    wanted = {tc.id for tc in messages[start].tool_calls or ()}
    return sum(
        tokens.estimate_message_tokens(m)
        for m in messages[start + 1 :]
        if m.role == "tool" and m.tool_call_id in wanted
    )


def _compactable(msg: ChatMessage) -> bool:
    return not msg.pinned and (msg.role != "system" or msg.is_summary)


class ContextGuard:
    def __init__(
        self,
        compact_llm: Any = None,
        budget: int = 60_000,
        max_message_chars: int = 50_000,
        *,
        compact_timeout: float | None = DEFAULT_COMPACT_TIMEOUT,
        keep_recent: int = 4,
        mask_keep_rounds: int | None = KEEP_TOOL_ROUNDS,
    ) -> None:
        self.compact_llm = compact_llm
        # The newest tool rounds masking leaves whole; None: no masking tier.
        self.mask_keep_rounds = mask_keep_rounds
        self.budget = budget
        self.max_message_chars = max_message_chars
        self.compact_timeout = compact_timeout
        self.keep_recent = keep_recent
        self.last: CompactResult | None = None
        self.usage = Usage()
        self.compactions = 0  # calls that had to shrink the conversation
        self.summariser_calls = 0  # LLM calls its summaries took, folds included

    async def check_and_compact(
        self,
        messages: list[ChatMessage],
        budget: int | None = None,
        hint: str = "general",
    ) -> list[ChatMessage]:
        """Messages that fit ``budget`` (default: the guard's), never raising for LLM faults.

        Cheapest first: as they are; oversized messages cut; old tool results masked (and
        the unread round's cut to the room left); then pinned history capped and the rest
        summarised, or truncated without a compaction LLM."""
        budget = self.budget if budget is None else budget
        limit = self.max_message_chars
        total, oversized = _total_and_oversized(messages, limit)
        n = len(messages)
        keep_rounds = self.mask_keep_rounds
        masking = keep_rounds is not None
        # Masking starts at its mark, below the budget: see the module's docstring.
        mark = min(budget, mask_mark(budget)) if masking else budget
        if not oversized and total <= mark:
            self.last = CompactResult(messages, "none", n, n, total, total)
            return messages

        tokens_before = total
        work = messages
        cut = 0
        if oversized:
            work, cut = _with_oversized_cut(messages, limit)
            total = tokens.estimate_messages_tokens(work)
            if total <= mark:
                self.last = CompactResult(
                    work, "none", n, n, tokens_before, total, oversized_cut=cut
                )
                return work

        masked = _Masked(work, total)
        if keep_rounds is not None:
            masked = self._masked(work, total, budget, keep_rounds)
            work, total = masked.messages, masked.tokens
        strategy: Strategy = "mask" if masked.masked or masked.results_cut else "none"
        if total <= budget:
            # Over the mark, within the budget: masked if anything was old enough, else
            # sent as it is (the same list when nothing was cut).
            if strategy == "mask":
                self.compactions += 1
        else:
            work, _ = apply_pinned_cap(list(work), budget)
        if total <= budget or not any(_compactable(m) for m in work):
            # Or only the system prompt and pinned messages (the query) are left: nothing
            # to shrink, so no compaction — the call goes as it is and the provider has
            # the last word.
            self.last = CompactResult(
                work,
                strategy,
                n,
                n,
                tokens_before,
                total,
                oversized_cut=cut,
                masked=masked.masked,
                results_cut=masked.results_cut,
            )
            return work
        result = await self._summarised(work, budget, hint, total)
        result.original_count = n
        result.tokens_before = tokens_before
        result.oversized_cut = cut
        result.masked = masked.masked
        result.results_cut = masked.results_cut
        self.usage.add(result.usage)
        self.summariser_calls += result.summary_calls
        self.compactions += 1
        self.last = result
        return result.messages

    def _masked(
        self, work: list[ChatMessage], total: int, budget: int, keep_rounds: int
    ) -> _Masked:
        """Old rounds' tool results masked first, the newest whole while they fit their
        share; then every answered round; then the unread round's results cut."""
        masked: list = []
        cut_results: list = []
        outcome = mask_tool_results(work, keep_rounds=keep_rounds, keep_tokens=keep_share(budget))
        if outcome.masked:
            work, total, masked = outcome.messages, outcome.tokens_after, outcome.masked
        if total > budget:
            # Still over: every round the model has answered becomes stubs before any
            # summary is made (it acted on them; recall brings them back).
            outcome = mask_tool_results(work, keep_rounds=0)
            if outcome.masked:
                work, total = outcome.messages, outcome.tokens_after
                masked = [*masked, *outcome.masked]
        if total > budget:
            # The round it has not read yet does not fit: its results are cut to the
            # room left, each ending with how to read on — never summarised unseen.
            unread = _unread_tokens(work)
            room = max(budget - (total - unread), int(budget * UNREAD_FLOOR_SHARE))
            for _ in range(CUT_ATTEMPTS):
                trimmed = cut_unread_results(work, room_tokens=room)
                if not trimmed.cut:
                    break
                work, total, cut_results = trimmed.messages, trimmed.tokens_after, trimmed.cut
                if total <= budget:
                    break
                # Estimates of pieces add up to a token or two less than the whole's.
                room -= total - budget
        return _Masked(work, total, masked, cut_results)

    async def _summarised(
        self, work: list[ChatMessage], budget: int, hint: str, total: int
    ) -> CompactResult:
        if self.compact_llm is not None:
            return await CompactUtils.llm_compact(
                work,
                self.compact_llm,
                budget,
                keep_recent=self.keep_recent,
                hint=hint,
                timeout=self.compact_timeout,
            )
        out = CompactUtils.smart_truncate(work, budget)
        return CompactResult(
            out, "truncate", len(work), len(out), total, tokens.estimate_messages_tokens(out)
        )


@dataclasses.dataclass(frozen=True, slots=True)
class _Masked:
    """The messages after masking, their estimate, and what was masked or cut."""

    messages: list[ChatMessage]
    tokens: int
    masked: list = dataclasses.field(default_factory=list)
    results_cut: list = dataclasses.field(default_factory=list)


def _total_and_oversized(messages: list[ChatMessage], limit: int) -> tuple[int, bool]:
    """The messages' estimate and whether one is over ``limit`` characters: one pass over
    cached estimates where they are still valid (the cache's layout is in tokens.py)."""
    total = 0
    oversized = False
    weights = tokens.current_weights()
    for msg in messages:
        cache = msg._token_cache
        if (
            cache is not None
            and cache[0] is msg.content
            and cache[1] is msg.tool_calls
            and cache[5] is weights
            and (cache[2] is None or cache[2] == tuple(cast("list[ToolCall]", cache[1])))
            and (cache[6] is None or cache[6] == tuple(cast("list[dict[str, Any]]", cache[0])))
        ):
            total += cache[3]
            if cache[8] > limit:
                oversized = True
        else:
            total += tokens.estimate_message_tokens(msg)
            content = msg.content
            if type(content) is str:
                if len(content) > limit:
                    oversized = True
            elif content is not None and _has_oversized(msg, limit):
                oversized = True
    return total, oversized


def _with_oversized_cut(messages: list[ChatMessage], limit: int) -> tuple[list[ChatMessage], int]:
    """A new list with each message over ``limit`` characters cut, and how many were."""
    work = list(messages)
    cut = 0
    for i, msg in enumerate(work):
        copy = _cut_oversized(msg, limit)
        if copy is not None:
            work[i] = copy
            cut += 1
    return work, cut
