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

The counting itself (classes, fitted weights, the counter) is ``charclass``: a handful of
C-level passes per text (``bytes.translate``, ``bytes.count``).

Per-message class counts and tokens are cached on the message (a private, non-compared
slot) and reused while the message's ``content`` and ``tool_calls`` are the same objects
with the same tool calls and parts, and the weights are the same object. The core treats
messages as values: it builds new ones rather than editing in place, and so should callers
(a part dict edited in place is not noticed; a part added, removed or replaced is).

Weights other than the base ones (a model calibrated from its provider's usage reports,
see ``contextmgmt.calibration``) apply inside ``use_weights(...)``.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from operator import mul
from struct import Struct
from typing import Any, cast

from .charclass import (
    BASE_WEIGHTS,
    CLASSES,
    N_CLASSES,
    NO_COUNTS,
    Counts,
    Weights,
    count_into,
    count_packed,
)
from .image_tokens import FLAT_IMAGE_TOKENS, image_part_tokens
from .messages import ChatMessage, ToolCall

__all__ = [
    "BASE_WEIGHTS",
    "CLASSES",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "N_CLASSES",
    "STORED_COUNTS_VERSION",
    "activate_weights",
    "current_weights",
    "estimate_message_tokens",
    "estimate_messages_tokens",
    "estimate_tokens",
    "message_counts",
    "messages_counts",
    "stored_counts",
    "text_counts",
    "tokens_of_counts",
    "usage_sample",
    "use_weights",
    "weights_of",
    "with_stored_counts",
]

IMAGE_TOKENS = FLAT_IMAGE_TOKENS  # an image whose size is unknown
MESSAGE_OVERHEAD = 4


def _zero_counts() -> array:
    return array("q", NO_COUNTS)


def text_counts(text: str) -> list[int]:
    """The class counts of ``text``, in the order of ``CLASSES``."""
    counts = _zero_counts()
    count_into(text, counts, BASE_WEIGHTS)
    return list(counts)


# Half a token, and a millionth: a value is summed in different orders on different paths,
# and a sum that lands exactly on .5 must round the same way on all of them.
_HALF = 0.5 + 1e-6


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
    counts = list(counts)
    tokens = int(sum(map(mul, counts, w)) + _HALF)
    if tokens < 1 and any(counts):
        return 1
    return tokens


def _content_into(content: Any, counts: Counts, w: Weights) -> tuple[float, int]:
    """Add the class counts of a message's content (a string, a list of OpenAI parts, or
    None) to ``counts``: (their value under ``w``, image tokens)."""
    if content is None:
        return 0.0, 0
    if isinstance(content, str):
        return count_into(content, counts, w), 0
    if not isinstance(content, list):
        return count_into(str(content), counts, w), 0
    value = 0.0
    images = 0
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image_url":
            images += image_part_tokens(part)
        else:
            # "text" parts, and any other part carrying text, count as text.
            text = part.get("text")
            if isinstance(text, str):
                value += count_into(text, counts, w)
    return value, images


def _message_into(msg: ChatMessage, counts: Counts, w: Weights) -> tuple[float, int]:
    """Add the class counts of everything the message sends (content, tool-call names and
    arguments) to ``counts``: (their value under ``w``, image tokens)."""
    content = msg.content
    value, images = (0.0, 0) if content is None else _content_into(content, counts, w)
    if msg.tool_calls:
        for call in msg.tool_calls:
            value += _count_name(call.name, counts, w) + count_into(call.arguments, counts, w)
    return value, images


# Tool names recur in every tool-calling message: their counts are kept by name (exact
# counts, computed once per distinct name; a handful of names in practice, bounded).
_NAMES: dict[str, tuple[tuple[int, int], ...]] = {}
_NAMES_LIMIT = 1024


def _count_name(name: str, counts: Counts, w: Weights) -> float:
    found = _NAMES.get(name)
    if found is None:
        own = _zero_counts()
        count_into(name, own, BASE_WEIGHTS)
        found = tuple((index, n) for index, n in enumerate(own) if n)
        if len(_NAMES) >= _NAMES_LIMIT:
            _NAMES.clear()
        _NAMES[name] = found
    value = 0.0
    for index, n in found:
        counts[index] += n
        value += n * w[index]
    return value


def _text_tokens(value: float, counts: Counts) -> int:
    """The rounded value; at least 1 when any character was counted."""
    tokens = int(value + _HALF)
    if tokens < 1 and any(counts):
        return 1
    return tokens


def estimate_tokens(content: Any) -> int:
    """Tokens of a message's content: a string, a list of parts, or None.

    0 for empty content; at least 1 for any non-empty text; an image part by its size.
    """
    counts = _zero_counts()
    value, images = _content_into(content, counts, _weights.get())
    return _text_tokens(value, counts) + images


def message_counts(msg: ChatMessage) -> tuple[list[int], int]:
    """(class counts, image tokens) of everything the message sends: content and tool
    calls."""
    counts = _zero_counts()
    images = _message_into(msg, counts, BASE_WEIGHTS)[1]
    return list(counts), images


