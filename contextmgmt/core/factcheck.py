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

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from . import tokens

KEY_FACTS_LABEL = "Key facts:"
KEY_FACTS_MAX_TOKENS = 150

# (kind, weight, pattern) in priority order: where two could match at the same place the
# earlier wins, and what a match covers is not looked at again, so a number inside a URL
# or an identifier is not extracted a second time.
_UNITS = (
    "%|‰|°[CF]|[kMGTP]i?B|B|bytes?|bits?|[mµn]?s|sec(?:onds?)?|min(?:utes?)?|h|hours?|days?"
    "|weeks?|months?|years?|k?m|cm|mm|kg|g|mg|t|tons?|lbs?|l|ml|km/h|mph|W|kW|kWh|V|A|[kMG]?Hz"
    "|EUR|USD|GBP|CHF|JPY|CNY|RMB|euros?|dollars?|rpm|rps|qps|cores?|vCPUs?|nodes?|replicas?"
    "|attempts?|retries|requests?|rows?|items?|users?|pieces?|pcs|parcels?|pallets?|crates?"
    "|boxes|seats?|people|nights?"
)
_CJK_UNITS = "万元|元|块|个|件|台|箱|公斤|千克|克|米|公里|天|小时|分钟|秒|人|次"
_UNIT = r"(?: ?(?:" + _UNITS + r")(?![\w/])| ?(?:" + _CJK_UNITS + r"))"
_GROUPED = r"\d{1,3}+(?:[,\u00a0\u202f]\d{3})+(?:\.\d+)?%?"  # 1,234,567.89
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
# plain word is passed over after one possessive scan instead of trying each kind on it.
_LETTER_LED_GUARD = r"(?=[^\s0-9_=/@:]*+[0-9_=/@:])"


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


def _scanner(kinds: tuple[str, ...]) -> re.Pattern[str]:
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
        branches.append(f"(?=[A-Za-z]){_LETTER_LED_GUARD}(?:{_alternatives(letter, 'l')})")
    # No fact starts with white space: a space after punctuation tries nothing.
    branches.append(f"(?![0-9A-Za-z\\s])(?:{_alternatives(kinds, 'o')})")
    return re.compile(r"\W(?:" + "|".join(branches) + ")")


_SCANNERS: dict[tuple[bool, ...], re.Pattern[str]] = {}


def _scanner_for(text: str) -> re.Pattern[str]:
    """The scanner of the kinds ``text`` can hold: a URL needs "://", an email "@", a path
    a slash, a code span a backquote, a setting "="; the others are always tried."""
    key = (
        "://" in text,
        "@" in text,
        "/" in text or "\\" in text,
        "`" in text,
        "=" in text,
    )
    scanner = _SCANNERS.get(key)
    if scanner is None:
        present = dict(zip(("url", "email", "path", "code", "setting"), key, strict=True))
        kinds = tuple(kind for kind, _, _ in _PATTERNS if present.get(kind, True))
        scanner = _SCANNERS[key] = _scanner(kinds)
    return scanner


