"""The transcript a summariser reads: one "role: text" block per message, in pieces.

``build_transcript`` writes the whole transcript (images and tool calls marked in words,
earlier summaries included so that a new summary folds them in). ``transcript_pieces``
writes it in pieces that fit the summariser's input window, each with the fact sources of
its messages (``fact_source``: what its summary must keep, for ``factcheck``). A message
is split only when it alone exceeds a piece (``textcut.split_text``), its parts labelled
"role (part i of n)"; nothing is clipped or left out.

Sizing reuses each message's cached token estimate plus the tokens of what the transcript
wraps around it, so the hundreds of messages of one compaction are not counted twice.
Apart from the rounds of calls (``summarise``) because this is plain text work, run in a
worker thread when the sources are large.
"""

from __future__ import annotations

import functools

from . import tokens
from .messages import ChatMessage
from .textcut import WINDOW_MARGIN, split_text


def transcript_text(msg: ChatMessage) -> str:
    """A message's text for the transcript, with images and tool calls marked."""
    parts: list[str] = []
    text = msg.text()
    if text:
        parts.append(text)
    images = msg.image_text()
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


def fact_source(msg: ChatMessage) -> str:
    """The text whose facts a summary must keep: content plus tool-call arguments."""
    text = msg.text()
    if msg.tool_calls:
        text = "\n".join([text, *(f"{c.name} {c.arguments}" for c in msg.tool_calls)])
    return text


# A user message longer than this, or of more lines, is mostly a paste: only its first line
# is taken as what the user stated in words.
STATED_MAX_CHARS = 1_200
STATED_MAX_LINES = 12


def stated_text(msg: ChatMessage) -> str:
    """What of ``msg`` the user stated in words, or an earlier summary kept ("" for the
    rest): the fact check ranks its facts before those of pastes and tool output."""
    if msg.is_summary:
        return msg.text()
    if msg.role != "user":
        return ""
    text = msg.text()
    if len(text) <= STATED_MAX_CHARS and text.count("\n") < STATED_MAX_LINES:
        return text
    return text.split("\n", 1)[0][:STATED_MAX_CHARS]


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
    messages' fact sources (:func:`fact_source`) when the caller has them already.

    A message is split only when it alone exceeds a piece; its parts are labelled
    "role (part i of n): …" so the summariser knows they belong together.
    """
    if sources is None:
        sources = [fact_source(m) for m in messages]
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
    for entry in blocks:
        cost = entry[2] + 1
        if current and used + cost > budget:
            pieces.append(_piece(current))
            current, used = [], 0
        current.append(entry)
        used += cost
    if current:
        pieces.append(_piece(current))
    return pieces


def _piece(blocks: list[tuple[str, str, int]]) -> tuple[str, list[str]]:
    return "\n\n".join(b for b, _, _ in blocks), [src for _, src, _ in blocks]
