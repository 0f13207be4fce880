"""What a fact looks like: the kinds of hard fact a summary must keep, and the one combined
pattern that finds them all.

Each kind (URL, email, path, code span, setting, date, version, identifier, time, number)
has a weight and a priority (``_PATTERNS``). A scan does not try them one by one: they are
joined into one pattern per set of kinds a text can hold (``scanner_for``), branched by a
fact's first character, so the regex engine skips plain words in C. Kept apart from the
scan (``factscan``) because this is regex construction, done once per set of kinds, and
reads best on its own; the scan only asks for a scanner and the kind of each group.
"""

from __future__ import annotations

import re

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

PATTERN_WEIGHT = {kind: weight for kind, weight, _ in _PATTERNS}
# The kinds' order among equals in a check: these, then the language tables' own
# (``factlang.KINDS``).
PRIORITY = {kind: i for i, (kind, _, _) in enumerate(_PATTERNS)}
PRIORITY.update(
    (kind, len(_PATTERNS) + i)
    for i, kind in enumerate(("iban", "bic", "money", "address", "phone", "amount", "name"))
)


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
_KIND_OF = {f"{kind}_{branch}": kind for kind, _, _ in _PATTERNS for branch in "dlo"}


def scanner_for(text: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
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
        kind_of_group = [""] * (scanner.groups + 1)
        for name, index in scanner.groupindex.items():
            kind_of_group[index] = _KIND_OF[name]
        found = _SCANNERS[key] = (scanner, tuple(kind_of_group))
    return found
