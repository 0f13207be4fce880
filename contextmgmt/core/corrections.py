"""Corrections: which values of a conversation a later message replaced.

"The budget is 41,500, not 38,000", "nicht am Dienstag, sondern am Mittwoch", "展位号改为
B2-17": the newest value is the current one. A summary must keep it and drop the old one
(or say that it was replaced); the fact check (``factcheck``) counts an old value as kept
when its replacement is, and never puts it back as if it were current; the offline
summariser leaves out sentences that only state replaced values.

A sentence is read as a correction when it holds a cue of one of the languages (a table
per language, ``CUES``). Its facts (``factscan.facts_in``) right after a word that marks
the old value ("not", "instead of", "nicht", "statt", "不是", "由") are the old values,
the others the new ones. A correction that does not name the old value ("展位号改为 B2-17",
"Korrektur: das Lager ist in der Hauptstraße 5") replaces the latest earlier fact of the
same kind whose sentence shares a word with it (for Chinese, two characters in a row): the
thing both talk about; failing that (the old value is in an earlier summary's bare list of
facts), the one earlier value of the same kind and shape ("B1-05" for "B2-17"). Only the
strong cues ("changed", "korrigiert", "改为") do that; a
plain "not" needs its old value next to it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .factscan import (
    SHAPE,
    Placed,
    facts_in,
    normalise,
    occurrences_of,
    without_repeated_lines,
)

# Per language: cues that make a sentence a correction when it names its old value, and
# cues strong enough to replace an earlier value of the same thing it does not name.
CUES: dict[str, tuple[str, str]] = {
    "en": (
        r"\bnot\b|\binstead of\b|\brather than\b",
        r"\b(?:changed|moved|updated|corrected|switched|postponed|rescheduled)\b|\bcorrection\b"
        r"|\bupdate:|\bnow\b|\bno longer\b",
    ),
    "de": (
        r"\bnicht\b|\bstatt\b|\banstatt\b",
        r"\b(?:geändert|verschoben|korrigiert|aktualisiert|verlegt)\b|\bKorrektur\b|\bjetzt\b"
        r"|\bneue[rs]?\b|\bnicht mehr\b",
    ),
    "zh": (
        r"不是|而不是|而非",
        r"改为|改成|改到|改在|调整为|变更为|更新为|更正|换成|现在是|推迟到|提前到",
    ),
}
# What stands right before an old value, per language.
OLD_MARKERS = {
    "en": r"(?:\bnot|\binstead of|\brather than|\bfrom|\bwas|\bno longer)"
    r"(?: the| on| at| in| to)?\s*$",
    "de": r"(?:\bnicht|\bstatt|\banstatt|\bvon|\bnicht mehr|\bbisher|\bfrüher)"
    r"(?: am| um| im| in der| bei| auf| den| die| das)?\s*$",
    "zh": r"(?:不是|而不是|而非|由|从|原来是|原为|原是|原)\s*$",
}
# Matched against case-folded text (faster than IGNORECASE over long texts).
_WEAK = re.compile("|".join(weak for weak, _ in CUES.values()).casefold())
_STRONG = re.compile("|".join(strong for _, strong in CUES.values()).casefold())
_OLD_MARKER = re.compile("|".join(OLD_MARKERS.values()), re.IGNORECASE)
_CUE_WORDS = re.compile(_WEAK.pattern + "|" + _STRONG.pattern, re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|[。！？；;\n]+")
_LATIN_WORD = re.compile(r"[^\W\d_]{4,}")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")
_STOPWORDS = frozenset(
    "that this with from have will they them there their what when which about also into "
    "than then were been your ours dass eine einer einem einen sind wird wurde haben nicht "
    "bitte noch auch oder aber sondern statt jetzt neue neuer neues".split()
)


@dataclass(slots=True)
class Superseded:
    """Replaced values by their keys (``factscan.normalise``): the key of the value that
    replaced each, the newest when it was corrected again."""

    by: dict[str, str]

    def replacement(self, key: str) -> str | None:
        seen = set()
        new = self.by.get(key)
        while new is not None and new in self.by and new not in seen:
            seen.add(new)
            new = self.by[new]
        return new

    def __contains__(self, key: str) -> bool:
        return key in self.by

    def __bool__(self) -> bool:
        return bool(self.by)


def _subject(sentence: str, facts: list[Placed]) -> set[str]:
    """The words of ``sentence`` that say what it is about: its longer words and the
    character pairs of its Chinese, without its facts and its cue words."""
    text = sentence
    for start, end, *_ in reversed(facts):
        text = text[:start] + " " + text[end:]
    text = _CUE_WORDS.sub(" ", text)
    words = {w.casefold() for w in _LATIN_WORD.findall(text)} - _STOPWORDS
    for run in _CJK_RUN.findall(text):
        words.update(run[i : i + 2] for i in range(len(run) - 1))
    return words


@functools.lru_cache(maxsize=8192)
def _facts_of(sentence: str) -> tuple[Placed, ...]:
    return tuple(facts_in(sentence))


@functools.lru_cache(maxsize=2048)
def _cue_sentences(source: str) -> tuple[tuple[str, bool, tuple[Placed, ...]], ...]:
    """The sentences of ``source`` that hold a cue and a fact: (sentence, whether its cue
    is strong, its facts). Cached: a compaction checks the same messages several times."""
    text = without_repeated_lines(source)  # a pasted log's lines state no corrections
    lowered = text.casefold()
    if not _WEAK.search(lowered) and not _STRONG.search(lowered):
        return ()
    out = []
    for sentence in _SENTENCE.split(text):
        folded = sentence.casefold()
        strong = _STRONG.search(folded) is not None
        if not strong and not _WEAK.search(folded):
            continue
        facts = facts_in(sentence)
        if facts:
            out.append((sentence, strong, tuple(facts)))
    return tuple(out)


def superseded(sources: list[str]) -> Superseded:
    """The values of ``sources`` (oldest first) that a later correction replaced."""
    by: dict[str, str] = {}
    for index, source in enumerate(sources):
        for sentence, strong, facts in _cue_sentences(source):
            olds, news = [], []
            previous_end = 0
            for fact in facts:
                before = sentence[previous_end : fact[0]]
                (olds if _OLD_MARKER.search(before) else news).append(fact)
                previous_end = fact[1]
            if not news:
                continue
            if olds:
                for old in olds:
                    same = [n for n in news if n[2] == old[2]] or news
                    new = min(same, key=lambda n: abs(n[0] - old[0]))
                    _replace(by, normalise(old[3]), normalise(new[3]))
            elif strong:
                texts = [without_repeated_lines(s) for s in sources[: index + 1]]
                folded = [text.casefold() for text in texts]
                _replace_earlier(by, texts, folded, sentence, list(facts), news)
    return Superseded(by)


def _replace(by: dict[str, str], old: str, new: str) -> None:
    if old != new:
        by[old] = new
        by.pop(new, None)  # stated again as the current value


def _replace_earlier(
    by: dict[str, str],
    sources: list[str],
    folded: list[str],
    sentence: str,
    facts: list[Placed],
    news: list[Placed],
) -> None:
    """Each of ``news`` replaces an earlier fact of its kind in the sentence most about the
    same thing (sharing the most words of :func:`_subject`; the latest of equals)."""
    subject = _subject(sentence, facts)
    if not subject:
        return
    new_keys = {normalise(n[3]) for n in news}
    wanted = {n[2]: normalise(n[3]) for n in news}
    best: dict[str, tuple[int, int, str]] = {}  # kind: (shared words, place, old key)
    place = 0
    for source, lowered in zip(sources, folded, strict=False):
        if not any(word in lowered for word in subject):
            place += 1
            continue
        for earlier in _SENTENCE.split(source):
            place += 1
            if earlier == sentence or not any(w in earlier.casefold() for w in subject):
                continue
            earlier_facts = _facts_of(earlier)
            shared = len(subject & _subject(earlier, earlier_facts))
            if not shared:
                continue
            for fact in earlier_facts:
                key = normalise(fact[3])
                if fact[2] in wanted and key not in new_keys:
                    if (shared, place) >= best.get(fact[2], (0, 0, ""))[:2]:
                        best[fact[2]] = (shared, place, key)
    for kind, (_, _, old) in best.items():
        _replace(by, old, wanted.pop(kind))
    if wanted:
        _replace_same_shape(by, sources, wanted)


def _replace_same_shape(by: dict[str, str], sources: list[str], wanted: dict[str, str]) -> None:
    """For a new value whose thing no earlier sentence names (an earlier summary's bare
    list of facts, a Key-facts line): the one earlier value of its kind and shape ("B1-05"
    for "B2-17"), if there is exactly one."""
    shapes = {kind: key.translate(SHAPE) for kind, key in wanted.items()}
    candidates: dict[str, set[str]] = {kind: set() for kind in wanted}
    for occurrences in occurrences_of(sources):
        for kind, _, key, *_ in occurrences:
            if kind in wanted and key != wanted[kind] and key.translate(SHAPE) == shapes[kind]:
                candidates[kind].add(key)
    for kind, keys in candidates.items():
        if len(keys) == 1:
            _replace(by, keys.pop(), wanted[kind])
