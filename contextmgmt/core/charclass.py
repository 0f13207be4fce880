"""Character classes of text, and the counter that counts them.

A text's tokens are estimated as a weighted sum of how many characters of each class it
holds (``contextmgmt.core.tokens``). This module defines the classes (``CLASSES``), the
weights fitted against o200k_base (``BASE_WEIGHTS``; ``bench/token_fit.py`` prints them) and
counts them:

- ``count_into(text, counts, w)`` adds the text's class counts to ``counts`` (an
  ``array("q")`` of ``N_CLASSES``) and returns their value under the weights ``w``;
- ``count_packed(text, w)`` returns (value, counts packed as ``N_CLASSES`` native 64-bit
  integers), the form a message's token cache keeps.

Both run ``count_py`` below, in which no Python code runs per character (docs/tokens.md,
"The estimate").

The classes: ASCII lower- and upper-case letters, digits, punctuation, double quotes,
spaces, newlines and other control characters; characters inside long base64/hex-like
runs (an extra charge on top of their letters and digits); and, for every other script,
characters by Unicode block (Latin accents, Greek, Cyrillic, Hebrew, Arabic, Indic and
Thai, CJK, kana, Hangul, symbols, emoji, …).

The Python counter: ASCII text is mapped to class bytes with one ``translate`` and counted
with ``bytes.count`` per class, commonest first, until every character is counted; other
text is mapped so that each non-ASCII character's UTF-8 lead byte names its Unicode block,
and when one ``memchr`` finds no block but the guessed one, that block's count follows
from the UTF-8 length. Long texts are peeled (``_peel``): each class deleted with
``bytes.translate``, commonest first, so later passes run over what is left. Long
base64-like runs are looked for (``bytes.find``) only when the text has a digit and enough
capitals and digits to hold one. Counting runs of letters, digits or punctuation (what a
BPE pre-tokenizer splits on) was tried and did not improve the fit against o200k_base
(mean |ln ratio| 0.054 with, 0.056 without), so it is not paid for.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, MutableSequence

# (name, UTF-8 lead bytes) of the non-ASCII classes: the lead byte names the Unicode block.
_LEAD_BLOCKS = (
    ("latin_ext", 0xC0, 0xCE),  # U+0080-U+037F: accents, Latin extended, IPA, combining
    ("greek", 0xCE, 0xD0),  # U+0380-U+03FF
    ("cyrillic", 0xD0, 0xD5),  # U+0400-U+053F
    ("hebrew_armenian", 0xD5, 0xD8),  # U+0540-U+05FF
    ("arabic", 0xD8, 0xE0),  # U+0600-U+07FF (and Syriac, Thaana, N'Ko)
    ("indic_thai", 0xE0, 0xE1),  # U+0800-U+0FFF
    ("other_scripts", 0xE1, 0xE2),  # U+1000-U+1FFF: Georgian, Khmer, Vietnamese letters…
    ("symbols", 0xE2, 0xE3),  # U+2000-U+2FFF: typographic punctuation, arrows, math
    ("cjk_punct_kana", 0xE3, 0xE4),  # U+3000-U+3FFF
    ("cjk", 0xE4, 0xEA),  # U+4000-U+9FFF
    ("hangul", 0xEA, 0xEE),  # U+A000-U+DFFF
    ("fullwidth", 0xEE, 0xF0),  # U+E000-U+FFFF: private use, fullwidth forms, selectors
    ("astral", 0xF0, 0x100),  # U+10000 and up: emoji, rare CJK
)
CLASSES: tuple[str, ...] = (
    "lower",  # a-z
    "upper",  # A-Z
    "digit",
    "punct",  # ASCII punctuation and symbols but the double quote
    "quote",  # " (JSON, code: it seldom merges with its neighbours)
    "space",
    "newline",
    "other_space",  # tabs and other ASCII control characters
    "encoded",  # characters in base64/hex-like runs of 20 or more
    *(name for name, _, _ in _LEAD_BLOCKS),
)
N_CLASSES = len(CLASSES)

# Tokens per unit of each class, fitted against o200k_base (bench/token_fit.py prints these).
BASE_WEIGHTS: tuple[float, ...] = (
    0.272,  # lower
    0.641,  # upper
    0.692,  # digit
    0.257,  # punct
    1.0,  # quote
    0.0,  # space
    0.998,  # newline
    0.0,  # other_space
    0.213,  # encoded
    1.167,  # latin_ext
    0.408,  # greek
    0.338,  # cyrillic
    0.457,  # hebrew_armenian
    0.405,  # arabic
    0.409,  # indic_thai
    0.12,  # other_scripts
    3.0,  # symbols
    0.783,  # cjk_punct_kana
    0.732,  # cjk
    0.817,  # hangul
    1.96,  # fullwidth
    1.416,  # astral
)

# Class byte of every UTF-8 byte: an ASCII class, a continuation byte, or 0x80 + the index
# of a lead byte's block.
_ASCII_CLASS_BYTES = {
    "lower": 0x01,
    "upper": 0x02,
    "digit": 0x03,
    "punct": 0x04,
    "quote": 0x05,
    "space": 0x06,
    "newline": 0x07,
    "other_space": 0x08,
}
_CONT = 0x7F


def _class_of_byte(i: int) -> int:
    if i >= 0x80:
        if i < 0xC0:
            return _CONT
        return next(0x80 + k for k, (_, lo, hi) in enumerate(_LEAD_BLOCKS) if lo <= i < hi)
    ch = chr(i)
    name = (
        "lower"
        if "a" <= ch <= "z"
        else "upper"
        if "A" <= ch <= "Z"
        else "digit"
        if ch.isdigit()
        else "space"
        if ch == " "
        else "quote"
        if ch == '"'
        else "newline"
        if ch in "\r\n"
        else "punct"
        if ch.isprintable()
        else "other_space"
    )
    return _ASCII_CLASS_BYTES[name]


_BYTE_CLASS = bytes(_class_of_byte(i) for i in range(256))

# (class index, class byte), commonest first (see _peel).
Weights = tuple[float, ...]
Counts = MutableSequence[int]  # an array("q") of N_CLASSES
_Codes = tuple[tuple[int, bytes], ...]


def _ascii_codes(*names: str) -> _Codes:
    return tuple((CLASSES.index(name), bytes([_ASCII_CLASS_BYTES[name]])) for name in names)


_ASCII_CODES = _ascii_codes(
    "lower", "space", "punct", "upper", "digit", "newline", "quote", "other_space"
)
_ASCII_CODES_BUT_SPACE = _ASCII_CODES[:1] + _ASCII_CODES[2:]
_ASCII_CODES_BUT_LOWER_AND_SPACE = _ASCII_CODES[2:]
_LOWER_BYTE, _UPPER_BYTE = _ASCII_CLASS_BYTES["lower"], _ASCII_CLASS_BYTES["upper"]
_LEAD_CODES = tuple(
    (CLASSES.index(name), bytes([0x80 + [n for n, _, _ in _LEAD_BLOCKS].index(name)]))
    for name in ("latin_ext", "cyrillic", "cjk", "cjk_punct_kana", "fullwidth", "symbols")
    + ("arabic", "hangul", "greek", "hebrew_armenian", "indic_thai", "other_scripts", "astral")
)
_LEAD_INDEX = {code[0]: index for index, code in _LEAD_CODES}
_ASCII_ALL = b"".join(code for _, code in _ASCII_CODES)
_LEAD_ALL = b"".join(code for _, code in _LEAD_CODES)
_I_LOWER, _I_UPPER, _I_DIGIT, _I_SPACE, _I_ENCODED = (
    CLASSES.index(name) for name in ("lower", "upper", "digit", "space", "encoded")
)

# Base64/hex-like runs: 20 or more ASCII letters and digits, with digits and non-digits.
# Base64's "+" and "/" (1 character in 32) cut it into runs that are mostly longer than 20;
# counting them in would join paths and key=value pairs into false runs.
_ENCODED_MIN = 20
_ENCODED_MAP = bytes(0x78 if chr(i).isascii() and chr(i).isalnum() else 0x20 for i in range(256))
_ENCODED_NEEDLE = b"x" * _ENCODED_MIN


def _encoded_chars(data: bytes) -> int:
    """Characters in runs that look like base64 or hex (C-speed search, a loop per run)."""
    runs = data.translate(_ENCODED_MAP)
    pos = runs.find(_ENCODED_NEEDLE)
    total = 0
    while pos >= 0:
        end = runs.find(b" ", pos + _ENCODED_MIN)
        if end < 0:
            end = len(runs)
        run = data[pos:end]
        if not (run.isdigit() or run.isalpha()):
            total += end - pos
        pos = runs.find(_ENCODED_NEEDLE, end)
    return total


# Short texts are counted in place (``bytes.count`` per class): there, the cost is the
# calls, not the bytes. Longer ones are peeled.
_PEEL_MIN = 1024
_MIXED_PEEL_MIN = 256  # bytes of a text of several non-ASCII blocks
_CONT_BYTES = bytes(range(0x80, 0xC0))
# Per block (its class byte): the class table with every other block's lead bytes mapped
# to _OTHER, and the UTF-8 bytes that are not another block's lead bytes.
_OTHER = 0xFF
_ONE_BLOCK = {
    code: bytes(c if c < 0x80 or c == code else _OTHER for c in _BYTE_CLASS) for code in _LEAD_INDEX
}
_NOT_OTHER_LEADS = {
    code: bytes(i for i in range(256) if _BYTE_CLASS[i] < 0x80 or _BYTE_CLASS[i] == code)
    for code in _LEAD_INDEX
}
_LATIN_EXT = 0x80 + [name for name, _, _ in _LEAD_BLOCKS].index("latin_ext")


# UTF-8 bytes beyond the first of a character of each block (a block's lead bytes all start
# sequences of one length).
_EXTRA_BYTES = {
    code: 1 if lo < 0xE0 else 2 if lo < 0xF0 else 3
    for code, (_, lo, _) in enumerate(_LEAD_BLOCKS, 0x80)
}


def _guess(first: int) -> tuple[bytes, int, int, int]:
    code = _BYTE_CLASS[first] if first >= 0xC0 else _LATIN_EXT
    return _ONE_BLOCK[code], _LEAD_INDEX[code], _EXTRA_BYTES[code], code


# By a text's first UTF-8 byte: the table marking other blocks than the guessed one, the
# guessed block's class index, its characters' UTF-8 bytes beyond the first, its class byte.
_GUESS = tuple(_guess(first) for first in range(256))
# The raw ASCII bytes of each ASCII class, commonest first: ASCII text is peeled straight
# from its UTF-8 bytes, without mapping them to class bytes first.
_ASCII_SETS = tuple(
    (index, bytes(i for i in range(0x80) if _BYTE_CLASS[i] == code[0]))
    for index, code in _ASCII_CODES
)
_ASCII_SETS_BUT_SPACE = _ASCII_SETS[:1] + _ASCII_SETS[2:]


def _peel(buf: bytes, codes: _Codes, counts: Counts, w: Weights) -> tuple[float, bytes]:
    """Count each code (a byte, or a set of bytes) by deleting it; add the counts to
    ``counts`` and return their value under ``w`` and what is left.

    Every pass runs over what the previous ones left, so deleting the commonest classes
    first makes the rest cheap; deleting is a branch per byte, which beats one
    ``bytes.count`` pass per class on the whole text. Stops when nothing is left."""
    value = 0.0
    for index, code in codes:
        rest = buf.translate(None, code)
        n = len(buf) - len(rest)
        if n:
            counts[index] += n
            value += n * w[index]
            buf = rest
            if not buf:
                break
    return value, buf


def _count_leads(leads: bytes, counts: Counts, w: Weights) -> float:
    """Count lead class bytes by deleting the class of the first one left, until none is:
    as many passes as the text has scripts, whichever they are."""
    value = 0.0
    while leads:
        code = leads[0]
        index = _LEAD_INDEX[code]
        n = leads.count(code)
        counts[index] += n
        value += n * w[index]
        if n == len(leads):  # one script left: no copy needed
            break
        leads = leads.translate(None, bytes((code,)))
    return value


def count_py(text: str, counts: Counts, w: Weights) -> float:
    """Add the class counts of ``text`` to ``counts``; return their value under ``w``.

    The value is summed as the classes are found, in no set order (``_HALF`` makes that
    immaterial). A short text's steps are all in this one call: there, the cost is the
    Python around the C calls, not the bytes."""
    data = text.encode("utf-8", "surrogatepass")
    size = len(data)
    chars = len(text)
    if size == chars and size < _PEEL_MIN:
        cls = data.translate(_BYTE_CLASS)  # no deletion: translate's fast path
        # Letters and spaces first, then the rest until every character is counted.
        n = cls.count(_LOWER_BYTE)
        spaces = text.count(" ")
        counts[_I_LOWER] += n
        counts[_I_SPACE] += spaces
        value = n * w[_I_LOWER] + spaces * w[_I_SPACE]
        left = size - n - spaces
        rest = _ASCII_CODES_BUT_LOWER_AND_SPACE
    elif size != chars and chars < _PEEL_MIN:
        # Short: one class byte per byte, no deletion
        # (``translate`` with deletion builds a table per call, a fixed cost that matters on
        # a short text). A non-ASCII character's lead byte names its block, its
        # continuation bytes are never counted. The table marks the lead bytes of every
        # block but one (the first character's, else Latin accents) with _OTHER: when
        # none is found (a ``memchr``), the text's non-ASCII characters are all of that
        # block, and their count follows from the UTF-8 length without a pass.
        table, index, extra, code = _GUESS[data[0]]
        cls = data.translate(table)
        if _OTHER not in cls:
            n = (size - chars) // extra
            value = n * w[index]
            left = chars - n
        elif size >= _MIXED_PEEL_MIN:
            # Several blocks in a longer text: peeling, as a long text, costs fewer passes.
            return _count_long(data, size, chars, counts, w)
        else:
            n = cls.count(code)
            leads = data.translate(_BYTE_CLASS, _NOT_OTHER_LEADS[code])
            value = n * w[index] + _count_leads(leads, counts, w)
            left = chars - n - len(leads)
        # Next to another script, the ASCII is often nothing but spaces.
        spaces = text.count(" ")
        counts[index] += n
        counts[_I_SPACE] += spaces
        value += spaces * w[_I_SPACE]
        left -= spaces
        rest = _ASCII_CODES_BUT_SPACE
    else:
        return _count_long(data, size, chars, counts, w)
    if not left:
        return value
    digit = counts[_I_DIGIT]
    for index, class_byte in rest:
        n = cls.count(class_byte)
        if n:
            counts[index] += n
            value += n * w[index]
            left -= n
            if not left:
                break
    # Base64 and hex are dense in capitals or digits, and a run holds a digit; prose and
    # code seldom are, other scripts seldom have ASCII letters at all.
    digit = counts[_I_DIGIT] - digit
    if (
        digit
        and size >= _ENCODED_MIN
        and (cls.count(_UPPER_BYTE) + digit) * 4 >= cls.count(_LOWER_BYTE)
    ):
        value += _add_encoded(data, counts, w)
    return value


def _count_long(data: bytes, size: int, chars: int, counts: Counts, w: Weights) -> float:
    """A long text's counts, peeled (deleting the commonest classes first), and its value."""
    lower, upper, digit = counts[_I_LOWER], counts[_I_UPPER], counts[_I_DIGIT]
    if size == chars:
        value = _peel(data, _ASCII_SETS, counts, w)[0]
    else:
        # Continuation bytes go: each non-ASCII character is left as its lead byte.
        cls = data.translate(_BYTE_CLASS, _CONT_BYTES)
        if (size - chars) * 8 < chars:
            # Mostly ASCII (accents, a few symbols): the ASCII passes leave the lead bytes.
            value, leads = _peel(cls, _ASCII_CODES, counts, w)
            value += _count_leads(leads, counts, w)
        else:
            # Mostly another script: ASCII passes over it would delete nothing, so the two
            # halves are split first.
            leads = cls.translate(None, _ASCII_ALL)
            value = _count_leads(leads, counts, w)
            if len(leads) < chars:
                value += _peel(cls.translate(None, _LEAD_ALL), _ASCII_CODES, counts, w)[0]
    digit = counts[_I_DIGIT] - digit
    if digit and (counts[_I_UPPER] - upper + digit) * 4 >= counts[_I_LOWER] - lower:
        value += _add_encoded(data, counts, w)
    return value


def _add_encoded(data: bytes, counts: Counts, w: Weights) -> float:
    n = _encoded_chars(data)
    counts[_I_ENCODED] += n
    return n * w[_I_ENCODED]


def _count_packed_py(text: str, w: Weights) -> tuple[float, bytes]:
    counts = array("q", NO_COUNTS)
    value = count_py(text, counts, w)
    return value, counts.tobytes()


NO_COUNTS = bytes(8 * N_CLASSES)  # an array("q") of zero counts, packed

count_into: Callable[[str, Counts, Weights], float] = count_py
count_packed: Callable[[str, Weights], tuple[float, bytes]] = _count_packed_py
