"""Token estimation by character class (SPEC RK.1, R2.1's image/overhead/floor rules)."""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core import tokens
from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import (
    BASE_WEIGHTS,
    CLASSES,
    estimate_message_tokens,
    estimate_messages_tokens,
    estimate_tokens,
    messages_counts,
    text_counts,
    tokens_of_counts,
    usage_sample,
    use_weights,
)

from .builders import IMAGE_PART


def test_estimate_is_the_rounded_weighted_sum_rk_1():
    text = 'The budget is 12,500 EUR; "approved" — Привет 上下文 😀'
    value = sum(w * n for w, n in zip(BASE_WEIGHTS, text_counts(text), strict=True))
    assert estimate_tokens(text) == int(value + 0.5)
    assert CompactUtils.estimate_tokens(text) == estimate_tokens(text)


@pytest.mark.parametrize("text", ["x", " ", "\t", ".", "0", "中"])
def test_at_least_one_token_for_any_non_empty_text_r2_1(text):
    assert estimate_tokens(text) >= 1


@settings(max_examples=150, deadline=None)
@given(st.text(min_size=1, max_size=50))
def test_non_empty_text_is_never_free(text):
    assert estimate_tokens(text) >= 1


def test_empty_content_is_free():
    assert estimate_tokens("") == 0
    assert estimate_tokens(None) == 0
    assert estimate_tokens([]) == 0
    assert estimate_tokens([{"type": "text", "text": ""}]) == 0


def test_image_parts_cost_765_each_r2_1():
    text = "a" * 40
    parts = [{"type": "text", "text": text}, IMAGE_PART, IMAGE_PART]
    assert estimate_tokens(parts) == estimate_tokens(text) + 2 * 765
    assert estimate_tokens([IMAGE_PART]) == 765


def test_message_overhead_is_4_r2_1():
    text = "a" * 400
    assert estimate_message_tokens(ChatMessage(role="user", content=text)) == (
        4 + estimate_tokens(text)
    )
    assert estimate_message_tokens(ChatMessage(role="assistant", content=None)) == 4
    assert estimate_message_tokens(ChatMessage(role="user", content="")) == 4


def test_tool_call_names_and_arguments_count_as_content_r2_1():
    msg = ChatMessage(
        role="assistant",
        content="a" * 8,
        tool_calls=[ToolCall(id="c1", name="search", arguments='{"q": "weather"}')],
    )
    counts = [
        a + b + c
        for a, b, c in zip(
            text_counts("a" * 8),
            text_counts("search"),
            text_counts('{"q": "weather"}'),
            strict=True,
        )
    ]
    assert estimate_message_tokens(msg) == 4 + tokens_of_counts(counts)
    assert estimate_message_tokens(msg) > 4 + estimate_tokens("a" * 8)
    assert messages_counts([msg]) == counts


def test_messages_total_is_the_sum_r2_1():
    msgs = [
        ChatMessage(role="system", content="a" * 40),
        ChatMessage(role="user", content=[{"type": "text", "text": "中" * 3}, IMAGE_PART]),
    ]
    expected = (4 + estimate_tokens("a" * 40)) + (4 + estimate_tokens("中" * 3) + 765)
    assert estimate_messages_tokens(msgs) == expected
    assert CompactUtils.estimate_messages_tokens(msgs) == expected


def test_a_cached_estimate_is_not_recounted(monkeypatch):
    msg = ChatMessage(role="user", content="some text " * 50)
    first = estimate_message_tokens(msg)
    calls = []
    monkeypatch.setattr(tokens, "count_packed", lambda *args: calls.append(args) or (0.0, b""))
    monkeypatch.setattr(tokens, "count_into", lambda *args: calls.append(args) or 0.0)
    assert estimate_message_tokens(msg) == first
    assert estimate_messages_tokens([msg, msg]) == 2 * first
    assert calls == []


