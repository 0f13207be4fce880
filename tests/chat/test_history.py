"""chat.history: a conversation's stored messages as the agent reads them (SPEC R4.3).

The loading rules are also exercised through DbMemory in tests/contextmgmt/test_db_memory.py;
these check the loader itself: what a busy conversation yields, its query count, the newest
summary, and that the run's query and the history show an image the same way.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat import services
from chat.compaction.summaries import summary_save
from chat.history import latest_summary, load_history, query_message
from chat.models import Conversation, Message
from contextmgmt.core import tokens
from contextmgmt.core.messages import STORED_FACTS, ChatMessage
from tests.chat.images import image_bytes

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
    old = add(conversation, "assistant", "old", status="error")
    successor = add(conversation, "assistant", "", status="running")
    Message.objects.filter(pk=old.pk).update(superseded_by=successor)  # what a retry stores
    add(conversation, "user", "current")
    return conversation


def test_a_busy_conversation_loads_answers_and_questions_but_no_failures(busy_conversation):
    loaded = load_history(busy_conversation.pk)
    assert [(m.role, m.text()) for m in loaded.messages] == [
        ("user", "q0"),
        ("assistant", "a0 ünïcödé"),
        ("user", "q1"),
        ("assistant", "a1 ünïcödé"),
        ("user", "q2"),
        ("assistant", "a2 ünïcödé"),
        ("user", "look\n[image: x unavailable]"),
    ]
    assert loaded.summary is None
    ids = [m.metadata["id"] for m in loaded.messages]
    assert ids == sorted(ids)


def test_a_load_is_two_queries_without_images(busy_conversation):
    Message.objects.filter(content="look").delete()
    with CaptureQueriesContext(connection) as queries:
        loaded = load_history(busy_conversation.pk)
    assert len(queries) == 2, [q["sql"] for q in queries]
    assert len(loaded.messages) == 6


def test_the_newest_summary_is_loaded_with_the_messages_after_it(busy_conversation, user):
    assert latest_summary(busy_conversation.pk) is None
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
    other = Conversation.objects.create(owner=user, title="other")
    assert latest_summary(other.pk) is None
    loaded = load_history(busy_conversation.pk)
    assert loaded.summary.content == "[Conversation summary] two"
    assert loaded.summary.covers_through_id == second.pk
    assert loaded.summary.covered_count == 4
    assert [m.text() for m in loaded.messages][:2] == ["q2", "a2 ünïcödé"]


@pytest.fixture
def stored_cat(user, conversation):
    upload = SimpleUploadedFile("cat.png", image_bytes("PNG"), content_type="image/png")
    return services.attachment_create(owner=user, conversation=conversation, uploaded_file=upload)


@pytest.mark.parametrize("vision", [True, False])
@pytest.mark.parametrize("file_state", ["stored", "deleted"])
def test_the_query_and_the_history_show_an_image_alike(
    conversation, stored_cat, vision, file_state
):
    asked = services.user_message_create(
        conversation=conversation, content="what is this?", attachments=[stored_cat]
    )
    if file_state == "deleted":
        stored_cat.file.storage.delete(stored_cat.file.name)
    as_query = query_message(asked, vision=vision)
    add(conversation, "assistant", "a cat")
    add(conversation, "user", "next question")
    [as_history, _answer] = load_history(conversation.pk, vision=vision).messages
    assert as_query.content == as_history.content
    assert as_query.pinned and not as_history.pinned
    if not vision:
        assert as_query.content == (
            "what is this?\n[image: cat.png, 32x24 — PNG 32x24; mostly red #c8285a 100%]"
        )
    elif file_state == "deleted":
        assert as_query.content == "what is this?\n[image: cat.png unavailable]"
    else:
        assert as_query.content[0] == {"type": "text", "text": "what is this?"}
        assert as_query.content[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_rd1_history_rows_are_read_by_name(busy_conversation):
    """RD.1: a history row is a named tuple read by name, its images already decoded."""
    from chat.history_rows import HistoryRow, history_rows

    rows = history_rows(busy_conversation.pk, summary=None)
    assert rows and all(isinstance(row, HistoryRow) for row in rows)
    look = next(row for row in rows if row.content == "look")
    assert (look.role, look.kind, look.covered, look.has_tools) == ("user", "query", False, False)
    assert look.images == [{"file_id": "x", "mime_type": "a"}] and look.documents is None


# --- stored facts -----------------------------------------------------------------------------


def test_rf12_the_history_carries_each_message_s_stored_facts_in_the_same_query(
    busy_conversation,
):
    """RF.12: the facts found when a message was stored come with it (``metadata["facts"]``,
    what the compaction's fact check takes), read by the load's one query of messages; a
    row stored before the column (no facts) comes without, and is scanned as before."""
    Message.objects.filter(content="look").delete()
    Message.objects.filter(content="q1").update(facts={})  # as a row from before the column
    with CaptureQueriesContext(connection) as queries:
        loaded = load_history(busy_conversation.pk)
    assert len(queries) == 2, [q["sql"] for q in queries]
    by_text = {m.text(): m for m in loaded.messages}
    stored = Message.objects.get(content="a0 ünïcödé").facts
    assert stored and by_text["a0 ünïcödé"].metadata[STORED_FACTS] == stored
    assert STORED_FACTS not in by_text["q1"].metadata


def test_rf12_a_follow_up_as_the_run_reads_it_carries_its_stored_facts(conversation):
    follow_up = services.user_message_create(
        conversation=conversation, content="Also order ORD-77120.", injected=True
    )
    assert query_message(follow_up).metadata[STORED_FACTS] == follow_up.facts


# --- stored token counts ---------------------------------------------------------------------


def test_rf12_the_history_s_messages_are_not_counted_again(busy_conversation, monkeypatch):
    """RF.12: each message stored by the services comes with the class counts of its text
    (its ``token_counts`` column, read by the same query), so its estimate counts nothing;
    a row never counted (before the column) and a text with notes joined to it are
    counted as before. Each estimate is the one the same text counted afresh gives."""
    Message.objects.filter(content="q1").update(token_counts=b"")
    expected = {
        m.text(): tokens.estimate_message_tokens(ChatMessage(role=m.role, content=m.content))
        for m in load_history(busy_conversation.pk).messages
    }
    counted: list = []
    real = tokens.count_packed
    monkeypatch.setattr(tokens, "count_packed", lambda *a: counted.append(a[0]) or real(*a))
    with CaptureQueriesContext(connection) as queries:
        loaded = load_history(busy_conversation.pk)
    assert len(queries) == 2, [q["sql"] for q in queries]  # the summary, the messages
    assert {m.text(): tokens.estimate_message_tokens(m) for m in loaded.messages} == expected
    assert counted == ["q1", "look\n[image: x unavailable]"]


def test_rf12_the_run_s_query_is_not_counted_again(conversation, monkeypatch):
    follow_up = services.user_message_create(
        conversation=conversation, content="Also order ORD-77120.", injected=True
    )
    expected = tokens.estimate_message_tokens(ChatMessage(role="user", content=follow_up.content))
    monkeypatch.setattr(tokens, "count_packed", None)  # counting would fail
    assert tokens.estimate_message_tokens(query_message(follow_up)) == expected
