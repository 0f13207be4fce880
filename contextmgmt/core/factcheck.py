"""Summary fact check: re-add the hard facts a summary dropped.

Summarisers lose numbers and identifiers silently, and a hallucinating one may replace
them. After an LLM summary, the URLs, file paths, identifiers, dates and numbers of the
summarised messages are extracted; those not found in the summary are ranked and the best
are appended as one ``Key facts:`` line within a small token allowance. The counts are
recorded in ``CompactResult.facts_missing`` / ``facts_appended``.

Ranking favours what the user stated in words, and what an earlier summary kept, over what
only a paste or a tool's output holds; then what is distinctive: a fact whose shape
(digits, letters, punctuation) is shared by many other facts — log timestamps, IP
addresses, request counters — is noise compared with the one order id or the one URL the
user gave. Within the same distinctiveness, the kind (URL before a plain number),
repetition and recency decide.

Heuristic, by design: a fact counts as present when its normalised text occurs in the
summary as a whole token (``12`` is not "present" in ``2012``; ``1,234`` matches ``1234``).

This module is the check: tallying the facts of the sources, looking each up in the
summary, ranking the missing ones and writing the line. A value a later correction
replaced is never put back (``corrections``): its replacement is. Finding the facts in a text is the
scan's (``factscan``, with the patterns in ``factpatterns``): it is done once per text and
cached, so a check only tallies and ranks what the scan worked out.

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from . import tokens
from .corrections import superseded
from .factpatterns import PRIORITY
from .factscan import SHAPE, Occurrence, Scanned, needle_of, normalise, scans_of

KEY_FACTS_LABEL = "Key facts:"
KEY_FACTS_MAX_TOKENS = 150
# What the user stated in words, or an earlier summary kept, outranks what only a paste or
# a tool's output holds (a pasted export's serial numbers would fill the line otherwise).
STATED_BONUS = 4.0


@dataclass(slots=True)
class Fact:
    text: str
    kind: str
    score: float
    first_seen: int
    source: int = 0  # index of the source it first occurs in
    key: str = ""  # the normalised text, what presence is checked by


def extract_facts(sources: Iterable[str]) -> list[Fact]:
    """Distinct facts of ``sources`` (oldest first), best first by kind, repetition, recency.

    Lines of a repeated template within one source (a pasted log) are not looked at.
    """
    return sorted(_distinct_facts(sources), key=_best_first)


def _best_first(fact: Fact) -> tuple[float, int, int, int]:
    # Ties: older source first, then the kinds' priority, then place.
    return (-fact.score, fact.source, PRIORITY[fact.kind], fact.first_seen)


def _distinct_facts(sources: Iterable[str]) -> list[Fact]:
    """The facts of :func:`extract_facts`, in the order first seen."""
    scores, firsts, origins = _tally(sources)
    return [
        Fact(first[1], first[0], scores[key], seen, origins[key], key)
        for seen, (key, first) in enumerate(firsts.items())
    ]


@dataclass(frozen=True, slots=True)
class Stated:
    """The keys of the facts that what the user stated in words and what earlier summaries
    kept hold: worked out once for a summarising job, whose every check ranks by them."""

    keys: frozenset[str]

    @staticmethod
    def of(texts: Iterable[str], known: Mapping[str, Scanned] | None = None) -> Stated:
        scans = scans_of(list(texts), known)
        return Stated(frozenset([o[2] for scan in scans for o in scan.occurrences]))


def _tally(
    sources: Iterable[str],
    stated: Iterable[str] | Stated = (),
    known: Mapping[str, Scanned] | None = None,
    scans: list[Scanned] | None = None,
) -> tuple[dict[str, float], dict[str, Occurrence], dict[str, int]]:
    """Each distinct fact of ``sources`` by its key, in the order first seen: its score, its
    first occurrence and the index of the source that holds it. (Three flat dicts: no
    object per fact for the garbage collector to walk.) Facts that ``stated`` holds (what
    the user said in words, what an earlier summary kept) score ``STATED_BONUS`` more.
    ``known``: facts stored with the messages (``factstore.known_facts``); ``scans``: the
    sources' scans when the caller has them."""
    scores: dict[str, float] = {}
    firsts: dict[str, Occurrence] = {}
    origins: dict[str, int] = {}
    sources = list(sources)
    count = max(len(sources), 1)
    score_of = scores.get
    if scans is None:
        scans = scans_of(sources, known)
    for index, occurrences in enumerate(scan.occurrences for scan in scans):
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
    if not isinstance(stated, Stated):
        stated = Stated.of(stated, known)
    for key in stated.keys.intersection(scores):
        scores[key] += STATED_BONUS
    return scores, firsts, origins