def test_cached_estimate_follows_content_reassignment():
    msg = ChatMessage(role="user", content="a" * 400)
    assert estimate_message_tokens(msg) == 4 + estimate_tokens("a" * 400)
    msg.content = "a" * 800
    assert estimate_message_tokens(msg) == 4 + estimate_tokens("a" * 800)
    assert estimate_messages_tokens([msg]) == 4 + estimate_tokens("a" * 800)
    msg.tool_calls = [ToolCall(id="c", name="f" * 4, arguments="{}" * 2)]
    with_one = estimate_messages_tokens([msg])
    assert with_one > 4 + estimate_tokens("a" * 800)
    msg.tool_calls.append(ToolCall(id="d", name="g" * 4, arguments="{}" * 2))
    assert estimate_message_tokens(msg) > with_one
    msg.tool_calls = None
    assert estimate_messages_tokens([msg]) == 4 + estimate_tokens("a" * 800)


def test_list_content_is_recounted_after_in_place_edit():
    parts = [{"type": "text", "text": "a" * 40}]
    msg = ChatMessage(role="user", content=parts)
    before = estimate_message_tokens(msg)
    parts.append(IMAGE_PART)
    assert estimate_message_tokens(msg) == before + 765


def test_list_content_is_cached_until_a_part_is_added_removed_or_replaced(monkeypatch):
    parts = [{"type": "text", "text": "a" * 40}, IMAGE_PART]
    msg = ChatMessage(role="user", content=parts)
    first = estimate_message_tokens(msg)
    calls = []
    real = tokens.count_into
    monkeypatch.setattr(tokens, "count_into", lambda *args: calls.append(args) or real(*args))
    assert estimate_message_tokens(msg) == first
    assert estimate_messages_tokens([msg]) == first
    assert calls == []
    parts[0] = {"type": "text", "text": "b" * 400}
    assert estimate_message_tokens(msg) == 4 + estimate_tokens(parts)
    parts.pop()
    assert estimate_message_tokens(msg) == 4 + estimate_tokens("b" * 400)


def test_usage_sample_counts_a_cached_messages_images():
    msg = ChatMessage(role="user", content=[{"type": "text", "text": "hello"}, IMAGE_PART])
    fresh = usage_sample([msg])
    estimate_message_tokens(msg)  # now cached
    assert usage_sample([msg]) == fresh
    assert fresh[1] == 4 + estimate_tokens([IMAGE_PART])


def test_cache_is_invisible_to_equality_repr_and_copies():
    a = ChatMessage(role="user", content="hello")
    b = ChatMessage(role="user", content="hello")
    estimate_message_tokens(a)
    assert a == b
    assert "_token_cache" not in repr(a)
    assert estimate_message_tokens(copy.deepcopy(a)) == estimate_message_tokens(b)


def test_other_weights_apply_inside_use_weights_and_the_cache_follows():
    msg = ChatMessage(role="user", content="Привет, мир! " * 20)
    base = estimate_message_tokens(msg)
    doubled = tuple(2 * w for w in BASE_WEIGHTS)
    with use_weights(doubled):
        assert estimate_message_tokens(msg) == 4 + tokens_of_counts(
            text_counts(msg.content), doubled
        )
        assert estimate_messages_tokens([msg]) > base
        assert estimate_tokens(msg.content) == tokens_of_counts(text_counts(msg.content), doubled)
    assert estimate_message_tokens(msg) == base
    assert estimate_messages_tokens([msg]) == base
    with use_weights(None):
        assert estimate_message_tokens(msg) == base


def test_use_weights_wants_one_weight_per_class():
    with pytest.raises(ValueError), use_weights((1.0, 2.0)):
        pass


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_character_counts_add_up_under_concatenation(a, b):
    encoded = CLASSES.index("encoded")
    joined = text_counts(a + b)
    for i, (x, y) in enumerate(zip(text_counts(a), text_counts(b), strict=True)):
        if i != encoded:
            assert joined[i] == x + y


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_estimate_is_monotone_under_concatenation(a, b):
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))


