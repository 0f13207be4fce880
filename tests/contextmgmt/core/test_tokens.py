"""Token estimation (SPEC R2.1, RT.1): exact values of the documented heuristic."""

import copy
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import (
    estimate_message_tokens,
    estimate_messages_tokens,
    estimate_tokens,
)

from .builders import IMAGE_PART


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("a" * 400, 100),  # R2.1: ASCII 4 chars/token
        ("中" * 10, 6),  # R2.1: non-ASCII 1.5 chars/token, floored (6.67 → 6)
        ("日本語の文章です" * 3, 16),  # 24 CJK chars / 1.5
        ("Привет", 4),  # Cyrillic is non-ASCII: 6 / 1.5
        ("ab", 1),  # R2.1: at least 1 for non-empty content (2/4 = 0.5)
        ("x", 1),
        ("", 0),  # empty → 0
        (None, 0),
        ("a" * 12 + "中" * 3, 5),  # mixed: 12/4 + 3/1.5 = 3 + 2
        ("abc中", 1),  # 3/4 + 1/1.5 = 1.42 → 1 (floor of the sum, not of each part)
    ],
)
def test_estimate_tokens_text_r2_1(content, expected):
    assert estimate_tokens(content) == expected
    assert CompactUtils.estimate_tokens(content) == expected


def test_estimate_tokens_mixed_floor_of_sum_r2_1():
    # "Grüße": 3 ASCII (G, r, e) + 2 non-ASCII (ü, ß): 3/4 + 2/1.5 = 2.08 → 2
    assert estimate_tokens("Grüße") == 2


def test_estimate_tokens_image_parts_cost_765_each_r2_1():
    parts = [{"type": "text", "text": "a" * 40}, IMAGE_PART, IMAGE_PART]
    assert estimate_tokens(parts) == 10 + 2 * 765
    assert estimate_tokens([IMAGE_PART]) == 765
    assert estimate_tokens([]) == 0
    assert estimate_tokens([{"type": "text", "text": ""}]) == 0


def test_message_overhead_is_4_r2_1():
    assert estimate_message_tokens(ChatMessage(role="user", content="a" * 400)) == 104
    assert estimate_message_tokens(ChatMessage(role="assistant", content=None)) == 4
    assert estimate_message_tokens(ChatMessage(role="user", content="")) == 4


def test_tool_call_names_and_arguments_count_as_content_r2_1():
    msg = ChatMessage(
        role="assistant",
        content="a" * 8,  # 2 tokens
        tool_calls=[ToolCall(id="c1", name="search", arguments='{"q": "weather"}')],
    )
    # "search" (6) + '{"q": "weather"}' (16) + 8 content chars = 30 ASCII → 7 (+4 overhead)
    assert estimate_message_tokens(msg) == 4 + 30 // 4


def test_messages_total_is_the_sum_r2_1():
    msgs = [
        ChatMessage(role="system", content="a" * 40),
        ChatMessage(role="user", content=[{"type": "text", "text": "中" * 3}, IMAGE_PART]),
    ]
    assert estimate_messages_tokens(msgs) == (4 + 10) + (4 + 2 + 765)
    assert CompactUtils.estimate_messages_tokens(msgs) == estimate_messages_tokens(msgs)


def test_cached_estimate_follows_content_reassignment():
    msg = ChatMessage(role="user", content="a" * 400)
    assert estimate_message_tokens(msg) == 104
    msg.content = "a" * 800
    assert estimate_message_tokens(msg) == 204
    assert estimate_messages_tokens([msg]) == 204
    msg.tool_calls = [ToolCall(id="c", name="f" * 4, arguments="{}" * 2)]
    assert estimate_messages_tokens([msg]) == 4 + (800 + 8) // 4
    msg.tool_calls.append(ToolCall(id="d", name="g" * 4, arguments="{}" * 2))
    assert estimate_message_tokens(msg) == 4 + (800 + 16) // 4
    msg.tool_calls = None
    assert estimate_messages_tokens([msg]) == 204


def test_list_content_is_recounted_after_in_place_edit():
    parts = [{"type": "text", "text": "a" * 40}]
    msg = ChatMessage(role="user", content=parts)
    assert estimate_message_tokens(msg) == 14
    parts.append(IMAGE_PART)
    assert estimate_message_tokens(msg) == 14 + 765


def test_cache_is_invisible_to_equality_repr_and_copies():
    a = ChatMessage(role="user", content="hello")
    b = ChatMessage(role="user", content="hello")
    estimate_message_tokens(a)
    assert a == b
    assert "_token_cache" not in repr(a)
    assert estimate_message_tokens(copy.deepcopy(a)) == estimate_message_tokens(b)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_estimate_matches_the_per_character_definition_r2_1(text):
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    other = len(text) - ascii_chars
    exact = Fraction(ascii_chars, 4) + Fraction(other) / Fraction(3, 2)
    expected = 0 if not text else max(1, math.floor(exact))
    assert estimate_tokens(text) == expected


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_estimate_is_monotone_under_concatenation(a, b):
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))
