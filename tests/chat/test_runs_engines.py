"""Websocket runs through the real ReAct and DAG engines.

A FakeLLM plays the model (scripted replies), and once the built-in offline model through
the real LLM registry. Every event a run can produce appears here.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async

from chat.models import Message
from chat.runs.registry import registry
from contextmgmt.core.llm import LLMTimeout
from tests.support.fake_llm import Hang
from tests.support.runs import (
    WAIT,
    answer_text,
    events_until,
    history_filling_the_load_budget,
    history_just_under,
    of_type,
    send,
    use_small_budget,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


async def messages_of(conversation) -> list[Message]:
    return [m async for m in Message.objects.filter(conversation=conversation).order_by("id")]


async def test_react_run_with_a_tool_call(socket, conversation, ws_fake_llm):
    ws_fake_llm.enqueue(
        ws_fake_llm.tool_call("calculator", json.dumps({"expression": "6*7"})),
        "The answer is 42.",
    )
    await send(socket, type="message", content="What is 6*7?", mode="react")
    events = await events_until(socket, "done", "error")

    assert events[0]["type"] == "run.started"
    steps = of_type(events, "step")
    assert [(s["kind"], s["name"]) for s in steps] == [
        ("tool_call", "calculator"),
        ("tool_result", "calculator"),
    ]
    assert "42" in steps[1]["result"]
    assert answer_text(events) == "The answer is 42."
    done = events[-1]
    assert done["type"] == "done"
    # The engine's two model calls are the run's usage (no compaction happened).
    assert done["usage"]["input_tokens"] > 0
    assert done["usage"]["compaction_input_tokens"] == 0
    # The tool result reached the model in the second call.
    second = ws_fake_llm.calls[1].messages
    assert any(m.role == "tool" and "42" in m.text() for m in second)

    query, reply = await messages_of(conversation)
    assert reply.content == "The answer is 42." and reply.status == "done"
    assert reply.metadata["usage"] == done["usage"]
    assert reply.metadata["iterations"] == 2


def dag_router(messages):
    """Plays planner, step agents, analyser and final writer by what each call asks for."""
    system = messages[0].text() if messages and messages[0].role == "system" else ""
    if "JSON plan" in system:
        return json.dumps(
            {
                "steps": [
                    {"id": "s1", "task": "Find the price of apples", "depends_on": []},
                    {"id": "s2", "task": "Find the price of pears", "depends_on": []},
                    {"id": "s3", "task": "Compare the prices", "depends_on": ["s1", "s2"]},
                ]
            }
        )
    if "JSON verdict" in system:
        return json.dumps({"achieved": True, "confidence": 0.95, "reason": "all steps done"})
    if any("Compare" in m.text() for m in messages if m.role == "user") and len(messages) < 4:
        return "Apples cost 2, pears cost 3: pears are dearer."
    if any(m.role == "user" and "step" in m.text().lower() for m in messages):
        return "Step result: a price was found."
    return "Pears are dearer than apples (3 vs 2)."


async def test_dag_run_streams_plan_steps_analysis_and_answer(socket, conversation, ws_fake_llm):
    ws_fake_llm.default = dag_router
    await send(socket, type="message", content="Which is dearer, apples or pears?", mode="dag")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]

    plan = of_type(events, "dag.plan")
    assert len(plan) == 1
    assert [s["id"] for s in plan[0]["steps"]] == ["s1", "s2", "s3"]
    statuses = {(e["id"], e["status"]) for e in of_type(events, "dag.step")}
    assert {("s1", "done"), ("s2", "done"), ("s3", "done")} <= statuses
    analysis = of_type(events, "dag.analysis")
    assert analysis and analysis[0]["achieved"] is True
    assert answer_text(events).strip()
    reply = (await messages_of(conversation))[-1]
    assert reply.content == answer_text(events).strip()
    assert reply.metadata["mode"] == "dag"


async def test_offline_model_through_the_real_registry(socket, conversation):
    """No substitution at all: registry -> offline model -> ReAct engine -> calculator."""
    await send(socket, type="message", content="What is 12*12?", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert [s["name"] for s in of_type(events, "step") if s["kind"] == "tool_call"] == [
        "calculator"
    ]
    assert "144" in answer_text(events)


async def test_offline_model_dag_run(socket):
    await send(
        socket, type="message", content="Compare 3*7 and 4*5, then say which is larger.", mode="dag"
    )
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert of_type(events, "dag.plan") and of_type(events, "dag.analysis")


async def test_offline_model_dag_run_in_german_does_every_step(socket):
    """Through the consumer and the registry's offline model: the second German step
    doubles the first one's result and the checker finds both in the answer."""
    await send(
        socket,
        type="message",
        content="Berechne zuerst 2+3, dann verdopple das Ergebnis",
        mode="dag",
    )
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    calls = [
        (s["step_id"], json.loads(s["arguments"])["expression"])
        for s in of_type(events, "step")
        if s["kind"] == "tool_call"
    ]
    assert sorted(calls) == [("s1", "2+3"), ("s2", "5 * 2")]
    (analysis,) = of_type(events, "dag.analysis")
    assert analysis["achieved"] is True
    answer = answer_text(events)
    assert "10" in answer and "Offline-Modell" in answer


