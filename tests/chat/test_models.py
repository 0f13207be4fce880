"""chat models (issue 2): readable __str__, ordering with a stable tie-break."""

from __future__ import annotations

import pytest

from chat import services
from chat.models import Attachment, Conversation, Message

pytestmark = pytest.mark.django_db


def test_conversation_str_is_its_title_or_a_short_id(user):
    titled = Conversation.objects.create(owner=user, title="Trip plans")
    untitled = Conversation.objects.create(owner=user)
    assert str(titled) == "Trip plans"
    assert str(untitled) == f"Conversation {str(untitled.id)[:8]}"


def test_message_str_shows_role_and_a_one_line_preview(conversation):
    message = Message.objects.create(
        conversation=conversation, role="user", content="line one\nline two " + "x" * 80
    )
    text = str(message)
    assert text.startswith("user: line one line two")
    assert "\n" not in text and len(text) < 60


def test_attachment_str_names_type_and_size(user, conversation):
    attachment = Attachment(
        owner=user, conversation=conversation, original_name="a.png",
        mime_type="image/png", size=10, width=3, height=2, sha256="0" * 64,
    )  # fmt: skip
    assert str(attachment) == "a.png (image/png, 3x2)"


def test_messages_with_equal_timestamps_keep_insertion_order(conversation):
    created = [
        Message.objects.create(conversation=conversation, role="user", content=str(i))
        for i in range(5)
    ]
    # Same stamp for all, as a coarse clock or a bulk import would give.
    Message.objects.update(created_at=created[0].created_at)
    assert list(conversation.messages.all()) == created
    assert list(Message.objects.filter(conversation=conversation)) == created


def test_conversations_are_ordered_most_recently_updated_first(user):
    first = services.conversation_create(owner=user, title="first")
    second = services.conversation_create(owner=user, title="second")
    assert list(Conversation.objects.filter(owner=user)) == [second, first]
    services.user_message_create(conversation=first, content="bump")
    assert list(Conversation.objects.filter(owner=user)) == [first, second]
