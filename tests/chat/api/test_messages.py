"""/api/conversations/<id>/messages/ (DESIGN §4): oldest first, cursor pages, message JSON."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat import services
from chat.models import Attachment, Message

pytestmark = pytest.mark.django_db


def messages_url(conversation) -> str:
    return reverse("chat:messages", args=[str(conversation.id)])


@pytest.fixture
def conversation_with_seven_messages(conversation) -> list[Message]:
    return [
        services.user_message_create(conversation=conversation, content=f"message {i}")
        for i in range(7)
    ]


def ids(response) -> list[int]:
    return [m["id"] for m in response.json()["messages"]]


def test_default_page_is_the_newest_messages_oldest_first(
    logged_in_client, conversation, conversation_with_seven_messages
):
    all_ids = [m.id for m in conversation_with_seven_messages]
    response = logged_in_client.get(messages_url(conversation), {"limit": 3})
    assert response.status_code == 200
    assert ids(response) == all_ids[-3:]
    assert response.json()["has_more"] is True


def test_paging_backwards_with_before_reaches_the_start(
    logged_in_client, conversation, conversation_with_seven_messages
):
    all_ids = [m.id for m in conversation_with_seven_messages]
    seen: list[int] = []
    params = {"limit": 3}
    while True:
        response = logged_in_client.get(messages_url(conversation), params)
        seen = ids(response) + seen
        if not response.json()["has_more"]:
            break
        params = {"limit": 3, "before": ids(response)[0]}
    assert seen == all_ids


def test_paging_forwards_with_after(
    logged_in_client, conversation, conversation_with_seven_messages
):
    all_ids = [m.id for m in conversation_with_seven_messages]
    first = logged_in_client.get(messages_url(conversation), {"after": all_ids[1], "limit": 3})
    assert ids(first) == all_ids[2:5] and first.json()["has_more"] is True
    last = logged_in_client.get(messages_url(conversation), {"after": all_ids[4], "limit": 3})
    assert ids(last) == all_ids[5:] and last.json()["has_more"] is False


def test_short_conversation_fits_one_page(logged_in_client, conversation):
    message = services.user_message_create(conversation=conversation, content="only")
    response = logged_in_client.get(messages_url(conversation))
    assert ids(response) == [message.id]
    assert response.json()["has_more"] is False


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"limit": 0}, "invalid_limit"),
        ({"limit": 10_000}, "invalid_limit"),
        ({"limit": "ten"}, "invalid_limit"),
        ({"before": "x"}, "invalid_before"),
        ({"before": 1, "after": 1}, "invalid_cursor"),
        ({"before": 987_654}, "invalid_cursor"),
    ],
)
def test_bad_query_parameters_are_400(logged_in_client, conversation, params, code):
    services.user_message_create(conversation=conversation, content="x")
    response = logged_in_client.get(messages_url(conversation), params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code


def test_a_cursor_from_another_conversation_is_refused(
    logged_in_client, conversation, foreign_conversation
):
    foreign = services.user_message_create(conversation=foreign_conversation, content="secret")
    for cursor in ("before", "after"):
        response = logged_in_client.get(messages_url(conversation), {cursor: foreign.id})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_cursor"


def test_another_users_messages_are_404(logged_in_client, foreign_conversation):
    services.user_message_create(conversation=foreign_conversation, content="secret plans")
    response = logged_in_client.get(messages_url(foreign_conversation))
    assert response.status_code == 404
    assert "secret" not in response.content.decode()


def test_message_json_carries_html_images_usage_and_compaction(logged_in_client, conversation):
    services.user_message_create(conversation=conversation, content="**hi**", run_id="r1")
    Message.objects.update(metadata={"images": [{"file_id": "f1", "mime_type": "image/png"}]})
    answer = services.assistant_message_start(conversation=conversation, run_id="r1", mode="react")
    services.assistant_message_finish(
        message=answer,
        content="Result: **42** <script>x</script>",
        usage={"input_tokens": 1200, "output_tokens": 80},
        compaction={"scope": "history", "strategy": "llm", "original_count": 30},
    )
    user_json, answer_json = logged_in_client.get(messages_url(conversation)).json()["messages"]

    assert user_json["role"] == "user" and user_json["kind"] == "query"
    assert user_json["html"] is None  # user text is shown as text, never as HTML
    assert user_json["pinned"] is False and user_json["status"] == "done"
    assert user_json["images"] == [
        {
            "file_id": "f1",
            "mime_type": "image/png",
            "url": "/api/attachments/f1/",
            "description": "",
        }
    ]

    assert answer_json["role"] == "assistant" and answer_json["status"] == "done"
    assert "<strong>42</strong>" in answer_json["html"]
    assert "<script>" not in answer_json["html"]
    assert answer_json["content"] == "Result: **42** <script>x</script>"
    assert answer_json["usage"] == {"input_tokens": 1200, "output_tokens": 80}
    assert answer_json["compaction"]["original_count"] == 30
    assert answer_json["run_id"] == "r1" and answer_json["mode"] == "react"
    assert answer_json["created_at"].startswith(str(answer.created_at.year))


def test_images_carry_their_stored_description_as_alt_text_rv_4(
    logged_in_client, user, other_user, conversation, foreign_conversation
):
    from tests.support.factories import make_attachment

    mine = make_attachment(user, conversation, name="cat.png")
    theirs = make_attachment(other_user, foreign_conversation, name="secret.png")
    Attachment.objects.filter(pk=theirs.pk).update(description="Mallory's secret diagram")
    message = services.user_message_create(
        conversation=conversation, content="look", attachments=[mine]
    )
    # Metadata naming someone else's file (never written by the app) must not reveal it.
    images = [*message.metadata["images"], {"file_id": str(theirs.pk), "mime_type": "image/png"}]
    Message.objects.filter(pk=message.pk).update(metadata={**message.metadata, "images": images})

    listed = logged_in_client.get(messages_url(conversation)).json()["messages"][0]["images"]
    mine.refresh_from_db()
    assert mine.description  # written once at upload
    assert listed[0]["description"] == mine.description
    assert listed[1]["description"] == ""
    assert "Mallory" not in str(listed)
