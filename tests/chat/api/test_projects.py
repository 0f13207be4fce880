"""The projects API (RJ.1, RJ.4; docs/protocol.md, "Projects"): projects and their files,
owner-only, and conversations moved into and out of projects."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from chat.models import Attachment, Conversation, Project, SearchDocument
from tests.chat.api.test_access import csrf_token_for
from tests.chat.images import image_bytes
from tests.support.documents import docx_bytes
from tests.support.factories import (
    add_project_file,
    make_conversation,
    make_model_config,
    make_project,
)

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(user) -> Project:
    """Alice's project, with instructions and no files."""
    return make_project(user, name="Trip to Lyon", instructions="Answer in French.")


@pytest.fixture
def foreign_project(other_user) -> Project:
    return make_project(other_user, name="Mallory's plans", instructions="Secret.")


@pytest.fixture
def project_with_a_file(project, django_capture_on_commit_callbacks) -> Project:
    """Alice's project with one Word file, its pages indexed."""
    with django_capture_on_commit_callbacks(execute=True):
        add_project_file(project, "depot.docx", docx_bytes(["The gate code is 4471."]), DOCX)
    return project


def send_json(client, method: str, url: str, body, **extra):
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.generic(method.upper(), url, data, content_type="application/json", **extra)


def upload(client, project, name: str, data: bytes, content_type: str = DOCX):
    file = SimpleUploadedFile(name, data, content_type=content_type)
    return client.post(reverse("chat:project_files", args=[project.pk]), {"file": file})


def project_url(project) -> str:
    return reverse("chat:project", args=[project.pk])


# --- projects ------------------------------------------------------------------------------


def test_rj4_a_project_is_created_listed_read_changed_and_counted(logged_in_client, user):
    created = send_json(
        logged_in_client,
        "post",
        reverse("chat:projects"),
        {"name": " Trip  to Lyon ", "instructions": "Answer in French."},
    )
    assert created.status_code == 201
    body = created.json()
    assert body["name"] == "Trip to Lyon"
    assert body["instructions"] == "Answer in French."
    for key in ("id", "created_at", "updated_at", "model_config", "disabled_tool_sources"):
        assert key in body
    assert body["conversation_count"] == 0 and body["file_count"] == 0
    project = Project.objects.get(pk=body["id"])
    assert project.owner == user

    make_conversation(user)  # not in the project: not counted
    send_json(logged_in_client, "post", reverse("chat:conversations"), {"project": project.pk})
    listed = logged_in_client.get(reverse("chat:projects")).json()["projects"]
    assert [(p["id"], p["conversation_count"]) for p in listed] == [(project.pk, 1)]

    changed = send_json(
        logged_in_client,
        "patch",
        project_url(project),
        {"name": "Lyon", "disabled_tool_sources": ["builtin:fetch_url"]},
    )
    assert changed.status_code == 200
    assert changed.json()["name"] == "Lyon"
    assert changed.json()["instructions"] == "Answer in French."  # not sent: kept
    assert changed.json()["disabled_tool_sources"] == ["builtin:fetch_url"]
    assert logged_in_client.get(project_url(project)).json()["name"] == "Lyon"


