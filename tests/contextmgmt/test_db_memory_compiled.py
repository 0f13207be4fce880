"""DbMemory's compiled reads give exactly the ORM's rows (R4.3; issue 7 bench target).

``CompiledRead`` runs each query shape's SQL compiled once, with the parameters filled per
call. These tests compare it row for row with the same queryset run by the ORM, on a
conversation holding every kind of row the load filters, and check that the compiled path
is really taken (a silent fallback to the ORM would be correct but slow).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat import services
from chat.models import Conversation, Message
from chat.summaries import summary_save
from contextmgmt import db_memory

pytestmark = pytest.mark.django_db


def add(conversation, role, content, **fields) -> Message:
    return Message.objects.create(conversation=conversation, role=role, content=content, **fields)


@pytest.fixture
def busy_conversation(user) -> Conversation:
    """Answered turns, an image reference, a failed, a superseded and a running answer."""
    conversation = Conversation.objects.create(owner=user, title="busy")
    for turn in range(3):
        services.user_message_create(conversation=conversation, content=f"q{turn}", attachments=[])
        answer = services.assistant_message_start(
            conversation=conversation, run_id=f"r{turn}", mode="react"
        )
        services.assistant_message_finish(
            message=answer, content=f"a{turn} ünïcödé", status="done", usage={}
        )
    add(conversation, "user", "look", metadata={"images": [{"file_id": "x", "mime_type": "a"}]})
    add(conversation, "assistant", "oops", kind="error", status="error")
    add(conversation, "assistant", "old", status="error", metadata={"superseded_by": 1})
    add(conversation, "assistant", "", status="running")
    add(conversation, "user", "current")
    return conversation


@pytest.fixture
def other_conversation(user) -> Conversation:
    conversation = Conversation.objects.create(owner=user, title="other")
    add(conversation, "user", "not mine")
    return conversation


def orm_rows(queryset) -> list[tuple]:
    return [tuple(row) for row in queryset]


def test_history_rows_match_the_orm(busy_conversation, other_conversation):
    compiled = db_memory._HISTORY.rows(conversation=busy_conversation.pk)
    expected = orm_rows(db_memory._history_query(conversation=busy_conversation.pk))
    assert compiled == expected
    by_content = {r[2]: r for r in compiled}
    assert "old" not in by_content and "" not in by_content  # superseded, running
    assert by_content["look"][6] == [{"file_id": "x", "mime_type": "a"}]  # JSON decoded
    assert compiled[-1][2] == "current"
    assert compiled[0][5] == Message.objects.get(pk=compiled[0][0]).created_at  # a datetime
    # The parameters are the call's, not the first call's: another conversation's rows.
    assert db_memory._HISTORY.rows(conversation=other_conversation.pk) == orm_rows(
        db_memory._history_query(conversation=other_conversation.pk)
    )
    assert db_memory._HISTORY._compiled[connection.alias][1] is not None  # compiled path


def test_rows_after_a_summary_match_the_orm(busy_conversation):
    ids = list(
        Message.objects.filter(conversation=busy_conversation).order_by("id").values_list("id")
    )
    for (through,) in ids[:4]:
        compiled = db_memory._HISTORY_AFTER.rows(conversation=busy_conversation.pk, through=through)
        expected = orm_rows(
            db_memory._history_query(conversation=busy_conversation.pk, through=through)
        )
        assert compiled == expected
        assert all(row[0] > through for row in compiled)
    assert db_memory._HISTORY_AFTER._compiled[connection.alias][1] is not None


def test_latest_summary_matches_the_orm(busy_conversation, other_conversation):
    assert db_memory._LATEST_SUMMARY.rows(conversation=busy_conversation.pk) == []
    first, second = (
        Message.objects.filter(conversation=busy_conversation).order_by("id")[i] for i in (1, 3)
    )
    summary_save(
        conversation_id=busy_conversation.pk,
        summary="[Conversation summary] one",
        covers_through_id=first.pk,
        covered_count=2,
        metadata={"covered_tokens": 12},
    )
    summary_save(
        conversation_id=busy_conversation.pk,
        summary="[Conversation summary] two",
        covers_through_id=second.pk,
        covered_count=4,
    )
    for conversation in (busy_conversation, other_conversation):
        assert db_memory._LATEST_SUMMARY.rows(conversation=conversation.pk) == orm_rows(
            db_memory._latest_summary_query(conversation=conversation.pk)
        )
    loaded = db_memory.load_history(busy_conversation.pk)
    assert loaded.summary.content == "[Conversation summary] two"
    assert loaded.summary.covers_through_id == second.pk


def test_a_load_is_two_queries_without_images(busy_conversation):
    Message.objects.filter(content="look").delete()
    with CaptureQueriesContext(connection) as queries:
        loaded = db_memory.load_history(busy_conversation.pk)
    assert len(queries) == 2, [q["sql"] for q in queries]
    assert [m.text() for m in loaded.messages] == [
        "q0",
        "a0 ünïcödé",
        "q1",
        "a1 ünïcödé",
        "q2",
        "a2 ünïcödé",
    ]


@pytest.mark.django_db(transaction=True)
async def test_a_preloaded_history_is_used_once_then_read_afresh(user):
    """The run reads the history in its own database hop and hands it over (``loaded``)."""
    conversation = await Conversation.objects.acreate(owner=user, title="preloaded")
    await Message.objects.acreate(conversation=conversation, role="user", content="stored")
    await Message.objects.acreate(conversation=conversation, role="assistant", content="reply")
    handed = db_memory.LoadedHistory(
        messages=[db_memory.ChatMessage(role="user", content="handed over")], summary=None
    )
    memory = db_memory.DbMemory(conversation.pk, max_tokens=10_000, loaded=handed)

    assert [m.text() for m in await memory.get_messages()] == ["handed over"]
    assert [m.text() for m in await memory.get_messages()] == ["stored", "reply"]
