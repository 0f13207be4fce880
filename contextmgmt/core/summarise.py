"""Summarising a run of messages with an LLM, in rounds when it does not fit one call.

Every message handed over reaches the summariser whole: the transcript (``transcript``)
comes in pieces that fit the compactor's input window, a message too large for one piece
split rather than clipped. One piece is one call. Several pieces are each summarised, and
their summaries are folded by the same means until one is left.

Every call is told its cap: ``max_tokens`` on the call and the target in its system
prompt. A reply over its cap is cut back at a line boundary (``textcut.fit_reply``; the cut
is counted), so no summary is ever longer than asked. The summary then goes through the
fact check (``factcheck``): hard facts of the sources it dropped are appended in a ``Key
facts`` line, within the same cap, what the user stated in words and what an earlier
summary being folded kept first (``transcript.stated_text``); a fold is checked against
the facts of the summaries it folds as well as its messages'.

This module is the job: the calls, their caps, the folds and the tally of what they did
(``SummaryOutcome``); an LLM fault ends it with an error, never an exception.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from . import tokens
from .factcheck import KEY_FACTS_MAX_TOKENS, KeyFacts, Stated, check_key_facts
from .factscan import Scanned
from .factstore import known_facts
from .llm import Usage
from .messages import STORED_FACTS, SUMMARY_PREFIX, ChatMessage
from .prompts import compact_prompt
from .readon import newest_read_on_lines
from .textcut import WINDOW_MARGIN, clip_to_tokens, fit_reply, pack_segments
from .transcript import fact_source, stated_text, transcript_pieces

# Heads the read-on lines a summary keeps of the messages it stands for.
READING_IN_PARTS = "Read in parts so far (where each stands, how to read on):"
# Never ask for a summary shorter than this (a cap below it says nothing useful).
MIN_CAP_TOKENS = 32
# Sources of more characters than this are split and fact-checked in a worker thread, so
# that the event loop serving every other socket is not held for the whole computation.
OFF_LOOP_CHARS = 60_000
# A transcript piece is never smaller than this, however small the window.
MIN_PIECE_TOKENS = 256


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


class _Rounds:
    """One summarising job: its calls share the LLM, hint, timeout and the tally."""

    def __init__(
        self,
        llm: Any,
        hint: str,
        timeout: float | None,
        off_loop: bool,
        stated: Stated,
        known: dict[str, Scanned],
        instructions: bool = False,
    ) -> None:
        self.off_loop = off_loop
        self.stated = stated  # what the user stated in words and earlier summaries kept
        self.known = known  # the facts stored with the messages, by fact source
        self.llm = llm
        # What is sent is sized in the summariser's own tokens (its model's weights, when
        # its LLM carries them); caps and summaries stay in the caller's, since a summary
        # lands in the caller's context.
        self.window_weights = tokens.weights_of(llm)
        self.hint = hint
        # The context has standing instructions: the prompt says they are kept elsewhere.
        self.instructions = instructions
        self.timeout = timeout
        self.outcome = SummaryOutcome(None)

    async def call(self, transcript: str, cap: int, sources: list[str]) -> str:
        """One summary of ``transcript`` within ``cap`` tokens, fact-checked against
        ``sources``; raises on any LLM fault."""
        facts_room = min(KEY_FACTS_MAX_TOKENS, cap // 4)
        # One token of slack: two estimates joined can come to one more than their sum.
        body_cap = max(1, cap - facts_room - 1)
        request = [
            ChatMessage(
                role="system",
                content=compact_prompt(self.hint, body_cap, instructions=self.instructions),
            ),
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
            _fit_and_check, text, body_cap, sources, cap - body_cap - 1, self.stated, self.known
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
    text: str,
    body_cap: int,
    sources: list[str],
    facts_room: int,
    stated: list[str] | Stated,
    known: dict[str, Scanned],
) -> tuple[KeyFacts, int | None]:
    """A reply cut back to ``body_cap`` and fact-checked against ``sources``: (the check,
    the tokens cut or None when it fitted)."""
    body = fit_reply(text, body_cap)
    trimmed = None
    if body != text:
        trimmed = tokens.estimate_tokens(text) - tokens.estimate_tokens(body)
    checked = check_key_facts(body, sources, max_tokens=facts_room, stated=stated, known=known)
    return checked, trimmed


class _EmptySummary(Exception):
    pass


def _prompt_tokens(hint: str, cap: int, instructions: bool = False) -> int:
    prompt = compact_prompt(hint, cap, instructions=instructions)
    return tokens.estimate_tokens(prompt) + 2 * tokens.MESSAGE_OVERHEAD


async def summarise_rounds(
    messages: list[ChatMessage],
    llm: Any,
    *,
    hint: str = "general",
    max_summary_tokens: int,
    window_tokens: int | None = None,
    timeout: float | None = None,  # noqa: ASYNC109 — bounds each LLM call only
    instructions: bool = False,
) -> SummaryOutcome:
    """One ``[Conversation summary]`` message for ``messages``; never raises for LLM faults.

    ``max_summary_tokens`` caps the summary's content; ``window_tokens`` is the most one
    call may send (system prompt and transcript), None for no limit. Every call is exactly
    two messages: system = the hint's prompt with the cap, user = a transcript piece.
    ``instructions``: the context has standing instructions (never among ``messages``); the
    prompt says they are kept elsewhere, so that the summary does not restate them.
    """
    cap = max(1, max_summary_tokens - tokens.estimate_tokens(SUMMARY_PREFIX + "\n") - 1)
    sources = [fact_source(m) for m in messages]
    stated = [text for text in map(stated_text, messages) if text]
    # Facts found when the messages were stored are not looked for again.
    known = known_facts(
        (source, m.metadata[STORED_FACTS])
        for m, source in zip(messages, sources, strict=True)
        if STORED_FACTS in m.metadata
    )
    off_loop = sum(map(len, sources)) > OFF_LOOP_CHARS
    # The facts of what the user stated and earlier summaries kept, for every check of the
    # job at once (scanned, when not stored, with the rest: in a worker for a large job).
    facts_stated = (
        await asyncio.to_thread(Stated.of, stated, known) if off_loop else Stated.of(stated, known)
    )
    job = _Rounds(llm, hint, timeout, off_loop, facts_stated, known, instructions)
    job.outcome.cap = max_summary_tokens
    piece_tokens = None
    if window_tokens is not None:
        with tokens.use_weights(job.window_weights):
            prompt = _prompt_tokens(hint, cap, instructions)
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
    # Where the pages read in parts stand and how to read on: kept as written, whatever
    # the summariser made of them (docs/architecture.md, "Reading in parts").
    pointers = [line for line in newest_read_on_lines(sources) if line not in body]
    reading = f"\n{READING_IN_PARTS}\n" + "\n".join(pointers) if pointers else ""
    content = f"{SUMMARY_PREFIX}\n{body}{reading}"
    # Pieces estimated apart can come to a token more once joined: cut until it fits.
    while (over := tokens.estimate_tokens(content) - max_summary_tokens) > 0:
        body = clip_to_tokens(body, max(0, tokens.estimate_tokens(body) - over - 1))
        content = f"{SUMMARY_PREFIX}\n{body}{reading}"
        if not body:
            if reading:
                reading, content = "", f"{SUMMARY_PREFIX}\n{body}"
                continue
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
            packed = [] if fits else pack_segments([b + "\n\n" for b in blocks], piece_tokens)
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
