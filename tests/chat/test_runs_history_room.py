"""The history's room in a run, counted as each engine sends it (RF.3), through the real
websocket run path and engines."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from chat.models import ContextSummary
from chat.runs.deps import make_tools
from contextmgmt.core.messages import ChatMessage
from fimone.agent.history_room import history_room
from tests.chat.test_runs_engines import dag_router
from tests.support.runs import events_until, history_just_under, of_type, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


def use_budget(run_deps, tokens: int) -> None:
    from contextmgmt.budget import Budget

    budget = Budget(
        role="main",
        context_size=tokens + 4_000,
        max_output_tokens=4_000,
        usable_input_tokens=tokens,
        source="env",
    )
    run_deps.use(resolve_budget=lambda role: budget)


async def test_a_history_fitted_at_load_is_not_summarised_again_for_the_dag_planner_rf_3(
    socket, conversation, ws_fake_llm, run_deps
):
    """DAG: the history's room is the planner's input limit less the request as the
    planner gets it; a history filling it reaches the planner whole."""
    use_budget(run_deps, 6_000)
    query = "Which is dearer, apples or pears?"
    room = history_room("dag", 6_000, query=ChatMessage(role="user", content=query), tools=None)
    assert not room.squeezed
    await sync_to_async(history_just_under)(conversation, room.send)
    ws_fake_llm.default = dag_router
    await send(socket, type="message", content=query, mode="dag")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert of_type(events, "compact") == []
    planner = next(c for c in ws_fake_llm.calls if "JSON plan" in c.messages[0].text())
    assert "Turn 7:" in planner.messages[1].text()  # the whole history, verbatim


async def test_one_more_turn_than_fits_is_summarised_at_load_not_by_the_planner_rf_3(
    socket, conversation, ws_fake_llm, run_deps
):
    use_budget(run_deps, 6_000)
    query = "Which is dearer, apples or pears?"
    room = history_room("dag", 6_000, query=ChatMessage(role="user", content=query), tools=None)
    await sync_to_async(history_just_under)(conversation, room.send + 200)

    def router(messages):
        from contextmgmt.core.prompts import hint_of

        if hint_of(messages[0].text()):
            return "[Conversation summary] Turns 0-3 discussed words and numbers 12345."
        return dag_router(messages)

    ws_fake_llm.default = router
    await send(socket, type="message", content=query, mode="dag")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert [e["scope"] for e in of_type(events, "compact")] == ["history"]


async def test_a_request_too_big_for_the_usual_room_keeps_the_stored_summary_whole_rf_3(
    socket, conversation, ws_fake_llm, run_deps
):
    """A paste that leaves the history less than half its usual room: the history is fitted
    (and summaries written) as usual, only this request's copy is cut, with no LLM call;
    the first call fits, so the guard does not compact."""
    use_budget(run_deps, 6_000)
    await sync_to_async(history_just_under)(conversation, 3_000)
    first = await sync_to_async(
        lambda: list(conversation.messages.order_by("id").values_list("id", flat=True))
    )()
    stored = await sync_to_async(services_summary)(conversation, first[3])
    paste = (
        "Here is the log:\n"
        + "\n".join(
            f"2026-03-{d:02d}T10:00:00Z INFO worker-{d % 9} req={1000 + d} took {d}ms status=200"
            for d in range(1, 29)
        )
        * 5
    )
    query = ChatMessage(role="user", content=paste)
    room = history_room("react", 6_000, query=query, tools=make_tools(conversation.id, before_id=0))
    assert room.squeezed and room.send > 0
    ws_fake_llm.default = "Noted."
    await send(socket, type="message", content=paste)
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    compacts = of_type(events, "compact")
    assert [e["scope"] for e in compacts] == ["history"]
    assert compacts[0]["cut_for_request"] is True
    first_call = next(c for c in ws_fake_llm.calls if c.tools)
    sent = first_call.messages[1:-1]
    from contextmgmt.core.tokens import estimate_messages_tokens

    assert estimate_messages_tokens(sent) <= room.send
    # Nothing was summarised again for this request: the stored summary is the only one.
    summaries = await sync_to_async(
        lambda: list(ContextSummary.objects.filter(conversation=conversation))
    )()
    assert [s.pk for s in summaries] == [stored.pk]
    from contextmgmt.core.prompts import hint_of

    assert [c for c in ws_fake_llm.calls if hint_of(c.messages[0].text())] == []


def services_summary(conversation, through_id: int):
    from chat.compaction.summaries import summary_save

    return summary_save(
        conversation_id=conversation.id,
        summary="[Conversation summary]\nTurns 0-3 discussed words and numbers 12345.",
        covers_through_id=through_id,
        covered_count=4,
    )


def test_history_room_counts_system_prompt_tools_query_and_follow_ups():
    from contextmgmt.core.tokens import estimate_message_tokens
    from fimone.agent.prompts import REACT_SYSTEM
    from fimone.agent.react import tool_schema_tokens
    from fimone.agent.tools import default_tools

    tools = default_tools()
    query = ChatMessage(role="user", content="What next?")
    follow = ChatMessage(role="user", content="And the numbers, please.")
    room = history_room("react", 8_000, query=query, tools=tools, follow_ups=[follow])
    system = ChatMessage(role="system", content=REACT_SYSTEM)
    expected = (
        8_000
        - tool_schema_tokens(tools, 8_000)
        - estimate_message_tokens(system)
        - estimate_message_tokens(query)
        - estimate_message_tokens(follow)
    )
    assert room.send == room.load == expected


def test_a_query_over_the_whole_budget_leaves_the_history_nothing_this_time():
    query = ChatMessage(role="user", content="ab 12, " * 10_000)
    room = history_room("react", 8_000, query=query, tools=None)
    assert room.send == 0 and room.squeezed
    ordinary = history_room("react", 8_000, query=ChatMessage(role="user", content=""), tools=None)
    assert room.load == ordinary.send
