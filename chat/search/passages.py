"""Long texts as passages: what the full-text index stores for a message, a paste, a table.

A 20,000-character paste indexed as one document competes as one: any of its thousands of
words matches it, and the engines' length normalisation (BM25 on SQLite) ranks it below
every short message that names the same word. Cut into passages of about
``PASSAGE_CHARS`` characters at line breaks (a line too long on its own at a sentence end
or a space), the one line that holds a detail competes on its passage, and ``recall``
quotes the passage it was found in.

Each passage is a verbatim slice of its text, with its offset there. A passage that starts
inside a table (Markdown ``|`` rows or tab-separated columns) carries the table's header
row as ``context``: indexed with the passage, not quoted, so "the Frankfurt row's price"
still finds a row whose header says "price". Other kinds of source (a document's pages)
use the same function: see docs/architecture.md, "Search".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A text up to this long is one passage; a longer one is cut into passages of about
# PASSAGE_CHARS (never more than PASSAGE_MAX_CHARS).
PASSAGE_MAX_CHARS = 1_500
PASSAGE_CHARS = 1_000
_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；])\s*")


@dataclass(frozen=True, slots=True)
class Passage:
    offset: int  # where ``text`` starts in the whole text
    text: str  # a verbatim slice of the whole text
    context: str = ""  # indexed with the passage but not part of it: a table's header row


def _is_table_row(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") or stripped.count("\t") >= 2


def _lines(text: str) -> list[tuple[int, str]]:
    """``(offset, line)`` of ``text``, each line with its line break; a line longer than a
    passage is cut at sentence ends, or spaces, or anywhere (CJK text has no spaces)."""
    out: list[tuple[int, str]] = []
    at = 0
    for line in text.splitlines(keepends=True):
        if len(line) <= PASSAGE_CHARS:
            out.append((at, line))
        else:
            out.extend((at + start, piece) for start, piece in _cut_long_line(line))
        at += len(line)
    return out


def _cut_long_line(line: str) -> list[tuple[int, str]]:
    pieces: list[tuple[int, str]] = []
    start = 0
    while len(line) - start > PASSAGE_CHARS:
        window = line[start : start + PASSAGE_CHARS]
        cut = max((m.end() for m in _SENTENCE_END.finditer(window) if m.end() > 0), default=0)
        if cut < PASSAGE_CHARS // 2:
            space = window.rfind(" ")
            cut = space + 1 if space >= PASSAGE_CHARS // 2 else PASSAGE_CHARS
        pieces.append((start, line[start : start + cut]))
        start += cut
    pieces.append((start, line[start:]))
    return pieces


def passages(text: str) -> list[Passage]:
    """``text`` as the passages it is indexed as (one when it is short)."""
    if len(text) <= PASSAGE_MAX_CHARS:
        return [Passage(0, text)]
    out: list[Passage] = []
    current: list[tuple[int, str]] = []
    size = 0
    header = ""  # the header row of the table the text is in, "" outside tables
    context = ""  # the header row of the passage being built
    previous = ""
    for offset, line in _lines(text):
        if _is_table_row(line):
            if not _is_table_row(previous):
                header = line.strip()
        else:
            header = ""
        if current and size + len(line) > PASSAGE_CHARS:
            out.append(_passage(current, context))
            current, size = [], 0
        if not current:
            # A passage that starts on a row below the header carries the header along.
            context = header if header and header != line.strip() else ""
        current.append((offset, line))
        size += len(line)
        previous = line
    if current:
        out.append(_passage(current, context))
    return [p for p in out if p.text.strip()]


def _passage(lines: list[tuple[int, str]], context: str) -> Passage:
    return Passage(lines[0][0], "".join(line for _, line in lines), context)
