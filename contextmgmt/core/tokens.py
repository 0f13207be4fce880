"""Token estimation by character class, without a tokenizer library.

A text's tokens are a weighted sum of counts of character classes (``CLASSES``): ASCII
lower- and upper-case letters, digits, punctuation, double quotes, spaces, newlines and
other control characters; characters inside long base64/hex-like runs (an extra charge on
top of their letters and digits); and, for every other script, characters by Unicode block
(Latin accents, Greek, Cyrillic, Hebrew, Arabic, Indic and Thai, CJK, kana, Hangul,
symbols, emoji, …). ``BASE_WEIGHTS`` were fitted against the o200k_base tokenizer
(``bench/token_fit.py`` on ``bench/token_corpus``; accuracy per kind of text in
``docs/tokens.md``). At least 1 token for non-empty text.

A message adds 4 tokens of overhead, an image part what the provider's tile rule says for
its size (``image_tokens``; 765 when the size is unknown), and counts its tool calls' names
and JSON arguments as text (they are sent and billed like text).

Speed: no Python code runs per character. Each class is counted by deleting it with
``bytes.translate`` (``_peel``), commonest first, so later passes run over what is left:
ASCII text straight from its UTF-8 bytes; other text after one ``translate`` that maps
bytes to class bytes and drops continuation bytes, so each non-ASCII character is left as
the lead byte of its UTF-8 sequence, which names the Unicode block. Long base64-like runs
are looked for (``bytes.find``) only when the text has enough capitals and digits to hold
one. Counting runs of letters, digits or punctuation (what a BPE pre-tokenizer splits on)
was tried and did not improve the fit against o200k_base (mean |ln ratio| 0.054 with,
0.056 without), so it is not paid for.

Per-message class counts and tokens are cached on the message (a private, non-compared
slot) and reused while the message's ``content`` and ``tool_calls`` are the same objects
with the same tool calls and parts, and the weights are the same object. The core treats
messages as values: it builds new ones rather than editing in place, and so should callers
(a part dict edited in place is not noticed; a part added, removed or replaced is).

Weights other than the base ones (a model calibrated from its provider's usage reports,
see ``contextmgmt.calibration``) apply inside ``use_weights(...)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from operator import add, mul
from typing import Any

from .image_tokens import FLAT_IMAGE_TOKENS, image_part_tokens
from .messages import ChatMessage

IMAGE_TOKENS = FLAT_IMAGE_TOKENS  # an image whose size is unknown
MESSAGE_OVERHEAD = 4

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
_ASCII_CODES = tuple(
    (CLASSES.index(name), bytes([_ASCII_CLASS_BYTES[name]]))
    for name in ("lower", "space", "punct", "upper", "digit", "newline", "quote", "other_space")
)
_LEAD_CODES = tuple(
    (CLASSES.index(name), bytes([0x80 + [n for n, _, _ in _LEAD_BLOCKS].index(name)]))
    for name in ("latin_ext", "cyrillic", "cjk", "cjk_punct_kana", "fullwidth", "symbols")
    + ("arabic", "hangul", "greek", "hebrew_armenian", "indic_thai", "other_scripts", "astral")
)
_ASCII_ALL = b"".join(code for _, code in _ASCII_CODES)
_LEAD_INDEX = {code[0]: index for index, code in _LEAD_CODES}
_I_LOWER, _I_UPPER, _I_DIGIT, _I_ENCODED = (
    CLASSES.index(name) for name in ("lower", "upper", "digit", "encoded")
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
_PEEL_MIN = 256
_CONT_BYTES = bytes(range(0x80, 0xC0))
_LEAD_ALL = b"".join(code for _, code in _LEAD_CODES)
# The raw ASCII bytes of each ASCII class, commonest first: ASCII text is peeled straight
# from its UTF-8 bytes, without mapping them to class bytes first.
_ASCII_SETS = tuple(
    (index, bytes(i for i in range(0x80) if _BYTE_CLASS[i] == code[0]))
    for index, code in _ASCII_CODES
)


def _peel(buf: bytes, codes: tuple[tuple[int, bytes], ...], counts: list[int]) -> bytes:
    """Count each code (a byte, or a set of bytes) by deleting it, and return what is left.

    Every pass runs over what the previous ones left, so deleting the commonest classes
    first makes the rest cheap; deleting is a branch per byte, which beats one
    ``bytes.count`` pass per class on the whole text."""
    for index, code in codes:
        rest = buf.translate(None, code)
        counts[index] += len(buf) - len(rest)
        buf = rest
        if not buf:
            break
    return buf


def _peel_leads(leads: bytes, counts: list[int]) -> None:
    """Count lead class bytes by deleting the class of the first one left, until none is:
    as many passes as the text has scripts, whichever they are."""
    while leads:
        code = leads[0]
        index = _LEAD_INDEX[code]
        if leads.count(code) == len(leads):  # one script left: no copy needed
            counts[index] += len(leads)
            return
        rest = leads.translate(None, bytes((code,)))
        counts[index] += len(leads) - len(rest)
        leads = rest


def text_counts(text: str) -> list[int]:
    """The class counts of ``text``, in the order of ``CLASSES``."""
    if not text:
        return [0] * N_CLASSES
    data = text.encode("utf-8", "surrogatepass")
    size = len(data)
    if size < _PEEL_MIN:
        counts = [0] * N_CLASSES
        if size == len(text):
            cls = data.translate(_BYTE_CLASS)  # no deletion: translate's fast path
            left = size
        else:
            # Continuation bytes go: each non-ASCII character is left as its lead byte.
            cls = data.translate(_BYTE_CLASS, _CONT_BYTES)
            leads = cls.translate(None, _ASCII_ALL)
            _peel_leads(leads, counts)
            left = len(cls) - len(leads)
        # Commonest first, until every ASCII character is counted: prose seldom needs
        # more than letters, spaces and punctuation.
        for index, code in _ASCII_CODES:
            if not left:
                break
            n = cls.count(code)
            counts[index] = n
            left -= n
    elif size == len(text):
        counts = [0] * N_CLASSES
        _peel(data, _ASCII_SETS, counts)
    else:
        counts = [0] * N_CLASSES
        cls = data.translate(_BYTE_CLASS, _CONT_BYTES)
        if (size - len(text)) * 8 < len(text):
            # Mostly ASCII (accents, a few symbols): the ASCII passes leave the lead bytes.
            _peel_leads(_peel(cls, _ASCII_CODES, counts), counts)
        else:
            # Mostly another script: ASCII passes over it would delete nothing, so the two
            # halves are split first.
            leads = cls.translate(None, _ASCII_ALL)
            _peel_leads(leads, counts)
            if len(leads) < len(cls):
                _peel(cls.translate(None, _LEAD_ALL), _ASCII_CODES, counts)
    # Base64 and hex are dense in capitals or digits; prose and code are not.
    lower = counts[_I_LOWER]
    if (counts[_I_UPPER] + counts[_I_DIGIT]) * 4 >= lower and size >= _ENCODED_MIN:
        counts[_I_ENCODED] = _encoded_chars(data)
    return counts


_weights: ContextVar[tuple[float, ...]] = ContextVar("token_weights", default=BASE_WEIGHTS)


def current_weights() -> tuple[float, ...]:
    return _weights.get()


def weights_of(llm: Any) -> tuple[float, ...] | None:
    """The class weights an LLM object carries for its model (``token_weights``), or None."""
    weights = getattr(llm, "token_weights", None)
    return weights if isinstance(weights, tuple) and len(weights) == N_CLASSES else None


def activate_weights(weights: tuple[float, ...] | None) -> None:
    """Estimate with ``weights`` for the rest of the current context (an asyncio task's own:
    a run's task calls this once with its model's weights). None keeps the current."""
    if weights is None:
        return
    if len(weights) != N_CLASSES:
        raise ValueError(f"expected {N_CLASSES} weights, got {len(weights)}")
    _weights.set(tuple(weights))


@contextmanager
def use_weights(weights: tuple[float, ...] | None) -> Iterator[None]:
    """Estimate with ``weights`` (one per class) inside the block; None keeps the current."""
    if weights is None:
        yield
        return
    if len(weights) != N_CLASSES:
        raise ValueError(f"expected {N_CLASSES} weights, got {len(weights)}")
    token = _weights.set(tuple(weights))
    try:
        yield
    finally:
        _weights.reset(token)


def tokens_of_counts(counts: Iterable[int], weights: tuple[float, ...] | None = None) -> int:
    """The weighted sum, rounded; at least 1 when any character was counted."""
    w = _weights.get() if weights is None else weights
    value = sum(map(mul, counts, w))
    tokens = int(value + 0.5)
    if tokens < 1 and any(counts):
        return 1
    return tokens


def _add(total: list[int], counts: list[int]) -> None:
    total[:] = map(add, total, counts)


def _parts_counts_and_images(parts: Iterable[Any]) -> tuple[list[int], int]:
    """(class counts, image tokens) of a list of OpenAI content parts."""
    total = [0] * N_CLASSES
    images = 0
    for part in parts:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image_url":
            images += image_part_tokens(part)
        else:
            # "text" parts, and any other part carrying text, count as text.
            text = part.get("text")
            if isinstance(text, str):
                _add(total, text_counts(text))
    return total, images


def _content_counts(content: Any) -> tuple[list[int], int]:
    if content is None:
        return [0] * N_CLASSES, 0
    if isinstance(content, str):
        return text_counts(content), 0
    if isinstance(content, list):
        return _parts_counts_and_images(content)
    return text_counts(str(content)), 0


def estimate_tokens(content: Any) -> int:
    """Tokens of a message's content: a string, a list of parts, or None.

    0 for empty content; at least 1 for any non-empty text; an image part by its size.
    """
    counts, images = _content_counts(content)
    return tokens_of_counts(counts) + images


def message_counts(msg: ChatMessage) -> tuple[list[int], int]:
    """(class counts, image tokens) of everything the message sends: content and tool
    calls."""
    counts, images = _content_counts(msg.content)
    if msg.tool_calls:
        for call in msg.tool_calls:
            _add(counts, text_counts(call.name))
            _add(counts, text_counts(call.arguments))
    return counts, images


# A message's cache (``ChatMessage._token_cache``) is a tuple:
#   0 content, 1 tool_calls (the objects), 2 tuple(tool_calls) or None,
#   3 tokens under 5 weights, 4 class counts, 6 tuple(content) when it is a list or None,
#   7 the tokens that are not text (overhead and images), 8 its longest text's length.
# Literal indexes: the guard's in-budget pass reads it for every message on every call.


def _cache_of(msg: ChatMessage) -> tuple[Any, ...] | None:
    """The message's cache if it still describes the message, else None."""
    cache = msg._token_cache
    if cache is None or cache[0] is not msg.content or cache[1] is not msg.tool_calls:
        return None
    if cache[2] is not None and cache[2] != tuple(cache[1]):
        return None
    if cache[6] is not None and cache[6] != tuple(cache[0]):
        return None
    return cache


