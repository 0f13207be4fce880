"""The websocket ``retry`` frame (SPEC RU.3 "the user can retry").

``{"type": "retry", "message_id": <failed assistant message id>}`` starts a new run for the
same question on the persisted user message — no second copy of it. The failed answer
stays in the database marked ``superseded_by`` the new one (the UI hides it, DbMemory skips
it). Refusals: ``bad_message_id``, ``not_retryable``, ``run_active``.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async

from chat import services
from chat.models import Message
from contextmgmt.core.llm import LLMUnavailable
from contextmgmt.db_memory import DbMemory
from fimone.agent.context import AgentOutcome
from tests.support.runs import (
    answer_text,
    connect,
    events_until,
    next_event,
    send,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs", "ws_fake_llm"),
]


async def fails(ctx):
    await ctx.sink("answer.delta", {"text": "Half an answer"})
    raise LLMUnavailable("connection refused")


async def answers(ctx):
    await ctx.sink("answer.delta", {"text": "The full answer."})
    return AgentOutcome(answer="The full answer.")


async def rows(conversation) -> list[Message]:
    return [m async for m in Message.objects.filter(conversation=conversation).order_by("id")]


@pytest.fixture
async def failed_answer(socket, conversation, engine) -> Message:
    """A conversation whose newest answer failed (status error, partial text kept)."""
    await sync_to_async(services.user_message_create)(conversation=conversation, content="Hi")
    engine.use(answers)
    await send(socket, type="message", content="An earlier question")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    engine.use(fails)
    await send(socket, type="message", content="What is 6 times 7?")
    error = (await events_until(socket, "done", "error"))[-1]
    assert error["type"] == "error"
    return await Message.objects.aget(pk=error["message_id"])


async def test_retry_answers_the_same_question_without_a_second_copy(
    socket, conversation, engine, failed_answer
):
    before = await rows(conversation)
    engine.use(answers)
    await send(socket, type="retry", message_id=failed_answer.id)
    events = await events_until(socket, "done", "error")

    started, done = events[0], events[-1]
    assert started["type"] == "run.started" and done["type"] == "done"
    assert started["retry_of"] == failed_answer.id
    assert started["content"] == "What is 6 times 7?"
    assert answer_text(events) == "The full answer."
    after = await rows(conversation)
    assert len(after) == len(before) + 1  # one new answer, no new user message
    assert [m.content for m in after if m.role == "user"].count("What is 6 times 7?") == 1
    query = next(m for m in after if m.content == "What is 6 times 7?")
    assert started["message_id"] == query.id
    new = after[-1]
    assert (new.id, new.status, new.content) == (done["message_id"], "done", "The full answer.")
    assert new.metadata["retry_of"] == failed_answer.id
    assert new.question_id == query.id
    await failed_answer.arefresh_from_db()
    # Kept as history of what happened, marked as replaced.
    assert failed_answer.status == "error" and failed_answer.content == "Half an answer"
    assert failed_answer.superseded_by_id == new.id


async def test_retry_run_sees_the_question_once_pinned_and_not_the_failed_text(
    socket, engine, failed_answer
):
    engine.use(answers)
    await send(socket, type="retry", message_id=failed_answer.id)
    await events_until(socket, "done", "error")

    ctx = engine.contexts[-1]
    assert ctx.query.text() == "What is 6 times 7?" and ctx.query.pinned
    texts = [m.text() for m in ctx.history]
    assert "What is 6 times 7?" not in texts
    assert "Half an answer" not in texts
    assert "An earlier question" in texts and "The full answer." in texts


async def test_a_stopped_answer_can_be_retried_and_later_loads_skip_it(
    socket, conversation, engine
):
    async def endless(ctx):
        await ctx.sink("answer.delta", {"text": "Partial words"})
        await asyncio.Event().wait()

    engine.use(endless)
    await send(socket, type="message", content="Tell me a story")
    await events_until(socket, "answer.delta")
    await send(socket, type="cancel")
    cancelled = (await events_until(socket, "run.cancelled"))[-1]

    engine.use(answers)
    await send(socket, type="retry", message_id=cancelled["message_id"])
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"

    # A cancelled answer's text is normally context ("go on"); a retried one is not.
    memory = DbMemory(conversation_id=conversation.id, max_tokens=50_000)
    history = [m.text() for m in await memory.get_messages()]
    assert history == ["Tell me a story", "The full answer."]


async def test_an_interrupted_answer_can_be_retried_and_its_question_is_done(
    socket, conversation, engine
):
    def crashed_run():
        query = services.user_message_create(
            conversation=conversation, content="Lost in a crash", run_id="dead"
        )
        answer = services.assistant_message_start(
            conversation=conversation, run_id="dead", mode="react"
        )
        return query, answer, services.messages_mark_interrupted()

    query, answer, marked = await sync_to_async(crashed_run)()
    assert marked == 2
    engine.use(answers)
    await send(socket, type="retry", message_id=answer.id)
    events = await events_until(socket, "done", "error")
    assert events[0]["message_id"] == query.id and events[-1]["type"] == "done"
    await query.arefresh_from_db()
    assert query.status == "done"
    assert engine.contexts[-1].query.text() == "Lost in a crash"


async def test_follow_ups_of_the_failed_run_reach_the_retry(socket, conversation, engine):
    async def fails_after_a_follow_up(ctx):
        await ctx.sink("answer.delta", {"text": "Working"})
        # Taken by this run (so no follow-up run of its own), then the model fails. The
        # queue has nothing to await on: poll it the way the engines do.
        while not (taken := ctx.injections.drain()):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        assert [m.text() for m in taken] == ["to Rome"]
        raise LLMUnavailable("gone")

    engine.use(fails_after_a_follow_up)
    await send(socket, type="message", content="Plan a trip")
    await events_until(socket, "answer.delta")
    await send(socket, type="message", content="to Rome")
    await events_until(socket, "injected")
    error = (await events_until(socket, "error"))[-1]

    seen = []

    async def reads_follow_ups(ctx):
        seen.extend(m.text() for m in ctx.injections.drain())
        return await answers(ctx)

    engine.use(reads_follow_ups)
    await send(socket, type="retry", message_id=error["message_id"])
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    assert seen == ["to Rome"]
    assert engine.contexts[-1].query.text() == "Plan a trip"
    # The follow-up was answered by the retry: no extra follow-up run, no new user rows.
    assert [m.role for m in await rows(conversation)] == ["user", "assistant", "user", "assistant"]


# --- refusals ---------------------------------------------------------------------------------


async def expect_error(socket, code: str) -> dict:
    event = await next_event(socket)
    assert event["type"] == "error" and event["code"] == code, event
    return event


@pytest.mark.parametrize("message_id", [None, "7", 0, -3, 1.5, True, [1]])
async def test_malformed_message_id(socket, message_id):
    await send(socket, type="retry", message_id=message_id)
    await expect_error(socket, "bad_message_id")


async def test_unknown_foreign_and_user_message_ids(
    socket, conversation, foreign_conversation, failed_answer
):
    def others():
        foreign = services.assistant_message_start(
            conversation=foreign_conversation, run_id="x", mode="react"
        )
        question = Message.objects.filter(conversation=conversation, role="user").last()
        return foreign.id, question.id

    foreign_id, question_id = await sync_to_async(others)()
    for message_id in (failed_answer.id + 1000, foreign_id, question_id):
        await send(socket, type="retry", message_id=message_id)
        await expect_error(socket, "bad_message_id")


async def test_a_finished_or_older_answer_is_not_retryable(
    socket, conversation, engine, failed_answer
):
    done_answer = await Message.objects.filter(
        conversation=conversation, role="assistant", status="done"
    ).afirst()
    await send(socket, type="retry", message_id=done_answer.id)
    await expect_error(socket, "not_retryable")

    engine.use(answers)
    await send(socket, type="retry", message_id=failed_answer.id)
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    # Retried once already: superseded, and no longer the newest answer.
    await send(socket, type="retry", message_id=failed_answer.id)
    await expect_error(socket, "not_retryable")
    assert len(await rows(conversation)) == 6  # Hi, question, answer, question, failed, new


async def test_retry_during_a_run_is_refused_and_the_run_goes_on(
    socket, conversation, engine, failed_answer
):
    go = asyncio.Event()

    async def waits(ctx):
        await ctx.sink("answer.delta", {"text": "busy"})
        await go.wait()
        return AgentOutcome(answer="busy")

    engine.use(waits)
    await send(socket, type="message", content="Another question")
    await events_until(socket, "answer.delta")
    await send(socket, type="retry", message_id=failed_answer.id)
    await expect_error(socket, "run_active")
    go.set()
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    await failed_answer.arefresh_from_db()
    assert failed_answer.superseded_by_id is None


async def test_a_second_tab_sees_the_retry_run(user, conversation, engine, failed_answer, socket):
    other_tab = await connect(user, conversation.id)
    engine.use(answers)
    await send(socket, type="retry", message_id=failed_answer.id)
    events = await events_until(other_tab, "done", "error")
    assert events[0]["type"] == "run.started" and events[0]["retry_of"] == failed_answer.id
    assert events[-1]["type"] == "done"
    await other_tab.disconnect()
