"""Summarising a run of messages with an LLM, in rounds when it does not fit one call.

Every message handed over reaches the summariser whole: the transcript ("role: text"
blocks) is cut into pieces that fit the compactor's input window; a message too large for
one piece is split on paragraph, then line, then word boundaries — never clipped. One piece
is one call. Several pieces are each summarised, and their summaries are folded by the same
means until one is left.

Every call is told its cap: ``max_tokens`` on the call and the target in its system
prompt. A reply over its cap is cut back at a line boundary (and the cut is counted), so no
summary is ever longer than asked. The summary then goes through the fact check
(``factcheck``): hard facts of the sources it dropped are appended in a ``Key facts`` line,
within the same cap.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, field
from typing import Any

from . import tokens
from .factcheck import KEY_FACTS_MAX_TOKENS, KeyFacts, check_key_facts
from .llm import Usage
from .messages import SUMMARY_PREFIX, ChatMessage
from .prompts import compact_prompt

# Room kept free in each call besides prompt and transcript: estimates are not exact.
WINDOW_MARGIN = 0.9
# Never ask for a summary shorter than this (a cap below it says nothing useful).
MIN_CAP_TOKENS = 32
# Sources of more characters than this are split and fact-checked in a worker thread, so
# that the event loop serving every other socket is not held for the whole computation.
OFF_LOOP_CHARS = 60_000
# A transcript piece is never smaller than this, however small the window.
MIN_PIECE_TOKENS = 256
# Separators a long text is split on, largest first.
_SEPARATORS = ("\n\n", "\n", ". ", " ")


@dataclass(slots=True)
class SummaryOutcome:
    """What summarising did: the summary (or None and why), its cost and its rounds."""

    summary: ChatMessage | None
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    facts_missing: int = 0
    facts_appended: int = 0
    # The facts themselves (the final call's check): found missing, best first; appended.
    missing_facts: list[str] = field(default_factory=list)
    appended_facts: list[str] = field(default_factory=list)
    calls: int = 0  # summariser calls, folds included
    rounds: int = 0  # 1 = one call; 2 = pieces, then one fold; …
    pieces: int = 0  # pieces of the first round
    overshoots: int = 0  # replies longer than their cap, cut back
    trimmed_tokens: int = 0  # tokens cut from those replies
    cap: int = 0  # the summary's token cap (content)


# ----------------------------------------------------------------------- transcript


def transcript_text(msg: ChatMessage) -> str:
    """A message's text for the transcript, with images and tool calls marked."""
    parts: list[str] = []
    text = msg.text()
    if text:
        parts.append(text)
    images = msg.images_as_text()
    if images:
        parts.append(images)
    for call in msg.tool_calls or ():
        parts.append(f"[tool call {call.name}({call.arguments})]")
    return "\n".join(parts)


def build_transcript(messages: list[ChatMessage]) -> str:
    """One "role: text" block per message, blank-line separated (the compaction input).

    Earlier summaries are included (as "system: [Conversation summary] …") so that the new
    summary folds them in.
    """
    return "\n\n".join(f"{m.role}: {transcript_text(m)}" for m in messages)


def split_text(text: str, max_tokens: int) -> list[str]:
    """``text`` in consecutive pieces of at most ``max_tokens`` tokens, nothing left out.

    Cuts fall on paragraph boundaries where possible, else on lines, sentences, words, and
    only for a single word longer than a piece between characters.
    """
    if tokens.estimate_tokens(text) <= max_tokens:
        return [text]
    for sep in _SEPARATORS:
        segments = text.split(sep)
        if sum(1 for s in segments if s) > 1:  # each segment shorter than text: it ends
            return _pack([s + sep for s in segments[:-1]] + [segments[-1]], max_tokens)
    return _cut_chars(text, max_tokens)


def _pack(segments: list[str], max_tokens: int) -> list[str]:
    """Greedy packing of consecutive segments (each keeps its separator) into pieces."""
    out: list[str] = []
    current: list[str] = []
    used = 0
    for segment in segments:
        cost = tokens.estimate_tokens(segment)
        if cost > max_tokens:
            if current:
                out.append("".join(current))
                current, used = [], 0
            out.extend(split_text(segment, max_tokens))
            continue
        if current and used + cost > max_tokens * WINDOW_MARGIN:
            out.append("".join(current))
            current, used = [], 0
        current.append(segment)
        used += cost
    if current:
        out.append("".join(current))
    # The estimator is not additive to the token: re-split any piece that came out too big.
    fixed: list[str] = []
    for piece in out:
        if tokens.estimate_tokens(piece) > max_tokens:
            fixed.extend(_cut_chars(piece, max_tokens))
        else:
            fixed.append(piece)
    return [p for p in fixed if p]