async def test_weights_activated_in_a_task_stay_in_that_task():
    import asyncio

    from contextmgmt.core.tokens import activate_weights, current_weights

    doubled = tuple(2 * w for w in BASE_WEIGHTS)
    text = "Привет, мир! " * 20

    async def run_with(weights):
        activate_weights(weights)
        await asyncio.sleep(0)
        return estimate_tokens(text)

    calibrated, plain = await asyncio.gather(
        asyncio.create_task(run_with(doubled)), asyncio.create_task(run_with(None))
    )
    assert calibrated == tokens_of_counts(text_counts(text), doubled)
    assert plain == estimate_tokens(text)
    assert current_weights() == BASE_WEIGHTS


# --- counts stored with a message (RF.12) -------------------------------------------------

_OTHER_WEIGHTS = tuple(w * (1.0 + 0.1 * (i % 7)) for i, w in enumerate(BASE_WEIGHTS))


def _not_counting(monkeypatch) -> list:
    calls: list = []
    monkeypatch.setattr(tokens, "count_packed", lambda *args: calls.append(args) or (0.0, b""))
    monkeypatch.setattr(tokens, "count_into", lambda *args: calls.append(args) or 0.0)
    return calls


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.sampled_from([BASE_WEIGHTS, _OTHER_WEIGHTS]))
def test_rf12_stored_counts_give_the_estimate_a_fresh_count_gives(text, weights):
    """RF.12: a message given the counts stored for its text estimates, under any model's
    weights, what the same message counted afresh estimates, and usage samples agree."""
    stored = ChatMessage(role="user", content=text)
    assert tokens.with_stored_counts(stored, tokens.stored_counts(text))
    fresh = ChatMessage(role="user", content=text)
    with use_weights(weights):
        assert estimate_message_tokens(stored) == estimate_message_tokens(fresh)
        assert estimate_messages_tokens([stored]) == estimate_messages_tokens([fresh])
    assert usage_sample([stored]) == usage_sample([ChatMessage(role="user", content=text)])


def test_rf12_a_message_with_stored_counts_is_not_counted_again(monkeypatch):
    text = "Order ORD-40037 weighs 12.5 kg; 预算上限是每月八千元. " * 30
    stored = tokens.stored_counts(text)
    expected = estimate_message_tokens(ChatMessage(role="user", content=text))
    calls = _not_counting(monkeypatch)
    msg = ChatMessage(role="assistant", content=text)
    assert tokens.with_stored_counts(msg, memoryview(stored))  # as PostgreSQL gives a bytea
    assert estimate_messages_tokens([msg]) == expected
    with use_weights(_OTHER_WEIGHTS):
        assert estimate_message_tokens(msg) > expected
    assert calls == []


@pytest.mark.parametrize(
    "case",
    ["another text", "another counter", "cut short", "tool calls", "parts", "empty"],
)
def test_rf12_counts_not_of_this_text_are_not_taken(case):
    """RF.12: counts stored for another text (another length), by another version of the
    counter, or cut short, and messages that are not one plain text, are counted as before."""
    text = "The staging config lives at /srv/app/conf/stage-7.yaml."
    stored = tokens.stored_counts(text)
    msg = ChatMessage(role="user", content=text)
    if case == "another text":
        msg.content = text + "!"
    elif case == "another counter":
        version = (tokens.STORED_COUNTS_VERSION + 1).to_bytes(2, "little")
        stored = version + stored[2:]
    elif case == "cut short":
        stored = stored[:-8]
    elif case == "tool calls":
        msg.tool_calls = [ToolCall("c1", "search", "{}")]
    elif case == "parts":
        msg.content = [{"type": "text", "text": text}]
    else:
        stored = b""
    assert tokens.with_stored_counts(msg, stored) is False
    assert msg._token_cache is None
    fresh = ChatMessage(role="user", content=msg.content, tool_calls=msg.tool_calls)
    assert estimate_message_tokens(msg) == estimate_message_tokens(fresh)
