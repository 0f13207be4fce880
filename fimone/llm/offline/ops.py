"""Operations in words, in English, German and Chinese, for the offline model's arithmetic.

"double 5", "verdopple 5", "把 5 翻倍", "ziehe 3 von 5 ab", "teile 10 durch 2" become
plain expressions (``spell_out``). A later step of a plan often names no first operand at
all ("then double it", "dann addiere 4", "再乘以 10"): ``continue_from`` puts the earlier
step's value in its place, so the step computes what was asked instead of repeating what it
was given.
"""

from __future__ import annotations

import re

NUM = r"-?\d+(?:\.\d+)?"

# Verbs whose only operand is the value itself.
_DOUBLE = r"\b(?:double|verdopp\w*)\b|翻倍|翻一番|加倍"
_HALVE = r"\b(?:halve|halbier\w*)\b|减半|折半"
_TRIPLE = r"\b(?:triple|verdreifach\w*)\b|翻三倍"
_SQUARE = r"\b(?:square|quadrier\w*)\b|平方"
_UNARY = [(_DOUBLE, "* 2"), (_HALVE, "/ 2"), (_TRIPLE, "* 3"), (_SQUARE, "** 2")]

# The same verbs with their operand written out. English "double"/"square" are also
# adjectives ("3 double rooms", "a square 5 m wide"): only as the command that starts a part.
_UNARY_SPELLED = [
    (r"(?:^|\b(?:then|and|now|please)\s+)(?:double)", r"\b(?:verdopp\w*)|翻倍|翻一番|加倍", "* 2"),
    (r"(?:^|\b(?:then|and|now|please)\s+)(?:halve)", r"\b(?:halbier\w*)|减半|折半", "/ 2"),
    (r"(?:^|\b(?:then|and|now|please)\s+)(?:triple)", r"\b(?:verdreifach\w*)|翻三倍", "* 3"),
    (r"(?:^|\b(?:then|and|now|please)\s+)(?:square)", r"\b(?:quadrier\w*)|的平方", "** 2"),
]
_SPELLED = [
    *(
        (
            re.compile(rf"(?:{english}|{other})\s*(?:了\s*)?({NUM})(?!\s*[\d.])", re.I),
            rf" \1 {op}",
        )
        for english, other, op in _UNARY_SPELLED
    ),
    *(
        (re.compile(rf"(?<![\d.])({NUM})\s*(?:{other})", re.I), rf"\1 {op}")
        for _, other, op in _UNARY_SPELLED
    ),
    (re.compile(rf"\bmultiply\s+({NUM})\s+(?:by|with)\s+({NUM})", re.I), r"\1 * \2"),
    (re.compile(rf"\bmultiplizier\w*\s+({NUM})\s+mit\s+({NUM})", re.I), r"\1 * \2"),
    (re.compile(rf"({NUM})\s+mit\s+({NUM})\s+multiplizier\w*", re.I), r"\1 * \2"),
    (re.compile(rf"\bdivide\s+({NUM})\s+by\s+({NUM})", re.I), r"\1 / \2"),
    (re.compile(rf"\b(?:teile|dividier\w*)\s+({NUM})\s+durch\s+({NUM})", re.I), r"\1 / \2"),
    (re.compile(rf"({NUM})\s+durch\s+({NUM})\s+(?:teilen|dividieren)", re.I), r"\1 / \2"),
    (re.compile(rf"\badd\s+({NUM})\s+to\s+({NUM})", re.I), r"\2 + \1"),
    (re.compile(rf"\baddier\w*\s+({NUM})\s+zu\s+({NUM})", re.I), r"\2 + \1"),
    (re.compile(rf"\bsubtract\s+({NUM})\s+from\s+({NUM})", re.I), r"\2 - \1"),
    (
        re.compile(rf"\b(?:zieh\w*|subtrahier\w*)\s+({NUM})\s+von\s+({NUM})(?:\s+ab)?", re.I),
        r"\2 - \1",
    ),
    (re.compile(rf"从\s*({NUM})\s*(?:中|里)?\s*减去?\s*({NUM})"), r"\1 - \2"),
    # German infix words, only between numbers ("5 mal 3", "10 geteilt durch 2", "2 hoch 8").
    (re.compile(rf"({NUM})\s+mal\s+({NUM})", re.I), r"\1 * \2"),
    (re.compile(rf"({NUM})\s+(?:geteilt\s+)?durch\s+({NUM})", re.I), r"\1 / \2"),
    (re.compile(rf"({NUM})\s+hoch\s+({NUM})", re.I), r"\1 ** \2"),
]

