"""Heuristic token estimation (SPEC R2.1, RT.1) — no tokenizer library, one C-level pass.

The rule, for text:
    tokens = floor(ascii_chars / 4 + other_chars / 1.5), at least 1 when the text is non-empty

computed exactly in integers as ``(3 * ascii + 8 * other) // 12``, so 400 ASCII letters are
100 tokens and 10 CJK characters are 6 (10 / 1.5 = 6.67, floored). Floor-with-a-floor-of-1 is
the rounding the issue's examples fix; the 4-token per-message overhead absorbs the fraction.

A message adds 4 tokens of overhead, 765 per image part, and counts its tool calls' names
and JSON arguments as content (they are sent and billed like text). Characters are code
points (``len(str)``); every non-ASCII code point counts at the 1.5 rate.

Speed: ``str.isascii()`` is O(1) for most strings (CPython records it at creation), and the
ASCII count of a non-ASCII string comes from ``encode("ascii", "ignore")``, a C loop. No
per-character Python code runs.

Per-message estimates are cached on the message (a private, non-compared slot) and reused
while the message's ``content`` and ``tool_calls`` are the same objects with the same tool
calls. The core treats messages as values: it builds new ones rather than editing in place,
and so should callers. List content (parts) is re-estimated on every call — it is short text
plus images, cheaper to recount than to fingerprint.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .messages import ChatMessage

IMAGE_TOKENS = 765
MESSAGE_OVERHEAD = 4

# Twelfths of a token per character: 1/4 token = 3/12, 1/1.5 token = 8/12.
_ASCII_UNITS = 3
_OTHER_UNITS = 8
_UNITS_PER_TOKEN = 12


def _text_units(text: str) -> int:
    """Twelfths of a token in ``text`` (exact integer arithmetic, no rounding yet)."""
    n = len(text)
    if text.isascii():
        return _ASCII_UNITS * n
    ascii_count = len(text.encode("ascii", "ignore"))
    return _ASCII_UNITS * ascii_count + _OTHER_UNITS * (n - ascii_count)


def _units_to_tokens(units: int) -> int:
    if units <= 0:
        return 0
    return max(1, units // _UNITS_PER_TOKEN)


def _parts_units_and_images(parts: Iterable[Any]) -> tuple[int, int]:
    """(text units, image count) of a list of OpenAI content parts."""
    units = 0
    images = 0
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "image_url":
            images += 1
        else:
            # "text" parts, and any other part carrying text, count as text.
            text = part.get("text")
            if isinstance(text, str):
                units += _text_units(text)
    return units, images


def estimate_tokens(content: Any) -> int:
    """Tokens of a message's content: a string, a list of parts, or None (R2.1).

    0 for empty content; at least 1 for any non-empty text; 765 per image part.
    """
    if content is None:
        return 0
    if isinstance(content, str):
        return _units_to_tokens(_text_units(content))
    if isinstance(content, list):
        units, images = _parts_units_and_images(content)
        return _units_to_tokens(units) + IMAGE_TOKENS * images
    return _units_to_tokens(_text_units(str(content)))


def _compute_message_tokens(msg: ChatMessage) -> int:
    content = msg.content
    images = 0
    if content is None:
        units = 0
    elif isinstance(content, str):
        units = _text_units(content)
    elif isinstance(content, list):
        units, images = _parts_units_and_images(content)
    else:
        units = _text_units(str(content))
    if msg.tool_calls:
        for call in msg.tool_calls:
            units += _text_units(call.name) + _text_units(call.arguments)
    return MESSAGE_OVERHEAD + _units_to_tokens(units) + IMAGE_TOKENS * images


def estimate_message_tokens(msg: ChatMessage) -> int:
    """4 overhead + content + tool-call names and arguments + 765 per image (R2.1), cached."""
    content = msg.content
    calls = msg.tool_calls
    cache = msg._token_cache
    if cache is not None and cache[0] is content and cache[1] is calls:
        if calls is None or cache[2] == tuple(calls):
            return cache[3]
    tokens = _compute_message_tokens(msg)
    if content is None or isinstance(content, str):
        msg._token_cache = (content, calls, None if calls is None else tuple(calls), tokens)
    return tokens


def estimate_messages_tokens(messages: Iterable[ChatMessage]) -> int:
    """Sum of :func:`estimate_message_tokens` over a conversation."""
    total = 0
    for msg in messages:
        content = msg.content
        calls = msg.tool_calls
        cache = msg._token_cache
        # Inlined cache hit: the guard's in-budget fast path runs through here every turn.
        if cache is not None and cache[0] is content and calls is None and cache[1] is None:
            total += cache[3]
        else:
            total += estimate_message_tokens(msg)
    return total
