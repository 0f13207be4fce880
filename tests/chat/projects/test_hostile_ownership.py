"""Hostile checks of a project's ownership (RJ.1, RJ.3, RJ.4): another user's project or
file never reaches a user, by any route, by the admin's hand, or through a run's tools."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat import services
from chat.documents.context import read_document_text
from chat.instructions import conversation_instructions
from chat.models import Conversation, Project
from chat.projects.context import project_files_for
from tests.chat.api.test_projects import send_json
from tests.support.factories import add_project_file, make_project

pytestmark = pytest.mark.django_db

SECRET = "The vault code is 9182."


@pytest.fixture
def alices_project_with_a_secret(user, django_capture_on_commit_callbacks) -> Project:
    """Alice's project: secret instructions and a file holding a secret."""
    project = make_project(user, name="Vault", instructions="Never mention Bob.")
    with django_capture_on_commit_callbacks(execute=True):
        add_project_file(project, "vault.txt", SECRET.encode(), "text/plain")
    return project


def test_rj4_another_users_project_file_is_not_downloadable(
    client, other_user, alices_project_with_a_secret
):
    file = alices_project_with_a_secret.files.get()
    client.force_login(other_user)
    response = client.get(reverse("chat:attachment", args=[file.pk]))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    client.force_login(alices_project_with_a_secret.owner)
    assert client.get(reverse("chat:attachment", args=[file.pk])).status_code == 200


def test_rj4_a_conversation_cannot_be_moved_into_another_users_project_by_patch(
    client, other_user, alices_project_with_a_secret
):
    bobs = services.conversation_create(owner=other_user)
    client.force_login(other_user)
    url = reverse("chat:conversation", args=[bobs.pk])
    response = send_json(client, "patch", url, {"project": alices_project_with_a_secret.pk})
    assert response.status_code in (400, 404)
    bobs.refresh_from_db()
    assert bobs.project_id is None


def test_rj4_the_conversation_list_filter_on_another_users_project_is_404(
    client, other_user, alices_project_with_a_secret
):
    client.force_login(other_user)
    url = reverse("chat:conversations")
    response = client.get(url, {"project": alices_project_with_a_secret.pk})
    assert response.status_code == 404


@pytest.fixture
def bobs_conversation_put_into_alices_project(other_user, alices_project_with_a_secret):
    """What a careless admin (or a project's owner changed in the admin) leaves behind:
    Bob's conversation in Alice's project."""
    bobs = services.conversation_create(owner=other_user)
    Conversation.objects.filter(pk=bobs.pk).update(project=alices_project_with_a_secret)
    return Conversation.objects.get(pk=bobs.pk)


def test_rj1_a_run_never_reads_another_owners_project_instructions(
    bobs_conversation_put_into_alices_project,
):
    conversation = bobs_conversation_put_into_alices_project
    assert "Never mention Bob." not in conversation_instructions(conversation)
    with_project = Conversation.objects.select_related("project").get(pk=conversation.pk)
    assert "Never mention Bob." not in conversation_instructions(with_project)


def test_rj3_a_run_never_reads_another_owners_project_files(
    bobs_conversation_put_into_alices_project, alices_project_with_a_secret
):
    conversation = bobs_conversation_put_into_alices_project
    files = project_files_for(
        project_id=conversation.project_id, owner_id=conversation.owner_id, budget=12_000
    )
    assert files.project_id is None and SECRET not in files.note()
    secret_file = alices_project_with_a_secret.files.get()
    # What the run hands the tools: the project only when it is the owner's (None here).
    for asked in ("vault.txt", str(secret_file.pk)):
        answer = read_document_text(conversation.pk, file=asked, project_id=files.project_id)
        assert SECRET not in answer and answer.startswith("Error: no document named")


def test_rj4_the_admin_refuses_a_conversation_in_another_users_project(
    admin_client, other_user, alices_project_with_a_secret
):
    bobs = services.conversation_create(owner=other_user, title="Bob's")
    url = reverse("admin:chat_conversation_change", args=[bobs.pk])
    form = {
        "owner": other_user.pk,
        "title": "Bob's",
        "mode": bobs.mode,
        "project": alices_project_with_a_secret.pk,
        "instructions": "",
        "disabled_tool_sources": "[]",
        "messages-TOTAL_FORMS": "0",
        "messages-INITIAL_FORMS": "0",
        "messages-MIN_NUM_FORMS": "0",
        "messages-MAX_NUM_FORMS": "1000",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 200, "saved: Bob's conversation in Alice's project"
    assert "project" in response.context["adminform"].form.errors
    bobs.refresh_from_db()
    assert bobs.project_id is None


def test_rj4_the_admin_refuses_a_new_owner_for_a_project_with_conversations_or_files(
    admin_client, other_user, alices_project_with_a_secret
):
    project = alices_project_with_a_secret
    url = reverse("admin:chat_project_change", args=[project.pk])
    file = project.files.get()
    form = {
        "owner": other_user.pk,
        "name": project.name,
        "instructions": project.instructions,
        "disabled_tool_sources": "[]",
        "files-TOTAL_FORMS": "1",
        "files-INITIAL_FORMS": "1",
        "files-MIN_NUM_FORMS": "0",
        "files-MAX_NUM_FORMS": "1000",
        "files-0-id": str(file.pk),
        "files-0-project": str(project.pk),
    }
    response = admin_client.post(url, form)
    assert response.status_code == 200, "saved: Alice's files in Bob's project"
    assert "owner" in response.context["adminform"].form.errors
    project.refresh_from_db()
    assert project.owner_id != other_user.pk


@pytest.mark.parametrize(
    ("method", "route"),
    [
        ("put", "projects"),
        ("put", "project"),
        ("patch", "project_files"),
        ("get", "project_file"),
        ("post", "project_export"),
    ],
)
def test_rj4_a_wrong_method_is_a_405_in_json(
    logged_in_client, alices_project_with_a_secret, method, route
):
    project = alices_project_with_a_secret
    args = {
        "projects": [],
        "project": [project.pk],
        "project_files": [project.pk],
        "project_file": [project.pk, project.files.get().pk],
        "project_export": [project.pk],
    }[route]
    response = send_json(logged_in_client, method, reverse(f"chat:{route}", args=args), {})
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert "Allow" in response


def test_rj4_a_strangers_project_export_and_download_are_401_in_json(
    client, alices_project_with_a_secret
):
    project = alices_project_with_a_secret
    for url in (
        reverse("chat:project_export", args=[project.pk]),
        reverse("chat:attachment", args=[project.files.get().pk]),
    ):
        response = client.get(url)
        assert response.status_code == 401, url
        assert response.json()["error"]["code"] == "not_authenticated"


def test_rj1_a_conversations_own_instructions_stand_alone_in_a_project_without_any(user):
    project = make_project(user, name="Bare")
    conversation = services.conversation_create(
        owner=user, project_id=project.pk, instructions="Answer in German."
    )
    pinned = conversation_instructions(conversation)
    assert "Answer in German." in pinned
    assert "The project's instructions" not in pinned
    files = project_files_for(project_id=project.pk, owner_id=user.pk, budget=12_000)
    assert files.note() == "" and not files.inline and not files.outlined
