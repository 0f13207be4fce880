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


@pytest.fixture
def project_with_a_file_and_a_conversation(user, conversation):
    """Alice's project "Trip to Lyon" with a Word file and her conversation in it."""
    from tests.support.documents import docx_bytes
    from tests.support.factories import add_project_file, make_project

    project = make_project(user, name="Trip to Lyon", instructions="Answer in French.")
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    add_project_file(project, "depot-codes.docx", docx_bytes(["Gate 4471."]), docx)
    services.conversation_update(
        conversation=conversation, project_id=project.pk, instructions="Sign off with 'Bye'."
    )
    return project


def test_rj4_projects_are_listed_with_owner_and_counts(
    admin_client, project_with_a_file_and_a_conversation
):
    response = admin_client.get(reverse("admin:chat_project_changelist"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Trip to Lyon" in page and "alice" in page
    row = response.context["cl"].result_list[0]
    assert (row.conversation_count, row.file_count) == (1, 1)
    # Sorted by a count: the counts are columns of the query.
    by_files = admin_client.get(reverse("admin:chat_project_changelist"), {"o": "4"})
    assert by_files.status_code == 200


@pytest.mark.parametrize("query", ["Lyon", "alice"])
def test_rj4_projects_are_found_by_name_and_owner(
    admin_client, project_with_a_file_and_a_conversation, other_user, query
):
    from tests.support.factories import make_project

    make_project(other_user, name="Mallory's plans")
    response = admin_client.get(reverse("admin:chat_project_changelist"), {"q": query})
    assert [p.name for p in response.context["cl"].result_list] == ["Trip to Lyon"]


def test_rj4_a_projects_files_are_shown_inline_read_only(
    admin_client, project_with_a_file_and_a_conversation
):
    project = project_with_a_file_and_a_conversation
    response = admin_client.get(reverse("admin:chat_project_change", args=[project.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "depot-codes.docx" in page and "Answer in French." in page
    (inline,) = response.context["inline_admin_formsets"]
    assert not inline.has_add_permission and not inline.formset.can_delete
    assert set(inline.formset.form.base_fields) == set()  # every field read-only
    file = project.files.get()
    assert (
        admin_client.get(reverse("admin:chat_attachment_change", args=[file.pk])).status_code == 200
    )
    assert (
        "Trip to Lyon"
        in admin_client.get(reverse("admin:chat_attachment_changelist")).content.decode()
    )


def test_rj4_a_conversations_page_shows_its_project_and_instructions(
    admin_client, conversation, project_with_a_file_and_a_conversation
):
    listed = admin_client.get(reverse("admin:chat_conversation_changelist")).content.decode()
    assert "Trip to Lyon" in listed
    page = admin_client.get(reverse("admin:chat_conversation_change", args=[conversation.pk]))
    text = page.content.decode()
    assert "Sign off with &#x27;Bye&#x27;." in text
    assert f'name="project" value="{project_with_a_file_and_a_conversation.pk}"' in text
    found = admin_client.get(reverse("admin:chat_conversation_changelist"), {"q": "Lyon"})
    assert found.context["cl"].result_count == 1


def test_rj4_staff_cannot_save_instructions_past_the_limit(
    admin_client, settings, project_with_a_file_and_a_conversation
):
    settings.FIMONE_INSTRUCTIONS_MAX_CHARS = 100
    project = project_with_a_file_and_a_conversation
    url = reverse("admin:chat_project_change", args=[project.pk])
    form = {
        "owner": project.owner_id,
        "name": "Trip to Lyon",
        "instructions": "x" * 101,
        "disabled_tool_sources": "[]",
        "files-TOTAL_FORMS": "1",
        "files-INITIAL_FORMS": "1",
        "files-MIN_NUM_FORMS": "0",
        "files-MAX_NUM_FORMS": "1000",
        "files-0-id": str(project.files.get().pk),
        "files-0-project": str(project.pk),
    }
    response = admin_client.post(url, form)
    assert response.status_code == 200
    assert "instructions" in response.context["adminform"].form.errors
    project.refresh_from_db()
    assert project.instructions == "Answer in French."
    form["instructions"] = "Answer in German."
    assert admin_client.post(url, form).status_code == 302
    project.refresh_from_db()
    assert project.instructions == "Answer in German."


def test_rj4_the_project_pages_render_in_german_and_chinese(
    admin_client, project_with_a_file_and_a_conversation
):
    project = project_with_a_file_and_a_conversation
    for language in ("de", "zh-hans"):
        headers = {"HTTP_ACCEPT_LANGUAGE": language}
        assert (
            admin_client.get(reverse("admin:chat_project_changelist"), **headers).status_code == 200
        )
        change = admin_client.get(
            reverse("admin:chat_project_change", args=[project.pk]), **headers
        )
        assert change.status_code == 200
