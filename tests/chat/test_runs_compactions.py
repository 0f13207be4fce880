"""A run's compactions (chat/runs/compactions.py, chat/compaction/ledger.py): engine summaries of
loaded history are stored like load-time ones (RF.3), and the compaction ledger."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat.compaction.ledger import compaction_ledger
from chat.models import ContextSummary, Message
from chat.runs.compactions import LoadedCoverage, summary_of_history
from contextmgmt.core.compact import CompactResult
from contextmgmt.core.llm import Usage
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.prompts import hint_of
from tests.support.runs import (
    connect,
    events_until,
    history_filling_the_load_budget,
    of_type,
    send,
    use_small_budget,
)

SUMMARY = "[Conversation summary] Turns 0-3 discussed words and numbers 12345."


def summariser_calls(fake) -> list:
    return [c for c in fake.calls if hint_of(c.messages[0].text())]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_a_summary_the_guard_makes_of_loaded_history_is_stored_and_reused_rf_3(
    user, conversation, ws_fake_llm, run_deps
):
    """A tool round pushes a history that filled its budget over it: the guard summarises
    the older history. That summary is stored like a load-time one, so the next request
    starts from it and pays no summariser call for the same messages."""
    use_small_budget(run_deps)
    query = "What next?"
    await sync_to_async(history_filling_the_load_budget)(conversation, query, 4_000)
    socket = await connect(user, conversation.id)
    try:
        ws_fake_llm.enqueue(ws_fake_llm.tool_call("calculator", '{"expression": "6*7"}'))
        ws_fake_llm.default = SUMMARY
        await send(socket, type="message", content=query)
        events = await events_until(socket, "done", "error")
        assert events[-1]["type"] == "done", events[-1]
        assert [e["scope"] for e in of_type(events, "compact")] == ["iteration"]
        assert len(summariser_calls(ws_fake_llm)) == 1

        stored = await ContextSummary.objects.select_related("covers_through").aget(
            conversation=conversation
        )
        history = [
            m async for m in Message.objects.filter(conversation=conversation).order_by("id")
        ][:8]
        covered = [m for m in history if m.pk <= stored.covers_through_id]
        assert 0 < len(covered) < 8 and stored.covered_count == len(covered)
        assert stored.content.startswith(SUMMARY_PREFIX)
        assert stored.metadata["made_by"] == "iteration"
        assert stored.metadata["cost_input_tokens"] > 0
        # RV.1: the run's step opens onto it: the event names the stored summary and
        # carries its text as the model got it.
        (guard_compact,) = of_type(events, "compact")
        assert guard_compact["summary_id"] == stored.pk
        assert guard_compact["summary"] == stored.content
        assert isinstance(guard_compact["facts_missing"], list)

        ws_fake_llm.calls.clear()
        ws_fake_llm.default = "Then the numbers."
        await send(socket, type="message", content="And then?")
        events = await events_until(socket, "done", "error")
        assert events[-1]["type"] == "done", events[-1]
        (history_compact,) = of_type(events, "compact")
        assert history_compact["reused_summary"] is True
        assert history_compact["summary_id"] == stored.pk
        assert summariser_calls(ws_fake_llm) == []
    finally:
        await socket.disconnect()


def _history(n: int) -> list[ChatMessage]:
    return [
        ChatMessage(
            role="user" if i % 2 == 0 else "assistant",
            content=f"turn {i}",
            metadata={"id": 10 + i},
        )
        for i in range(n)
    ]


def _result(summarized: list[ChatMessage]) -> CompactResult:
    summary = ChatMessage(
        role="system", content=f"{SUMMARY_PREFIX}\nshort", metadata={"summarized_count": 3}
    )
    return CompactResult(
        [summary], "llm", 4, 1, 100, 20, usage=Usage(50, 10), summarized=summarized
    )


def _stored(covered: int = 6) -> ChatMessage:
    return ChatMessage(
        role="system",
        content=f"{SUMMARY_PREFIX}\nolder",
        metadata={"summary_id": 1, "summarized_count": covered, "covered_tokens": 300},
    )


def test_a_summary_of_the_next_loaded_messages_is_stored_with_what_it_covers():
    history, stored = _history(4), _stored()
    coverage = LoadedCoverage(history, base_count=6, base_tokens=300, covers={id(stored): 0})
    summary, covered = summary_of_history(
        _result([stored, *history[:3]]), coverage=coverage, scope="iteration"
    )
    assert (summary.covers_through_id, summary.covered_count, covered) == (12, 9, 3)
    assert summary.metadata["covered_tokens"] > 300


def test_rv1_a_stored_engine_summary_keeps_the_fact_checks_lists():
    """What the opened step shows: the facts put back and those found missing."""
    history, stored = _history(4), _stored()
    coverage = LoadedCoverage(history, base_count=6, base_tokens=300, covers={id(stored): 0})
    result = _result([stored, *history[:3]])
    result.appended_facts, result.missing_facts = ["12345"], ["12345", "db-17"]
    summary, _covered = summary_of_history(result, coverage=coverage, scope="iteration")
    assert summary.metadata["facts_appended"] == ["12345"]
    assert summary.metadata["facts_missing"] == ["12345", "db-17"]


def test_a_summary_of_this_runs_own_messages_is_not_stored():
    history = _history(3)
    coverage = LoadedCoverage(history)
    tool = ChatMessage(role="tool", content="42", tool_call_id="c1")
    assert summary_of_history(_result([*history, tool]), coverage=coverage, scope="x") is None
    # A follow-up of this run (stored after the question) is not loaded history either.
    later = ChatMessage(role="user", content="and?", metadata={"id": 120})
    assert summary_of_history(_result([*history, later]), coverage=coverage, scope="x") is None


def test_a_summary_of_a_view_with_a_gap_is_not_stored_rf_1():
    """A history cut for one request lacks some messages: a summary of that view would
    record them as summarised though no summariser saw them."""
    history, stored = _history(6), _stored()
    coverage = LoadedCoverage(history, base_count=6, covers={id(stored): 0})
    gap = [stored, history[0], history[3], history[4]]
    assert summary_of_history(_result(gap), coverage=coverage, scope="iteration") is None
    # Nor one that leaves the stored summary out: it would replace it and lose it.
    assert summary_of_history(_result(history[:3]), coverage=coverage, scope="x") is None


def test_a_summary_folding_a_clipped_or_unknown_summary_is_not_stored():
    history = _history(2)
    clipped = ChatMessage(
        role="system", content=f"{SUMMARY_PREFIX}\nclip …", metadata={"clipped": True}
    )
    coverage = LoadedCoverage(history, covers={id(clipped): 0})
    assert summary_of_history(_result([clipped, *history]), coverage=coverage, scope="x") is None
    other = ChatMessage(role="system", content=f"{SUMMARY_PREFIX}\nof tool rounds")
    assert summary_of_history(_result([other, *history]), coverage=coverage, scope="x") is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_the_ledger_lists_each_compaction_its_cost_and_what_it_saved(
    user, conversation, ws_fake_llm, run_deps
):
    use_small_budget(run_deps)
    query = "What next?"
    await sync_to_async(history_filling_the_load_budget)(conversation, query, 4_000)
    socket = await connect(user, conversation.id)
    try:
        ws_fake_llm.enqueue(ws_fake_llm.tool_call("calculator", '{"expression": "6*7"}'))
        ws_fake_llm.default = SUMMARY
        await send(socket, type="message", content=query)
        done = (await events_until(socket, "done", "error"))[-1]
        assert done["type"] == "done", done
        usage = done["usage"]
        (entry,) = usage["compactions"]
        assert entry["scope"] == "iteration"
        assert entry["cost_input_tokens"] == usage["compaction_input_tokens"] > 0
        assert entry["cost_output_tokens"] == usage["compaction_output_tokens"] > 0
        assert usage["compaction_saved_tokens"] == entry["tokens_before"] - entry["tokens_after"]
        answer = await Message.objects.aget(pk=done["message_id"])
        assert answer.metadata["usage"]["compactions"] == usage["compactions"]

        ws_fake_llm.default = "Then the numbers."
        await send(socket, type="message", content="And then?")
        second = (await events_until(socket, "done", "error"))[-1]
        assert second["type"] == "done", second
        reuse = second["usage"]["compactions"][0]
        assert reuse["reused_summary"] is True and reuse["cost_input_tokens"] == 0
    finally:
        await socket.disconnect()

    ledger = await sync_to_async(compaction_ledger)(conversation=conversation)
    assert ledger["compactions"] == 1  # the reuse is no new compaction
    assert ledger["cost_input_tokens"] == usage["compaction_input_tokens"]
    saved = usage["compaction_saved_tokens"] + second["usage"]["compaction_saved_tokens"]
    assert ledger["saved_input_tokens"] == saved
    assert ledger["net_saved_tokens"] == (
        saved - usage["compaction_input_tokens"] - usage["compaction_output_tokens"]
    )
    (line,) = ledger["summaries"]
    assert line["made_by"] == "iteration" and line["requests"] == 1
    assert line["net_saved_tokens"] == line["saved_input_tokens"] - line["cost_tokens"]


@pytest.mark.django_db
def test_the_context_gauge_carries_the_ledger_and_hides_others(
    user, conversation, foreign_conversation
):
    client = Client()
    client.force_login(user)
    info = client.get(f"/api/conversations/{conversation.id}/context/").json()
    assert info["ledger"] == {
        "compactions": 0,
        "cost_input_tokens": 0,
        "cost_output_tokens": 0,
        "saved_input_tokens": 0,
        "cached_input_tokens": 0,
        "masked_results": 0,
        "net_saved_tokens": 0,
        "summaries": [],
    }
    assert client.get(f"/api/conversations/{foreign_conversation.id}/context/").status_code == 404


def test_nothing_the_engine_summarises_is_stored_when_the_history_holds_pins():
    from chat.runs.compactions import RunCompactions

    history = _history(4)
    history[1] = ChatMessage(role="assistant", content="keep me", pinned=True, metadata={"id": 11})
    run = RunCompactions()
    run.loaded(history, messages=history)
    assert run.to_store("iteration", _result(history[:3])) is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_a_compaction_inside_a_run_saves_on_every_later_call_of_the_run(
    user, conversation, ws_fake_llm, run_deps
):
    """The guard summarises before the second model call; two more tool rounds and the
    answer follow, each sent with the summary in place of what it covers: the ledger
    counts the saving on each of those three calls, not on the next one only."""
    use_small_budget(run_deps)
    query = "What next?"
    await sync_to_async(history_filling_the_load_budget)(conversation, query, 4_000)
    script = [
        ws_fake_llm.tool_call("calculator", '{"expression": "6*7"}', call_id="c1"),
        ws_fake_llm.tool_call("calculator", '{"expression": "2+2"}', call_id="c2"),
        ws_fake_llm.tool_call("calculator", '{"expression": "3*3"}', call_id="c3"),
        "Forty-two, four and nine.",
    ]

    def reply(messages):
        return SUMMARY if hint_of(messages[0].text()) else script.pop(0)

    ws_fake_llm.default = reply
    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content=query)
        done = (await events_until(socket, "done", "error"))[-1]
        assert not script
        main_calls = [c for c in ws_fake_llm.calls if not hint_of(c.messages[0].text())]
        # The next request starts from the stored summary and makes two calls with it.
        script.extend([ws_fake_llm.tool_call("calculator", '{"expression": "1+1"}'), "Two."])
        await send(socket, type="message", content="And one plus one?")
        second = (await events_until(socket, "done", "error"))[-1]
    finally:
        await socket.disconnect()
    assert done["type"] == "done", done
    assert second["type"] == "done", second
    usage = done["usage"]
    (entry,) = usage["compactions"]
    assert entry["scope"] == "iteration"
    saving = entry["tokens_before"] - entry["tokens_after"]
    assert saving > 0
    assert len(main_calls) == 4
    # The three calls after the compaction carried its summary.
    assert [any(m.is_summary for m in c.messages) for c in main_calls] == [False, True, True, True]
    assert usage["compaction_saved_tokens"] == 3 * saving
    assert entry["calls"] == 3
    assert entry["saved_tokens"] == 3 * saving
    (reuse,) = second["usage"]["compactions"]
    assert reuse["reused_summary"] is True and reuse["calls"] == 2
    reuse_saving = reuse["tokens_before"] - reuse["tokens_after"]
    assert second["usage"]["compaction_saved_tokens"] == 2 * reuse_saving > 0
    ledger = await sync_to_async(compaction_ledger)(conversation=conversation)
    assert ledger["saved_input_tokens"] == 3 * saving + 2 * reuse_saving
    # The stored summary's line: the request that started from it, over both its calls.
    (line,) = ledger["summaries"]
    assert line["requests"] == 1 and line["saved_input_tokens"] == 2 * reuse_saving


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_the_half_size_summary_of_an_overflow_retry_is_not_stored(
    user, conversation, ws_fake_llm, run_deps
):
    """The provider refused a request our estimate said fits: the run summarises to half
    the size and retries. That summary serves the refused request only; stored, it would
    be what every later request starts from, at half the ordinary size. The next request
    summarises at the ordinary size and stores that."""
    from contextmgmt.core.llm import ContextOverflow

    use_small_budget(run_deps)
    query = "What next?"
    await sync_to_async(history_filling_the_load_budget)(conversation, query, 4_000)
    script: list = [ContextOverflow("maximum context length exceeded"), "Answered after all."]

    def reply(messages):
        if hint_of(messages[0].text()):
            return SUMMARY
        answer = script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    ws_fake_llm.default = reply
    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content=query)
        events = await events_until(socket, "done", "error")
        assert events[-1]["type"] == "done", events[-1]
        (compact,) = of_type(events, "compact")
        assert compact["scope"] == "iteration" and compact["strategy"] == "llm"
        assert compact["tokens_after"] <= compact["tokens_before"] // 2
        assert not await ContextSummary.objects.filter(conversation=conversation).aexists()
        assert compact["overflow_retry"] is True and "summary_id" not in compact
        (entry,) = events[-1]["usage"]["compactions"]
        assert entry["overflow_retry"] is True

        script.append("And now in full.")
        await send(socket, type="message", content="Tell me more, " + "please " * 400)
        second = await events_until(socket, "done", "error")
        assert second[-1]["type"] == "done", second[-1]
    finally:
        await socket.disconnect()
    assert [e["scope"] for e in of_type(second, "compact")] == ["history"]
    stored = await ContextSummary.objects.aget(conversation=conversation)
    assert stored.metadata.get("made_by", "history") == "history"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_the_history_event_counts_what_the_stored_summary_covers_rv_1(
    user, conversation, ws_fake_llm
):
    """The divider's figure comes with the history event: the stored summary's own count,
    also when a message it covers is pinned and loaded again verbatim."""
    from chat import services

    def stored_history():
        rows = []
        for i in range(4):
            rows.append(services.user_message_create(conversation=conversation, content=f"Q{i}"))
            reply = services.assistant_message_start(
                conversation=conversation, run_id=f"h{i}", mode="react"
            )
            services.assistant_message_finish(message=reply, content=f"A{i}")
            rows.append(reply)
        ContextSummary.objects.create(
            conversation=conversation, covers_through=rows[5], content=SUMMARY, covered_count=6
        )
        services.message_pin_set(message=rows[2], pinned=True)  # Q1: covered, and pinned

    await sync_to_async(stored_history)()
    ws_fake_llm.default = "Fine."
    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content="And now?")
        events = await events_until(socket, "done", "error")
    finally:
        await socket.disconnect()
    assert events[-1]["type"] == "done", events[-1]
    (history,) = [e for e in of_type(events, "compact") if e["scope"] == "history"]
    assert history["reused_summary"] is True
    assert history["summarized_count"] == 6
    answer = await Message.objects.aget(pk=events[-1]["message_id"])
    assert answer.metadata["compaction"]["summarized_count"] == 6


def test_the_ledger_keeps_what_masking_did_apart_from_summaries_rm_4():
    from chat.runs.compactions import ledger_entry

    entry = ledger_entry(
        {
            "scope": "iteration",
            "strategy": "mask",
            "tokens_before": 9_000,
            "tokens_after": 3_000,
            "masked": [{"tool": "read_log", "chars": 20_000, "tokens_saved": 4_900}],
            "masked_count": 1,
            "masked_tokens_saved": 4_900,
        }
    )
    assert entry["strategy"] == "mask" and entry["masked_count"] == 1
    assert entry["masked"] == [{"tool": "read_log", "chars": 20_000, "tokens_saved": 4_900}]
    assert entry["masked_tokens_saved"] == 4_900
    assert entry["cost_input_tokens"] == 0  # masking asks no model
