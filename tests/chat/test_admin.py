"""The chat models in the Django admin: every page a staff user opens renders."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from chat import services
from chat.models import ContextSummary
from tests.chat.images import image_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation_with_everything(user, conversation):
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("a.png", image_bytes("PNG")),
    )
    query = services.user_message_create(
        conversation=conversation, content="needle question", attachments=[attachment]
    )
    ContextSummary.objects.create(
        conversation=conversation, covers_through=query, content="[Conversation summary] …"
    )
    return conversation


@pytest.mark.parametrize("model", ["conversation", "message", "attachment", "contextsummary"])
def test_changelist_and_change_pages_render(admin_client, conversation_with_everything, model):
    changelist = admin_client.get(reverse(f"admin:chat_{model}_changelist"))
    assert changelist.status_code == 200
    obj = {
        "conversation": conversation_with_everything,
        "message": conversation_with_everything.messages.first(),
        "attachment": conversation_with_everything.attachments.first(),
        "contextsummary": conversation_with_everything.summaries.first(),
    }[model]
    change = admin_client.get(reverse(f"admin:chat_{model}_change", args=[obj.pk]))
    assert change.status_code == 200


def test_conversation_page_shows_its_messages_inline(admin_client, conversation_with_everything):
    url = reverse("admin:chat_conversation_change", args=[conversation_with_everything.pk])
    assert "needle question" in admin_client.get(url).content.decode()


def test_message_search_finds_content(admin_client, conversation_with_everything):
    response = admin_client.get(reverse("admin:chat_message_changelist"), {"q": "needle"})
    assert response.context["cl"].result_count == 1


def test_attachments_cannot_be_added_through_the_admin(admin_client):
    assert admin_client.get(reverse("admin:chat_attachment_add")).status_code == 403


def test_the_admin_is_closed_to_ordinary_users(logged_in_client):
    response = logged_in_client.get(reverse("admin:chat_conversation_changelist"))
    assert response.status_code == 302


def test_context_summaries_have_a_proper_plural(admin_client):
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert "Context summaries" in page and "summarys" not in page
