"""Summary fact check: re-add the hard facts a summary dropped.

Summarisers lose numbers and identifiers silently, and a hallucinating one may replace
them. After an LLM summary, the URLs, file paths, identifiers, dates and numbers of the
summarised messages are extracted; those not found in the summary are ranked and the best
are appended as one ``Key facts:`` line within a small token allowance. The counts are
recorded in ``CompactResult.facts_missing`` / ``facts_appended``.

Ranking favours what is distinctive: a fact whose shape (digits, letters, punctuation) is
shared by many other facts — log timestamps, IP addresses, request counters — is noise
compared with the one order id or the one URL the user gave. Within the same
distinctiveness, the kind (URL before a plain number), repetition and recency decide.

Heuristic, by design: a fact counts as present when its normalised text occurs in the
summary as a whole token (``12`` is not "present" in ``2012``; ``1,234`` matches ``1234``).

Cost is linear: one combined pattern scans each source once, and presence is a substring
search of the summary (C speed), word boundaries checked only where it occurs. It runs for
every compaction, over every summarised message (in a worker thread when they are many:
``summarise``).
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from . import tokens

KEY_FACTS_LABEL = "Key facts:"
KEY_FACTS_MAX_TOKENS = 150

# Each unit begins with one literal character (the regex engine rejects an alternative on
# its first character without entering it) and is grouped by it (``_by_first_char``): a
# number followed by an ordinary word tries a handful of units, not all of them. At most
# one unit can match at a place (each must end where no letter or "/" follows), so their
# order does not matter.
_UNITS = (
    "%|‰|°[CF]|ki?B|Mi?B|Gi?B|Ti?B|Pi?B|B|bytes?|bits?|ms|µs|ns|s|sec(?:onds?)?|min(?:utes?)?"
    "|h|hours?|days?|weeks?|months?|years?|km|m|cm|mm|kg|g|mg|t|tons?|lbs?|l|ml|km/h|mph|W|kW"
    "|kWh|V|A|kHz|MHz|GHz|Hz|EUR|USD|GBP|CHF|JPY|CNY|RMB|euros?|dollars?|rpm|rps|qps|cores?"
    "|vCPUs?|nodes?|replicas?|attempts?|retries|requests?|rows?|items?|users?|pieces?|pcs"
    "|parcels?|pallets?|crates?|boxes|seats?|people|nights?"
)
_CJK_UNITS = "万元|元|块|个|件|台|箱|公斤|千克|克|米|公里|天|小时|分钟|秒|人|次"


def _by_first_char(alternatives: str) -> str:
    """``a|b|…`` (each starting with a literal character, no ``|`` inside a group) as
    ``x(?:…)|y(?:…)|…``."""
    groups: dict[str, list[str]] = {}
    for alternative in alternatives.split("|"):
        groups.setdefault(alternative[0], []).append(alternative[1:])
    return "|".join(re.escape(c) + "(?:" + "|".join(rest) + ")" for c, rest in groups.items())


# The space before a unit is taken possessively: no unit starts with one, so giving it
# back could not make a unit match.
_UNIT = (
    r"(?: ?+(?:(?:" + _by_first_char(_UNITS) + r")(?![\w/])|" + _by_first_char(_CJK_UNITS) + "))"
)
_GROUPED = r"\d{1,3}+(?:[,\u00a0\u202f]\d{3})+(?:\.\d+)?%?"  # 1,234,567.89
# (kind, weight, pattern) in priority order: where two could match at the same place the
# earlier wins, and what a match covers is not looked at again, so a number inside a URL
# or an identifier is not extracted a second time.
_PATTERNS: list[tuple[str, int, str]] = [
    ("url", 6, r"\b[a-z][a-z0-9+.-]{1,15}://[^\s<>\"'`]+"),
    ("email", 5, r"\b[\w.+-]++@[\w-]+(?:\.[\w-]+)+\b"),
    (
        "path",
        5,
        r"(?<![\w/])(?:[A-Za-z]:\\(?:[\w.-]+\\)*[\w.-]+"  # C:\dir\file
        r"|(?:~|\.{1,2})?/(?:[\w.-]+/)*[\w.-]*[A-Za-z_][\w.-]*"  # /abs, ./rel, ~/home
        r"|(?:[\w.-]++/)+[\w-]++\.[A-Za-z0-9]{1,8})",  # dir/file.ext
    ),
    ("code", 4, r"`(?P<code>[^`\n]{2,60})`"),
    # A setting as written: max_connections=400, LOG_LEVEL=debug.
    ("setting", 5, r"\b[A-Za-z_][\w.-]*=[^\s,;'\"`]+"),
    ("date", 4, r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b"),
    ("version", 4, r"\bv?\d+(?:\.\d+){2,}\b"),
    # Letters and digits mixed (INV-2024-0042, a1b2c3, sha 3f9c2e1, gpt-4o), or snake_case.
    (
        "identifier",
        4,
        r"\b(?=[A-Za-z_-]*+\d)(?=[0-9_-]*+[A-Za-z])[A-Za-z0-9][\w-]*[A-Za-z0-9]\b"
        r"|\b[a-z][a-z0-9]*+(?:_[a-z0-9]+)+\b",
    ),
    ("time", 3, r"\b\d{1,2}:\d{2}(?::\d{2})?\b(?: ?(?:UTC|GMT|CES?T|[PEJ][SD]?T)\b)?"),
    # Plain integers below 100 ("3 steps", "item 12") are everywhere and rarely the point;
    # with a currency sign, a decimal point, a percent sign or a unit any number counts,
    # and the unit is part of the fact ("412.5 kg", "8000 元").
    (
        "number",
        2,
        r"(?:[$€£¥][-+]?(?:" + _GROUPED + r"|\d++(?:\.\d+)?%?)"
        r"|(?<![\w.])[-+]?(?:" + _GROUPED + r"|\d++\.\d++%?|\d++%|\d{3,}+|\d++(?=" + _UNIT + r")))"
        r"(?!\w)(?:" + _UNIT + r")?",
    ),
]

_PATTERN_WEIGHT = {kind: weight for kind, weight, _ in _PATTERNS}
_PRIORITY = {kind: i for i, (kind, _, _) in enumerate(_PATTERNS)}


# Which kinds can start with which character: a scan tries only those (the engine's cost is
# per alternative tried, and most places in a text start no fact).
_DIGIT_LED = ("email", "path", "date", "version", "identifier", "time", "number")
_LETTER_LED = ("url", "email", "path", "setting", "version", "identifier")
# Every fact that starts with a letter holds, before any white space, one of these (a
# digit, "_" of snake_case, "=" of a setting, "/" of a path, "@", ":" of a URL or C:\): a
# plain word is passed over after one possessive scan, before any branch is tried (most
# places a scan stops at are the starts of plain words).
_PLAIN_WORD_AHEAD = r"(?![A-Za-z][^\s0-9_=/@:]*+(?![0-9_=/@:]))"


def _alternatives(kinds: tuple[str, ...], branch: str) -> str:
    out = []
    for kind, _, body in _PATTERNS:
        if kind not in kinds:
            continue
        if kind == "url":
            body = f"(?i:{body})"
        if kind == "code":
            body = body.replace("(?P<code>", f"(?P<code_{branch}>")
            out.append(body)
        else:
            out.append(f"(?P<{kind}_{branch}>{body})")
    return "|".join(out)


def _scanner(kinds: tuple[str, ...], ascii_only: bool = False) -> re.Pattern[str]:
    """One pattern finding every fact of ``kinds``, in priority order at each place.

    No fact starts inside a word (each kind begins at a word boundary or after a non-word
    character), so the pattern consumes the non-word character just before a fact: starting
    with a character class lets the regex engine skip over words in C. Texts are scanned
    with a space in front, so a fact at the very start is found too.
    """
    digit = tuple(k for k in kinds if k in _DIGIT_LED)
    letter = tuple(k for k in kinds if k in _LETTER_LED)
    branches = []
    if digit:
        branches.append(f"(?=[0-9])(?:{_alternatives(digit, 'd')})")
    if letter:
        branches.append(f"(?=[A-Za-z])(?:{_alternatives(letter, 'l')})")
    # No fact starts with white space: a space after punctuation tries nothing.
    branches.append(f"(?![0-9A-Za-z\\s])(?:{_alternatives(kinds, 'o')})")
    pattern = r"\W" + _PLAIN_WORD_AHEAD + "(?:" + "|".join(branches) + ")"
    return re.compile(pattern, re.ASCII if ascii_only else 0)


# Per set of kinds: the scanner, and the kind of each of its groups by group number.
_SCANNERS: dict[tuple[bool, ...], tuple[re.Pattern[str], tuple[str, ...]]] = {}


def _scanner_for(text: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """The scanner of the kinds ``text`` can hold (a URL needs "://", an email "@", a path
    a slash, a code span a backquote, a setting "="; the others are always tried), with
    the kind of each of its groups by number."""
    key = (
        "://" in text,
        "@" in text,
        "/" in text or "\\" in text,
        "`" in text,
        "=" in text,
        # On ASCII text the ASCII classes (\w, \s, …) are the same but for \x1c-\x1f (white
        # space to Unicode), and the regex engine tests them by a table look-up instead of
        # Unicode database calls for every character.
        text.isascii()
        and "\x1c" not in text
        and "\x1d" not in text
        and "\x1e" not in text
        and "\x1f" not in text,
    )
    found = _SCANNERS.get(key)
    if found is None:
        present = dict(zip(("url", "email", "path", "code", "setting"), key[:5], strict=True))
        kinds = tuple(kind for kind, _, _ in _PATTERNS if present.get(kind, True))
        scanner = _scanner(kinds, ascii_only=key[5])
        kinds = [""] * (scanner.groups + 1)
        for name, index in scanner.groupindex.items():
            kinds[index] = _KIND_OF[name]
        found = _SCANNERS[key] = (scanner, tuple(kinds))
    return found


_KIND_OF = {f"{kind}_{branch}": kind for kind, _, _ in _PATTERNS for branch in "dlo"}
# A separator between digits and three more; the look behind comes after the separator so
# that the pattern starts with it (the regex engine then skips other characters in C).
_THOUSANDS = re.compile(r"[,\u00a0\u202f](?<=\d[,\u00a0\u202f])(?=\d{3}\b)")
# Digits, upper- and lower-case ASCII letters each become one symbol: two facts of the same
# template ("10.0.3.17" and "10.0.9.21") get the same shape.
_SHAPE = str.maketrans(
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "0" * 10 + "A" * 26 + "a" * 26,
)
_SHAPE_BYTES = bytes.maketrans(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    b"0" * 10 + b"A" * 26 + b"a" * 26,
)


@dataclass(slots=True)
class Fact:
    text: str
    kind: str
    score: float
    first_seen: int
    source: int = 0  # index of the source it first occurs in
    key: str = ""  # the normalised text, what presence is checked by


def _normalise(text: str) -> str:
    text = text.casefold()
    if "," in text or "\u00a0" in text or "\u202f" in text:
        text = _THOUSANDS.sub("", text)
    return text


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


# Texts up to this size have their facts cached (at most _CACHED of them).
_CACHED_CHARS = 32_000
_CACHED = 512


# One fact found in a text: (kind, value, normalised key, what presence searches for, the
# kind's weight, the value's shape). Everything a fact check needs about it is worked out
# here once, and cached with the text.
Occurrence = tuple[str, str, str, str, int, bytes]


def _occurrences(text: str) -> tuple[Occurrence, ...]:
    """The facts of ``text`` (:data:`Occurrence`), in order."""
    return _occurrences_of([text])[0]


# Texts' facts by text, least recently used first: a compaction in rounds checks a
# message's facts in its round and again at the end, and the next compaction of the same
# conversation meets most of them again. Fact checks run in worker threads: a lock.
_cache: OrderedDict[str, tuple[Occurrence, ...]] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every text's facts (the benches measure a first compaction with it)."""
    with _cache_lock:
        _cache.clear()


