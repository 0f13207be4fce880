"""The websocket ``regenerate`` and ``edit`` frames: the newest answer asked again whatever
its status, and the newest question sent again with new text. What they replace is kept as
an earlier version, marked ``superseded_by`` its successor (hidden by the UI, skipped by
DbMemory) until the user shows it again; the next run reads the version shown."""

from __future__ import annotations

import asyncio

import pytest
from django.test import AsyncClient

from chat.models import Message
from contextmgmt.db_memory import DbMemory
from fimone.agent.context import AgentOutcome
from tests.support.runs import answer_text, events_until, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs", "ws_fake_llm"),
]


def answering(text: str):
    async def script(ctx):
        await ctx.sink("answer.delta", {"text": text})
        return AgentOutcome(answer=text)

    return script


async def rows(conversation) -> list[Message]:
    return [m async for m in Message.objects.filter(conversation=conversation).order_by("id")]


async def expect_error(socket, code: str) -> dict:
    (frame,) = await events_until(socket, "error")
    assert frame["code"] == code, frame
    return frame


@pytest.fixture
async def answered_twice(socket, engine) -> list[dict]:
    """Two questions, both answered (``done``): the ``done`` frames."""
    done = []
    for question, answer in (("First question", "First answer"), ("What is 6*7?", "41")):
        engine.use(answering(answer))
        await send(socket, type="message", content=question)
        done.append((await events_until(socket, "done", "error"))[-1])
    assert [d["type"] for d in done] == ["done", "done"]
    return done


async def test_regenerate_a_finished_answer_keeps_it_as_superseded(
    socket, conversation, engine, answered_twice
):
    old_id = answered_twice[-1]["message_id"]
    engine.use(answering("42"))
    await send(socket, type="regenerate", message_id=old_id)
    events = await events_until(socket, "done", "error")
    assert events[0]["type"] == "run.started" and events[0]["retry_of"] == old_id
    assert events[-1]["type"] == "done" and answer_text(events) == "42"
    old = await Message.objects.aget(pk=old_id)
    assert old.status == "done" and old.content == "41"  # kept as it was
    assert old.superseded_by_id == events[-1]["message_id"]
    assert [m.content for m in await rows(conversation)].count("What is 6*7?") == 1
    # The regenerated run saw the question once and not the replaced answer.
    ctx = engine.contexts[-1]
    assert ctx.query.text() == "What is 6*7?"
    assert "41" not in [m.text() for m in ctx.history]


async def test_only_the_newest_answer_can_be_regenerated(socket, engine, answered_twice):
    await send(socket, type="regenerate", message_id=answered_twice[0]["message_id"])
    await expect_error(socket, "not_retryable")
    await send(socket, type="regenerate", message_id="x")
    await expect_error(socket, "bad_message_id")


async def test_regenerate_during_a_run_is_refused(socket, engine, answered_twice):
    go = asyncio.Event()

    async def waits(ctx):
        await ctx.sink("answer.delta", {"text": "busy"})
        await go.wait()
        return AgentOutcome(answer="busy")

    engine.use(waits)
    await send(socket, type="message", content="Another question")
    await events_until(socket, "answer.delta")
    await send(socket, type="regenerate", message_id=answered_twice[-1]["message_id"])
    await expect_error(socket, "run_active")
    go.set()
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"


async def test_edit_sends_the_last_question_again_and_supersedes_the_old_pair(
    socket, conversation, engine, answered_twice
):
    before = await rows(conversation)
    old_question = next(m for m in before if m.content == "What is 6*7?")
    old_answer_id = answered_twice[-1]["message_id"]
    engine.use(answering("56"))
    await send(socket, type="edit", message_id=old_question.id, content="What is 7*8?")
    events = await events_until(socket, "done", "error")
    started = events[0]
    assert started["type"] == "run.started" and started["edit_of"] == old_question.id
    assert started["content"] == "What is 7*8?"
    assert events[-1]["type"] == "done" and answer_text(events) == "56"

    await old_question.arefresh_from_db()
    old_answer = await Message.objects.aget(pk=old_answer_id)
    assert old_question.content == "What is 6*7?"  # kept, not rewritten
    assert old_question.superseded_by_id == started["message_id"]
    assert old_answer.superseded_by_id == started["assistant_message_id"]
    ctx = engine.contexts[-1]
    assert ctx.query.text() == "What is 7*8?"
    history = [m.text() for m in ctx.history]
    assert "What is 6*7?" not in history and "41" not in history
    assert "First question" in history

    memory = DbMemory(conversation_id=conversation.id, max_tokens=50_000)
    texts = [m.text() for m in await memory.get_messages()]
    assert "What is 6*7?" not in texts and "41" not in texts
    assert "What is 7*8?" in texts and "56" in texts


async def test_only_the_last_question_can_be_edited_and_never_empty(
    socket, conversation, engine, answered_twice
):
    questions = [m for m in await rows(conversation) if m.role == "user"]
    await send(socket, type="edit", message_id=questions[0].id, content="Changed")
    await expect_error(socket, "not_editable")
    await send(socket, type="edit", message_id=questions[-1].id, content="   ")
    await expect_error(socket, "content_missing")
    await send(socket, type="edit", message_id=answered_twice[-1]["message_id"], content="x")
    await expect_error(socket, "bad_message_id")
    assert len(await rows(conversation)) == 4  # nothing stored by a refused edit


async def test_a_foreign_question_cannot_be_edited(socket, foreign_conversation):
    foreign = await Message.objects.acreate(
        conversation=foreign_conversation, role="user", kind="query", content="theirs"
    )
    await send(socket, type="edit", message_id=foreign.id, content="mine now")
    await expect_error(socket, "bad_message_id")
    await foreign.arefresh_from_db()
    assert foreign.content == "theirs" and foreign.superseded_by_id is None


async def test_the_next_run_reads_the_version_shown_and_every_tab_is_told(
    socket, conversation, engine, answered_twice, user
):
    question = next(m for m in await rows(conversation) if m.content == "What is 6*7?")
    engine.use(answering("56"))
    await send(socket, type="edit", message_id=question.id, content="What is 7*8?")
    events = await events_until(socket, "done", "error")
    started = events[0]
    assert started["versions"] == [question.id, started["message_id"]]

    client = AsyncClient()
    await client.aforce_login(user)
    url = f"/api/conversations/{conversation.id}/messages/{question.id}/show/"
    response = await client.post(url)
    assert response.status_code == 200, response.content
    (told,) = await events_until(socket, "versions.shown")
    assert told["message_id"] == question.id

    engine.use(answering("82"))
    await send(socket, type="message", content="And plus 41?")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    history = [m.text() for m in engine.contexts[-1].history]
    assert "What is 6*7?" in history and "41" in history
    assert "What is 7*8?" not in history and "56" not in history