# An operation whose first operand is the value before ("add 4", "multipliziere mit 10").
_OPEN = [
    (re.compile(rf"\b(?:multiply|multiplizier\w*)\s+(?:by|with|mit)\s+({NUM})", re.I), "* {0}"),
    (re.compile(rf"\b(?:times|mal|multiplied by)\s+({NUM})", re.I), "* {0}"),
    (re.compile(rf"乘以?\s*({NUM})"), "* {0}"),
    (re.compile(rf"\b(?:divide|teile|dividier\w*)\s+(?:by|durch)\s+({NUM})", re.I), "/ {0}"),
    (re.compile(rf"\b(?:divided by|geteilt durch|durch)\s+({NUM})", re.I), "/ {0}"),
    (re.compile(rf"除以\s*({NUM})"), "/ {0}"),
    (re.compile(rf"\b(?:add|addier\w*|plus)\s+({NUM})", re.I), "+ {0}"),
    (re.compile(rf"加上?\s*({NUM})"), "+ {0}"),
    (re.compile(rf"\b(?:subtract|subtrahier\w*|zieh\w*|minus)\s+({NUM})", re.I), "- {0}"),
    (re.compile(rf"减去?\s*({NUM})"), "- {0}"),
    *(
        (re.compile(rf"{english}\b|{other}|{extra}", re.I), op)
        for (english, other, op), extra in zip(_UNARY_SPELLED, ["$^"] * 3 + ["平方"], strict=True)
    ),
]

# Any word of an operation: a step that has one and no operand of its own builds on the
# step before.
OPERATION = re.compile(
    "|".join([verb for verb, _ in _UNARY])
    + r"|\b(?:multiply|multiplizier\w*|divide|teile|dividier\w*|add|addier\w*|subtract"
    r"|subtrahier\w*|zieh\w*|times|mal|plus|minus)\b|乘|除以|加上?|减去?",
    re.I,
)
# "it", "es", "它" as the object of an operation ("double it", "verdopple es", "把它翻倍");
# "dazu"/"davon" as "to it"/"from it".
_PRONOUN = re.compile(r"\b(?:it|es|dies)\b|它", re.I)
_TO_IT = re.compile(r"\b(?:dazu|hinzu)\b", re.I)
_FROM_IT = re.compile(r"\bdavon\b", re.I)


def spell_out(text: str) -> str:
    """``text`` with operations in words written as arithmetic."""
    for pattern, replacement in _SPELLED:
        text = pattern.sub(replacement, text)
    return text


def has_operation(text: str) -> bool:
    return OPERATION.search(text) is not None


def continue_from(text: str, value: str) -> str:
    """``text`` (a step's task) applied to ``value``, the result it builds on: pronouns
    become the value, and an operation without its first operand gets it."""
    if not has_operation(text):
        return text
    text = _TO_IT.sub(f" zu {value} ", text)
    text = _FROM_IT.sub(f" von {value} ", text)
    text = _PRONOUN.sub(f" {value} ", text)
    spelled = spell_out(text)
    if re.search(rf"{NUM}\s*(?:\*\*|[-+*/])\s*{NUM}", spelled):
        return text
    for pattern, op in _OPEN:
        match = pattern.search(text)
        if match:
            operand = match.group(1) if match.groups() else ""
            expression = f"{value} {op.format(operand)}"
            # "=": the operation was asked for ("5 - 3" alone could be a range).
            return text[: match.start()] + f" {expression} = " + text[match.end() :]
    return text