def _occurrences_of(sources: list[str]) -> list[tuple[Occurrence, ...]]:
    """The facts of each of ``sources``, in order; the texts not cached are scanned
    together (:func:`_scan`)."""
    found: list[tuple[Occurrence, ...] | None] = []
    unseen: dict[str, None] = {}
    cached, used = _cache.get, _cache.move_to_end
    with _cache_lock:
        for text in sources:
            occurrences = cached(text)
            if occurrences is None:
                unseen[text] = None
            else:
                used(text)
            found.append(occurrences)
    if not unseen:
        return found  # type: ignore[return-value]
    scanned = dict(zip(unseen, _scan(list(unseen)), strict=True))
    with _cache_lock:
        for text, occurrences in scanned.items():
            if len(text) <= _CACHED_CHARS:
                _cache[text] = occurrences
        while len(_cache) > _CACHED:
            _cache.popitem(last=False)
    return [scanned[text] if o is None else o for text, o in zip(sources, found, strict=True)]


def _scan(texts: list[str]) -> list[tuple[Occurrence, ...]]:
    """The facts of each of ``texts``. Each text is scanned on its own; what is worked out
    for each fact is worked out for all of them at once (a few C calls over their values
    joined, not a dozen Python steps per fact)."""
    kinds: list[str] = []
    values: list[str] = []
    ends: list[int] = []  # how many values there are after each text
    for text in texts:
        text = without_repeated_lines(text)
        scanner, kinds_by_group = _scanner_for(text)
        for match in scanner.finditer(" " + text):
            # Each kind is one group holding no other: the last group matched is the fact.
            group = match.lastindex
            kind = kinds_by_group[group]
            value = match.group(group)
            if kind in _TRIMMED_KINDS:
                value = _trimmed(value, kind)
                if not value:
                    continue
            kinds.append(kind)
            values.append(value)
        ends.append(len(values))
    if not values:
        return [() for _ in texts]
    # No value holds a line break, and case folding, the thousands separators and shapes go
    # character by character: all values are done in one go.
    joined = "\n".join(values)
    if joined.count("\n") == len(values) - 1:
        keys = _normalise(joined).split("\n")
        # From the UTF-8 bytes: two values' shapes are equal exactly when their texts' are.
        shapes = joined.encode("utf-8", "surrogatepass").translate(_SHAPE_BYTES).split(b"\n")
    else:  # a kind whose facts can span lines
        keys = [_normalise(value) for value in values]
        shapes = [v.encode("utf-8", "surrogatepass").translate(_SHAPE_BYTES) for v in values]
    # (A value, and so its key, is never empty.)
    needles = [_needle(key) if key[0] in "$€£¥+-" or key[-1] == "%" else key for key in keys]
    weights = map(_PATTERN_WEIGHT.__getitem__, kinds)
    rows = list(zip(kinds, values, keys, needles, weights, shapes, strict=True))
    out = []
    start = 0
    for end in ends:
        out.append(tuple(rows[start:end]))
        start = end
    return out