async def test_injection_reaches_the_engine_at_its_next_iteration(
    socket, conversation, ws_fake_llm
):
    """RP.1 end to end: the follow-up is in the very next model call, pinned."""
    first_call = asyncio.Event()
    injected_ready = asyncio.Event()

    async def tool_call_after_follow_up(messages):
        return ws_fake_llm.tool_call("current_time", "{}")

    original_stream = ws_fake_llm.stream_chat

    async def stream_chat(messages, *, tools=None, **opts):
        if not first_call.is_set():
            first_call.set()
            await injected_ready.wait()
        async for chunk in original_stream(messages, tools=tools, **opts):
            yield chunk

    ws_fake_llm.stream_chat = stream_chat
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("current_time", "{}"), "Done, and it rhymes.")
    await send(socket, type="message", content="write a poem")
    await events_until(socket, "run.started")
    async with asyncio.timeout(WAIT):
        await first_call.wait()
    await send(socket, type="message", content="make it rhyme")
    await events_until(socket, "injected")
    run = registry.get(conversation.id)
    async with asyncio.timeout(WAIT):
        while run.injections.empty():  # noqa: ASYNC110 - the listener loads it from the DB
            await asyncio.sleep(0.01)
    injected_ready.set()
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done"

    second_call = ws_fake_llm.calls[1].messages
    follow_ups = [m for m in second_call if m.text() == "make it rhyme"]
    assert len(follow_ups) == 1
    assert follow_ups[0].pinned and follow_ups[0].injected
    assert second_call[-1].role == "user" and second_call[-1].text() == "make it rhyme"


async def test_cancel_interrupts_a_hanging_model_call(socket, conversation, ws_fake_llm):
    ws_fake_llm.enqueue(Hang())
    await send(socket, type="message", content="take your time")
    await events_until(socket, "run.started")
    await send(socket, type="cancel")
    final = (await events_until(socket, "run.cancelled", "done", "error"))[-1]
    assert final["type"] == "run.cancelled"
    reply = (await messages_of(conversation))[-1]
    assert reply.status == "cancelled"


async def test_model_error_becomes_an_error_event(socket, conversation, ws_fake_llm):
    ws_fake_llm.enqueue(LLMTimeout("no answer after 120 s"))
    await send(socket, type="message", content="hello?")
    error = (await events_until(socket, "done", "error"))[-1]
    assert error["type"] == "error" and error["code"] == "llm_timeout"
    query, reply = await messages_of(conversation)
    assert query.content == "hello?"
    assert reply.status == "error" and reply.metadata["error"]["code"] == "llm_timeout"


async def test_iteration_compaction_is_forwarded_and_counted(
    socket, conversation, ws_fake_llm, run_deps
):
    """History that fills the load budget fits the first call as it is sent (RF.3); a tool
    round grows it past the budget: the engine's guard compacts (scope iteration) and its
    LLM call counts as compaction."""
    use_small_budget(run_deps)
    query = "What next?"
    await sync_to_async(history_filling_the_load_budget)(conversation, query, 4_000)
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("calculator", '{"expression": "6*7"}'))
    ws_fake_llm.default = "[Conversation summary] Turns 0-3 discussed words and numbers 12345."
    await send(socket, type="message", content=query)
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]

    assert of_type(events, "compact") and {e["scope"] for e in of_type(events, "compact")} == {
        "iteration"
    }
    usage = events[-1]["usage"]
    assert usage["compaction_input_tokens"] > 0
    assert usage["input_tokens"] > usage["compaction_input_tokens"]


