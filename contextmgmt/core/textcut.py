"""Cutting a text to a token size: into pieces that lose nothing, or back to a cap.

Two kinds of cut, both measured with the estimator of ``tokens`` (under whatever weights
the caller has set):

- *Splitting* (``split_text``, ``pack_segments``) gives consecutive pieces of at most so
  many tokens that join back to the whole text; cuts fall on paragraph boundaries where
  possible, then lines, sentences, words, and only for a single overlong word between
  characters. Summarising sends every message whole this way (``transcript``).
- *Clipping* (``clip_to_tokens``, ``fit_reply``) keeps the longest prefix within a cap and
  marks the cut with "…": a summary reply over its cap (``summarise``), a stored summary
  too large for the request it goes into (``compact``, ``contextmgmt.db_memory``).

Apart from the transcript and the calls because it knows nothing of messages or LLMs.
"""

from __future__ import annotations

from . import tokens

# Pieces are packed to this share of their size and no further: estimates are not exact,
# and what is sent must still fit the summariser's window.
WINDOW_MARGIN = 0.9
# Separators a long text is split on, largest first.
_SEPARATORS = ("\n\n", "\n", ". ", " ")


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
            return pack_segments([s + sep for s in segments[:-1]] + [segments[-1]], max_tokens)
    return _cut_chars(text, max_tokens)


def pack_segments(segments: list[str], max_tokens: int) -> list[str]:
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
