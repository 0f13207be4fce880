"""CompactUtils (SPEC R2): stateless estimation, smart truncation and LLM compaction.

Both strategies work on *units*, not single messages: an assistant message that calls tools
together with the tool results answering it is one unit, kept or dropped whole (the OpenAI
API rejects a tool result without its call and a call without its result). A tool result
with no call before it, or a call missing a result, is an invalid unit: never kept
verbatim (smart_truncate drops it, llm_compact summarises it).

Neither function mutates its input: they return new lists holding the caller's message
objects (untouched) plus, for llm_compact, one new summary message.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

from . import tokens
from .factcheck import KEY_FACTS_MAX_TOKENS, append_key_facts
from .llm import Usage
from .messages import SUMMARY_PREFIX, ChatMessage
from .prompts import COMPACT_PROMPTS

Strategy = Literal["none", "llm", "truncate"]

# The summary may take at most this share of the budget (R0.3: history must keep room).
SUMMARY_BUDGET_SHARE = 4
# Below this many tokens of room a summary is not worth an LLM call.
MIN_SUMMARY_TOKENS = 48
# One message's text in the compaction transcript is clipped to this many characters
# (head and tail kept): a runaway tool output must not crowd out the rest.
TRANSCRIPT_MESSAGE_CHARS = 12_000


@dataclass(slots=True)
class CompactResult:
    """What one compaction did (DESIGN §2); ``error`` says why an LLM attempt fell back."""

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
    # How many messages the new summary stands for (earlier summaries' counts included).
    summarized_count: int = 0
    # Messages cut at max_message_chars by the guard (R3.2).
    oversized_cut: int = 0


# ---------------------------------------------------------------------------- units


@dataclass(slots=True)
class _Unit:
    start: int  # index of the first message in the input
    messages: list[ChatMessage]
    valid: bool = True

    @property
    def pinned(self) -> bool:
        return any(m.pinned for m in self.messages)

    @property
    def system(self) -> bool:
        return self.messages[0].role == "system"

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
            units.append(_Unit(i, block, valid=not wanted))
            i = j
        else:
            # A tool message here has no call before it: an orphan.
            units.append(_Unit(i, [msg], valid=msg.role != "tool"))
            i += 1
    return units


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


# ---------------------------------------------------------------- LLM compaction helpers


def _transcript_text(msg: ChatMessage) -> str:
    parts: list[str] = []
    text = msg.text()
    if len(text) > TRANSCRIPT_MESSAGE_CHARS:
        half = TRANSCRIPT_MESSAGE_CHARS // 2
        text = f"{text[:half]}\n[… {len(text) - 2 * half} characters omitted …]\n{text[-half:]}"
    if text:
        parts.append(text)
    if isinstance(msg.content, list):
        images = sum(1 for p in msg.content if isinstance(p, dict) and p.get("type") == "image_url")
        if images:
            parts.append("[image]" if images == 1 else f"[{images} images]")
    for call in msg.tool_calls or ():
        parts.append(f"[tool call {call.name}({call.arguments})]")
    return "\n".join(parts)


def build_transcript(messages: list[ChatMessage], max_tokens: int | None = None) -> str:
    """One "role: text" block per message, blank-line separated (the compaction input).

    Earlier summaries are included (as "system: [Conversation summary] …") so that the new
    summary folds them in. With ``max_tokens``, the oldest non-summary blocks are left out
    first when the transcript would exceed it.
    """
    blocks = [(m.is_summary, f"{m.role}: {_transcript_text(m)}") for m in messages]
    if max_tokens is not None:
        total = sum(tokens.estimate_tokens(b) for _, b in blocks)
        omitted = 0
        i = 0
        while total > max_tokens and i < len(blocks):
            is_summary, block = blocks[i]
            if not is_summary:
                total -= tokens.estimate_tokens(block)
                blocks[i] = (True, "")
                omitted += 1
            i += 1
        blocks = [b for b in blocks if b[1]]
        if omitted:
            blocks.insert(0, (False, f"[… {omitted} earlier messages omitted …]"))
    return "\n\n".join(b for _, b in blocks)


def clip_to_tokens(text: str, max_tokens: int, marker: str = " …") -> str:
    """The longest prefix of ``text`` (plus ``marker``) within ``max_tokens`` tokens."""
    if tokens.estimate_tokens(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tokens.estimate_tokens(text[:mid] + marker) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + marker if lo else ""


def _fact_source(msg: ChatMessage) -> str:
    """The text whose facts a summary must keep: content plus tool-call arguments."""
    text = msg.text()
    if msg.tool_calls:
        text = "\n".join([text, *(f"{c.name} {c.arguments}" for c in msg.tool_calls)])
    return text


def _reply_text(result: Any) -> str:
    """The summary text of an LLM reply; "" for anything that is not usable text."""
    message = getattr(result, "message", None)
    if not isinstance(message, ChatMessage) or message.tool_calls:
        return ""
    text = message.text()
    if not isinstance(text, str):
        return ""
    text = text.strip()
    if text.startswith(SUMMARY_PREFIX):  # a model echoing the marker: do not double it
        text = text[len(SUMMARY_PREFIX) :].strip()
    return text


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "compaction LLM timed out"
    detail = str(exc).strip()
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__


async def summarise(
    messages: list[ChatMessage],
    llm: Any,
    *,
    hint: str = "general",
    max_summary_tokens: int,
    transcript_tokens: int | None = None,
    # Bounds the LLM call only (the fallback must still run after it), hence not a caller's
    # asyncio.timeout around the whole function.
    timeout: float | None = None,  # noqa: ASYNC109
) -> tuple[ChatMessage | None, Usage, str | None, tuple[int, int]]:
    """Ask ``llm`` for one summary message of ``messages``; never raises for LLM faults.

    Returns (summary message or None, usage, error or None, (facts_missing, facts_appended)).
    The call is exactly two messages: system = the hint's prompt, user = the transcript.
    """
    prompt = COMPACT_PROMPTS.get(hint, COMPACT_PROMPTS["general"])
    request = [
        ChatMessage(role="system", content=prompt),
        ChatMessage(role="user", content=build_transcript(messages, transcript_tokens)),
    ]
    usage = Usage()
    try:
        call = llm.chat(request)
        result = await (asyncio.wait_for(call, timeout) if timeout else call)
        reply_usage = getattr(result, "usage", None)
        if isinstance(reply_usage, Usage):
            usage = Usage(reply_usage.input_tokens, reply_usage.output_tokens)
        text = _reply_text(result)
    except Exception as exc:  # any LLM fault falls back (R3.7); cancellation propagates
        return None, usage, _describe(exc), (0, 0)
    if not text:
        return None, usage, "compaction LLM returned an empty summary", (0, 0)

    # Room for the "[Conversation summary]" marker and the Key facts appendix (factcheck).
    facts_room = min(KEY_FACTS_MAX_TOKENS, max_summary_tokens // 4)
    body_room = max_summary_tokens - tokens.estimate_tokens(SUMMARY_PREFIX + "\n") - facts_room
    body = clip_to_tokens(text, max(body_room, 1))
    sources = [_fact_source(m) for m in messages]
    body, facts = append_key_facts(body, sources, max_tokens=facts_room)
    folded = sum(m.metadata.get("summarized_count", 1) if m.is_summary else 1 for m in messages)
    summary = ChatMessage(
        role="system",
        content=f"{SUMMARY_PREFIX}\n{body}",
        metadata={"summarized_count": folded, "compaction": True},
    )
    return summary, usage, None, facts


# ---------------------------------------------------------------------- CompactUtils


class CompactUtils:
    """Static helpers only: no instances, no state (R2)."""

    @staticmethod
    def estimate_tokens(content: Any) -> int:
        return tokens.estimate_tokens(content)

    @staticmethod
    def estimate_messages_tokens(messages: list[ChatMessage]) -> int:
        return tokens.estimate_messages_tokens(messages)

    @staticmethod
    def smart_truncate(messages: list[ChatMessage], max_tokens: int) -> list[ChatMessage]:
        """Keep system and pinned messages, then the newest suffix that fits (R2.2).

        The suffix walks back over whole units and stops at the first that does not fit;
        the result never starts (after system messages) with an assistant or tool message.
        If system + pinned alone exceed ``max_tokens`` they are still all returned.
        """
        return _flatten(_smart_truncate_units(_units(list(messages)), max_tokens))

    @staticmethod
    async def llm_compact(
        messages: list[ChatMessage],
        llm: Any,
        max_tokens: int,
        keep_recent: int = 4,
        hint: str = "general",
        *,
        timeout: float | None = None,  # noqa: ASYNC109 — bounds only the LLM call
    ) -> CompactResult:
        """Summarise the oldest compactable messages into one summary message (R2.3).

        System messages and pinned messages are kept; earlier summaries are folded into
        the new one; the ``keep_recent`` newest compactable messages stay verbatim (whole
        units, so possibly a few more). If the result still exceeds ``max_tokens``, it is
        smart-truncated. Any LLM fault (exception, ``timeout`` seconds passed, empty reply)
        gives a plain smart_truncate with ``strategy="truncate"`` and ``error`` set.
        """
        messages = list(messages)
        before = tokens.estimate_messages_tokens(messages)
        n = len(messages)
        if before <= max_tokens:
            return CompactResult(messages, "none", n, n, before, before)

        units = _units(messages)
        fixed = [u for u in units if (u.system and not u.messages[0].is_summary) or u.pinned]
        old_summaries = [u for u in units if u.system and u.messages[0].is_summary]
        pool = [u for u in units if not u.system and not u.pinned]
        kept = _recent_units(pool, fixed, keep_recent)
        kept_ids = {id(u) for u in kept}
        to_summarise = [u for u in pool if id(u) not in kept_ids]

        def fallback(error: str | None) -> CompactResult:
            out = CompactUtils.smart_truncate(messages, max_tokens)
            after = tokens.estimate_messages_tokens(out)
            return CompactResult(out, "truncate", n, len(out), before, after, error=error)

        if not to_summarise and len(old_summaries) < 2:
            return fallback(None)  # nothing new to summarise: an LLM call would not help
        room = max_tokens - sum(u.tokens() for u in fixed)
        summary_tokens = min(max_tokens // SUMMARY_BUDGET_SHARE, room) - tokens.MESSAGE_OVERHEAD
        if summary_tokens < MIN_SUMMARY_TOKENS:
            return fallback(None)  # no room for a summary next to system + pinned

        source = _flatten(old_summaries + to_summarise)
        summary, usage, error, (missing, appended) = await summarise(
            source,
            llm,
            hint=hint,
            max_summary_tokens=summary_tokens,
            transcript_tokens=max(max_tokens, 4_000),
            timeout=timeout,
        )
        if summary is None:
            result = fallback(error)
            result.usage = usage
            return result

        rest = _flatten(fixed + kept)
        lead = 0
        while lead < len(rest) and rest[lead].role == "system":
            lead += 1
        out = rest[:lead] + [summary] + rest[lead:]
        if tokens.estimate_messages_tokens(out) > max_tokens:
            out = CompactUtils.smart_truncate(out, max_tokens)
        return CompactResult(
            out,
            "llm",
            n,
            len(out),
            before,
            tokens.estimate_messages_tokens(out),
            usage=usage,
            facts_missing=missing,
            facts_appended=appended,
            summarized_count=summary.metadata["summarized_count"],
        )


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

    def starts_badly(candidate: list[_Unit]) -> bool:
        others = [u for u in fixed if not u.system] + candidate
        first = min(others, key=lambda u: u.start)
        return first.lead_role != "user"

    if not starts_badly(kept):
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
