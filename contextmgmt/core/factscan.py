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

import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping
from itertools import chain

from .factcues import cued
from .factlang import SEPARATOR, locale_facts_of, plain_ascii_apart
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

    Facts taken from storage (``factstore.known_facts``) keep their places as two columns and
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
    ``known`` (the facts stored with the messages, ``factstore.known_facts``) or scanned
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
    their occurrences (:func:`with_occurrences`) and whether each holds a correction cue."""
    cleaned = [without_repeated_lines(text) for text in texts]
    return with_occurrences(facts_in_texts(cleaned, languages=languages), cued(cleaned))


def with_occurrences(placed: list[list[Placed]], cues: list[bool]) -> list[Scanned]:
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
    return scanned_in_a_row(kinds, values, weights, sizes, cues, tuple(chain.from_iterable(placed)))


def scanned_in_a_row(
    kinds: list[str],
    values: list[str],
    weights: list[int],
    sizes: list[int],
    cues: list[bool],
    places: tuple[Placed, ...] | None = None,
    starts_ends: tuple[tuple[int, ...], tuple[int, ...]] = ((), ()),
) -> list[Scanned]:
    """:func:`with_occurrences` from the facts of all texts in a row (their kinds, values,
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
