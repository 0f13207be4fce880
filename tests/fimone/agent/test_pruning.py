"""Pruning of old bulky tool results before the guard (issue 6, RR)."""

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.messages import ChatMessage, ToolCall
from fimone.agent.pruning import PRUNE_MIN_CHARS, STUB_PREFIX, prune_tool_results


def tool_round(call_id: str, result: str) -> list[ChatMessage]:
    return [
        ChatMessage(
            role="assistant", tool_calls=[ToolCall(id=call_id, name="dump", arguments="{}")]
        ),
        ChatMessage(role="tool", content=result, tool_call_id=call_id, name="dump"),
    ]


def conversation_with_tool_results(sizes: list[int]) -> list[ChatMessage]:
    messages = [ChatMessage(role="system", content="sys"), ChatMessage(role="user", content="q")]
    for i, size in enumerate(sizes):
        messages += tool_round(f"c{i}", chr(ord("a") + i % 26) * size)
    return messages


def test_older_bulky_results_are_stubbed_newest_three_kept():
    messages = conversation_with_tool_results([5_000, 100, 5_000, 5_000, 5_000, 5_000])
    original = copy.deepcopy(messages)
    pruned = prune_tool_results(messages)

    tools = [m for m in pruned if m.role == "tool"]
    assert [m.text().startswith(STUB_PREFIX) for m in tools] == [
        True,  # old and bulky
        False,  # old but small
        True,
        False,  # the newest three stay verbatim
        False,
        False,
    ]
    stub = tools[0].text()
    assert "5,000 characters" in stub and "a" * 300 in stub and "a" * 301 not in stub
    assert [m.tool_call_id for m in tools] == [f"c{i}" for i in range(6)]  # pairs intact
    assert len(pruned) == len(messages)
    assert messages == original  # the caller's list and messages are untouched


def test_boundary_is_exact():
    at_limit = conversation_with_tool_results([PRUNE_MIN_CHARS, 1, 1, 1])
    assert prune_tool_results(at_limit) is at_limit
    over = conversation_with_tool_results([PRUNE_MIN_CHARS + 1, 1, 1, 1])
    assert prune_tool_results(over)[3].text().startswith(STUB_PREFIX)


def test_nothing_to_prune_returns_the_same_list_and_objects():
    messages = conversation_with_tool_results([5_000, 5_000, 5_000])
    assert prune_tool_results(messages) is messages


def test_pruning_is_idempotent():
    once = prune_tool_results(conversation_with_tool_results([9_000] * 5))
    assert prune_tool_results(once) is once


@settings(max_examples=120, deadline=None)
@given(st.lists(st.integers(0, 6_000), max_size=12), st.integers(0, 5))
def test_properties(sizes, keep):
    messages = conversation_with_tool_results(sizes)
    pruned = prune_tool_results(messages, keep_recent=keep)
    assert [(m.role, m.tool_call_id) for m in pruned] == [
        (m.role, m.tool_call_id) for m in messages
    ]
    tools_before = [m for m in messages if m.role == "tool"]
    tools_after = [m for m in pruned if m.role == "tool"]
    if keep:
        assert tools_after[-keep:] == tools_before[-keep:]
    for before, after in zip(tools_before, tools_after, strict=True):
        assert len(after.text()) <= max(len(before.text()), 600)
