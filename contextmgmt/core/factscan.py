"""Finding the facts of a text: each text scanned once, what a check needs of each fact
worked out once, and kept with the text.

A text is scanned with the language tables (``factlang``: amounts, dates, addresses, names
and phone numbers as each language writes them) and the combined pattern of the kinds it
can hold (``factpatterns``), whose matches inside a fact of the first are left out;
lines a message repeats as a template (a pasted log) are left out first (the offline
summariser, ``fimone.llm.offline.text``, uses the same templates). For each fact
found, its key (normalised text), what presence searches the summary for, its kind's weight
and its shape are worked out for all new texts together (a few C calls over their values
joined), as an :data:`Occurrence`, and kept in a small LRU cache by text, so a
compaction's later checks and the next compaction of the same conversation only tally and
rank (``factcheck``). Apart from the check because this is the costly, cached half: the
check never looks at a source's text again.
"""

from __future__ import annotations

import functools
import re
import threading
import zlib
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any

from .factcues import ANY_CUE, cued
from .factlang import NAME_WORDS, SEPARATOR, language_facts, locale_facts_of, plain_ascii_apart
from .factpatterns import PATTERN_WEIGHT, scanner_for

# A separator between digits and three more (a comma, a space, a no-break or narrow
# no-break space, an apostrophe); the look behind comes after the separator so that the
# pattern starts with it (the regex engine then skips other characters in C).
_THOUSANDS = re.compile(r"[, \u00a0\u202f'’](?<=\d[, \u00a0\u202f'’])(?=\d{3}\b)")
# Digits, upper- and lower-case ASCII letters each become one symbol: two facts of the same
# template ("10.0.3.17" and "10.0.9.21") get the same shape.
SHAPE = str.maketrans(
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "0" * 10 + "A" * 26 + "a" * 26,
)
_SHAPE_BYTES = bytes.maketrans(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"0" * 10 + b"A" * 26 + b"a" * 26,
)


def normalise(text: str) -> str:
    """``text`` as facts are compared: case folded, thousands separators dropped."""
    return _THOUSANDS.sub("", text.casefold())


# A line repeated with other numbers at least this often in one message is a log's template.
REPEATED_LINE_MIN = 3
_NO_DIGITS = str.maketrans("", "", "0123456789")
_DIGIT_BYTES = b"0123456789"


def template_of(line: str) -> str:
    """A line with its digits removed: lines of one log template share it."""
    return line.translate(_NO_DIGITS)


def repeated_templates(text: str) -> set[str]:
    """The templates (:func:`template_of`) that ``text`` repeats on at least
    ``REPEATED_LINE_MIN`` of its lines (blank lines aside)."""
    if text.count("\n") < REPEATED_LINE_MIN - 1:
        return set()
    counts = Counter(text.translate(_NO_DIGITS).split("\n"))
    return {shape for shape, n in counts.items() if n >= REPEATED_LINE_MIN and shape.strip()}


def without_repeated_lines(text: str) -> str:
    """``text`` without the lines of a template it repeats with other numbers.

    A pasted log or a tool's listing repeats one template hundreds of times; its values
    (timestamps, request ids, addresses) are noise a summary is right to drop, and looking
    at each would cost more than the rest of a compaction.
    """
    if text.count("\n") < REPEATED_LINE_MIN - 1:
        return text
    # The templates are taken from the UTF-8 bytes (ASCII digits are single bytes there, so
    # two lines share a template exactly when their texts do): bytes translate several
    # times faster than str.
    shapes = text.encode("utf-8", "surrogatepass").translate(None, _DIGIT_BYTES).split(b"\n")
    counts = Counter(shapes)
    repeated = {
        shape
        for shape, n in counts.items()
        if n >= REPEATED_LINE_MIN
        and shape.decode("utf-8", "surrogatepass").strip()  # blank: no template
    }
    if not repeated:
        return text
    lines = text.split("\n")
    return "\n".join(
        [line for line, shape in zip(lines, shapes, strict=True) if shape not in repeated]
    )