async def test_a_history_fitted_at_load_is_not_compacted_on_the_first_call_rf_3(
    socket, conversation, ws_fake_llm, run_deps
):
    """The history budget counts the system prompt, the tool schemas and the query as the
    engine sends them: a history that fills it reaches the model whole, uncompacted."""
    use_small_budget(run_deps)
    query = "What next?"
    await sync_to_async(history_filling_the_load_budget)(conversation, query, 4_000)
    ws_fake_llm.default = "Next, the numbers."
    await send(socket, type="message", content=query)
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert of_type(events, "compact") == []
    main_calls = [c for c in ws_fake_llm.calls if c.tools]
    assert len(main_calls[0].messages) == 1 + 8 + 1  # system, the whole history, the query


async def test_run_teaches_the_budget_calibration(socket, ws_fake_llm):
    """RK.2: each run reports the class counts of what its main model was sent and the
    provider-reported input tokens; the ModelConfig row's class weights learn from it."""
    from contextmgmt.core.tokens import CLASSES
    from contextmgmt.models import ModelConfig, TokenSample

    row = await ModelConfig.objects.acreate(
        name="Main", model="fake-main", role="main", is_active=True
    )
    ws_fake_llm.reports_tools = True  # a provider counts the tools' schemas as input
    ws_fake_llm.enqueue("A short answer.")
    await send(socket, type="message", content="Explain the plan. " * 60)
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    await row.arefresh_from_db()
    assert row.token_ratio_samples == 1
    assert 0.5 <= row.token_ratio <= 3.0
    assert len(row.token_weights) == len(CLASSES)
    sample = await TokenSample.objects.aget(model_config=row)
    assert sample.counts[CLASSES.index("upper")] >= 60  # "Explain the plan. " * 60 was sent
    assert sample.reported_tokens > 0 and sample.fixed_tokens > 0


@pytest.mark.parametrize("calibrated", [False, True])
async def test_a_run_estimates_with_its_models_calibrated_weights(
    socket, conversation, ws_fake_llm, run_deps, calibrated
):
    """RK.2: history that fits the budget by the base weights is compacted when the main
    model's calibrated weights say its tokenizer counts twice as much."""
    from asgiref.sync import sync_to_async

    from contextmgmt.budget import Budget
    from contextmgmt.core.tokens import BASE_WEIGHTS

    budget = Budget(
        role="main",
        context_size=40_000,
        max_output_tokens=4_000,
        usable_input_tokens=8_000,
        source="db",
        token_weights=tuple(2 * w for w in BASE_WEIGHTS) if calibrated else None,
    )
    run_deps.use(resolve_budget=lambda role: budget)
    await sync_to_async(history_just_under)(conversation, 5_000)
    ws_fake_llm.default = "[Conversation summary] Turns 0-3 discussed words and numbers 12345."
    await send(socket, type="message", content="What next?")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    history = [e for e in of_type(events, "compact") if e["scope"] == "history"]
    if not calibrated:
        assert history == []
    else:
        (compact,) = history
        assert compact["tokens_before"] > 8_000  # 5,000 base-weight tokens counted twice


async def test_dag_replan_is_forwarded(socket, ws_fake_llm):
    verdicts = iter(
        [
            {"achieved": False, "confidence": 0.2, "reason": "prices missing"},
            {"achieved": True, "confidence": 0.9, "reason": "done"},
        ]
    )

    def router(messages):
        system = messages[0].text() if messages and messages[0].role == "system" else ""
        if "JSON plan" in system:
            return json.dumps({"steps": [{"id": "s1", "task": "Look it up", "depends_on": []}]})
        if "JSON verdict" in system:
            return json.dumps(next(verdicts))
        return "A result."

    ws_fake_llm.default = router
    await send(socket, type="message", content="Find the price.", mode="dag")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    assert [e["round"] for e in of_type(events, "dag.replan")] == [1]  # the first re-plan
    assert [e["achieved"] for e in of_type(events, "dag.analysis")] == [False, True]
    assert len(of_type(events, "dag.plan")) == 2
