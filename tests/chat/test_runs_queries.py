"""Database work of a whole websocket run.

Every run's sync parts (persist the query, load the history, persist the answer) run in
database threads; a query more per run is a fixed cost on every message of every user. The
bound below is today's count: a change that adds a query per run has to raise it knowingly.

Queries are counted on every connection (the run's ORM work happens in channels' database
thread, not on the test's connection), from the ``message`` frame to ``done``.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db.backends import utils as db_utils

from chat import services
from chat.models import Message
from chat.runs.registry import registry
from chat.tool_servers import pool as tool_servers
from tests.support.runs import WAIT, answer_text, connect, events_until, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs", "no_tool_servers_cached_before"),
]

# message -> done of a plain ReAct turn with history, models and budgets already resolved
# (chat.runs.preparation keeps them until a model configuration changes): the query's
# transaction (the owner check that also locks the row, whether a run is going, the two
# messages), the history
# (summary, messages), whether the conversation has documents (read_document is offered
# only then), the answer's transaction, and the full-text index: one insert for the
# question, one for the answer (chat.search.index).
# The tool sources switched off come with the conversation's row, at no query of their own.
MAX_QUERIES_PER_RUN = 14
MAX_TRANSACTIONS_PER_RUN = 2


@pytest.fixture
def no_tool_servers_cached_before():
    """The tool servers as this test's database has them (none): no generation, servers or
    health left in this process by an earlier test of the same worker (its rows are gone
    with its database, not from the caches), so the first turn reads the rows once and the
    counted turn reads nothing of them."""
    tool_servers.forget_cached_servers()
    yield
    tool_servers.forget_cached_servers()


def counted(kind: str, statements: list[str], bound: int) -> str:
    """A failure's message: each counted statement, numbered, so a CI log says which."""
    lines = [f"{len(statements)} {kind} (at most {bound}):"]
    lines += [f"{n:3}. {sql}" for n, sql in enumerate(statements, 1)]
    return "\n".join(lines)


@pytest.fixture
def sql_log(monkeypatch) -> list[str]:
    """Every SQL statement executed on any connection while the test runs."""
    statements: list[str] = []
    lock = threading.Lock()
    original = db_utils.CursorWrapper._execute_with_wrappers

    def counting(self, sql, params, many, executor):
        with lock:
            statements.append(sql)
        return original(self, sql, params, many, executor)

    monkeypatch.setattr(db_utils.CursorWrapper, "_execute_with_wrappers", counting)
    return statements


@pytest.fixture
def conversation_with_history(conversation):
    """Two answered turns before the two of the test."""
    for turn in range(2):
        services.user_message_create(
            conversation=conversation, content=f"question {turn}", attachments=[]
        )
        answer = services.assistant_message_start(
            conversation=conversation, run_id=f"old{turn}", mode="react"
        )
        services.assistant_message_finish(
            message=answer, content=f"answer {turn}", status="done", usage={}
        )
    return conversation


async def test_a_turn_with_history(conversation_with_history, user, ws_fake_llm, sql_log):
    conversation = conversation_with_history
    socket = await connect(user, conversation.id)
    try:
        # A first turn resolves models and budgets (then cached) and settles the socket.
        ws_fake_llm.enqueue("Warm.", "Fine, **thanks**.")
        await send(socket, type="message", content="question 2", mode="react")
        assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
        # ``done`` is sent before the run leaves the registry: a message sent in between
        # is a follow-up of the finished run (stored as an injection, answered by a
        # follow-up run: more queries), which a busy machine makes likely. The counted
        # turn is a plain one: sent once the first run has ended.
        async with asyncio.timeout(WAIT):
            await registry.wait_idle(conversation.id)
        sql_log.clear()
        await send(socket, type="message", content="How are you?", mode="react")
        events = await events_until(socket, "done", "error")
        queries = list(sql_log)
    finally:
        await socket.disconnect()

    assert events[-1]["type"] == "done", events[-1]
    assert answer_text(events) == "Fine, **thanks**."
    # The history reached the model (the count is of a run that did its whole job).
    sent = ws_fake_llm.calls[1].messages
    assert [m.text() for m in sent if m.role == "user"][-4:] == [
        "question 0",
        "question 1",
        "question 2",
        "How are you?",
    ]
    reply = await Message.objects.filter(conversation=conversation).order_by("-id").afirst()
    assert reply.status == "done" and reply.content == "Fine, **thanks**."

    statements = [q for q in queries if q.split()[0] not in ("BEGIN", "SAVEPOINT", "RELEASE")]
    assert len(statements) <= MAX_QUERIES_PER_RUN, counted(
        "statements", statements, MAX_QUERIES_PER_RUN
    )
    begins = [q for q in queries if q.startswith("BEGIN")]
    assert len(begins) <= MAX_TRANSACTIONS_PER_RUN, counted(
        "statements and transactions", queries, MAX_TRANSACTIONS_PER_RUN
    )