def _cut_chars(text: str, max_tokens: int) -> list[str]:
    pieces = []
    while text:
        size = _prefix_fitting(text, max_tokens)
        pieces.append(text[:size])
        text = text[size:]
    return pieces


def _prefix_fitting(text: str, max_tokens: int) -> int:
    """The length of the longest prefix of ``text`` within ``max_tokens`` (at least 1)."""
    if tokens.estimate_tokens(text) <= max_tokens:
        return len(text)
    lo, hi = 1, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tokens.estimate_tokens(text[:mid]) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return lo


@functools.lru_cache(maxsize=64)
def _wrapping_tokens(role: str, has_text: bool, calls: int, weights: tuple[float, ...]) -> int:
    """Tokens of what :func:`build_transcript` puts around a message's own text and tool
    calls: the role label, line breaks and the tool-call brackets."""
    lines = ([""] if has_text else []) + ["[tool call ()]"] * calls
    return tokens.tokens_of_counts(tokens.text_counts(f"{role}: " + "\n".join(lines)), weights)


def _block_tokens(
    msg: ChatMessage, block: str, wrappings: dict[tuple[str, bool, int], int] | None = None
) -> int:
    """At least the tokens of ``block``, the transcript line of ``msg``, from the message's
    cached estimate: the 500 messages of a compaction are not counted a second time.

    Class counts add up, so the text's and the wrapping's tokens, each rounded, come to at
    most one less than the whole's; one is added. (Only the search for base64-like runs
    looks at the whole text, and lower-case wrapping makes it less likely.)

    ``wrappings`` remembers the wrapping's tokens by (role, has text, calls) for a caller
    that sizes many messages under the same weights."""
    if msg.content is not None and not isinstance(msg.content, str):
        return tokens.estimate_tokens(block)
    own = tokens.estimate_message_tokens(msg) - tokens.MESSAGE_OVERHEAD
    shape = (msg.role, bool(msg.content), len(msg.tool_calls or ()))
    wrapping = wrappings.get(shape) if wrappings is not None else None
    if wrapping is None:
        wrapping = _wrapping_tokens(*shape, tokens.current_weights())
        if wrappings is not None:
            wrappings[shape] = wrapping
    return own + wrapping + 1


def transcript_pieces(
    messages: list[ChatMessage], max_tokens: int | None, sources: list[str] | None = None
) -> list[tuple[str, list[str]]]:
    """The transcript of ``messages`` in pieces of at most ``max_tokens`` tokens each, with
    the fact sources of each piece (what its summary must keep). ``sources`` are the
    messages' fact sources (:func:`_fact_source`) when the caller has them already.

    A message is split only when it alone exceeds a piece; its parts are labelled
    "role (part i of n): …" so the summariser knows they belong together.
    """
    if sources is None:
        sources = [_fact_source(m) for m in messages]
    blocks: list[tuple[str, str, int]] = []  # (block, its fact source, its tokens)
    wrappings: dict[tuple[str, bool, int], int] = {}
    for msg, source in zip(messages, sources, strict=True):
        content = msg.content
        # A plain text message is its own transcript text.
        body = content if isinstance(content, str) and not msg.tool_calls else transcript_text(msg)
        block = f"{msg.role}: {body}"
        if max_tokens is None:
            blocks.append((block, source, 0))
            continue
        cost = _block_tokens(msg, block, wrappings)
        if cost > max_tokens:  # a bound: count afresh before splitting the message
            cost = tokens.estimate_tokens(block)
        if cost <= max_tokens:
            blocks.append((block, source, cost))
            continue
        label_room = tokens.estimate_tokens(f"{msg.role} (part 999 of 999): ")
        parts = split_text(body, max(1, max_tokens - label_room))
        for i, part in enumerate(parts, 1):
            labelled = f"{msg.role} (part {i} of {len(parts)}): {part}"
            blocks.append((labelled, part, tokens.estimate_tokens(labelled)))
    if max_tokens is None:
        return [("\n\n".join(b for b, _, _ in blocks), [src for _, src, _ in blocks])]
    pieces: list[tuple[str, list[str]]] = []
    current: list[tuple[str, str, int]] = []
    used = 0
    budget = max_tokens * WINDOW_MARGIN
    for block in blocks:
        cost = block[2] + 1
        if current and used + cost > budget:
            pieces.append(_piece(current))
            current, used = [], 0
        current.append(block)
        used += cost
    if current:
        pieces.append(_piece(current))
    return pieces