class _Summary:
    """A normalised summary, for whole-token presence checks.

    A fact is present when it occurs with no word character right before or after it. Most
    facts a summary dropped are not in it at all (one C substring search each); for the
    others each occurrence is looked at, found by ``str.find``.
    """

    __slots__ = ("text",)

    def __init__(self, summary: str) -> None:
        self.text = normalise(summary)

    def contains(self, fact: str, *, normalised: bool = False) -> bool:
        needle = fact if normalised else normalise(fact)
        if needle[:1] in "$€£¥+-" or needle[-1:] == "%":
            needle = needle_of(needle)
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


_WORD_RUN = re.compile(r"\w+")
# Summaries longer than this are read once for their word runs (:class:`_Presence`).
PRESENCE_BY_RUNS_CHARS = 4_000


class _Presence:
    """Whole-token presence in a normalised summary, read once: its runs of word
    characters (``\\w``: what :func:`_whole_token_in` counts as joined to a token) as a
    set. Each run of a needle present as a whole token (with a letter or digit at an edge)
    is a whole run of the summary (its edges meet no word character there, and inside it
    its own non-word characters end its runs): a needle one of whose runs is not among
    them is absent, found by set look-ups alone, and only the others are searched for in
    the text. A check then reads the summary once, not once per fact (most facts a
    summary dropped are absent)."""

    __slots__ = ("runs", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        # A short summary is searched directly: that costs less than reading a fact's runs.
        self.runs = set(_WORD_RUN.findall(text)) if len(text) > PRESENCE_BY_RUNS_CHARS else None

    def has(self, needle: str) -> bool:
        runs = self.runs
        # (Punctuation-edged needles are present wherever they occur: no runs to compare.)
        if runs is not None and (needle[:1].isalnum() or needle[-1:].isalnum()):
            for run in _WORD_RUN.findall(needle):
                if run not in runs:
                    return False
        return needle in self.text and _whole_token_in(self.text, needle)


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
    shapes = [f.text.translate(SHAPE) for f in facts]
    damp = {shape: 1.0 + math.log2(n) for shape, n in Counter(shapes).items()}
    return [-f.score / damp[shape] for f, shape in zip(facts, shapes, strict=True)]


def _ranked_missing(
    summary: str,
    sources: Iterable[str],
    stated: Iterable[str] | Stated = (),
    known: Mapping[str, Scanned] | None = None,
) -> list[str]:
    """The texts of ``rank_by_distinctiveness(missing_facts(summary, sources))`` with one
    sort: by the damped score, then in :func:`extract_facts` order (which a stable sort
    would keep), from what the scan worked out for each fact (no fact objects).

    A value a later correction replaced (``corrections``) is never missing: it is kept
    when its replacement is, and the replacement is a fact of its own."""
    text = normalise(summary)
    sources = list(sources)
    scans = scans_of(sources, known)
    scores, firsts, origins = _tally(sources, stated, known, scans)
    replaced = superseded(sources, known, scans)
    presence = _Presence(text)
    if presence.runs is None:  # a short summary, searched directly (inlined: per fact)
        missing = [
            first
            for first in firsts.values()
            if first[3] not in text or not _whole_token_in(text, first[3])
        ]
    else:
        missing = [first for first in firsts.values() if not presence.has(first[3])]
    if replaced.by or replaced.doubtful:
        missing = [first for first in missing if not replaced.stale(first[2])]
    return [missing[at][1] for at in _ranked_order(missing, scores, origins)]


def _ranked_order(
    missing: list[Occurrence], scores: dict[str, float], origins: dict[str, int]
) -> list[int]:
    """The places in ``missing`` (in the order first seen) ranked by the key of
    rank_by_distinctiveness then _best_first: (damped score, score, source, the kind's
    priority, place). One stable sort per part of the key, the least significant first
    (the place: the order they come in), each by a list of numbers: no tuple per fact for
    the garbage collector to track."""
    commonness = Counter([first[5] for first in missing])
    damp = {shape: 1.0 + math.log2(n) for shape, n in commonness.items()}
    keys = [first[2] for first in missing]
    priority = PRIORITY
    order = sorted(range(len(missing)), key=[priority[first[0]] for first in missing].__getitem__)
    order.sort(key=list(map(origins.__getitem__, keys)).__getitem__)
    negated = [-scores[key] for key in keys]
    order.sort(key=negated.__getitem__)
    damped = [score / damp[first[5]] for score, first in zip(negated, missing, strict=True)]
    order.sort(key=damped.__getitem__)
    return order


class _LeastCost:
    """A lower bound of a fact's cost in the Key-facts line (its estimate with the
    separator, plus one) from its length alone: every printable character but a space
    weighs at least the lightest class it can be in (ASCII letters, digits, punctuation;
    a non-ASCII character, its script's block), so the bound never exceeds the estimate."""

    __slots__ = ("ascii", "other", "separator")

    def __init__(self, ascii_weight: float, other_weight: float, separator: float) -> None:
        self.ascii = ascii_weight
        self.other = other_weight
        self.separator = separator

    @staticmethod
    @functools.lru_cache(maxsize=8)
    def of(weights: tuple[float, ...]) -> _LeastCost | None:
        """The bound under ``weights`` (None when a weight is negative: no bound)."""
        if min(weights) < 0:
            return None
        by_class = dict(zip(tokens.CLASSES, weights, strict=True))
        ascii_weight = min(by_class[name] for name in ("lower", "upper", "digit", "punct", "quote"))
        other_weight = min(by_class[name] for name in tokens.CLASSES[_FIRST_BLOCK:])
        # Less a hair: the bound is a product, the estimate a sum in another order.
        return _LeastCost(ascii_weight, other_weight, by_class["punct"] - 1e-9)

    def cost(self, fact: str) -> int:
        if not fact.isprintable():
            return 0  # control characters and odd spaces: no bound
        length = len(fact) - fact.count(" ")
        other = 0 if fact.isascii() else len(fact) - len(fact.encode("ascii", "ignore"))
        value = (length - other) * self.ascii + other * self.other + self.separator
        return max(1, int(value + 0.5)) + 1


# The classes from here on are non-ASCII blocks (``charclass``: a character's lead byte).
_FIRST_BLOCK = tokens.CLASSES.index("latin_ext")


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
    summary: str,
    sources: Iterable[str],
    *,
    max_tokens: int = KEY_FACTS_MAX_TOKENS,
    stated: Iterable[str] | Stated = (),
    known: Mapping[str, Scanned] | None = None,
) -> KeyFacts:
    """:func:`append_key_facts` with the facts themselves, so that a user can be shown
    what the summary dropped and what was put back. Facts ``stated`` holds (the user's own
    words, earlier summaries) come first among equals (:func:`_tally`). ``known``: the
    facts stored with the messages (``factstore.known_facts``), taken instead of scanning
    their texts again."""
    missing = _ranked_missing(summary, sources, stated, known)
    if not missing or max_tokens <= 0:
        return KeyFacts(summary, missing, [])
    prefix = f"\n\n{KEY_FACTS_LABEL} "
    separator = "; "
    used = tokens.estimate_tokens(prefix)
    chosen: list[str] = []
    least = _LeastCost.of(tokens.current_weights())
    for fact in missing:
        if least is not None and least.cost(fact) > max_tokens - used:
            # Cannot fit, whatever its exact estimate: hundreds of dropped facts are not
            # counted one by one once the line is nearly full.
            if used >= max_tokens - 2:
                break
            continue
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
