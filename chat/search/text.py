"""Text as the full-text index sees it: the same words on SQLite and PostgreSQL.

Both databases tokenise differently (PostgreSQL's parser keeps host names, paths and
hyphenated words whole; FTS5's ``unicode61`` splits on every non-alphanumeric character)
and fold case differently (PostgreSQL in the C locale folds ASCII only). So the indexed
column holds text already cut into words here, case-folded, one space between words, and
both databases only split it on those spaces. A query is cut by the same function.

Chinese, Japanese and Korean are written without spaces between words: every CJK
character is its own token, and a CJK run in a query becomes a phrase of its characters
(adjacent, in order). That finds any CJK substring, as a reader expects, while Latin
words still match whole ("lease" does not match "release"). See docs/architecture.md.

German writes compounds as one word ("Lieferadresse", "Rechnungsnummer"): the long words
of a German text are indexed a second time by their tails, each marked with ``PART_MARK``
so that no ordinary word matches one, and a query word of ``PART_MIN_CHARS`` letters or
more also looks for a marked tail it begins ("adresse" finds "Lieferadresse", "rechnung"
finds "Rechnungsnummer"). English texts get no tails: "lease" still does not find
"release".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+")
# Han (with extensions A and compatibility), kana, Hangul syllables and jamo.
_CJK_CHAR = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]"
)
# Nobody searches for a 200-character base64 run; PostgreSQL refuses words over 2 KB.
MAX_TOKEN_CHARS = 100


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _pieces(word: str) -> list[tuple[bool, str]]:
    """A word split into runs: ``(True, run)`` for CJK runs, ``(False, run)`` for the rest."""
    pieces: list[tuple[bool, str]] = []
    start = 0
    for match in _CJK_CHAR.finditer(word):
        if match.start() > start:
            pieces.append((False, word[start : match.start()]))
        if pieces and pieces[-1][0] and start == match.start():
            pieces[-1] = (True, pieces[-1][1] + match.group())
        else:
            pieces.append((True, match.group()))
        start = match.end()
    if start < len(word):
        pieces.append((False, word[start:]))
    return pieces


# Marks a tail of a compound word in the index; a digit, so that both engines' tokenisers
# keep it with the letters after it and no word of a text starts like that.
PART_MARK = "0"
PART_MIN_CHARS = 4  # the shortest part a query finds
COMPOUND_MIN_CHARS = 10  # shorter words are not taken apart
_GERMAN = frozenset(
    "der die das den dem des und ist sind nicht mit für ein eine einen einem wir ich sie "
    "auf zu im am bitte von bei noch auch oder aber wird".split()
)


def _looks_german(words: list[str]) -> bool:
    german = sum(1 for w in words if w in _GERMAN)
    return german >= 2 and german * 25 >= len(words)


def compound_parts(words: list[str]) -> list[str]:
    """The marked tails of the long words of ``words`` when they read as German."""
    if not _looks_german(words):
        return []
    parts: dict[str, None] = {}
    for word in words:
        if len(word) >= COMPOUND_MIN_CHARS and word.isalpha() and not _CJK_CHAR.search(word):
            for start in range(len(word) - PART_MIN_CHARS + 1):
                parts[PART_MARK + word[start:]] = None
    return list(parts)


def tokens(text: str) -> list[str]:
    """The words of ``text`` as they are indexed, in order."""
    out: list[str] = []
    for word in _WORD.findall(_fold(text)):
        for cjk, run in _pieces(word):
            if cjk:
                out.extend(run)
            elif len(run) <= MAX_TOKEN_CHARS:
                out.append(run)
    return out


def index_text(text: str) -> str:
    """What the index column stores for ``text``: its words, then the parts of its
    compound words (after them, so phrases of its words stay adjacent)."""
    words = tokens(text)
    return " ".join(words + compound_parts(words))


@dataclass(frozen=True)
class Term:
    """One thing to look for: a word, or a CJK phrase (its characters, adjacent)."""

    words: tuple[str, ...]
    prefix: bool = False  # the last word may be the start of a longer one

    @property
    def cjk(self) -> bool:
        return all(_CJK_CHAR.fullmatch(w) for w in self.words)

    @property
    def part(self) -> str | None:
        """The marked tail this term also matches as the start of (a part of a compound
        word, see the module's docstring), or None."""
        if len(self.words) != 1:
            return None
        word = self.words[0]
        if len(word) < PART_MIN_CHARS or not word.isalpha() or _CJK_CHAR.search(word):
            return None
        return PART_MARK + word

    def found_in(self, indexed: str) -> bool:
        """Whether an indexed text (``index_text``) contains this term."""
        padded = f" {indexed} "
        needle = " " + " ".join(self.words)
        if (needle in padded) if self.prefix else (needle + " " in padded):
            return True
        part = self.part
        return part is not None and " " + part in padded

    def count_in(self, indexed: str) -> int:
        """How often an indexed text holds this term (a compound's part counted once)."""
        padded = f" {indexed} "
        needle = " " + " ".join(self.words) + ("" if self.prefix else " ")
        found = padded.count(needle)
        part = self.part
        if part is not None and " " + part in padded:
            found += 1
        return found


def query_terms(query: str, *, stopwords: frozenset[str] = frozenset()) -> list[Term]:
    """The terms of a query, in order, without repeats; ``stopwords`` are left out unless
    nothing else is left."""
    terms: list[Term] = []
    for word in _WORD.findall(_fold(query)):
        for cjk, run in _pieces(word):
            if cjk:
                terms.append(Term(tuple(run)))
            elif len(run) <= MAX_TOKEN_CHARS:
                terms.append(Term((run,)))
    unique = list(dict.fromkeys(terms))
    kept = [t for t in unique if not (len(t.words) == 1 and t.words[0] in stopwords)]
    return kept or unique


# --- where terms occur in the original text (passages and highlights) ---------------------


@lru_cache(maxsize=256)  # recall looks for each term in hundreds of passages
def term_pattern(term: Term) -> re.Pattern[str]:
    """Where a term occurs in the original text: whole words, any case; CJK as written."""
    if term.cjk:
        return re.compile("".join(re.escape(w) for w in term.words))
    body = r"[\W_]+".join(re.escape(w) for w in term.words)
    # A prefix marks the whole word it starts.
    tail = r"[^\W_]*" if term.prefix else r"(?![^\W_])"
    return re.compile(r"(?<![^\W_])" + body + tail, re.IGNORECASE)


def snippet_bounds(text: str, terms: list[Term], width: int) -> tuple[int, int]:
    """A window of ``width`` characters of ``text`` starting a little before the first
    match, moved forward to a word start."""
    positions = []
    for term in terms:
        found = term_pattern(term).search(text)
        if found:
            positions.append(found.start())
    start = max(0, min(positions) - width // 3) if positions else 0
    end = min(len(text), start + width)
    if start > 0:
        space = text.find(" ", start, start + 40)
        start = space + 1 if space >= 0 else start
    return start, end


def highlights(text: str, terms: list[Term]) -> list[tuple[int, int]]:
    """``(start, end)`` of every occurrence of a term in ``text``, sorted, not overlapping."""
    spans = sorted(m.span() for term in terms for m in term_pattern(term).finditer(text))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
