"""A finished run is freed by reference counting, whatever its end (RS.3).

A run caught in a reference cycle keeps its whole graph (tasks, history, models, usage,
answer) until a full garbage collection, which walks every tracked object on the serving
loop: a pause for every socket of the process (docs/architecture.md). Each test drives a
real run (the ReAct or DAG engine, a FakeLLM as the model) with the cycle collector
switched off, and checks that the run and what it owned are gone once it has ended.
"""

from __future__ import annotations

import asyncio
import json
import weakref

import pytest
from asgiref.sync import sync_to_async

from chat.runs.registry import registry
from contextmgmt.core.llm import LLMTimeout
from tests.support.fake_llm import Hang
from tests.support.garbage import cycle_collector_off, cyclic_garbage
from tests.support.runs import (
    WAIT,
    events_until,
    history_just_under,
    of_type,
    send,
    use_small_budget,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

PLAN = json.dumps(
    {
        "steps": [
            {"id": "s1", "task": "Find the price of apples", "depends_on": []},
            {"id": "s2", "task": "Find the price of pears", "depends_on": []},
        ]
    }
)


# Types only a run owns: none may be found only through a cycle once the run has ended
# (``Usage`` has no weak references, so it is looked for here).
RUN_TYPES = {"Run", "EventPublisher", "PreparedRun", "MeteredLLM", "AgentContext", "Usage"}


class RunWatch:
    """Weak references to each run's own objects, taken while its engine starts."""

    def __init__(self, run_deps) -> None:
        self.refs: dict[str, weakref.ref] = {}
        real = run_deps.current.engine_for

        def engine_for(mode):
            engine = real(mode)

            async def watched(ctx):
                self._watch(*registry.active())  # no strong reference kept here
                return await engine(ctx)

            return watched

        run_deps.use(engine_for=engine_for)

    def _watch(self, run) -> None:
        owned = {
            "Run": run,
            "work task": run.work,
            "supervisor task": run.task,
            "listener task": run.listener,
            "checkpoint task": run.checkpoints,
            "publisher": run.publisher,
            "PreparedRun": run.prepared,
            "model wrapper": run.metered[0][0],
        }
        self.refs.update({name: weakref.ref(obj) for name, obj in owned.items()})

    def alive(self) -> list[str]:
        return [name for name, ref in self.refs.items() if ref() is not None]


async def run_to_its_end(socket, conversation, watch: RunWatch, frame: dict, *, cancel_on=None):
    """Send ``frame``; cancel once an event of type ``cancel_on`` arrives; return the events."""
    with cycle_collector_off():
        await send(socket, **frame)
        events = []
        if cancel_on is not None:
            events += await events_until(socket, cancel_on)
            await send(socket, type="cancel")
        events += await events_until(socket, "done", "error", "run.cancelled")
        async with asyncio.timeout(WAIT):
            await registry.wait_idle(conversation.id)
        for _ in range(3):  # the done callbacks the loop still had queued
            await asyncio.sleep(0)
        alive = watch.alive()
        garbage = cyclic_garbage()
        assert watch.refs, "the run was never seen"
        assert alive == [], f"still alive: {alive}; cyclic garbage: {garbage}"
        assert not RUN_TYPES & set(garbage), f"cyclic garbage: {garbage}"
    return events


@pytest.fixture
def watch(run_deps, ws_fake_llm) -> RunWatch:
    return RunWatch(run_deps)


async def test_a_react_run_that_answers_leaves_no_cycle(socket, conversation, ws_fake_llm, watch):
    ws_fake_llm.enqueue(
        ws_fake_llm.tool_call("calculator", json.dumps({"expression": "6*7"})), "It is 42."
    )
    events = await run_to_its_end(
        socket, conversation, watch, {"type": "message", "content": "6*7?", "mode": "react"}
    )
    assert events[-1]["type"] == "done" and of_type(events, "step")


async def test_a_dag_run_that_answers_leaves_no_cycle(socket, conversation, ws_fake_llm, watch):
    ws_fake_llm.enqueue(PLAN, "Apples cost 2.", "Pears cost 3.")
    ws_fake_llm.default = json.dumps({"achieved": True, "confidence": 0.9, "reason": "ok"})
    events = await run_to_its_end(
        socket, conversation, watch, {"type": "message", "content": "Prices?", "mode": "dag"}
    )
    assert events[-1]["type"] == "done" and of_type(events, "dag.plan")


async def test_a_run_that_fails_leaves_no_cycle(socket, conversation, ws_fake_llm, watch):
    ws_fake_llm.enqueue(LLMTimeout("no answer in time"))
    events = await run_to_its_end(
        socket, conversation, watch, {"type": "message", "content": "hello?", "mode": "react"}
    )
    assert events[-1]["type"] == "error" and events[-1]["code"] == "llm_timeout"


async def test_a_react_run_the_user_stops_leaves_no_cycle(socket, conversation, ws_fake_llm, watch):
    ws_fake_llm.enqueue(Hang())
    events = await run_to_its_end(
        socket,
        conversation,
        watch,
        {"type": "message", "content": "take your time", "mode": "react"},
        cancel_on="run.started",
    )
    assert events[-1]["type"] == "run.cancelled"


async def test_a_dag_run_the_user_stops_mid_step_leaves_no_cycle(
    socket, conversation, ws_fake_llm, watch
):
    """Both steps hang in the TaskGroup when the user stops the run."""
    ws_fake_llm.enqueue(PLAN, Hang(), Hang())
    events = await run_to_its_end(
        socket,
        conversation,
        watch,
        {"type": "message", "content": "Prices?", "mode": "dag"},
        cancel_on="dag.step",
    )
    assert events[-1]["type"] == "run.cancelled"


async def test_a_run_that_compacts_its_history_at_load_leaves_no_cycle(
    socket, conversation, ws_fake_llm, watch, run_deps
):
    use_small_budget(run_deps)
    await sync_to_async(history_just_under)(conversation, 9_000)
    ws_fake_llm.default = "[Conversation summary] Turns 0-7 discussed words and numbers."
    events = await run_to_its_end(
        socket, conversation, watch, {"type": "message", "content": "What next?", "mode": "react"}
    )
    assert events[-1]["type"] == "done"
    assert [e["scope"] for e in of_type(events, "compact")] == ["history"]


async def test_a_run_of_a_multi_process_install_leaves_no_cycle(
    socket, conversation, ws_fake_llm, watch, monkeypatch
):
    """With several server processes a run also reads its stored follow-ups before it
    ends (chat.runs.state.TrackedInjections): that look-up must not hold the run."""
    from chat.runs import control

    monkeypatch.setattr(control, "is_single_process", lambda layer: False)
    ws_fake_llm.enqueue("It is 42.")
    events = await run_to_its_end(
        socket, conversation, watch, {"type": "message", "content": "6*7?", "mode": "react"}
    )
    assert events[-1]["type"] == "done"