def _piece(blocks: list[tuple[str, str, int]]) -> tuple[str, list[str]]:
    return "\n\n".join(b for b, _, _ in blocks), [src for _, src, _ in blocks]


# ----------------------------------------------------------------------- the calls


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


def fit_reply(text: str, max_tokens: int) -> str:
    """``text`` cut back to ``max_tokens``: whole lines where possible, marked with "…"."""
    if tokens.estimate_tokens(text) <= max_tokens:
        return text
    lines = text.split("\n")
    kept: list[str] = []
    used = tokens.estimate_tokens("…")
    for line in lines:
        cost = tokens.estimate_tokens(line + "\n")
        if used + cost > max_tokens:
            break
        kept.append(line)
        used += cost
    # Per-line estimates add up to a little less than the joined text's: drop lines to fit.
    while kept and tokens.estimate_tokens("\n".join(kept) + "\n…") > max_tokens:
        kept.pop()
    if kept:
        return "\n".join(kept) + "\n…"
    return clip_to_tokens(text, max_tokens)


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


def _fact_source(msg: ChatMessage) -> str:
    """The text whose facts a summary must keep: content plus tool-call arguments."""
    text = msg.text()
    if msg.tool_calls:
        text = "\n".join([text, *(f"{c.name} {c.arguments}" for c in msg.tool_calls)])
    return text