_TRIMMED_KINDS = frozenset(("url", "path", "setting", "code"))
_TRAILING = ".,;:!?)]}>"


def _trimmed(value: str, kind: str) -> str:
    """Punctuation after a URL, path or setting cut, a code span stripped ("" if blank)."""
    if kind == "url":
        return value.rstrip(_TRAILING)
    if kind == "code":
        return value.strip()
    return value.rstrip(_TRAILING) or value


def _needle(key: str) -> str:
    """What presence looks for: "$1,234.56" is present as "1234.56", "42%" as "42 %" or
    "42 percent"."""
    return key.lstrip("$€£¥+-").rstrip("%") or key


def extract_facts(sources: Iterable[str]) -> list[Fact]:
    """Distinct facts of ``sources`` (oldest first), best first by kind, repetition, recency.

    Lines of a repeated template within one source (a pasted log) are not looked at.
    """
    return sorted(_distinct_facts(sources), key=_best_first)


def _best_first(fact: Fact) -> tuple[float, int, int, int]:
    # Ties: older source first, then the kinds' priority, then place.
    return (-fact.score, fact.source, _PRIORITY[fact.kind], fact.first_seen)


def _distinct_facts(sources: Iterable[str]) -> list[Fact]:
    """The facts of :func:`extract_facts`, in the order first seen."""
    scores, firsts, origins = _tally(sources)
    return [
        Fact(first[1], first[0], scores[key], seen, origins[key], key)
        for seen, (key, first) in enumerate(firsts.items())
    ]


