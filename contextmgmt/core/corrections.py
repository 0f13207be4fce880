"""Corrections: which values of a conversation a later message replaced.

"The budget is 41,500, not 38,000", "nicht am Dienstag, sondern am Mittwoch", "展位号改为
B2-17": the newest value is the current one. A summary must keep it and drop the old one
(or say that it was replaced); the fact check (``factcheck``) counts an old value as kept
when its replacement is, and never puts it back as if it were current; the offline
summariser leaves out sentences that only state replaced values.

A sentence is read as a correction when it holds a cue of one of the languages (a table
per language, ``factcues.CUES``). Its facts (``factscan.facts_in``) right after a word that marks
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

import bisect
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from .factcues import CUE_WORDS, STRONG, WEAK
from .factscan import (
    SHAPE,
    Placed,
    Scanned,
    normalise,
    scans_of,
    without_repeated_lines,
)

# What stands right before an old value, per language.
OLD_MARKERS = {
    "en": r"(?:\bnot|\binstead of|\brather than|\bfrom|\bwas|\bno longer)"
    r"(?: the| on| at| in| to)?\s*$",
    "de": r"(?:\bnicht|\bstatt|\banstatt|\bvon|\bnicht mehr|\bbisher|\bfrüher)"
    r"(?: am| um| im| in der| bei| auf| den| die| das)?\s*$",
    "zh": r"(?:不是|而不是|而非|由|从|原来是|原为|原是|原)\s*$",
    "fr": r"(?:\bpas|\bau lieu d[eu]?|\bau lieu des|\bplutôt que|\bet non|\bdu|\bancien(?:ne)?"
    r"|\bauparavant)(?: le| la| les| l'| du| au| à| de)?\s*$",
    "es": r"(?:\bno(?: es| será| está| son| era)?|\ben vez de(?:l)?|\ben lugar de(?:l)?|\bantes"
    r"|\bera)(?: el| la| los| las| al| de| del| en| a las| a la| a)?\s*$",
    "ru": r"(?:\bне|\bвместо|\bа не|\bраньше|\bранее|\bбыло|\bс)(?: с| на| в)?\s*$",
}


_OLD_MARKER = re.compile("|".join(OLD_MARKERS.values()), re.IGNORECASE)
# What stands right after an old value, in the languages that say it after ("12日ではなく").
_OLD_AFTER = re.compile(r"\s*(?:ではなく|じゃなく|でなく|ではありません|から)")
# White space after a full stop (found from the white space: the engine then skips to it
# in C), or Chinese and Japanese stops and line breaks.
_SENTENCE = re.compile(r"\s(?<=[.!?]\s)\s*|[。！？；;\n]+")
_LATIN_WORD = re.compile(r"[^\W\d_]{4,}")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")
_STOPWORDS = frozenset(
    "that this with from have will they them there their what when which about also into "
    "than then were been your ours dass eine einer einem einen sind wird wurde haben nicht "
    "bitte noch auch oder aber sondern statt jetzt neue neuer neues "
    "pour dans avec sont cette mais nous vous leur lieu plus être était nouveau nouvelle "
    "para como pero este esta será sido desde nuevo nueva ahora entonces "
    "этот эта было будет если когда чтобы теперь вместо также новый новая".split()
)


@dataclass(slots=True)
class Superseded:
    """Replaced values by their keys (``factscan.normalise``): the key of the value that
    replaced each, the newest when it was corrected again; and ``doubtful``, the keys a
    correction may have replaced: it named neither its old value nor a thing an earlier
    sentence names, and several earlier values have its kind and shape (an earlier
    summary's bare list of facts holds "2027年3月15日" and "2027年3月20日" when
    "撤展截止时间改为2027年3月21日" comes). The check puts none of them back as if current."""

    by: dict[str, str]
    doubtful: set[str] = field(default_factory=set)

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

    def stale(self, key: str) -> bool:
        """Whether ``key`` is a value a correction replaced, or may have."""
        return key in self.by or key in self.doubtful


def _subject(sentence: str, facts: Sequence[Placed]) -> set[str]:
    """The words of ``sentence`` that say what it is about: its longer words and the
    character pairs of its Chinese, without its facts and its cue words."""
    text = sentence
    for start, end, *_ in reversed(facts):
        text = text[:start] + " " + text[end:]
    text = CUE_WORDS.sub(" ", text)
    words = {w.casefold() for w in _LATIN_WORD.findall(text)} - _STOPWORDS
    for run in _CJK_RUN.findall(text):
        words.update(run[i : i + 2] for i in range(len(run) - 1))
    return words


# A sentence of a source: its text and its facts (places within it).
_Sentence = tuple[str, tuple[Placed, ...]]


def _split(text: str, facts: tuple[Placed, ...]) -> list[_Sentence]:
    """The sentences of ``text`` (a source without its repeated lines, as the scan reads
    it) with their ``facts`` (the scan's, ``factscan.scans_of``): no text is scanned
    twice. A separator inside a fact ("Dr. Katrin Vogel") does not split it."""
    spans: list[tuple[int, int]] = []
    start = 0
    at = 0
    for separator in _SENTENCE.finditer(text):
        cut, resume = separator.span()
        while at < len(facts) and facts[at][1] <= cut:
            at += 1
        if at < len(facts) and facts[at][0] < cut:
            continue  # inside a fact
        spans.append((start, cut))
        start = resume
    spans.append((start, len(text)))
    sentences: list[_Sentence] = []
    at = 0
    for begin, end in spans:
        mine = []
        while at < len(facts) and facts[at][0] < end:
            fact = facts[at]
            if fact[0] >= begin:
                mine.append((fact[0] - begin, fact[1] - begin, fact[2], fact[3], fact[4]))
            at += 1
        sentences.append((text[begin:end], tuple(mine)))
    return sentences


_Value = TypeVar("_Value")


class _BySource:
    """What is worked out of a source, by its text (its facts follow from it): a
    compaction checks the same messages several times, and the next compaction of the
    conversation most of them again. The oldest entry goes first past ``size``; fact
    checks run in worker threads: a lock."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: dict[str, object] = {}
        self.lock = threading.Lock()

    def get(self, source: str, compute: Callable[[], _Value]) -> _Value:
        entry = self.entries.get(source)
        if entry is None:
            entry = compute()
            with self.lock:
                self.entries[source] = entry
                while len(self.entries) > self.size:
                    del self.entries[next(iter(self.entries))]
        return entry  # type: ignore[return-value]

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()


_FACT_SENTENCES = _BySource(2048)
_CUE_SENTENCES = _BySource(2048)
_SUBJECTS = _BySource(2048)


def clear_cache() -> None:
    """Forget what was worked out of every source (the benches measure a first compaction
    with it, and ``factscan.clear_cache``)."""
    _FACT_SENTENCES.clear()
    _CUE_SENTENCES.clear()
    _SUBJECTS.clear()


def _fact_sentences(source: str, facts: tuple[Placed, ...]) -> tuple[_Sentence, ...]:
    """The sentences of ``source`` that hold one of its ``facts`` (the scan's,
    ``factscan.scans_of``), with them: only these can correct a value or be corrected.
    They are those of the text the scan read (a pasted log's repeated lines hold none)."""
    if not facts:
        return ()
    return _FACT_SENTENCES.get(
        source,
        lambda: tuple(
            (sentence, mine)
            for sentence, mine in _split(without_repeated_lines(source), facts)
            if mine
        ),
    )


_CueSentences = tuple[tuple[str, bool, tuple[Placed, ...]], ...]


def _cue_sentences(source: str, scan: Scanned) -> _CueSentences:
    """The sentences of ``source`` that hold a cue and a fact: (sentence, whether its cue
    is strong, its facts); ``scan``: the source's (``factscan.scans_of``), which says
    whether the text holds a cue at all (most hold none: they are never read here). The
    cues are looked for in the sentences holding a fact only."""
    if not scan.cued or not scan.occurrences:  # (its places are not made: not read)
        return ()
    return _CUE_SENTENCES.get(source, lambda: _find_cue_sentences(source, scan.placed))


def _find_cue_sentences(source: str, facts: tuple[Placed, ...]) -> _CueSentences:
    out = []
    for sentence, mine in _fact_sentences(source, facts):
        folded = sentence.casefold()
        strong = STRONG.search(folded) is not None
        if strong or WEAK.search(folded):
            out.append((sentence, strong, mine))
    return tuple(out)


_Subjects = tuple[tuple[str, tuple[Placed, ...], frozenset[str]], ...]


def _subjects_of(source: str, facts: tuple[Placed, ...]) -> _Subjects:
    """Each sentence of ``source`` with its facts and its subject (:func:`_subject`). All
    of them, those without a fact too: they count among the latest sentences naming a
    word (``LATEST_PER_WORD``), and leaving them out changes which earlier value a
    correction replaces."""
    return _SUBJECTS.get(
        source,
        lambda: tuple(
            (sentence, mine, frozenset(_subject(sentence, mine)))
            for sentence, mine in _split(without_repeated_lines(source), facts)
        ),
    )


# How many of the latest sentences naming a word a correction compares itself with, per
# word of its subject: what it replaces was said about the same thing, most often lately;
# the bound keeps the search linear however often a word recurs.
LATEST_PER_WORD = 16


class _Earlier:
    """The sentences of the sources before a correction, looked up by the words of its
    subject: a correction that does not name its old value looks only at the latest
    sentences sharing a word with it.

    Only the sources that hold one of those words are split into sentences (each source's
    text case-folded once, all joined, searched from the correction backwards): a
    conversation of hundreds of messages with a few corrections reads the others once, in
    C. A word of a sentence's subject is a run of its letters, so a source whose folded
    text lacks it has no sentence naming it."""

    def __init__(self, sources: list[str], scans: list[Scanned]) -> None:
        self.sources = sources
        self.scans = scans
        self.folded = ""
        # Where each source's folded text starts and ends in it.
        self.starts: list[int] = []
        self.ends: list[int] = []

    def sentences_of(self, index: int) -> _Subjects:
        return _subjects_of(self.sources[index], self.scans[index].placed)

    def candidates(self, subject: set[str], index: int) -> list[tuple[int, int]]:
        """Places (source, sentence) up to the end of source ``index`` whose sentence
        shares a word of ``subject``, in order: the latest ``LATEST_PER_WORD`` naming each
        word."""
        if not self.starts:
            folded = [source.casefold() for source in self.sources]
            at = 0
            for text in folded:
                self.starts.append(at)
                self.ends.append(at + len(text))
                at += len(text) + 1
            self.folded = "\n".join(folded)  # no word holds a line break
        found: set[tuple[int, int]] = set()
        for word in subject:
            naming = 0
            end = self.ends[index]
            while naming < LATEST_PER_WORD:
                hit = self.folded.rfind(word, 0, end)
                if hit < 0:
                    break
                source = bisect.bisect_right(self.starts, hit) - 1
                for number in range(len(entries := self.sentences_of(source)) - 1, -1, -1):
                    if word in entries[number][2]:
                        found.add((source, number))
                        naming += 1
                        if naming == LATEST_PER_WORD:
                            break
                end = self.starts[source]  # the rest of this source is read
        return sorted(found)


def superseded(
    sources: list[str],
    known: Mapping[str, Scanned] | None = None,
    scans: list[Scanned] | None = None,
) -> Superseded:
    """The values of ``sources`` (oldest first) that a later correction replaced;
    ``known``: facts stored with the messages (``factstore.known_facts``); ``scans``: the
    sources' scans when the caller has them.

    Linear in what it reads: the sentences and their facts come from the scan (its cache
    or ``known``: no text is scanned again); a correction that does not name its old value
    compares itself with a bounded number of earlier sentences sharing a word with it (an
    index of them built once per call), and the values of each kind and shape are
    gathered once.
    """
    by: dict[str, str] = {}
    doubtful: set[str] = set()
    earlier: _Earlier | None = None
    shapes: _Shapes | None = None
    if scans is None:
        scans = scans_of(sources, known)
    for index, (source, scan) in enumerate(zip(sources, scans, strict=True)):
        for sentence, strong, facts in _cue_sentences(source, scan):
            olds: list[Placed] = []
            news: list[Placed] = []
            previous_end = 0
            for at, fact in enumerate(facts):
                before = sentence[previous_end : fact[0]]
                following = facts[at + 1][0] if at + 1 < len(facts) else len(sentence)
                after = sentence[fact[1] : following]
                marked_old = _OLD_MARKER.search(before) or _OLD_AFTER.match(after)
                (olds if marked_old else news).append(fact)
                previous_end = fact[1]
            if not news:
                continue
            if olds:
                for old in olds:
                    same = [n for n in news if n[2] == old[2]] or news
                    new = min(same, key=lambda n: abs(n[0] - old[0]))
                    _replace(by, normalise(old[3]), normalise(new[3]))
            elif strong:
                if earlier is None:
                    earlier = _Earlier(sources, scans)
                wanted = _replace_earlier(by, earlier, index, sentence, list(facts), news)
                if wanted:
                    if shapes is None:
                        shapes = _Shapes(scans)
                    shapes.replace(by, doubtful, index, wanted)
    return Superseded(by, doubtful - set(by.values()))


def _replace(by: dict[str, str], old: str, new: str) -> None:
    if old != new:
        by[old] = new
        by.pop(new, None)  # stated again as the current value


def _replace_earlier(
    by: dict[str, str],
    earlier: _Earlier,
    index: int,
    sentence: str,
    facts: Sequence[Placed],
    news: list[Placed],
) -> dict[str, str]:
    """Each of ``news`` replaces an earlier fact of its kind in the sentence most about the
    same thing (sharing the most words of :func:`_subject`; the latest of equals), among
    the sentences up to source ``index``. Returns the new values (by kind) for which no
    such sentence was found."""
    subject = _subject(sentence, facts)
    if not subject:
        return {}
    new_keys = {normalise(n[3]) for n in news}
    wanted = {n[2]: normalise(n[3]) for n in news}
    # kind: (shared words, place, old key)
    best: dict[str, tuple[int, tuple[int, int], str]] = {}
    for place in earlier.candidates(subject, index):
        text, earlier_facts, earlier_subject = earlier.sentences_of(place[0])[place[1]]
        if text == sentence:
            continue
        shared = len(subject & earlier_subject)
        for fact in earlier_facts:
            if fact[2] in wanted:
                key = normalise(fact[3])
                if key not in new_keys and (shared, place) >= best.get(fact[2], _NO_PLACE)[:2]:
                    best[fact[2]] = (shared, place, key)
    for kind, (_, _, old) in best.items():
        _replace(by, old, wanted.pop(kind))
    return wanted


_NO_PLACE = (0, (-1, -1), "")


class _Shapes:
    """For a new value whose thing no earlier sentence names (an earlier summary's bare
    list of facts, a Key-facts line): the one earlier value of its kind and shape ("B1-05"
    for "B2-17"), if there is exactly one. The values of every kind and shape, with the
    first source holding each, are gathered once (from the scan's cache)."""

    def __init__(self, scans: list[Scanned]) -> None:
        self.first: dict[tuple[str, str], dict[str, int]] = {}
        for index, occurrences in enumerate(scan.occurrences for scan in scans):
            for kind, _, key, _, _, _ in occurrences:
                keys = self.first.setdefault((kind, key.translate(SHAPE)), {})
                keys.setdefault(key, index)

    def replace(
        self, by: dict[str, str], doubtful: set[str], index: int, wanted: dict[str, str]
    ) -> None:
        for kind, new in wanted.items():
            keys = self.first.get((kind, new.translate(SHAPE)), {})
            candidates = [key for key, first in keys.items() if first <= index and key != new]
            if len(candidates) == 1:
                _replace(by, candidates[0], new)
            else:
                doubtful.update(candidates)