# Texts up to this size have their facts cached (at most _CACHED of them: as many as the
# corrections keep sentences of, so that a compaction of 1,000 messages finds its
# messages' facts again in its later checks instead of scanning them once per check).
_CACHED_CHARS = 32_000
_CACHED = 2048


# One fact found in a text: (kind, value, normalised key, what presence searches for, the
# kind's weight, the value's shape). Everything a fact check needs about it is worked out
# here once, and cached with the text.
Occurrence = tuple[str, str, str, str, int, bytes]


# A fact found at its place in a text: (start, end, kind, value, weight).
Placed = tuple[int, int, str, str, int]


class Scanned:
    """What a scan keeps of a text: its facts as the check needs them, and with their
    places in the text without its repeated lines (:func:`without_repeated_lines`), and
    whether that text holds a correction cue (``factcues.cued``), as corrections need
    them (so that they never read a text again).

    Facts taken from storage (:func:`known_facts`) keep their places as two columns and
    make ``placed`` when it is first read: corrections read it for a few texts only (those
    with a cue, and earlier ones naming what a correction is about), and the others'
    hundreds of tuples would only be more objects for the garbage collector to walk."""

    __slots__ = ("_ends", "_placed", "_starts", "cued", "occurrences")

    def __init__(
        self, occurrences: tuple[Occurrence, ...], placed: tuple[Placed, ...], cued: bool
    ) -> None:
        self.occurrences = occurrences
        self.cued = cued
        self._placed: tuple[Placed, ...] | None = placed
        self._starts: tuple[int, ...] = ()
        self._ends: tuple[int, ...] = ()

    @classmethod
    def with_places(
        cls,
        occurrences: tuple[Occurrence, ...],
        starts: tuple[int, ...],
        ends: tuple[int, ...],
        cued: bool,
    ) -> Scanned:
        """``placed`` made from its facts' starts and ends when first read."""
        scanned = cls(occurrences, (), cued)
        scanned._placed = None
        scanned._starts, scanned._ends = starts, ends
        return scanned

    @property
    def placed(self) -> tuple[Placed, ...]:
        placed = self._placed
        if placed is None:
            # Two threads may both make it: the same tuple, either one kept.
            occurrences = self.occurrences
            placed = tuple(
                zip(
                    self._starts,
                    self._ends,
                    [o[0] for o in occurrences],
                    [o[1] for o in occurrences],
                    [o[4] for o in occurrences],
                    strict=True,
                )
            )
            self._placed = placed
        return placed

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scanned):
            return NotImplemented
        return (self.occurrences, self.cued, self.placed) == (
            other.occurrences,
            other.cued,
            other.placed,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Scanned({self.occurrences!r}, {self.placed!r}, {self.cued!r})"


# Texts' facts by text, least recently used first: a compaction in rounds checks a
# message's facts in its round and again at the end, and the next compaction of the same
# conversation meets most of them again. Fact checks run in worker threads: a lock.
_cache: OrderedDict[str, Scanned] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every text's facts (the benches measure a first compaction with it)."""
    with _cache_lock:
        _cache.clear()


def occurrences_of(
    sources: list[str], known: Mapping[str, Scanned] | None = None
) -> list[tuple[Occurrence, ...]]:
    """The facts of each of ``sources``, in order; the texts not cached are taken from
    ``known`` (the facts stored with the messages, :func:`known_facts`) or scanned
    together (:func:`_scan`)."""
    return [scanned.occurrences for scanned in scans_of(sources, known)]


def placed_facts_of(
    sources: list[str], known: Mapping[str, Scanned] | None = None
) -> list[tuple[Placed, ...]]:
    """The facts of each of ``sources`` with their places in the text without its repeated
    lines (:func:`without_repeated_lines`), from the same scan and cache as
    :func:`occurrences_of`."""
    return [scanned.placed for scanned in scans_of(sources, known)]


def scans_of(sources: list[str], known: Mapping[str, Scanned] | None = None) -> list[Scanned]:
    """What a scan keeps of each of ``sources`` (its occurrences and placed facts): from
    the cache, from ``known``, or scanned together, the new ones cached."""
    found: list[Scanned | None] = []
    unseen: dict[str, None] = {}
    cached, used = _cache.get, _cache.move_to_end
    with _cache_lock:
        for text in sources:
            entry = cached(text)
            if entry is None:
                unseen[text] = None
            else:
                used(text)
            found.append(entry)
    if not unseen:
        return found  # type: ignore[return-value]
    scanned: dict[str, Scanned] = {}
    if known:
        for text in unseen:
            entry = known.get(text)
            if entry is not None:
                scanned[text] = entry
    rest = [text for text in unseen if text not in scanned]
    if rest:
        scanned.update(zip(rest, _scan_placed(rest), strict=True))
    with _cache_lock:
        for text, entry in scanned.items():
            if len(text) <= _CACHED_CHARS:
                _cache[text] = entry
        while len(_cache) > _CACHED:
            _cache.popitem(last=False)
    return [scanned[text] if e is None else e for text, e in zip(sources, found, strict=True)]


def _scan(texts: list[str], *, languages: bool = True) -> list[tuple[Occurrence, ...]]:
    """The facts of each of ``texts`` (:func:`_scan_placed` without the places)."""
    return [scanned.occurrences for scanned in _scan_placed(texts, languages=languages)]


def _scan_placed(texts: list[str], *, languages: bool = True) -> list[Scanned]:
    """The facts of each of ``texts``, scanned together (:func:`facts_in_texts`), with
    their occurrences (:func:`_with_occurrences`) and whether each holds a correction cue."""
    cleaned = [without_repeated_lines(text) for text in texts]
    return _with_occurrences(facts_in_texts(cleaned, languages=languages), cued(cleaned))


def _with_occurrences(placed: list[list[Placed]], cues: list[bool]) -> list[Scanned]:
    """Each text's placed facts with what a check needs of each (:data:`Occurrence`),
    worked out for all of them at once (a few C calls over their values joined, not a
    dozen Python steps per fact); ``cues``: whether each text holds a correction cue."""
    kinds: list[str] = []
    values: list[str] = []
    weights: list[int] = []
    sizes: list[int] = []  # how many facts each text has
    for found in placed:
        for _, _, kind, value, weight in found:
            kinds.append(kind)
            values.append(value)
            weights.append(weight)
        sizes.append(len(found))
    return _scanned(kinds, values, weights, sizes, cues, tuple(chain.from_iterable(placed)))


def _scanned(
    kinds: list[str],
    values: list[str],
    weights: list[int],
    sizes: list[int],
    cues: list[bool],
    places: tuple[Placed, ...] | None = None,
    starts_ends: tuple[tuple[int, ...], tuple[int, ...]] = ((), ()),
) -> list[Scanned]:
    """:func:`_with_occurrences` from the facts of all texts in a row (their kinds, values,
    weights, and places or their starts and ends) and how many each text has. (Each
    text's facts are slices of tuples of all of them: one object per text, no list
    copied.)"""
    if not values:
        return [Scanned((), (), cue) for cue in cues]
    # Case folding, the thousands separators and shapes go character by character, and a
    # NUL is neither a digit, a separator nor a word character: all values joined by NULs
    # are done in one go (some values span lines: a line break would not do).
    joined = "\x00".join(values)
    if joined.count("\x00") == len(values) - 1:
        keys = normalise(joined).split("\x00")
        # From the UTF-8 bytes: two values' shapes are equal exactly when their texts' are.
        shapes = joined.encode("utf-8", "surrogatepass").translate(_SHAPE_BYTES).split(b"\x00")
    else:  # a value holding a NUL
        keys = [normalise(value) for value in values]
        shapes = [v.encode("utf-8", "surrogatepass").translate(_SHAPE_BYTES) for v in values]
    # (A value, and so its key, is never empty.)
    needles = [needle_of(key) if key[0] in "$€£¥+-" or key[-1] == "%" else key for key in keys]
    rows = tuple(zip(kinds, values, keys, needles, weights, shapes, strict=True))
    out: list[Scanned] = []
    start = 0
    if places is None:
        starts, ends = starts_ends
        for size, cue in zip(sizes, cues, strict=True):
            end = start + size
            out.append(
                Scanned.with_places(rows[start:end], starts[start:end], ends[start:end], cue)
            )
            start = end
        return out
    for size, cue in zip(sizes, cues, strict=True):
        end = start + size
        out.append(Scanned(rows[start:end], places[start:end], cue))
        start = end
    return out


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
    scanned = _scanned(
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
    return dict(zip(texts, _with_occurrences(placed, cues), strict=True))


def facts_in(text: str, *, languages: bool = True) -> list[Placed]:
    """The facts of ``text`` in order, with their places (not cached: the check's scan,
    :func:`occurrences_of`, is; this serves those that need places, like corrections).
    ``languages=False``: the combined pattern's alone."""
    return facts_in_texts([text], languages=languages)[0]


def facts_in_texts(texts: list[str], *, languages: bool = True) -> list[list[Placed]]:
    """:func:`facts_in` of each of ``texts``, scanned together: joined by the language
    tables' separator (``factlang.SEPARATOR``: no fact spans it, and each text's edges look
    to every pattern as they do alone), each pattern makes one pass over all of them, so
    the cost is linear in what is read and the overhead of a pass is paid once per batch.
    The plain ASCII texts are joined apart from the others: their scanner tests character
    classes by table look-up (``factpatterns.scanner_for``)."""
    if not texts:
        return []
    # What a language writes its own way first: the combined pattern's matches inside one
    # of these ("12.380" of "12.380,50 €") are left out.
    local = locale_facts_of(texts) if languages else [[] for _ in texts]
    found: list[list[Placed]] = [list(facts) for facts in local]
    for batch in plain_ascii_apart(texts):
        _scan_batch([texts[i] for i in batch], [found[i] for i in batch])
    if languages:
        for facts, own in zip(found, local, strict=True):
            if own:
                facts.sort(key=_place)
    return found


def _scan_batch(texts: list[str], found: list[list[Placed]]) -> None:
    """The combined pattern's facts of ``texts`` (joined) added to ``found`` (each text's
    language facts, whose spans it leaves alone)."""
    joined = SEPARATOR.join(texts)
    offsets = []
    at = 0
    for text in texts:
        offsets.append(at)
        at += len(text) + len(SEPARATOR)
    spans: list[tuple[int, int]] = []
    for base, facts in zip(offsets, found, strict=True):
        spans.extend((f[0] + base, f[1] + base) for f in facts)
    scanner, kinds_by_group = scanner_for(joined)
    at = 0
    text_at = 0
    last = len(texts) - 1
    # The scanner reads " " + text: a fact at the very start is found too.
    for match in scanner.finditer(" " + joined):
        # Each kind is one group holding no other: the last group matched is the fact.
        group = match.lastindex
        assert group is not None  # every alternative of the scanner is a group
        kind = kinds_by_group[group]
        start, end = match.span(group)
        start -= 1
        end -= 1
        if spans:
            while at < len(spans) and spans[at][1] <= start:
                at += 1
            if at < len(spans) and spans[at][0] < end:
                continue
        value = match.group(group)
        if kind in _TRIMMED_KINDS:
            value = _trimmed(value, kind)
            if not value:
                continue
        while text_at < last and offsets[text_at + 1] <= start:
            text_at += 1
        base = offsets[text_at]
        found[text_at].append((start - base, end - base, kind, value, PATTERN_WEIGHT[kind]))


def _place(fact: Placed) -> int:
    return fact[0]


_TRIMMED_KINDS = frozenset(("url", "path", "setting", "code"))
_TRAILING = ".,;:!?)]}>"


def _trimmed(value: str, kind: str) -> str:
    """Punctuation after a URL, path or setting cut, a code span stripped ("" if blank)."""
    if kind == "url":
        return value.rstrip(_TRAILING)
    if kind == "code":
        return value.strip()
    return value.rstrip(_TRAILING) or value


def needle_of(key: str) -> str:
    """What presence looks for: "$1,234.56" is present as "1234.56", "42%" as "42 %" or
    "42 percent"."""
    return key.lstrip("$€£¥+-").rstrip("%") or key