def _tally(
    sources: Iterable[str],
) -> tuple[dict[str, float], dict[str, Occurrence], dict[str, int]]:
    """Each distinct fact of ``sources`` by its key, in the order first seen: its score, its
    first occurrence and the index of the source that holds it. (Three flat dicts: no
    object per fact for the garbage collector to walk.)"""
    scores: dict[str, float] = {}
    firsts: dict[str, Occurrence] = {}
    origins: dict[str, int] = {}
    sources = list(sources)
    count = max(len(sources), 1)
    score_of = scores.get
    for index, occurrences in enumerate(_occurrences_of(sources)):
        recency = (index + 1) / count  # 0 < r <= 1, newer is higher
        for occurrence in occurrences:
            key = occurrence[2]
            score = score_of(key)
            if score is None:
                scores[key] = occurrence[4] + recency
                firsts[key] = occurrence
                origins[key] = index
            elif score < firsts[key][4] + 3:
                scores[key] = score + 1.0  # a repeat makes it more likely to matter (capped)
    return scores, firsts, origins


class _Summary:
    """A normalised summary, for whole-token presence checks.

    A fact is present when it occurs with no word character right before or after it. Most
    facts a summary dropped are not in it at all (one C substring search each); for the
    others each occurrence is looked at, found by ``str.find``.
    """

    __slots__ = ("text",)

    def __init__(self, summary: str) -> None:
        self.text = _normalise(summary)

    def contains(self, fact: str, *, normalised: bool = False) -> bool:
        needle = fact if normalised else _normalise(fact)
        if needle[:1] in "$€£¥+-" or needle[-1:] == "%":
            needle = _needle(needle)
        return needle in self.text and _whole_token_in(self.text, needle)


