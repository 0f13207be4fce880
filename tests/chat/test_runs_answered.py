"""Which user messages a run answers, and their status at its end: one rule (RO findings).

A run answers its question, the follow-ups handed to it when it starts (a retry's, a
follow-up run's earlier leftovers) and every follow-up its engine took; at the run's end
those are ``done`` (``interrupted`` when a shutdown stopped it). Follow-ups its engine never
took wait ``pending`` for the follow-up run that answers them, or become ``cancelled`` with a
stopped run. No user message is left ``pending`` once no run is active.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from chat import services
from chat.models import Message
from chat.runs.registry import registry
from fimone.agent.context import AgentOutcome
from tests.support.runs import WAIT, events_until, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs", "ws_fake_llm"),
]


async def answers(ctx):
    await ctx.sink("answer.delta", {"text": "An answer."})
    return AgentOutcome(answer="An answer.")


async def user_statuses(conversation) -> list[tuple[str, str]]:
    rows = Message.objects.filter(conversation=conversation, role="user").order_by("id")
    return [(m.content, m.status) async for m in rows]


async def idle() -> None:
    async with asyncio.timeout(WAIT):
        await registry.wait_idle()


async def test_a_follow_up_sent_as_the_answer_is_done_is_answered_and_done(
    socket, conversation, engine
):
    """The message arrives after the run stored its answer but before it let go of the
    conversation: it is handed to a follow-up run, and that run's end settles it."""
    engine.use(answers, answers)
    await send(socket, type="message", content="first")
    await events_until(socket, "done")
    await send(socket, type="message", content="right after")
    await events_until(socket, "done")
    await idle()
    assert await user_statuses(conversation) == [("first", "done"), ("right after", "done")]


async def test_a_leftover_waits_pending_until_its_follow_up_run_ends(socket, conversation, engine):
    gate, follow_up_gate = asyncio.Event(), asyncio.Event()

    async def answers_without_draining(ctx):
        await ctx.sink("answer.delta", {"text": "Almost"})
        await gate.wait()
        return AgentOutcome(answer="Almost")

    async def waits(ctx):
        await follow_up_gate.wait()
        return await answers(ctx)

    engine.use(answers_without_draining, waits)
    await send(socket, type="message", content="first")
    await events_until(socket, "answer.delta")
    await send(socket, type="message", content="one more thing")
    await events_until(socket, "injected")
    gate.set()
    await events_until(socket, "done")
    await events_until(socket, "run.started")  # the follow-up run
    assert await user_statuses(conversation) == [("first", "done"), ("one more thing", "pending")]
    follow_up_gate.set()
    await events_until(socket, "done")
    await idle()
    assert await user_statuses(conversation) == [("first", "done"), ("one more thing", "done")]


async def test_follow_ups_of_a_stopped_run_are_cancelled_not_pending(socket, conversation, engine):
    async def endless(ctx):
        await ctx.sink("answer.delta", {"text": "…"})
        await asyncio.Event().wait()

    engine.use(endless)
    await send(socket, type="message", content="first")
    await events_until(socket, "answer.delta")
    await send(socket, type="message", content="second")
    await events_until(socket, "injected")
    await send(socket, type="cancel")
    await events_until(socket, "run.cancelled")
    await idle()
    assert await user_statuses(conversation) == [("first", "done"), ("second", "cancelled")]


async def test_a_retry_of_an_interrupted_run_settles_the_follow_ups_it_hands_over(
    socket, conversation, engine
):
    def crashed_run_with_a_follow_up():
        services.user_message_create(conversation=conversation, content="Plan", run_id="dead")
        answer = services.assistant_message_start(
            conversation=conversation, run_id="dead", mode="react"
        )
        # Typed while the run worked; then the server died.
        services.user_message_create(
            conversation=conversation, content="to Rome", injected=True, run_id="dead"
        )
        services.messages_mark_interrupted()
        return answer

    answer = await sync_to_async(crashed_run_with_a_follow_up)()
    assert await user_statuses(conversation) == [
        ("Plan", "interrupted"),
        ("to Rome", "interrupted"),
    ]
    seen = []

    async def reads_follow_ups(ctx):
        seen.extend(m.text() for m in ctx.injections.drain())
        return await answers(ctx)

    engine.use(reads_follow_ups)
    await send(socket, type="retry", message_id=answer.id)
    started = await events_until(socket, "run.started")
    assert started[-1]["retry_of"] == answer.id
    assert await events_until(socket, "done")
    await idle()
    assert seen == ["to Rome"]
    assert await user_statuses(conversation) == [("Plan", "done"), ("to Rome", "done")]
