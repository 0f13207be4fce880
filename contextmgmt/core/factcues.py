"""The cues that make a sentence a correction ("not", "changed", "nicht", "改为", …), per
language, and the patterns that find them fast; ``corrections`` reads them (what a cue
means there), and the scan (``factscan``) notes whether a text holds any, so that a
compaction never searches a text for cues again (docs/architecture.md, "Corrections").
"""

from __future__ import annotations

import bisect
import re

from .factlang import SEPARATOR
from .patterntext import top_level_alternatives

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
    "fr": (
        r"\bpas\b|\bau lieu d|\bplutôt que\b|\bet non\b",
        r"\b(?:changée?s?|modifiée?s?|corrigée?s?|reportée?s?|déplacée?s?|décalée?s?"
        r"|remplacée?s?|avancée?s?)\b|\bcorrection\b|\bdésormais\b|\bmaintenant\b"
        r"|\bn'est plus\b|\bnouvelle?\b",
    ),
    "es": (
        r"\bno\b|\ben vez de|\ben lugar de",
        r"\b(?:cambiad[oa]s?|corregid[oa]s?|modificad[oa]s?|aplazad[oa]s?|trasladad[oa]s?"
        r"|actualizad[oa]s?|adelantad[oa]s?)\b|\bcorrección\b|\bahora\b|\bya no\b"
        r"|\bpasa a\b|\bnuev[oa]\b",
    ),
    "ja": (
        r"ではなく|じゃなく|でなく|ではありません",
        r"変更|訂正|修正|延期|に変わ|更新",
    ),
    "ru": (
        r"\bне\b|\bвместо\b",
        r"\b(?:изменен[аоы]?|изменили|перенесен[аоы]?|перенесли|исправлен[аоы]?|исправили"
        r"|обновлен[аоы]?)\b|\bпоправка\b|\bтеперь\b|\bуже не\b|\bнов(?:ый|ая|ое)\b",
    ),
}


def _first_character_led(pattern: str, *, ignore_case: bool = False) -> str:
    """``pattern`` (alternatives of words, each maybe led by ``\\b`` or by a group of
    words) as alternatives that each start with a literal character, the word boundary
    checked just after it, looking back (``\\b`` + "not" becomes "n(?<!\\wn)ot").

    The same matches; but the regex engine skips to a pattern's possible first characters
    in C only when every alternative starts with a literal one: led by ``\\b``, each of
    some eighty alternatives is tried at every character (a cue search then costs more
    than the rest of a compaction). ``ignore_case``: the first character in each case,
    the rest case-insensitive (what ``re.IGNORECASE`` would match, the prefix kept)."""
    flat: list[str] = []
    for alternative in top_level_alternatives(pattern):
        if alternative.startswith("\\b(?:"):
            close = alternative.index(")")
            for word in top_level_alternatives(alternative[len("\\b(?:") : close]):
                flat.append("\\b" + word + alternative[close + 1 :])
        else:
            flat.append(alternative)
    by_first: dict[str, list[str]] = {}
    for alternative in flat:
        bounded = alternative.startswith("\\b")
        rest = alternative[2:] if bounded else alternative
        first, rest = rest[0], rest[1:]
        if first in "\\[(.^$*+?{|":
            raise ValueError(f"a cue must start with a literal character: {alternative!r}")
        for variant in dict.fromkeys((first.lower(), first.upper()) if ignore_case else first):
            check = f"(?<!\\w{re.escape(variant)})" if bounded else ""
            tail = f"(?i:{rest})" if ignore_case and rest else rest
            by_first.setdefault(variant, []).append(check + tail)
    # One alternative per first character (the engine tries them one by one).
    return "|".join(
        re.escape(first) + (f"(?:{'|'.join(tails)})" if len(tails) > 1 else tails[0])
        for first, tails in by_first.items()
    )


# Matched against case-folded text (faster than IGNORECASE over long texts).
_WEAK_CUES = "|".join(weak for weak, _ in CUES.values()).casefold()
_STRONG_CUES = "|".join(strong for _, strong in CUES.values()).casefold()
CUE_WORDS = re.compile(_first_character_led(_WEAK_CUES + "|" + _STRONG_CUES, ignore_case=True))
ANY_CUE = re.compile(_first_character_led(_WEAK_CUES + "|" + _STRONG_CUES))
WEAK = re.compile(_first_character_led(_WEAK_CUES))
STRONG = re.compile(_first_character_led(_STRONG_CUES))


def _after_a_non_word(pattern: str) -> str:
    """``pattern`` (:data:`ANY_CUE`'s cues) as a search stops at fewer places: the cues
    that start a word (``\\b`` first) led by the non-word character before them (``\\W``:
    the regex engine then stops only after a space or a punctuation mark, not at every
    letter a cue starts with), the others (Chinese, Japanese) as they are; each group of
    alternatives led by its first character."""
    bounded: list[str] = []
    free: list[str] = []
    for alternative in top_level_alternatives(pattern):
        if alternative.startswith("\\b(?:"):
            close = alternative.index(")")
            for word in top_level_alternatives(alternative[len("\\b(?:") : close]):
                bounded.append(word + alternative[close + 1 :])
        elif alternative.startswith("\\b"):
            bounded.append(alternative[2:])
        else:
            free.append(alternative)

    def led(alternatives: list[str]) -> list[str]:
        by_first: dict[str, list[str]] = {}
        for alternative in alternatives:
            if alternative[0] in "\\[(.^$*+?{|":
                raise ValueError(f"a cue must start with a literal character: {alternative!r}")
            by_first.setdefault(alternative[0], []).append(alternative[1:])
        return [
            re.escape(first) + (f"(?:{'|'.join(rests)})" if len(rests) > 1 else rests[0])
            for first, rests in by_first.items()
        ]

    return "|".join([f"\\W(?:{'|'.join(led(bounded))})", *led(free)])


# What :data:`ANY_CUE` finds (on case-folded text), a cue that starts a word found with
# the character before it.
_CUE_SEARCH = re.compile(_after_a_non_word(_WEAK_CUES + "|" + _STRONG_CUES))


def cued(texts: list[str]) -> list[bool]:
    """Whether each of ``texts`` holds a cue of any language (:data:`ANY_CUE`, on the
    case-folded text). One search of all of them joined by ``factlang.SEPARATOR`` (no cue
    holds it, and to a cue's word boundaries it looks like a text's edge), resumed at the
    next text after each hit: linear in what is read, one pass, the overhead paid once.
    The search stops only after a space or a punctuation mark or at a Chinese or
    Japanese cue's first character (:func:`_after_a_non_word`); the texts joined are led
    by a space, so that a cue at the very start is found too."""
    folded = [text.casefold() for text in texts]
    joined = " " + SEPARATOR.join(folded)
    starts: list[int] = []
    at = 1
    for text in folded:
        starts.append(at)
        at += len(text) + len(SEPARATOR)
    out = [False] * len(texts)
    search = _CUE_SEARCH.search
    index = 0
    match = search(joined)
    while match is not None:
        # The match's last character is the cue's, in the text that holds it.
        index = bisect.bisect_right(starts, match.end() - 1, index) - 1
        out[index] = True
        if index + 1 == len(starts):
            break
        # From the character before the next text: a cue there is found after it.
        match = search(joined, starts[index + 1] - 1)
    return out
