"""Projects' writes (RJ.1, RJ.3): names and instructions checked, conversations moved in and
out, a file indexed as the project's and removed with its passages."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chat import services
from chat.errors import InvalidInput
from chat.models import Attachment, Conversation, Project, SearchDocument
from chat.projects import services as project_services
from tests.support.documents import docx_bytes
from tests.support.factories import add_project_file, make_conversation, make_project, make_user

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

pytestmark = pytest.mark.django_db


def test_a_project_keeps_its_name_tidied_and_its_instructions():
    project = make_project(name="  Trip   to Lyon ", instructions=" Answer in French. ")
    assert project.name == "Trip to Lyon"
    assert project.instructions == "Answer in French."


def test_rj1_instructions_past_the_limit_are_refused(settings):
    settings.FIMONE_INSTRUCTIONS_MAX_CHARS = 100
    with pytest.raises(InvalidInput) as refused:
        make_project(instructions="x" * 101)
    assert refused.value.code == "instructions_too_long"
    owner = make_user()
    conversation = make_conversation(owner)
    with pytest.raises(InvalidInput):
        services.conversation_update(conversation=conversation, instructions="y" * 101)


def test_an_empty_name_is_refused():
    with pytest.raises(InvalidInput) as refused:
        make_project(name="   ")
    assert refused.value.code == "empty_name"


def test_rj1_a_conversation_moves_into_a_project_and_out():
    owner = make_user()
    project = make_project(owner)
    conversation = make_conversation(owner)
    services.conversation_update(conversation=conversation, project_id=project.pk)
    assert Conversation.objects.get(pk=conversation.pk).project_id == project.pk
    services.conversation_update(conversation=conversation, project_id=None)
    assert Conversation.objects.get(pk=conversation.pk).project_id is None


def test_rj1_another_users_project_cannot_take_a_conversation():
    project = make_project()
    conversation = make_conversation()
    with pytest.raises(Project.DoesNotExist):
        services.conversation_update(conversation=conversation, project_id=project.pk)
    with pytest.raises(Project.DoesNotExist):
        services.conversation_create(owner=conversation.owner, project_id=project.pk)


def test_a_new_conversation_starts_with_the_projects_tool_selection():
    owner = make_user()
    project = project_services.project_create(
        owner=owner, name="P", disabled_tool_sources=["builtin:fetch_url"]
    )
    conversation = services.conversation_create(owner=owner, project_id=project.pk)
    assert conversation.project_id == project.pk
    assert conversation.disabled_tool_sources == ["builtin:fetch_url"]


def test_rj1_deleting_a_project_moves_its_conversations_out_or_deletes_them():
    owner = make_user()
    kept_in = make_project(owner)
    kept = services.conversation_create(owner=owner, project_id=kept_in.pk)
    project_services.project_delete(project=kept_in)
    assert Conversation.objects.get(pk=kept.pk).project_id is None
    gone_with = make_project(owner)
    gone = services.conversation_create(owner=owner, project_id=gone_with.pk)
    project_services.project_delete(project=gone_with, delete_conversations=True)
    assert not Conversation.objects.filter(pk=gone.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_rj3_a_project_file_is_indexed_as_the_projects_and_leaves_with_its_passages():
    project = make_project()
    data = docx_bytes(["The gate code of the depot is 4471."])
    attachment = add_project_file(project, "depot.docx", data, DOCX)
    assert attachment.project_id == project.pk and attachment.conversation_id is None
    passages = SearchDocument.objects.filter(attachment=attachment)
    assert passages.exists()
    assert all(p.project_id == project.pk and p.conversation_id is None for p in passages)
    assert any("4471" in p.body for p in passages)
    project_services.project_file_delete(attachment=attachment)
    assert not SearchDocument.objects.filter(project=project).exists()
    assert not Attachment.objects.filter(pk=attachment.pk).exists()


def test_rj3_unsent_upload_cleanup_leaves_project_files_alone():

    project = make_project()
    attachment = add_project_file(project, "notes.docx", docx_bytes(["Notes."]), DOCX)
    Attachment.objects.filter(pk=attachment.pk).update(
        created_at=attachment.created_at - timedelta(days=30)
    )
    services.attachments_delete_unsent(older_than=timedelta(days=1))
    assert Attachment.objects.filter(pk=attachment.pk).exists()


def test_rj1_a_project_holds_at_most_its_limit_of_files(settings, media_root):
    """Past ``FIMONE_PROJECT_MAX_FILES`` (read when a file is added) the service refuses
    the file, stores nothing of it, and a removed file makes room again."""
    from chat.errors import UploadRejected

    settings.FIMONE_PROJECT_MAX_FILES = 2
    project = make_project(name="Depots")
    first = add_project_file(project, "one.txt", b"One.", "text/plain")
    add_project_file(project, "two.txt", b"Two.", "text/plain")
    stored = sorted(p for p in media_root.rglob("*") if p.is_file())
    with pytest.raises(UploadRejected) as refused:
        add_project_file(project, "three.txt", b"Three.", "text/plain")
    assert refused.value.code == "too_many_files" and refused.value.status == 400
    assert "2 files" in refused.value.message and "remove one" in refused.value.message
    assert sorted(project.files.values_list("original_name", flat=True)) == ["one.txt", "two.txt"]
    assert sorted(p for p in media_root.rglob("*") if p.is_file()) == stored
    project_services.project_file_delete(attachment=first)
    add_project_file(project, "three.txt", b"Three.", "text/plain")
    settings.FIMONE_PROJECT_MAX_FILES = 3
    add_project_file(project, "four.txt", b"Four.", "text/plain")
    assert project.files.count() == 3


def test_rj1_the_file_limit_counts_only_the_projects_own_files(settings):
    """Another project's files, and a conversation's uploads, leave the limit alone."""
    settings.FIMONE_PROJECT_MAX_FILES = 1
    owner = make_user()
    full = make_project(owner, name="Full")
    add_project_file(full, "one.txt", b"One.", "text/plain")
    other = make_project(owner, name="Other")
    add_project_file(other, "one.txt", b"One.", "text/plain")
    assert other.files.count() == 1
