"""The progress checkpoint loop of a run ends by itself when the work is done (RS.3).

A cancelled task keeps its CancelledError, whose traceback holds the task's frame and so
the run, which holds the task: a reference cycle that keeps each finished run (history,
models, answer) alive until a full garbage collection, which then pauses the event loop.
"""

from __future__ import annotations

import asyncio

import pytest

from chat.models import Message
from chat.runs import work
from fimone.agent.context import AgentOutcome
from tests.support.runs import WAIT, connect, events_until, install_scripted_engine, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs", "ws_fake_llm"),
]


@pytest.fixture
def checkpoint_tasks(monkeypatch) -> list[asyncio.Task]:
    """The checkpoint task of every run started from now on."""
    tasks: list[asyncio.Task] = []
    original = work.checkpoints

    async def recorded(run):
        tasks.append(asyncio.current_task())
        await original(run)

    monkeypatch.setattr(work, "checkpoints", recorded)
    return tasks


@pytest.mark.parametrize("checkpoint_seconds", [0.01, 60.0])
async def test_a_finished_runs_checkpoint_loop_ends_without_being_cancelled_rs_3(
    user, conversation, run_deps, checkpoint_tasks, monkeypatch, checkpoint_seconds
):
    monkeypatch.setattr(work, "CHECKPOINT_SECONDS", checkpoint_seconds)
    engine = install_scripted_engine(run_deps)
    gate = asyncio.Event()

    async def streams_then_waits(ctx):
        await ctx.sink("answer.delta", {"text": "part one, "})
        await gate.wait()
        return AgentOutcome(answer="part one, part two")

    engine.use(streams_then_waits)
    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content="hello")
        started = await events_until(socket, "answer.delta")
        reply_id = next(e["assistant_message_id"] for e in started if "assistant_message_id" in e)
        async with asyncio.timeout(WAIT):
            # The work ends with the loop mid-wait (its task has begun: it waits at once),
            # or, checkpointing every 10 ms, once a checkpoint has saved the partial answer.
            while not checkpoint_tasks or (  # noqa: ASYNC110 - the loop's task and its writes
                checkpoint_seconds < 1
                and (await Message.objects.aget(pk=reply_id)).content != "part one, "
            ):
                await asyncio.sleep(0.01)
        gate.set()
        assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    finally:
        await socket.disconnect()
    [task] = checkpoint_tasks
    await asyncio.wait({task}, timeout=WAIT)
    assert not task.cancelled()
    assert task.exception() is None