def _longest_text(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        lengths = [
            len(part["text"])
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return max(lengths, default=0)
    return 0


def estimate_message_tokens(msg: ChatMessage) -> int:
    """4 overhead + content + tool-call names and arguments + its images, cached."""
    weights = _weights.get()
    cache = _cache_of(msg)
    if cache is not None:
        if cache[5] is weights:
            return cache[3]
        tokens = cache[7] + tokens_of_counts(cache[4], weights)
        msg._token_cache = (*cache[:3], tokens, cache[4], weights, *cache[6:])
        return tokens
    content = msg.content
    calls = msg.tool_calls
    if calls is None and type(content) is str:  # most messages: one text, nothing else
        counts = text_counts(content)
        value = sum(map(mul, counts, weights))
        tokens = MESSAGE_OVERHEAD + (int(value + 0.5) or (1 if content else 0))
        msg._token_cache = (
            content, None, None, tokens, counts, weights, None, MESSAGE_OVERHEAD, len(content)
        )  # fmt: skip
        return tokens
    counts, images = message_counts(msg)
    fixed = MESSAGE_OVERHEAD + images
    tokens = fixed + tokens_of_counts(counts, weights)
    if content is None or isinstance(content, (str, list)):
        msg._token_cache = (
            content,
            calls,
            None if calls is None else tuple(calls),
            tokens,
            counts,
            weights,
            tuple(content) if isinstance(content, list) else None,
            fixed,
            _longest_text(content),
        )
    return tokens


def estimate_messages_tokens(messages: Iterable[ChatMessage]) -> int:
    """Sum of :func:`estimate_message_tokens` over a conversation."""
    total = 0
    weights = _weights.get()
    for msg in messages:
        cache = msg._token_cache
        # Inlined cache hit of a plain message (string content, no tool calls).
        if (
            cache is not None
            and cache[0] is msg.content
            and cache[1] is msg.tool_calls is None
            and cache[5] is weights
            and cache[6] is None
        ):
            total += cache[3]
        else:
            total += estimate_message_tokens(msg)
    return total


def messages_counts(messages: Iterable[ChatMessage]) -> list[int]:
    """Class counts of a conversation's text (what a usage report is compared against).

    Images and per-message overheads are not classes; ``calibration`` accounts for them.
    """
    return usage_sample(messages)[0]


def usage_sample(messages: Iterable[ChatMessage], extra_text: str = "") -> tuple[list[int], int]:
    """What a usage report is compared against: the class counts of the messages' text (and
    ``extra_text``, e.g. the tools' JSON) and the tokens that are not text (per-message
    overheads and images, at their fixed rates)."""
    counts = [0] * N_CLASSES
    fixed = 0
    for msg in messages:
        cache = _cache_of(msg)
        if cache is not None:
            _add(counts, cache[4])
            fixed += cache[7]
        else:
            message, images = message_counts(msg)
            _add(counts, message)
            fixed += MESSAGE_OVERHEAD + images
    if extra_text:
        _add(counts, text_counts(extra_text))
    return counts, fixed