_KIND_OF = {f"{kind}_{branch}": kind for kind, _, _ in _PATTERNS for branch in "dlo"}
_THOUSANDS = re.compile(r"(?<=\d)[,\u00a0\u202f](?=\d{3}\b)")
# Digits, upper- and lower-case ASCII letters each become one symbol: two facts of the same
# template ("10.0.3.17" and "10.0.9.21") get the same shape.
_SHAPE = str.maketrans(
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "0" * 10 + "A" * 26 + "a" * 26,
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
    shapes = text.translate(_NO_DIGITS).split("\n")
    counts = Counter(shapes)
    if max(counts.values()) < REPEATED_LINE_MIN:
        return text
    lines = text.split("\n")
    return "\n".join(
        line
        for line, shape in zip(lines, shapes, strict=True)
        if counts[shape] < REPEATED_LINE_MIN or not shape.strip()
    )


# Texts up to this size have their facts cached (at most _CACHED of them).
_CACHED_CHARS = 32_000
_CACHED = 512


def _occurrences(text: str) -> tuple[tuple[str, str, str], ...]:
    """(kind, value, normalised key) of each fact in ``text``, in order.

    Cached by text: a compaction in rounds checks a message's facts in its round and again
    at the end, and the next compaction of the same conversation meets most of them again.
    """
    if len(text) <= _CACHED_CHARS:
        return _cached_occurrences(text)
    return _scan(text)


def _scan(text: str) -> tuple[tuple[str, str, str], ...]:
    out = []
    kind_of = _KIND_OF
    text = without_repeated_lines(text)
    for match in _scanner_for(text).finditer(" " + text):
        group = match.lastgroup
        value = match.group(group)
        kind = kind_of[group]
        if kind == "url":
            value = value.rstrip(".,;:!?)]}>")
        elif kind == "path" or kind == "setting":
            value = value.rstrip(".,;:!?)]}>") or value
        elif kind == "code":
            value = value.strip()
            if not value:
                continue
        out.append((kind, value, _normalise(value)))
    return tuple(out)


_cached_occurrences = functools.lru_cache(maxsize=_CACHED)(_scan)


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
    found: dict[str, Fact] = {}
    sources = list(sources)
    count = max(len(sources), 1)
    weights = _PATTERN_WEIGHT
    for index, text in enumerate(sources):
        recency = (index + 1) / count  # 0 < r <= 1, newer is higher
        for kind, value, key in _occurrences(text):
            fact = found.get(key)
            if fact is None:
                found[key] = Fact(value, kind, weights[kind] + recency, len(found), index, key)
            elif fact.score < weights[fact.kind] + 3:
                fact.score += 1.0  # a repeat makes it more likely to matter (capped)
    return list(found.values())


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
            # "$1,234.56" is present as "1234.56", "42%" as "42 %" or "42 percent".
            needle = needle.lstrip("$€£¥+-").rstrip("%") or needle
        text = self.text
        if needle not in text:
            return False
        if not needle[:1].isalnum() and not needle[-1:].isalnum():
            # Punctuation-edged facts ("$5", "12%", URLs) have no word boundary to anchor on.
            return True
        return self._whole(needle)

    def _whole(self, needle: str) -> bool:
        text = self.text
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


def _ranked_missing(summary: str, sources: Iterable[str]) -> list[Fact]:
    """``rank_by_distinctiveness(missing_facts(summary, sources))`` with one sort: by the
    damped score, then in :func:`extract_facts` order (which a stable sort would keep)."""
    index = _Summary(summary)
    missing = [f for f in _distinct_facts(sources) if not index.contains(f.key, normalised=True)]
    damped = _damped_scores(missing)
    order = sorted(range(len(missing)), key=lambda i: (damped[i], _best_first(missing[i])))
    return [missing[i] for i in order]


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
    found = [f.text for f in missing]
    if not missing or max_tokens <= 0:
        return KeyFacts(summary, found, [])
    prefix = f"\n\n{KEY_FACTS_LABEL} "
    separator = "; "
    used = tokens.estimate_tokens(prefix)
    chosen: list[str] = []
    for fact in missing:
        # Each piece's estimate plus one bounds its share of the joined line's estimate.
        cost = tokens.estimate_tokens(fact.text + separator) + 1
        if used + cost > max_tokens:
            if used >= max_tokens - 2:
                break  # nothing more can fit
            continue  # a shorter, lower-ranked fact may still fit
        chosen.append(fact.text)
        used += cost
    while chosen and tokens.estimate_tokens(prefix + separator.join(chosen)) > max_tokens:
        chosen.pop()
    if not chosen:
        return KeyFacts(summary, found, [])
    return KeyFacts(summary + prefix + separator.join(chosen), found, chosen)