def _whole_token_in(text: str, needle: str) -> bool:
    """Whether ``needle``, known to occur in ``text``, occurs there as a whole token."""
    if not needle[:1].isalnum() and not needle[-1:].isalnum():
        # Punctuation-edged facts ("$5", "12%", URLs) have no word boundary to anchor on.
        return True
    size = len(needle)
    at = text.find(needle)
    while at >= 0:
        before = text[at - 1] if at else " "
        end = at + size
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
            return True
        at = text.find(needle, at + 1)
    return False


def is_present(fact: str, summary: str) -> bool:
    """Whether ``fact`` occurs in ``summary`` as a whole token (normalised)."""
    return _Summary(summary).contains(fact)


def missing_facts(summary: str, sources: Iterable[str]) -> list[Fact]:
    """Facts of ``sources`` that ``summary`` does not contain, best first."""
    index = _Summary(summary)
    return [f for f in extract_facts(sources) if not index.contains(f.key, normalised=True)]


def rank_by_distinctiveness(facts: list[Fact]) -> list[Fact]:
    """``facts`` reordered so that one-of-a-kind facts come before templated ones.

    A fact's commonness is how many facts of the list share its shape; its score is divided
    by 1 + log2 of that, so a shape seen once keeps its score and a shape shared by 64
    facts (a log's timestamps) keeps a seventh of it.
    """
    damped = _damped_scores(facts)
    # ``facts`` comes best first: a stable sort keeps that order among equals.
    order = sorted(range(len(facts)), key=damped.__getitem__)
    return [facts[i] for i in order]