# A message's cache (``ChatMessage._token_cache``) is a tuple:
#   0 content, 1 tool_calls (the objects), 2 tuple(tool_calls) or None, 3 tokens under
#   5 weights, 4 class counts (bytes: ``array.tobytes``, read with ``_UNPACK``),
#   6 tuple(content) when it is a list or None, 7 the tokens that are not text (overhead and
#   images), 8 its longest text's length. Literal indexes: the guard's in-budget pass reads
#   it for every message on every call. Only tuples and atoms: the garbage collector stops
#   tracking a cache after its first collection, and never tracks the counts' bytes.
_UNPACK = Struct(f"{N_CLASSES}q").unpack


def _cache_of(msg: ChatMessage) -> tuple[Any, ...] | None:
    """The message's cache if it still describes the message, else None."""
    cache = msg._token_cache
    if cache is None or cache[0] is not msg.content or cache[1] is not msg.tool_calls:
        return None
    if cache[2] is not None and cache[2] != tuple(cast("list[ToolCall]", cache[1])):
        return None
    if cache[6] is not None and cache[6] != tuple(cast("list[dict[str, Any]]", cache[0])):
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
    if msg._token_cache is not None:
        cache = _cache_of(msg)
        if cache is not None:
            if cache[5] is weights:
                return cache[3]
            tokens = cache[7] + tokens_of_counts(_UNPACK(cache[4]), weights)
            msg._token_cache = (*cache[:3], tokens, cache[4], weights, *cache[6:])
            return tokens
    content = msg.content
    calls = msg.tool_calls
    if calls is None and type(content) is str:  # most messages: one text, nothing else
        value, packed = count_packed(content, weights)
        tokens = MESSAGE_OVERHEAD + (int(value + _HALF) or (1 if content else 0))
        msg._token_cache = (
            content, None, None, tokens, packed, weights, None, MESSAGE_OVERHEAD, len(content),
        )  # fmt: skip
        return tokens
    counts = _zero_counts()  # packed as the cache keeps them: no conversion
    value, images = _message_into(msg, counts, weights)
    fixed = MESSAGE_OVERHEAD + images
    tokens = fixed + _text_tokens(value, counts)
    if content is None or isinstance(content, (str, list)):
        msg._token_cache = (
            content,
            calls,
            None if calls is None else tuple(calls),
            tokens,
            counts.tobytes(),
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
    counts = _zero_counts()
    fixed = 0
    for msg in messages:
        cache = _cache_of(msg)
        if cache is not None:
            for index, n in enumerate(_UNPACK(cache[4])):
                counts[index] += n
            fixed += cache[7]
        else:
            fixed += MESSAGE_OVERHEAD + _message_into(msg, counts, BASE_WEIGHTS)[1]
    count_into(extra_text, counts, BASE_WEIGHTS)
    return list(counts), fixed


# --- counts stored with a message ---------------------------------------------------------
#
# A stored message's class counts are found once, when its content is stored, and kept in a
# column (``stored_counts``); a load gives them back to the message (``with_stored_counts``)
# so that a compaction or a budget does not count the text again. They are counts, not
# tokens: each model weighs them with its own weights (a run's calibrated model, the
# summariser's), as a text counted afresh would be. The stored form says which counter
# counted them and the length of the text it counted: counts of another counter (classes
# changed: bump the version) or of another text are not used, the text is counted.
STORED_COUNTS_VERSION = 1
_STORED_HEADER = Struct("<HQ")  # the counter's version, the text's length in characters
_STORED_COUNTS = Struct(f"<{N_CLASSES}q")
_STORED_SIZE = _STORED_HEADER.size + _STORED_COUNTS.size
# Native 64-bit integers are the stored ones on a little-endian machine: a slice, no unpacking.
_NATIVE_IS_STORED = sys.byteorder == "little" and array("q").itemsize == 8


def stored_counts(text: str) -> bytes:
    """The class counts of ``text`` as a message's ``token_counts`` column keeps them."""
    counts = _STORED_COUNTS.pack(*text_counts(text))
    return _STORED_HEADER.pack(STORED_COUNTS_VERSION, len(text)) + counts


def with_stored_counts(msg: ChatMessage, stored: bytes | memoryview | None) -> bool:
    """Give ``msg`` the class counts its text was stored with, so that its estimate does not
    count the text again; True when they were given.

    Only a plain message (string content, no tool calls) whose text is the one counted (its
    length, by the counter of this version) takes them: otherwise nothing changes and the
    message is counted when estimated. Its tokens are weighed at the first estimate, with
    the weights current then."""
    content = msg.content
    if not stored or type(content) is not str or msg.tool_calls is not None:
        return False
    if len(stored) != _STORED_SIZE:
        return False
    version, length = _STORED_HEADER.unpack_from(stored)
    if version != STORED_COUNTS_VERSION or length != len(content):
        return False
    if _NATIVE_IS_STORED:
        packed = bytes(stored[_STORED_HEADER.size :])
    else:
        packed = array("q", _STORED_COUNTS.unpack_from(stored, _STORED_HEADER.size)).tobytes()
    # The layout of a counted plain message's cache; no weights yet (None is never the
    # current weights), so the first estimate weighs the counts.
    msg._token_cache = (
        content, None, None, 0, packed, None, None, MESSAGE_OVERHEAD, len(content),
    )  # fmt: skip
    return True
