"""CompactUtils.smart_truncate (SPEC R2.2 and the DESIGN §2 rules)."""

import copy

from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens

from .builders import assistant, chat_history, problems, system, tool_round, user


def text36(tag: str) -> str:
    """36 characters: the tag, a bar, lower-case filler (so that every tag costs the same)."""
    return (tag + "|").ljust(36, "z")


# What one text36 message costs (checked for every tag below).
T = estimate_message_tokens(user(text36("sys")))


def history_with_query() -> list[ChatMessage]:
    return [
        system(text36("sys")),
        user(text36("u0")),
        assistant(text36("a0")),
        user(text36("u1")),
        assistant(text36("a1")),
        user(text36("u2")),
        assistant(text36("a2")),
        user(text36("query"), pinned=True),
    ]


def contents(messages):
    return [m.content.split("|")[0] if isinstance(m.content, str) else m.content for m in messages]


def test_every_text36_message_costs_t():
    tags = [
        "sys",
        "u0",
        "a0",
        "u1",
        "a1",
        "u2",
        "a2",
        "query",
        "old",
        "old-a",
        "r1",
        "r2",
        "u",
        "a",
        "done",
    ]
    assert {estimate_message_tokens(user(text36(tag))) for tag in tags} == {T}


def test_within_budget_keeps_everything_as_a_new_list_r2_2():
    msgs = history_with_query()
    out = CompactUtils.smart_truncate(msgs, 8 * T)
    assert out == msgs and out is not msgs


def test_keeps_system_and_pinned_then_the_newest_suffix_that_fits_r2_2():
    msgs = history_with_query()
    # system + query = 2T; room 3T = three messages: a1, u2, a2 — but a1 would lead.
    out = CompactUtils.smart_truncate(msgs, 5 * T)
    assert contents(out) == ["sys", "u2", "a2", "query"]
    assert estimate_messages_tokens(out) == 4 * T


def test_never_starts_with_an_assistant_message_r2_2():
    msgs = history_with_query()
    out = CompactUtils.smart_truncate(msgs, 3 * T)  # room for a2 only: it would lead
    assert contents(out) == ["sys", "query"]
    assert problems(out) == []


def test_assistant_may_follow_a_pinned_query_that_precedes_it():
    # ReAct: the pinned query comes before the iteration's tool rounds; they stay.
    msgs = [
        system(text36("sys")),
        user(text36("old")),
        assistant(text36("old-a")),
        user(text36("query"), pinned=True),
        *tool_round("c1", "search", '{"q":"x"}', text36("r1")),
        *tool_round("c2", "search", '{"q":"y"}', text36("r2")),
    ]
    budget = estimate_messages_tokens([msgs[0], msgs[3], *msgs[6:]])
    out = CompactUtils.smart_truncate(msgs, budget)
    assert out == [msgs[0], msgs[3], *msgs[6:]]
    assert problems(out) == []


def test_tool_call_and_result_are_kept_or_dropped_together_design_2():
    call, result = tool_round("c1", "read_file", '{"path": "a.txt"}', "r" * 400)
    msgs = [system(text36("sys")), user(text36("u")), call, result, assistant(text36("done"))]
    # Room for the result alone (104 tokens) but not with its call: both go.
    budget = estimate_messages_tokens([msgs[0], result, msgs[4]])
    out = CompactUtils.smart_truncate(msgs, budget)
    assert out == [msgs[0]]  # "done" alone would lead with an assistant turn
    out = CompactUtils.smart_truncate(msgs, estimate_messages_tokens(msgs))
    assert out == msgs


def test_suffix_stops_at_the_first_unit_that_does_not_fit_r2_2():
    msgs = [system(text36("sys")), user(text36("u0")), assistant("x" * 4000), user(text36("u1"))]
    out = CompactUtils.smart_truncate(msgs, 4 * T)  # u0 would fit, but it is not a suffix
    assert contents(out) == ["sys", "u1"]


def test_system_and_pinned_survive_even_over_budget_design_2():
    msgs = [system("s" * 4000), user(text36("u")), user("q" * 4000, pinned=True)]
    out = CompactUtils.smart_truncate(msgs, 10)
    assert out == [msgs[0], msgs[2]]


def test_orphan_tool_result_and_unanswered_call_are_never_kept_design_2():
    orphan = ChatMessage(role="tool", content="late", tool_call_id="gone")
    call, _ = tool_round("c9", "search", "{}", "never arrives")
    msgs = [system(text36("sys")), orphan, user(text36("u")), assistant(text36("a")), call]
    out = CompactUtils.smart_truncate(msgs, 10_000)
    assert out == [msgs[0], msgs[2], msgs[3]]
    assert problems(out) == []


def test_input_is_not_mutated_design_2():
    msgs = history_with_query()
    snapshot = copy.deepcopy(msgs)
    CompactUtils.smart_truncate(msgs, 3 * T)
    assert msgs == snapshot
    assert [m.pinned for m in msgs] == [m.pinned for m in snapshot]


def test_cut_for_request_clips_the_summary_to_half_and_keeps_the_newest_turns_rf_3():
    from contextmgmt.core.messages import SUMMARY_PREFIX

    summary = ChatMessage(
        role="system",
        content=f"{SUMMARY_PREFIX}\n" + "The budget is 48,500 EUR. " * 80,
        metadata={"summary_id": 3},
    )
    history = [summary] + chat_history(6)[1:]
    out = CompactUtils.cut_for_request(history, 300)
    assert estimate_messages_tokens(out) <= 300
    assert out[0].is_summary and out[0].metadata["clipped"] is True
    assert estimate_message_tokens(out[0]) <= 150
    assert out[-1] is history[-1] and out[1].role == "user"
    assert summary.metadata == {"summary_id": 3}  # the caller's message is untouched
    assert CompactUtils.cut_for_request(history, 10**6) == history
    # Too little room for a summary worth reading: it is left out of this request's copy.
    assert not any(m.is_summary for m in CompactUtils.cut_for_request(history, 60))