def test_rj4_the_list_holds_only_the_users_projects(logged_in_client, project, foreign_project):
    listed = logged_in_client.get(reverse("chat:projects")).json()
    assert [p["id"] for p in listed["projects"]] == [project.pk]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"name": "x" * 201}, "name_too_long"),
        ({"name": "   "}, "empty_name"),
        ({"name": 7}, "invalid_name"),
        ({}, "missing_name"),
        ({"name": "P", "instructions": "y" * 101}, "instructions_too_long"),
        ({"name": "P", "instructions": ["a"]}, "invalid_instructions"),
        ({"name": "P", "model_config": 999_999}, "invalid_model"),
        ({"name": "P", "builtin_model": "yes"}, "invalid_model"),
        ({"name": "P", "disabled_tool_sources": "builtin:fetch_url"}, "invalid_tool_sources"),
        ("{not json", "invalid_json"),
        ("[1, 2]", "invalid_json"),
    ],
)
def test_rj4_a_bad_project_is_refused_and_nothing_is_stored(logged_in_client, settings, body, code):
    settings.FIMONE_INSTRUCTIONS_MAX_CHARS = 100
    response = send_json(logged_in_client, "post", reverse("chat:projects"), body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert not Project.objects.exists()


def test_rj4_a_bad_change_is_refused_and_the_project_kept(logged_in_client, project, settings):
    settings.FIMONE_INSTRUCTIONS_MAX_CHARS = 100
    response = send_json(
        logged_in_client, "patch", project_url(project), {"name": "New", "instructions": "z" * 101}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "instructions_too_long"
    project.refresh_from_db()
    assert (project.name, project.instructions) == ("Trip to Lyon", "Answer in French.")
    response = send_json(logged_in_client, "patch", project_url(project), "nope")
    assert response.json()["error"]["code"] == "invalid_json"


def test_rj4_deleting_a_project_keeps_its_conversations_out_of_it(
    logged_in_client, user, project_with_a_file
):
    project = project_with_a_file
    conversation = make_conversation(user)
    Conversation.objects.filter(pk=conversation.pk).update(project=project)
    response = logged_in_client.delete(project_url(project))
    assert response.status_code == 204
    assert not Project.objects.exists()
    assert Conversation.objects.get(pk=conversation.pk).project_id is None
    assert not Attachment.objects.filter(project__isnull=False).exists()
    assert not SearchDocument.objects.filter(kind=SearchDocument.Kind.DOCUMENT).exists()


def test_rj4_deleting_a_project_with_conversations_delete_deletes_them(
    logged_in_client, user, project
):
    inside = make_conversation(user)
    outside = make_conversation(user)
    Conversation.objects.filter(pk=inside.pk).update(project=project)
    response = logged_in_client.delete(project_url(project) + "?conversations=delete")
    assert response.status_code == 204
    assert list(Conversation.objects.values_list("pk", flat=True)) == [outside.pk]


def test_rj4_an_unknown_conversations_choice_deletes_nothing(logged_in_client, project):
    response = logged_in_client.delete(project_url(project) + "?conversations=all")
    assert response.status_code == 400
    assert Project.objects.filter(pk=project.pk).exists()


# --- files ---------------------------------------------------------------------------------


def test_rj4_a_file_is_uploaded_listed_and_counted(
    logged_in_client, project, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(logged_in_client, project, "depot.docx", docx_bytes(["Code 4471."]))
    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "depot.docx"
    assert body["pages"] >= 1 and body["size"] > 0
    assert body["kind"] == "document" and body["mime_type"] == DOCX
    attachment = Attachment.objects.get(pk=body["id"])
    assert attachment.project_id == project.pk and attachment.conversation_id is None
    assert SearchDocument.objects.filter(attachment=attachment, project=project).exists()
    listed = logged_in_client.get(reverse("chat:project_files", args=[project.pk])).json()
    assert [f["id"] for f in listed["files"]] == [body["id"]]
    assert logged_in_client.get(project_url(project)).json()["file_count"] == 1
    # The owner downloads it where a conversation's upload is downloaded.
    assert logged_in_client.get(body["url"]).status_code == 200


def test_rj4_an_image_is_a_project_file_too(logged_in_client, project):
    response = upload(logged_in_client, project, "plan.png", image_bytes("PNG"), "image/png")
    assert response.status_code == 201
    assert response.json()["kind"] == "image" and response.json()["pages"] == 0


def test_rj4_a_file_of_an_unsupported_type_is_refused(logged_in_client, project, media_root):
    response = upload(logged_in_client, project, "x.bin", bytes(range(256)) * 8, "x/y")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "unsupported_type"
    assert not Attachment.objects.exists()
    assert not any(p.is_file() for p in media_root.rglob("*"))


def test_rj4_a_file_over_the_upload_limit_is_refused(logged_in_client, project, settings):
    data = docx_bytes(["A long file."] * 50)
    settings.FIMONE_MAX_UPLOAD_BYTES = len(data) - 1
    response = upload(logged_in_client, project, "big.docx", data)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "file_too_large"
    assert not Attachment.objects.exists()


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", "at most 1 file"), ("de", "höchstens 1 Datei"), ("zh-hans", "最多 1 个文件")],
)
def test_rj4_a_file_past_the_projects_limit_is_refused_in_the_users_language(
    logged_in_client, project, settings, language, words
):
    settings.FIMONE_PROJECT_MAX_FILES = 1
    assert upload(logged_in_client, project, "a.txt", b"A.", "text/plain").status_code == 201
    file = SimpleUploadedFile("b.txt", b"B.", content_type="text/plain")
    response = logged_in_client.post(
        reverse("chat:project_files", args=[project.pk]),
        {"file": file},
        HTTP_ACCEPT_LANGUAGE=language,
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "too_many_files"
    assert words in error["message"], error["message"]
    assert [f.original_name for f in Attachment.objects.filter(project=project)] == ["a.txt"]


def test_rj4_an_upload_without_the_file_field_is_refused(logged_in_client, project):
    response = logged_in_client.post(reverse("chat:project_files", args=[project.pk]), {})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "missing_file"


def test_rj4_a_deleted_file_leaves_the_list_and_the_index(logged_in_client, project_with_a_file):
    project = project_with_a_file
    attachment = Attachment.objects.get(project=project)
    assert SearchDocument.objects.filter(attachment=attachment).exists()
    url = reverse("chat:project_file", args=[project.pk, attachment.pk])
    assert logged_in_client.delete(url).status_code == 204
    listed = logged_in_client.get(reverse("chat:project_files", args=[project.pk])).json()
    assert listed == {"files": []}
    assert not SearchDocument.objects.filter(project=project).exists()
    assert logged_in_client.delete(url).status_code == 404


def test_rj4_a_conversations_upload_is_not_a_project_file(
    logged_in_client, user, project, conversation
):
    from tests.support.factories import make_attachment

    attachment = make_attachment(user, conversation)
    url = reverse("chat:project_file", args=[project.pk, attachment.pk])
    assert logged_in_client.delete(url).status_code == 404
    assert Attachment.objects.filter(pk=attachment.pk).exists()


# --- conversations in projects ---------------------------------------------------------------


def test_rj1_a_conversation_is_created_in_a_project_with_its_own_instructions(
    logged_in_client, project
):
    response = send_json(
        logged_in_client,
        "post",
        reverse("chat:conversations"),
        {"project": project.pk, "instructions": "Sign off with 'Bye'."},
    )
    assert response.status_code == 201
    assert response.json()["project"] == project.pk
    assert response.json()["instructions"] == "Sign off with 'Bye'."
    stored = Conversation.objects.get(pk=response.json()["id"])
    assert (stored.project_id, stored.instructions) == (project.pk, "Sign off with 'Bye'.")


def test_rj4_a_projects_default_model_may_be_the_builtin_one(logged_in_client, project):
    """A project's default model is a ModelConfig or the built-in model, as a conversation's
    is; a new conversation of the project starts with it unless it picks its own."""
    response = send_json(logged_in_client, "patch", project_url(project), {"builtin_model": True})
    assert response.status_code == 200
    assert (response.json()["builtin_model"], response.json()["model_config"]) == (True, None)
    created = send_json(
        logged_in_client, "post", reverse("chat:conversations"), {"project": project.pk}
    ).json()
    assert (created["builtin_model"], created["model_config"]) == (True, None)
    own = make_model_config()
    chosen = send_json(
        logged_in_client,
        "post",
        reverse("chat:conversations"),
        {"project": project.pk, "model_config": own.pk},
    ).json()
    assert (chosen["builtin_model"], chosen["model_config"]) == (False, own.pk)
    # Picking a ModelConfig for the project leaves the built-in pick off; both is refused.
    response = send_json(logged_in_client, "patch", project_url(project), {"model_config": own.pk})
    assert (response.json()["builtin_model"], response.json()["model_config"]) == (False, own.pk)
    response = send_json(
        logged_in_client,
        "patch",
        project_url(project),
        {"model_config": own.pk, "builtin_model": True},
    )
    assert response.json()["error"]["code"] == "invalid_model"
    project.refresh_from_db()
    assert (project.builtin_model, project.model_config_id) == (False, own.pk)


def test_rj1_a_conversation_moves_into_a_project_and_out(logged_in_client, conversation, project):
    url = reverse("chat:conversation", args=[conversation.id])
    moved = send_json(logged_in_client, "patch", url, {"project": project.pk})
    assert moved.status_code == 200 and moved.json()["project"] == project.pk
    assert moved.json()["instructions"] == ""
    out = send_json(logged_in_client, "patch", url, {"project": None, "instructions": "Brief."})
    assert out.json()["project"] is None and out.json()["instructions"] == "Brief."
    assert logged_in_client.get(url).json()["project"] is None


def test_rj4_another_users_project_is_400_on_create_and_404_on_patch(
    logged_in_client, conversation, foreign_project
):
    created = send_json(
        logged_in_client, "post", reverse("chat:conversations"), {"project": foreign_project.pk}
    )
    assert created.status_code == 400
    assert created.json()["error"]["code"] == "unknown_project"
    assert Conversation.objects.count() == 1
    url = reverse("chat:conversation", args=[conversation.id])
    moved = send_json(logged_in_client, "patch", url, {"project": foreign_project.pk})
    assert moved.status_code == 404
    assert Conversation.objects.get(pk=conversation.pk).project_id is None


def test_rj4_a_malformed_project_or_overlong_instructions_are_400(
    logged_in_client, conversation, settings
):
    settings.FIMONE_INSTRUCTIONS_MAX_CHARS = 100
    url = reverse("chat:conversation", args=[conversation.id])
    for body, code in [
        ({"project": "seven"}, "invalid_project"),
        ({"instructions": "w" * 101}, "instructions_too_long"),
    ]:
        response = send_json(logged_in_client, "patch", url, body)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == code
        created = send_json(logged_in_client, "post", reverse("chat:conversations"), body)
        assert created.status_code == 400
        assert created.json()["error"]["code"] == code
    assert Conversation.objects.get(pk=conversation.pk).instructions == ""
    assert Conversation.objects.count() == 1


def test_rj4_the_conversation_list_is_filtered_by_project(
    logged_in_client, user, project, foreign_project
):
    inside = make_conversation(user, title="inside")
    outside = make_conversation(user, title="outside")
    Conversation.objects.filter(pk=inside.pk).update(project=project)
    url = reverse("chat:conversations")

    def titles(query: str) -> list[str]:
        response = logged_in_client.get(url + query)
        assert response.status_code == 200
        return sorted(c["title"] for c in response.json()["conversations"])

    assert titles("") == ["inside", "outside"]
    assert titles(f"?project={project.pk}") == ["inside"]
    assert titles("?project=none") == [outside.title]
    assert logged_in_client.get(url + f"?project={foreign_project.pk}").status_code == 404
    assert logged_in_client.get(url + "?project=x").status_code == 404


# --- owner only, anonymous, CSRF -------------------------------------------------------------


def routes(project, attachment) -> list[tuple[str, str]]:
    files = reverse("chat:project_files", args=[project.pk])
    return [
        ("get", project_url(project)),
        ("patch", project_url(project)),
        ("delete", project_url(project)),
        ("get", files),
        ("post", files),
        ("delete", reverse("chat:project_file", args=[project.pk, attachment.pk])),
    ]


def test_rj4_another_users_project_is_404_everywhere(
    logged_in_client, other_user, django_capture_on_commit_callbacks
):
    foreign = make_project(other_user, name="Mallory's plans")
    with django_capture_on_commit_callbacks(execute=True):
        attachment = add_project_file(foreign, "a.docx", docx_bytes(["Secret."]), DOCX)
    for method, url in routes(foreign, attachment):
        response = send_json(logged_in_client, method, url, {"name": "taken"})
        assert response.status_code == 404, (method, url)
        assert response.json()["error"]["code"] == "not_found"
        assert "Mallory" not in response.content.decode()
    foreign.refresh_from_db()
    assert foreign.name == "Mallory's plans"
    assert Attachment.objects.filter(pk=attachment.pk).exists()


def test_rj4_anonymous_requests_get_401(client, user, project_with_a_file):
    project = project_with_a_file
    attachment = Attachment.objects.get(project=project)
    for method, url in [("get", reverse("chat:projects")), ("post", reverse("chat:projects"))]:
        assert send_json(client, method, url, {"name": "x"}).status_code == 401
    for method, url in routes(project, attachment):
        response = send_json(client, method, url, {"name": "x"})
        assert response.status_code == 401, (method, url)
        assert response.json()["error"]["code"] == "not_authenticated"
    assert Project.objects.get().name == "Trip to Lyon"


def test_rj4_writes_without_a_csrf_token_are_refused(csrf_enforcing_client, project_with_a_file):
    project = project_with_a_file
    attachment = Attachment.objects.get(project=project)
    writes = [("post", reverse("chat:projects"))] + [
        (method, url) for method, url in routes(project, attachment) if method != "get"
    ]
    for method, url in writes:
        response = send_json(csrf_enforcing_client, method, url, {"name": "forged"})
        assert response.status_code == 403, (method, url)
        assert response.json()["error"]["code"] == "csrf_failed"
    assert Project.objects.get().name == "Trip to Lyon"
    assert Attachment.objects.filter(pk=attachment.pk).exists()


def test_rj4_writes_with_the_csrf_token_succeed(csrf_enforcing_client, project):
    token = csrf_token_for(csrf_enforcing_client)
    created = send_json(
        csrf_enforcing_client,
        "post",
        reverse("chat:projects"),
        {"name": "New"},
        HTTP_X_CSRFTOKEN=token,
    )
    assert created.status_code == 201
    file = SimpleUploadedFile("a.docx", docx_bytes(["Hello."]), content_type=DOCX)
    uploaded = csrf_enforcing_client.post(
        reverse("chat:project_files", args=[project.pk]), {"file": file}, HTTP_X_CSRFTOKEN=token
    )
    assert uploaded.status_code == 201
    deleted = csrf_enforcing_client.delete(project_url(project), HTTP_X_CSRFTOKEN=token)
    assert deleted.status_code == 204