class _Rounds:
    """One summarising job: its calls share the LLM, hint, timeout and the tally."""

    def __init__(self, llm: Any, hint: str, timeout: float | None, off_loop: bool) -> None:
        self.off_loop = off_loop
        self.llm = llm
        # What is sent is sized in the summariser's own tokens (its model's weights, when
        # its LLM carries them); caps and summaries stay in the caller's, since a summary
        # lands in the caller's context.
        self.window_weights = tokens.weights_of(llm)
        self.hint = hint
        self.timeout = timeout
        self.outcome = SummaryOutcome(None)

    async def call(self, transcript: str, cap: int, sources: list[str]) -> str:
        """One summary of ``transcript`` within ``cap`` tokens, fact-checked against
        ``sources``; raises on any LLM fault."""
        facts_room = min(KEY_FACTS_MAX_TOKENS, cap // 4)
        # One token of slack: two estimates joined can come to one more than their sum.
        body_cap = max(1, cap - facts_room - 1)
        request = [
            ChatMessage(role="system", content=compact_prompt(self.hint, body_cap)),
            ChatMessage(role="user", content=transcript),
        ]
        self.outcome.calls += 1
        call = self.llm.chat(request, max_tokens=body_cap)
        result = await (asyncio.wait_for(call, self.timeout) if self.timeout else call)
        reply_usage = getattr(result, "usage", None)
        if isinstance(reply_usage, Usage):
            self.outcome.usage.add(reply_usage)
        text = _reply_text(result)
        if not text:
            raise _EmptySummary
        checked, trimmed = await self.run(
            _fit_and_check, text, body_cap, sources, cap - body_cap - 1
        )
        if trimmed is not None:
            self.outcome.overshoots += 1
            self.outcome.trimmed_tokens += trimmed
        self.outcome.missing_facts, self.outcome.appended_facts = checked.missing, checked.appended
        self.outcome.facts_missing = len(checked.missing)
        self.outcome.facts_appended = len(checked.appended)
        return checked.text

    async def run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, in a worker thread when the job is large."""
        if self.off_loop:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return fn(*args, **kwargs)


def _fit_and_check(
    text: str, body_cap: int, sources: list[str], facts_room: int
) -> tuple[KeyFacts, int | None]:
    """A reply cut back to ``body_cap`` and fact-checked against ``sources``: (the check,
    the tokens cut or None when it fitted)."""
    body = fit_reply(text, body_cap)
    trimmed = None
    if body != text:
        trimmed = tokens.estimate_tokens(text) - tokens.estimate_tokens(body)
    return check_key_facts(body, sources, max_tokens=facts_room), trimmed


class _EmptySummary(Exception):
    pass


def _prompt_tokens(hint: str, cap: int) -> int:
    return tokens.estimate_tokens(compact_prompt(hint, cap)) + 2 * tokens.MESSAGE_OVERHEAD


async def summarise_rounds(
    messages: list[ChatMessage],
    llm: Any,
    *,
    hint: str = "general",
    max_summary_tokens: int,
    window_tokens: int | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 — bounds each LLM call only
) -> SummaryOutcome:
    """One ``[Conversation summary]`` message for ``messages``; never raises for LLM faults.

    ``max_summary_tokens`` caps the summary's content; ``window_tokens`` is the most one
    call may send (system prompt and transcript), None for no limit. Every call is exactly
    two messages: system = the hint's prompt with the cap, user = a transcript piece.
    """
    cap = max(1, max_summary_tokens - tokens.estimate_tokens(SUMMARY_PREFIX + "\n") - 1)
    sources = [_fact_source(m) for m in messages]
    job = _Rounds(llm, hint, timeout, off_loop=sum(map(len, sources)) > OFF_LOOP_CHARS)
    job.outcome.cap = max_summary_tokens
    piece_tokens = None
    if window_tokens is not None:
        with tokens.use_weights(job.window_weights):
            prompt = _prompt_tokens(hint, cap)
        piece_tokens = max(MIN_PIECE_TOKENS, int(window_tokens * WINDOW_MARGIN) - prompt)
    try:
        with tokens.use_weights(job.window_weights):  # a worker thread copies the context
            pieces = await job.run(transcript_pieces, messages, piece_tokens, sources)
        job.outcome.pieces = len(pieces)
        job.outcome.rounds = 1
        if len(pieces) == 1:
            body = await job.call(pieces[0][0], cap, sources)
        else:
            body = await _fold(job, pieces, cap, piece_tokens or cap, sources)
    except Exception as exc:  # any LLM fault falls back; cancellation propagates
        error = (
            "compaction LLM returned an empty summary"
            if isinstance(exc, _EmptySummary)
            else _describe(exc)
        )
        job.outcome.error = error
        job.outcome.facts_missing = job.outcome.facts_appended = 0
        job.outcome.missing_facts, job.outcome.appended_facts = [], []
        return job.outcome
    content = f"{SUMMARY_PREFIX}\n{body}"
    # Pieces estimated apart can come to a token more once joined: cut until it fits.
    while (over := tokens.estimate_tokens(content) - max_summary_tokens) > 0:
        body = clip_to_tokens(body, max(0, tokens.estimate_tokens(body) - over - 1))
        content = f"{SUMMARY_PREFIX}\n{body}"
        if not body:
            break
    folded = sum(m.metadata.get("summarized_count", 1) if m.is_summary else 1 for m in messages)
    job.outcome.summary = ChatMessage(
        role="system",
        content=content,
        metadata={"summarized_count": folded, "compaction": True},
    )
    return job.outcome


async def _fold(
    job: _Rounds,
    pieces: list[tuple[str, list[str]]],
    cap: int,
    piece_tokens: int,
    sources: list[str],
) -> str:
    """Summarise each piece, then fold the partial summaries until one is left."""
    # A partial summary takes at most a third of a piece, so two or more fit in the next
    # piece and every fold at least halves their number; and never more than the final cap.
    partial_cap = max(MIN_CAP_TOKENS, min(cap, piece_tokens // 3))
    while True:
        total = len(pieces)
        partials = []
        for i, (piece, piece_sources) in enumerate(pieces, 1):
            header = f"[Part {i} of {total} of the conversation]\n\n"
            partials.append(await job.call(header + piece, partial_cap, piece_sources))
        blocks = [f"system: {SUMMARY_PREFIX}\n{p}" for p in partials]
        joined = "\n\n".join(blocks)
        job.outcome.rounds += 1
        with tokens.use_weights(job.window_weights):
            fits = tokens.estimate_tokens(joined) <= piece_tokens
            packed = [] if fits else _pack([b + "\n\n" for b in blocks], piece_tokens)
        if fits:
            return await job.call(joined, cap, sources)
        pieces = [(p.rstrip("\n"), [p.rstrip("\n")]) for p in packed]
        if len(pieces) >= total:  # did not shrink (estimates): ask for shorter partials
            partial_cap = max(MIN_CAP_TOKENS, partial_cap // 2)


async def summarise(
    messages: list[ChatMessage],
    llm: Any,
    *,
    hint: str = "general",
    max_summary_tokens: int,
    window_tokens: int | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 — bounds each LLM call only
) -> tuple[ChatMessage | None, Usage, str | None, tuple[int, int]]:
    """:func:`summarise_rounds` as (summary or None, usage, error or None, (missing,
    appended))."""
    out = await summarise_rounds(
        messages,
        llm,
        hint=hint,
        max_summary_tokens=max_summary_tokens,
        window_tokens=window_tokens,
        timeout=timeout,
    )
    return out.summary, out.usage, out.error, (out.facts_missing, out.facts_appended)
