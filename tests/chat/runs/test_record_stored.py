"""A run's steps and DAG plan survive a reload.

The run stores what it showed besides its answer (``chat.runs.record.RunRecord``) in the
assistant message's metadata — at its end (done, error, cancelled) and with the 2-second
progress checkpoint — and the messages API hands it back (``steps``, ``dag``). A socket
joining mid-run gets the record so far in ``run.active``.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat.models import Message
from chat.runs import work
from contextmgmt.core.llm import LLMUnavailable
from fimone.agent.context import AgentOutcome
from tests.chat.test_runs_engines import dag_router
from tests.support.runs import (
    WAIT,
    connect,
    events_until,
    next_event,
    of_type,
    send,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


async def emits_steps_and_a_plan(ctx):
    await ctx.sink("step", {"iteration": 1, "kind": "thought", "text": "<b>plan</b> first"})
    await ctx.sink("dag.plan", {"steps": [{"id": "s1", "task": "Add", "depends_on": []}]})
    await ctx.sink("dag.step", {"id": "s1", "status": "running", "round": 0})
    await ctx.sink(
        "step",
        {
            "iteration": 1,
            "kind": "tool_call",
            "name": "calculator",
            "arguments": "{}",
            "step_id": "s1",
        },
    )
    await ctx.sink("dag.step", {"id": "s1", "status": "done", "round": 0, "result": "3"})
    await ctx.sink("dag.analysis", {"achieved": True, "confidence": 0.9, "reason": "ok"})


async def api_message(user, conversation, message_id: int) -> dict:
    def fetch():
        client = Client()
        client.force_login(user)
        response = client.get(f"/api/conversations/{conversation.id}/messages/")
        assert response.status_code == 200
        return next(m for m in response.json()["messages"] if m["id"] == message_id)

    return await sync_to_async(fetch)()


@pytest.mark.usefixtures("ws_fake_llm")
async def test_done_run_stores_steps_and_plan_and_the_api_returns_them(
    socket, user, conversation, engine
):
    async def script(ctx):
        await emits_steps_and_a_plan(ctx)
        await ctx.sink("answer.delta", {"text": "3"})
        return AgentOutcome(answer="3")

    engine.use(script)
    await send(socket, type="message", content="1+2?", mode="dag")
    events = await events_until(socket, "done", "error")
    done = events[-1]
    assert done["type"] == "done"
    (live_step,) = [e for e in events if e["type"] == "dag.step" and e.get("result")]
    assert live_step["result_html"] == "<p>3</p>\n"  # live, as on reload

    reply = await Message.objects.aget(pk=done["message_id"])
    steps = reply.metadata["steps"]
    assert [(s["kind"], s.get("step_id")) for s in steps] == [
        ("thought", None),
        ("tool_call", "s1"),
    ]
    assert steps[0]["text"] == "<b>plan</b> first"  # stored as text; the UI escapes it
    (round_,) = reply.metadata["dag"]["rounds"]
    assert [(s["id"], s["status"], s["result"]) for s in round_["steps"]] == [("s1", "done", "3")]
    assert round_["analysis"]["achieved"] is True

    shown = await api_message(user, conversation, reply.id)
    assert shown["steps"] == steps
    # The API adds each step result rendered as safe HTML (a result is Markdown).
    (shown_round,) = shown["dag"]["rounds"]
    assert shown_round["steps"][0]["result_html"] == "<p>3</p>\n"
    for step in shown_round["steps"]:
        step.pop("result_html", None)
    assert shown["dag"] == reply.metadata["dag"]
    assert shown["steps_omitted"] == 0 and shown["superseded_by"] is None


@pytest.mark.usefixtures("ws_fake_llm")
async def test_failed_and_cancelled_runs_keep_their_steps(socket, conversation, engine):
    async def fails(ctx):
        await emits_steps_and_a_plan(ctx)
        raise LLMUnavailable("down")

    async def endless(ctx):
        await ctx.sink("step", {"iteration": 1, "kind": "thought", "text": "thinking"})
        await asyncio.Event().wait()

    engine.use(fails, endless)
    await send(socket, type="message", content="first")
    error = (await events_until(socket, "done", "error"))[-1]
    assert error["type"] == "error"
    failed = await Message.objects.aget(pk=error["message_id"])
    assert len(failed.metadata["steps"]) == 2 and failed.metadata["dag"]["rounds"]

    await send(socket, type="message", content="second")
    await events_until(socket, "step")
    await send(socket, type="cancel")
    cancelled = (await events_until(socket, "run.cancelled"))[-1]
    stopped = await Message.objects.aget(pk=cancelled["message_id"])
    assert stopped.status == "cancelled"
    assert [s["text"] for s in stopped.metadata["steps"]] == ["thinking"]
    assert "dag" not in stopped.metadata


@pytest.mark.usefixtures("ws_fake_llm")
async def test_progress_checkpoint_stores_the_steps_so_far(
    socket, conversation, engine, monkeypatch
):
    monkeypatch.setattr(work, "CHECKPOINT_SECONDS", 0.01)
    gate = asyncio.Event()

    async def slow(ctx):
        await ctx.sink("step", {"iteration": 1, "kind": "tool_call", "name": "calculator"})
        await gate.wait()
        return AgentOutcome(answer="ok")

    engine.use(slow)
    await send(socket, type="message", content="slowly")
    started = (await events_until(socket, "step"))[0]
    reply = await Message.objects.aget(pk=started["assistant_message_id"])
    async with asyncio.timeout(WAIT):
        while "steps" not in reply.metadata:  # noqa: ASYNC110 - the checkpoint's write
            await asyncio.sleep(0.01)
            await reply.arefresh_from_db()
    assert reply.status == "running"
    assert [s["name"] for s in reply.metadata["steps"]] == ["calculator"]
    assert reply.run_id == started["run_id"]  # merged, not replaced
    gate.set()
    await events_until(socket, "done")
    await reply.arefresh_from_db()
    assert reply.status == "done" and len(reply.metadata["steps"]) == 1


@pytest.mark.usefixtures("ws_fake_llm")
async def test_socket_joining_mid_run_gets_the_steps_so_far_exactly_once(
    user, conversation, engine
):
    gate = asyncio.Event()

    async def two_steps(ctx):
        await ctx.sink("step", {"iteration": 1, "kind": "thought", "text": "one"})
        await gate.wait()
        await ctx.sink("step", {"iteration": 2, "kind": "thought", "text": "two"})
        return AgentOutcome(answer="done")

    engine.use(two_steps)
    tab_a = await connect(user, conversation.id)
    await send(tab_a, type="message", content="steps please")
    await events_until(tab_a, "step")
    tab_b = await connect(user, conversation.id)
    snapshot = await next_event(tab_b)
    assert snapshot["type"] == "run.active"
    assert [s["text"] for s in snapshot["steps"]] == ["one"]
    gate.set()
    rest = await events_until(tab_b, "done")
    assert [s["text"] for s in of_type(rest, "step")] == ["two"]
    await tab_a.disconnect()
    await tab_b.disconnect()


# --- the real engines ---------------------------------------------------------------------


async def test_react_tool_steps_are_stored(socket, conversation, ws_fake_llm):
    ws_fake_llm.enqueue(
        ws_fake_llm.tool_call("calculator", json.dumps({"expression": "6*7"})),
        "The answer is 42.",
    )
    await send(socket, type="message", content="What is 6*7?", mode="react")
    events = await events_until(socket, "done", "error")
    reply = await Message.objects.aget(pk=events[-1]["message_id"])
    live = of_type(events, "step")
    stored = reply.metadata["steps"]
    assert [(s["kind"], s["name"]) for s in stored] == [(s["kind"], s["name"]) for s in live]
    assert stored[1]["result"] == live[1]["result"] and "42" in stored[1]["result"]


async def test_dag_plan_statuses_and_verdict_are_stored(socket, conversation, ws_fake_llm):
    ws_fake_llm.default = dag_router
    await send(socket, type="message", content="Which is dearer, apples or pears?", mode="dag")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    reply = await Message.objects.aget(pk=events[-1]["message_id"])
    (round_,) = reply.metadata["dag"]["rounds"]
    assert [(s["id"], s["status"]) for s in round_["steps"]] == [
        ("s1", "done"),
        ("s2", "done"),
        ("s3", "done"),
    ]
    assert round_["steps"][2]["depends_on"] == ["s1", "s2"]
    assert all(s["result"] for s in round_["steps"])
    assert round_["analysis"]["achieved"] is True
    assert reply.metadata["dag"]["replans"] == []
