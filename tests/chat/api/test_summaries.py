"""Pins and summaries through the HTTP API (SPEC RV.1-RV.3): owner-only, CSRF on writes,
clear errors for bad input."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from chat import services
from chat.compaction.summaries import summary_latest, summary_save
from chat.models import ContextSummary, Message
from tests.support.factories import add_message

pytestmark = pytest.mark.django_db


@pytest.fixture
def summarised(conversation):
    """Six turns, the first four summarised except a pinned question in the middle."""
    rows = []
    for i in range(6):
        rows.append(add_message(conversation, "user", f"question {i}"))
        rows.append(add_message(conversation, "assistant", f"answer {i}"))
    rows[2].pinned = True
    rows[2].save()
    summary = summary_save(
        conversation_id=conversation.id,
        summary="[Conversation summary]\nThe user asked four questions.\n\nKey facts: 4,200 EUR",
        covers_through_id=rows[7].pk,
        covered_count=7,
        metadata={"facts_appended": ["4,200 EUR"], "facts_missing": ["4,200 EUR", "db-17"]},
        uncovered_ids=[rows[2].pk],
    )
    return rows, summary


def summary_url(conversation, summary_id) -> str:
    return reverse("chat:summary", args=[str(conversation.id), str(summary_id)])


def covered_url(conversation, summary_id) -> str:
    return reverse("chat:summary_messages", args=[str(conversation.id), str(summary_id)])


def message_url(conversation, message_id) -> str:
    return reverse("chat:message", args=[str(conversation.id), str(message_id)])


def patch(client, url, body):
    return client.patch(url, json.dumps(body), content_type="application/json")


# --- RV.1 the opened divider ------------------------------------------------------------------


def test_rv1_summary_detail_shows_the_text_facts_and_coverage(
    logged_in_client, conversation, summarised
):
    rows, summary = summarised
    body = logged_in_client.get(summary_url(conversation, summary.pk)).json()
    assert body["content"] == summary.content
    assert body["facts_appended"] == ["4,200 EUR"]
    assert body["facts_missing"] == ["4,200 EUR", "db-17"]
    assert (body["covered_count"], body["current"], body["edited"]) == (7, True, False)
    assert body["uncovered"] == [rows[2].pk]
    current = logged_in_client.get(summary_url(conversation, "current")).json()
    assert current["id"] == summary.pk


def test_rv1_covered_messages_are_the_summarised_ones_in_order_paged(
    logged_in_client, conversation, summarised
):
    rows, summary = summarised
    first = logged_in_client.get(covered_url(conversation, summary.pk), {"limit": 4}).json()
    assert [m["id"] for m in first["messages"]] == [r.pk for r in rows[:2] + rows[3:5]]
    assert first["has_more"] is True
    rest = logged_in_client.get(
        covered_url(conversation, summary.pk), {"after": first["messages"][-1]["id"]}
    ).json()
    assert [m["id"] for m in rest["messages"]] == [r.pk for r in rows[5:8]]
    assert rest["has_more"] is False


def test_rv1_no_summary_yet_answers_404(logged_in_client, conversation):
    response = logged_in_client.get(summary_url(conversation, "current"))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


# --- RV.2 pins --------------------------------------------------------------------------------


def test_rv2_pin_and_unpin_a_message(logged_in_client, conversation, summarised):
    rows, _summary = summarised
    response = patch(logged_in_client, message_url(conversation, rows[9].pk), {"pinned": True})
    assert response.status_code == 200 and response.json()["pinned"] is True
    assert Message.objects.get(pk=rows[9].pk).pinned
    response = patch(logged_in_client, message_url(conversation, rows[9].pk), {"pinned": False})
    assert response.json()["pinned"] is False and not Message.objects.get(pk=rows[9].pk).pinned


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "missing_pinned"),
        ({"pinned": "yes"}, "invalid_pinned"),
        ({"pinned": 1}, "invalid_pinned"),
    ],
)
def test_rv2_bad_pin_requests_get_a_clear_error(
    logged_in_client, conversation, summarised, body, code
):
    rows, _summary = summarised
    response = patch(logged_in_client, message_url(conversation, rows[0].pk), body)
    assert response.status_code == 400 and response.json()["error"]["code"] == code


def test_rv2_an_error_answer_cannot_be_pinned(logged_in_client, conversation):
    failed = add_message(conversation, "assistant", "boom", status="error")
    failed.kind = "error"
    failed.save()
    response = patch(logged_in_client, message_url(conversation, failed.pk), {"pinned": True})
    assert response.status_code == 400 and response.json()["error"]["code"] == "not_pinnable"


def test_rv2_new_user_messages_are_not_pinned(conversation):
    message = services.user_message_create(conversation=conversation, content="hello")
    assert message.pinned is False


# --- RV.3 edit and discard --------------------------------------------------------------------


def test_rv3_edit_then_discard(logged_in_client, conversation, summarised):
    _rows, summary = summarised
    response = patch(
        logged_in_client, summary_url(conversation, summary.pk), {"content": "Budget 3,900 EUR."}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == "[Conversation summary]\nBudget 3,900 EUR."
    assert body["edited"] and body["original"] == summary.content
    response = logged_in_client.delete(summary_url(conversation, summary.pk))
    assert response.status_code == 204
    assert summary_latest(conversation_id=conversation.id) is None
    # Still readable by id (an old divider opens), no longer in force.
    old = logged_in_client.get(summary_url(conversation, summary.pk)).json()
    assert old["discarded"] is True and old["current"] is False
    again = patch(logged_in_client, summary_url(conversation, summary.pk), {"content": "x"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "summary_not_current"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "missing_content"),
        ({"content": 5}, "invalid_content"),
        ({"content": "   "}, "empty_summary"),
        ({"content": "[Conversation summary]\n"}, "empty_summary"),
        ({"content": "x" * 20_001}, "summary_too_long"),
        ({"content": "a\x00b"}, "invalid_text"),
    ],
)
def test_rv3_bad_edits_get_a_clear_error_and_change_nothing(
    logged_in_client, conversation, summarised, body, code
):
    _rows, summary = summarised
    response = patch(logged_in_client, summary_url(conversation, summary.pk), body)
    assert response.status_code == 400 and response.json()["error"]["code"] == code
    assert ContextSummary.objects.get(pk=summary.pk).content == summary.content


# --- security ---------------------------------------------------------------------------------


def test_someone_elses_summary_and_message_answer_404(client, other_user, conversation, summarised):
    rows, summary = summarised
    client.force_login(other_user)
    for url in (
        summary_url(conversation, summary.pk),
        covered_url(conversation, summary.pk),
        summary_url(conversation, "current"),
    ):
        assert client.get(url).status_code == 404
    assert patch(client, summary_url(conversation, summary.pk), {"content": "x"}).status_code == 404
    assert client.delete(summary_url(conversation, summary.pk)).status_code == 404
    assert patch(client, message_url(conversation, rows[0].pk), {"pinned": True}).status_code == 404
    assert summary_latest(conversation_id=conversation.id).content == summary.content
    assert not Message.objects.get(pk=rows[0].pk).pinned


def test_a_summary_or_message_of_another_conversation_answers_404(
    logged_in_client, user, conversation, summarised
):
    rows, summary = summarised
    mine_too = services.conversation_create(owner=user, title="another")
    assert logged_in_client.get(summary_url(mine_too, summary.pk)).status_code == 404
    response = patch(logged_in_client, message_url(mine_too, rows[0].pk), {"pinned": True})
    assert response.status_code == 404
    assert logged_in_client.get(summary_url(conversation, "nope")).status_code == 404


def test_writes_need_the_csrf_token(csrf_enforcing_client, conversation, summarised):
    rows, summary = summarised
    response = patch(csrf_enforcing_client, message_url(conversation, rows[0].pk), {"pinned": True})
    assert response.status_code == 403
    response = csrf_enforcing_client.delete(summary_url(conversation, summary.pk))
    assert response.status_code == 403
    assert summary_latest(conversation_id=conversation.id) is not None