def _damped_scores(facts: list[Fact]) -> list[float]:
    """Minus each fact's score divided by its shape's commonness (ascending = best)."""
    shapes = [f.text.translate(_SHAPE) for f in facts]
    damp = {shape: 1.0 + math.log2(n) for shape, n in Counter(shapes).items()}
    return [-f.score / damp[shape] for f, shape in zip(facts, shapes, strict=True)]


def _ranked_missing(summary: str, sources: Iterable[str]) -> list[str]:
    """The texts of ``rank_by_distinctiveness(missing_facts(summary, sources))`` with one
    sort: by the damped score, then in :func:`extract_facts` order (which a stable sort
    would keep), from what the scan worked out for each fact (no fact objects)."""
    text = _normalise(summary)
    scores, firsts, origins = _tally(sources)
    missing = [
        first
        for first in firsts.values()
        if not (first[3] in text and _whole_token_in(text, first[3]))
    ]
    commonness = Counter([first[5] for first in missing])
    damp = {shape: 1.0 + math.log2(n) for shape, n in commonness.items()}
    priority = _PRIORITY
    # The key of rank_by_distinctiveness then _best_first; the place among the missing
    # facts is unique (and in the order first seen), so the text after it only rides along.
    ranked = [
        (-scores[key] / damp[shape], -scores[key], origins[key], priority[kind], place, value)
        for place, (kind, value, key, _, _, shape) in enumerate(missing)
    ]
    ranked.sort()
    return [entry[5] for entry in ranked]


@dataclass(slots=True)
class KeyFacts:
    """What the fact check did to one summary: its text after, the facts it found missing
    (the most distinctive first: the order in which they are appended) and the ones it
    appended."""

    text: str
    missing: list[str]
    appended: list[str]


def append_key_facts(
    summary: str, sources: Iterable[str], *, max_tokens: int = KEY_FACTS_MAX_TOKENS
) -> tuple[str, tuple[int, int]]:
    """``summary`` plus a ``Key facts:`` line of the most distinctive missing facts.

    Returns (text, (facts_missing, facts_appended)); the appended line, separator included,
    stays within ``max_tokens`` tokens. Nothing is appended when nothing is missing.
    """
    checked = check_key_facts(summary, sources, max_tokens=max_tokens)
    return checked.text, (len(checked.missing), len(checked.appended))


def check_key_facts(
    summary: str, sources: Iterable[str], *, max_tokens: int = KEY_FACTS_MAX_TOKENS
) -> KeyFacts:
    """:func:`append_key_facts` with the facts themselves, so that a user can be shown
    what the summary dropped and what was put back."""
    missing = _ranked_missing(summary, sources)
    if not missing or max_tokens <= 0:
        return KeyFacts(summary, missing, [])
    prefix = f"\n\n{KEY_FACTS_LABEL} "
    separator = "; "
    used = tokens.estimate_tokens(prefix)
    chosen: list[str] = []
    for fact in missing:
        # Each piece's estimate plus one bounds its share of the joined line's estimate.
        cost = tokens.estimate_tokens(fact + separator) + 1
        if used + cost > max_tokens:
            if used >= max_tokens - 2:
                break  # nothing more can fit
            continue  # a shorter, lower-ranked fact may still fit
        chosen.append(fact)
        used += cost
    while chosen and tokens.estimate_tokens(prefix + separator.join(chosen)) > max_tokens:
        chosen.pop()
    if not chosen:
        return KeyFacts(summary, missing, [])
    return KeyFacts(summary + prefix + separator.join(chosen), missing, chosen)
