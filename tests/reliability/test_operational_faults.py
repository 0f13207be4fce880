"""Faults of operating the server, each against a real run through the consumer: a deploy
(the drain), a deletion mid-run, oversized output, a channel layer that does not answer.

For every case: the run ends (nothing left ``running``), the user's messages end settled
(never ``pending`` once no run is active), the sockets get only frames under the cap, and
a refused action is a documented error code, never a closed socket.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat import drain, runs, services
from chat.models import Message
from chat.runs.registry import registry
from chat.sockets import frames
from fimone.agent.context import AgentOutcome
from tests.support.runs import (
    WAIT,
    connect,
    events_until,
    next_event,
    send,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs", "ws_fake_llm"),
]


async def statuses(conversation) -> list[tuple[str, str]]:
    rows = Message.objects.filter(conversation=conversation).order_by("id")
    return [(m.role, m.status) async for m in rows]


async def drain_now(grace: float, *, counting: asyncio.Event | None = None) -> int:
    """The drain of this process; ``counting`` is set once it counts the runs (its wait
    has begun)."""

    def running() -> int:
        if counting is not None:
            counting.set()
        return runs.local_run_count()

    return await drain.drain(running=running, interrupt_rest=runs.interrupt_local_runs, grace=grace)


STOPPED: list[str] = []  # texts of endless engines that were stopped (cancelled)


def endless_after(text: str):
    async def endless(ctx):
        await ctx.sink("answer.delta", {"text": text})
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            STOPPED.append(text)
            raise

    return endless


async def test_drain_lets_a_short_run_finish(socket, conversation, engine):
    gate = asyncio.Event()

    async def finishes_soon(ctx):
        await ctx.sink("answer.delta", {"text": "Nearly"})
        await gate.wait()
        return AgentOutcome(answer="Nearly there.")

    engine.use(finishes_soon)
    await send(socket, type="message", content="quick one")
    await events_until(socket, "answer.delta")
    counting = asyncio.Event()
    draining = asyncio.create_task(drain_now(grace=WAIT, counting=counting))
    await asyncio.wait_for(counting.wait(), WAIT)
    gate.set()
    assert await draining == 0
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    assert await statuses(conversation) == [("user", "done"), ("assistant", "done")]


async def test_drain_interrupts_what_outlives_the_grace_and_a_retry_answers_it(
    socket, conversation, engine
):
    engine.use(endless_after("Part of it"))
    await send(socket, type="message", content="long one")
    await events_until(socket, "answer.delta")
    await send(socket, type="message", content="and a follow-up")
    await events_until(socket, "injected")
    assert await drain_now(grace=0.2) == 1
    error = (await events_until(socket, "error"))[-1]
    assert error["code"] == "interrupted" and error["run_id"]
    assert await statuses(conversation) == [
        ("user", "interrupted"),
        ("assistant", "interrupted"),
        ("user", "interrupted"),
    ]
    answer = await Message.objects.aget(pk=error["message_id"])
    assert answer.content == "Part of it"  # what was shown is kept

    # Another process (or this one, restarted) answers it again, follow-up included.
    drain.reset()

    async def answers(ctx):
        taken = [m.text() for m in ctx.injections.drain()]
        return AgentOutcome(answer="Answered: " + ", ".join(taken))

    engine.use(answers)
    await send(socket, type="retry", message_id=error["message_id"])
    done = (await events_until(socket, "done", "error"))[-1]
    assert done["type"] == "done"
    final = await Message.objects.aget(pk=done["message_id"])
    assert final.content == "Answered: and a follow-up"
    users = [s for role, s in await statuses(conversation) if role == "user"]
    assert users == ["done", "done"]


async def test_a_new_message_while_draining_is_refused_and_nothing_is_stored(
    socket, conversation, engine
):
    drain.begin()
    await send(socket, type="message", content="during the deploy")
    event = await next_event(socket)
    assert event["type"] == "error" and event["code"] == "server_draining"
    assert await statuses(conversation) == []
    await send(socket, type="cancel")  # the socket stays usable
    assert (await next_event(socket))["code"] == "no_active_run"


async def test_deleting_the_conversation_mid_run_stops_it_and_closes_its_sockets(
    user, socket, conversation, engine
):
    STOPPED.clear()
    engine.use(endless_after("Working"))
    second_tab = await connect(user, conversation.id)
    await send(socket, type="message", content="go")
    await events_until(socket, "answer.delta")
    await sync_to_async(services.conversation_delete)(conversation=conversation)
    for comm in (socket, second_tab):
        seen = []
        async with asyncio.timeout(WAIT):
            while (output := await comm.receive_output(timeout=WAIT))["type"] != (
                "websocket.close"
            ):
                seen.append(json.loads(output["text"]))
        assert output["code"] == 4404
        assert seen[-1]["code"] == "not_found"  # the last word before the close
    async with asyncio.timeout(WAIT):
        await registry.wait_idle()
    assert STOPPED == ["Working"]  # the engine was stopped, not left to run on
    assert not await Message.objects.filter(conversation_id=conversation.pk).aexists()


async def test_oversized_output_reaches_the_socket_in_frames_under_the_cap(
    socket, conversation, engine
):
    huge = "z" * 3_000_000 + "😀" * 200_000

    async def floods(ctx):
        await ctx.sink("answer.delta", {"text": huge})
        return AgentOutcome(answer=huge)

    engine.use(floods)
    await send(socket, type="message", content="flood me")
    texts = []
    async with asyncio.timeout(WAIT):
        while True:
            output = await socket.receive_output(timeout=WAIT)
            assert output["type"] == "websocket.send"
            assert len(output["text"]) <= frames.MAX_FRAME_BYTES
            frame = json.loads(output["text"])
            if frame["type"] == "answer.delta":
                texts.append(frame["text"])
            if frame["type"] in ("done", "error"):
                break
    assert frame["type"] == "done" and frame.get("html_omitted") is True
    assert "".join(texts) == huge


def test_healthz_says_unavailable_when_the_channel_layer_fails(user, monkeypatch):
    from fimone.memory_layer import InMemoryChannelLayer

    async def broken_send(self, channel, message):
        raise ConnectionError("redis.internal:6379 refused")

    monkeypatch.setattr(InMemoryChannelLayer, "send", broken_send)
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"] == {
        "process": "ok",
        "database": "ok",
        "channel_layer": "unavailable",
    }
    assert b"redis.internal" not in response.content
