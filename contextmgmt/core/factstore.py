"""Stored facts: a message's facts found once, when it is stored, and taken back at a load.

``stored_facts(text)`` is the JSON a message keeps (its ``facts`` column in the chat):
the facts' places, kinds, values and weights by column, whether the text holds a
correction cue, a checksum of the text and a fingerprint of the scan's version and
patterns. ``known_facts`` takes them back for a compaction, as the scan (``factscan``)
would give them, for the texts they still hold for; the others are scanned. Apart from
the scan because this is its storage format and its checks, not the finding of facts.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterable
from itertools import chain
from typing import Any

from .factcues import ANY_CUE, cued
from .factlang import NAME_WORDS, language_facts
from .factpatterns import PATTERN_WEIGHT, scanner_for
from .factscan import (
    REPEATED_LINE_MIN,
    Placed,
    Scanned,
    facts_in,
    scanned_in_a_row,
    with_occurrences,
    without_repeated_lines,
)

# Stored facts: a message's facts are found once, when it is stored (``stored_facts``),
# and kept with it; a compaction takes them (``known_facts``) instead of scanning its text
# again. They carry the fingerprint of the patterns that found them and a checksum of
# the text they were found in: facts found by other patterns, or in another text (an
# edited message, documents joined to it since), are not taken, the text is scanned.


# Raised when what the scan does with the patterns' matches changes (the patterns
# themselves are in the fingerprint).
SCAN_VERSION = 2


@functools.cache
def scan_fingerprint() -> str:
    """A checksum of the scan's version and every pattern it uses: stored facts found by
    other patterns are found again."""
    parts = [
        str(SCAN_VERSION),
        str(REPEATED_LINE_MIN),
        repr([row[:3] for rows in language_facts().values() for row in rows]),
        repr(sorted(NAME_WORDS)),
        repr(sorted(PATTERN_WEIGHT.items())),
        scanner_for("://@/`=\u00e9")[0].pattern,  # every kind of the combined pattern
        ANY_CUE.pattern,
    ]
    return f"{zlib.crc32(chr(0).join(parts).encode('utf-8', 'surrogatepass')):08x}"


def _text_checksum(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


# The columns of stored facts: each fact's start, end, kind, value and weight.
_STORED_COLUMNS = ("start", "end", "kind", "value", "weight")


def stored_facts(text: str) -> dict[str, Any]:
    """``text``'s facts as a message stores them (JSON): the patterns' fingerprint, the
    text's checksum, whether it holds a correction cue, and its facts by column (starts,
    ends, kinds, values, weights: a load checks and rebuilds each column in one C call,
    not five conversions per fact)."""
    cleaned = without_repeated_lines(text)
    placed = facts_in(cleaned)
    columns = list(zip(*placed, strict=True)) if placed else [()] * len(_STORED_COLUMNS)
    return {
        "scan": scan_fingerprint(),
        "text": _text_checksum(text),
        "cued": cued([cleaned])[0],
        "facts": {
            name: list(column) for name, column in zip(_STORED_COLUMNS, columns, strict=True)
        },
    }


def _stored_rows(facts: dict[str, Any]) -> list[Placed] | None:
    """The stored columns of facts as rows (None unless every column is a list of its
    type, all of one length, and no value is empty): the columns' items checked by their
    types' set, a few C calls whatever their number."""
    columns: list[Any] = [facts.get(name) for name in _STORED_COLUMNS]
    if {type(column) for column in columns} != {list}:
        return None
    starts, ends, kinds, values, weights = columns
    if not values:
        return [] if not (starts or ends or kinds or weights) else None
    if len({len(column) for column in columns}) != 1 or "" in values:
        return None
    if not set(map(type, chain(starts, ends, weights))) <= {int}:
        return None
    if not set(map(type, chain(kinds, values))) <= {str}:
        return None
    return list(zip(starts, ends, kinds, values, weights, strict=True))


def known_facts(stored: Iterable[tuple[str, Any]]) -> dict[str, Scanned]:
    """The stored facts (:func:`stored_facts`) of each (text, stored) that still hold for
    their text and the present patterns, as a scan would give them, by text; the others
    (other patterns, another text, not facts) are left out: their texts are scanned.

    The columns of all texts are checked together (their types and lengths, a few C calls
    for hundreds of messages); only when one of them is not as stored is each looked at
    apart (:func:`_stored_rows`)."""
    stored = list(stored)
    fingerprint = scan_fingerprint()
    texts: list[str] = []
    cues: list[bool] = []
    columns: list[Any] = []  # the five columns of each text in turn
    taken: set[str] = set()
    names = _STORED_COLUMNS
    for text, entry in stored:
        if text in taken or not isinstance(entry, dict) or entry.get("scan") != fingerprint:
            continue
        facts = entry.get("facts")
        cue = entry.get("cued")
        if not isinstance(facts, dict) or type(cue) is not bool:
            continue
        if entry.get("text") != _text_checksum(text):
            continue
        taken.add(text)
        texts.append(text)
        cues.append(cue)
        columns += map(facts.get, names)
    if not _columns_hold(columns):
        return _known_apart(stored, fingerprint)
    starts, ends, kinds, values, weights = (
        list(chain.from_iterable(columns[at :: len(names)])) for at in range(len(names))
    )
    sizes = list(map(len, columns[3 :: len(names)]))
    scanned = scanned_in_a_row(
        kinds, values, weights, sizes, cues, starts_ends=(tuple(starts), tuple(ends))
    )
    return dict(zip(texts, scanned, strict=True))


def _columns_hold(columns: list[Any]) -> bool:
    """Whether the stored columns (five per text, in turn) are lists of their types, a
    text's all of one length, and no value is empty: :func:`_stored_rows` of every text at
    once."""
    if not set(map(type, columns)) <= {list}:
        return False
    width = len(_STORED_COLUMNS)
    lengths = list(map(len, columns))
    first = lengths[0::width]
    if any(lengths[at::width] != first for at in range(1, width)):
        return False
    numbers = chain.from_iterable(columns[at::width] for at in (0, 1, 4))
    if not set(map(type, chain.from_iterable(numbers))) <= {int}:
        return False
    values = columns[3::width]
    words = chain.from_iterable(chain(columns[2::width], values))
    if not set(map(type, words)) <= {str}:
        return False
    return not any("" in column for column in values)


def _known_apart(stored: list[tuple[str, Any]], fingerprint: str) -> dict[str, Scanned]:
    """:func:`known_facts` looking at each text's columns apart (some are not as stored:
    those are left out)."""
    texts: list[str] = []
    placed: list[list[Placed]] = []
    cues: list[bool] = []
    taken: set[str] = set()
    for text, entry in stored:
        if text in taken:  # the same text again ("OK", a repeated question): one is enough
            continue
        if not isinstance(entry, dict) or entry.get("scan") != fingerprint:
            continue
        facts = entry.get("facts")
        cue = entry.get("cued")
        if not isinstance(facts, dict) or type(cue) is not bool:
            continue
        rows = _stored_rows(facts)
        if rows is None or entry.get("text") != _text_checksum(text):
            continue
        taken.add(text)
        texts.append(text)
        placed.append(rows)
        cues.append(cue)
    return dict(zip(texts, with_occurrences(placed, cues), strict=True))
