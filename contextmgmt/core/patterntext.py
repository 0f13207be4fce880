"""Regular expressions as text: patterns built of literal words and leading characters,
and patterns taken apart into their top-level alternatives and leading words.

The language tables (``factlang``) and the correction cues (``factcues``) build their
patterns with these and read them back to decide what a pass over a text needs (a row's
words, a cue's alternatives): about what the regex engine does fast (skipping to a
pattern's first characters, rejecting an alternative led by a character without entering
it), not about facts.
"""

from __future__ import annotations

import re


def word_group(alternatives: str) -> str:
    """``a|b|…`` (literal words) as a group each of whose words must start a word. The
    regex engine skips to a pattern's possible first characters only when the pattern
    starts with them: the boundary is checked just after each word, looking back."""
    return "(?:" + "|".join(f"{w}(?<!\\w{w})" for w in alternatives.split("|")) + ")"


def each_led(leads: tuple[str, ...], rest: str) -> str:
    """``(?:lead|…)rest`` as ``lead rest|…``: alternatives that each start with a character
    (what the regex engine rejects without entering an alternative)."""
    return "|".join(lead + rest for lead in leads)


# A pattern that starts with a group of words (:func:`word_group`): it matches only where one
# of them is written.
_LEADING_WORDS = re.compile(r"\(\?:((?:(?:[^|()\\]|\\.)+\(\?<!\\w(?:[^|()\\]|\\.)+\)\|?)+)\)")
_WORD_AND_CHECK = re.compile(r"((?:[^|()\\]|\\.)+)\(\?<!\\w(?:[^|()\\]|\\.)+\)")
_ESCAPED = re.compile(r"\\(.)")
_UNESCAPED_SPECIAL = re.compile(r"\\[A-Za-z0-9]|(?<!\\)(?:\\\\)*[.^$*+?{}\[\]]")


def leading_words(pattern: str) -> tuple[str, ...]:
    """The words a pattern that starts with :func:`word_group` needs in a text (one of them),
    or () for any other pattern: a row whose words a batch of texts does not hold is not
    run over it (most rows start with a language's words, and a pass costs the same
    whether it finds anything or not)."""
    group = _LEADING_WORDS.match(pattern)
    if group is None:
        return ()
    words = _WORD_AND_CHECK.findall(group.group(1))
    if any(_UNESCAPED_SPECIAL.search(word) for word in words):
        return ()  # not a literal word: no substring stands for it
    return tuple(_ESCAPED.sub(r"\1", word) for word in words)


def top_level_alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (a ``|`` in a group or a class is not one)."""
    out, depth, start, at = [], 0, 0, 0
    in_class = False
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            at += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            out.append(pattern[start:at])
            start = at + 1
        at += 1
    out.append(pattern[start:])
    return out


def by_first_character(pattern: str) -> str:
    """``pattern``'s top-level alternatives that start with a literal character grouped by
    it (``a(?:x|y)|b…``), the others left as they are: the regex engine rejects an
    alternative led by a character (or a class) without entering it, so a run of digits
    that nothing can follow costs one look at the character after it."""
    by_first: dict[str, list[str]] = {}
    others: list[str] = []
    for alternative in top_level_alternatives(pattern):
        size = 2 if alternative[:1] == "\\" and not alternative[1:2].isalnum() else 1
        first, rest = alternative[:size], alternative[size:]
        if (size == 1 and first in "\\[(.^$*+?{|") or not first or rest[:1] in ("?", "*", "{"):
            others.append(alternative)
        else:
            by_first.setdefault(first, []).append(rest)
    grouped = [f"{first}(?:{'|'.join(rests)})" for first, rests in by_first.items()]
    return "|".join(grouped + others)
