"""Hostile input to projects (RJ.1, RJ.3, RJ.4): text no database stores, names that are
HTML or Markdown, uploads that are empty, bombs, or named to climb out of the media
directory, two files of one name; and list pages that cost the same however many projects
and files there are."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from chat import services
from chat.documents.context import read_document_text
from chat.models import Attachment, Project
from tests.chat.api.test_projects import DOCX, send_json, upload
from tests.support.documents import zip_bomb_docx
from tests.support.factories import add_project_file, make_project

pytestmark = pytest.mark.django_db

HOSTILE_NAME = '<img src=x onerror="alert(1)"> [click](https://evil.example) **bold**'


@pytest.fixture
def project(user) -> Project:
    return make_project(user, name="Depots", instructions="Answer in French.")


@pytest.mark.parametrize("text", ["a\x00b", "a\ud800b"])
def test_rj1_unstorable_instructions_are_refused_on_every_api_path(
    logged_in_client, user, project, text
):
    conversation = services.conversation_create(owner=user, project_id=project.pk)
    attempts = [
        ("post", reverse("chat:projects"), {"name": "P", "instructions": text}),
        ("patch", reverse("chat:project", args=[project.pk]), {"instructions": text}),
        ("patch", reverse("chat:project", args=[project.pk]), {"name": text}),
        ("post", reverse("chat:conversations"), {"project": project.pk, "instructions": text}),
        ("patch", reverse("chat:conversation", args=[conversation.pk]), {"instructions": text}),
    ]
    for method, url, body in attempts:
        response = send_json(logged_in_client, method, url, body)
        assert response.status_code == 400, (method, url, body)
        assert response.json()["error"]["code"] == "invalid_text"
    project.refresh_from_db()
    conversation.refresh_from_db()
    assert project.instructions == "Answer in French." and project.name == "Depots"
    assert conversation.instructions == ""
    assert Project.objects.count() == 1


def test_rj1_ten_thousand_newlines_are_instructions_of_their_own_length(
    logged_in_client, project, settings
):
    settings.FIMONE_INSTRUCTIONS_MAX_CHARS = 8_000
    url = reverse("chat:project", args=[project.pk])
    newlines = "Be brief." + "\n" * 10_000 + "Sign off."
    response = send_json(logged_in_client, "patch", url, {"instructions": newlines})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "instructions_too_long"
    only_newlines = "\n" * 10_000
    response = send_json(logged_in_client, "patch", url, {"instructions": only_newlines})
    assert response.status_code == 200 and response.json()["instructions"] == ""


def test_rj4_the_admin_refuses_unstorable_instructions(admin_client, user, project):
    url = reverse("admin:chat_project_change", args=[project.pk])
    form = {
        "owner": user.pk,
        "name": "Depots",
        "instructions": "a\x00b",
        "disabled_tool_sources": "[]",
        "files-TOTAL_FORMS": "0",
        "files-INITIAL_FORMS": "0",
        "files-MIN_NUM_FORMS": "0",
        "files-MAX_NUM_FORMS": "1000",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    project.refresh_from_db()
    assert project.instructions == "Answer in French."


def test_rj4_a_name_of_html_is_escaped_in_the_admin(admin_client, user):
    make_project(user, name=HOSTILE_NAME)
    page = admin_client.get(reverse("admin:chat_project_changelist")).content.decode()
    assert "<img src=x" not in page and "&lt;img src=x" in page


def test_rj4_a_name_of_markdown_stays_text_in_the_markdown_export(logged_in_client, user):
    project = make_project(user, name=HOSTILE_NAME + "\n# Injected heading")
    conversation = services.conversation_create(owner=user, project_id=project.pk)
    response = logged_in_client.get(
        reverse("chat:export", args=[conversation.pk]), {"format": "markdown"}
    )
    markdown = response.content.decode()
    (line,) = [line for line in markdown.splitlines() if "Project:" in line]
    assert "\n# Injected" not in markdown
    assert "[click](https://evil.example)" not in line, line
    assert "**bold**" not in line, line
    assert "<img" not in line.replace("\\<img", ""), line
    assert "click" in line and "evil.example" in line and "bold" in line


@pytest.mark.parametrize(
    ("name", "data", "content_type", "status", "code"),
    [
        ("empty.txt", b"", "text/plain", 400, "empty_file"),
        ("bomb.docx", None, DOCX, 413, "zip_bomb"),
    ],
)
def test_rj4_a_bad_upload_to_a_project_is_refused_and_nothing_stored(
    logged_in_client, project, media_root, name, data, content_type, status, code
):
    payload = zip_bomb_docx() if data is None else data
    response = upload(logged_in_client, project, name, payload, content_type)
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert not Attachment.objects.filter(project=project).exists()
    assert not [p for p in Path(media_root).rglob("*") if p.is_file()]


@pytest.mark.parametrize("name", ["../../../etc/passwd.txt", "..\\..\\boot.ini.txt", "/abs.txt"])
def test_rj4_a_file_named_to_climb_out_stays_inside_the_media_directory(
    logged_in_client, project, media_root, name
):
    response = upload(logged_in_client, project, name, b"harmless text", "text/plain")
    assert response.status_code == 201, response.content
    assert ".." not in response.json()["name"] and "/" not in response.json()["name"]
    stored = Attachment.objects.get(project=project)
    assert Path(stored.file.path).resolve().is_relative_to(Path(media_root).resolve())
    download = logged_in_client.get(response.json()["url"])
    assert ".." not in download["Content-Disposition"]


def test_rj4_a_unicode_file_name_is_kept(logged_in_client, project, media_root):
    response = upload(logged_in_client, project, "Übersicht 报告.txt", b"Inhalt", "text/plain")
    assert response.status_code == 201
    # Django's upload handling makes the space an underscore; the letters stay.
    assert response.json()["name"].replace("_", " ") == "Übersicht 报告.txt"


def test_rj3_two_files_of_one_name_are_read_by_the_newest_and_the_other_is_named(
    user, project, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        older = add_project_file(project, "notes.txt", b"The old gate code is 1111.", "text/plain")
        newer = add_project_file(project, "notes.txt", b"The new gate code is 2222.", "text/plain")
    conversation = services.conversation_create(owner=user, project_id=project.pk)
    answers = {
        read_document_text(conversation.pk, file="notes.txt", project_id=project.pk)
        for _ in range(5)
    }
    (answer,) = answers  # the same file every time
    assert "2222" in answer and "1111" not in answer
    assert str(older.pk) in answer  # the other file of the name, by the id that reads it
    by_id = read_document_text(conversation.pk, file=str(older.pk), project_id=project.pk)
    assert "1111" in by_id
    assert newer.pk != older.pk


def test_rj4_listing_projects_costs_the_same_for_one_or_many(
    logged_in_client, user, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    def listed() -> int:
        with django_assert_max_num_queries(6) as captured:
            response = logged_in_client.get(reverse("chat:projects"))
        assert response.status_code == 200
        return len(captured.captured_queries)

    make_project(user, name="One")
    one = listed()
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(8):
            many = make_project(user, name=f"P{n}")
            add_project_file(many, f"f{n}.txt", b"text", "text/plain")
            services.conversation_create(owner=user, project_id=many.pk)
    assert listed() == one


def test_rj4_listing_a_projects_conversations_costs_the_same_for_one_or_many(
    logged_in_client, user, project, django_assert_max_num_queries
):
    url = reverse("chat:conversations")

    def listed() -> int:
        with django_assert_max_num_queries(12) as captured:
            response = logged_in_client.get(url, {"project": project.pk})
        assert response.status_code == 200
        return len(captured.captured_queries)

    services.conversation_create(owner=user, project_id=project.pk, instructions="Be brief.")
    one = listed()
    for n in range(8):
        services.conversation_create(owner=user, project_id=project.pk, title=f"C{n}")
    assert listed() == one


@pytest.mark.parametrize(
    "sources",
    [
        ["mcp:a\x00b"],
        ["mcp:\ud800"],
        ["mcp:" + "x" * 10_000],
        [""],
        [f"mcp:server{n}" for n in range(5_000)],
    ],
    ids=["nul", "surrogate", "overlong", "empty", "thousands"],
)
def test_rj4_a_projects_tool_sources_are_checked_as_a_conversations_are(
    logged_in_client, project, sources
):
    """What PostgreSQL's jsonb cannot store (a NUL, a lone surrogate) or no tool source
    could be named by is refused, not copied into every new conversation of the project."""
    url = reverse("chat:project", args=[project.pk])
    response = send_json(logged_in_client, "patch", url, {"disabled_tool_sources": sources})
    assert response.status_code == 400, response.content[:200]
    assert response.json()["error"]["code"] == "invalid_tool_sources"
    project.refresh_from_db()
    assert project.disabled_tool_sources == []


def test_rj4_deleting_a_project_removes_its_stored_files(
    logged_in_client, project, media_root, django_capture_on_commit_callbacks
):
    for name in ("a.txt", "b.txt"):
        assert (
            upload(logged_in_client, project, name, b"some text", "text/plain").status_code == 201
        )
    assert len([p for p in Path(media_root).rglob("*") if p.is_file()]) == 2
    with django_capture_on_commit_callbacks(execute=True):
        response = logged_in_client.delete(reverse("chat:project", args=[project.pk]))
    assert response.status_code == 204
    assert not [p for p in Path(media_root).rglob("*") if p.is_file()]
    assert not Attachment.objects.exists()


def test_rj4_a_ten_megabyte_text_file_is_kept_and_its_cut_said(
    logged_in_client, project, media_root, settings
):
    """Within the upload limit, past the characters a document keeps: stored, and the
    upload's answer says what was cut, as a conversation's upload does."""
    data = (b"The depot opens at 7:15. " * 420_000)[: settings.FIMONE_MAX_UPLOAD_BYTES]
    response = upload(logged_in_client, project, "big.txt", data, "text/plain")
    assert response.status_code == 201, response.content[:300]
    assert response.json()["size"] == len(data)
    warnings = response.json()["warnings"]
    assert warnings and any("2,000,000" in w or "cut" in w.lower() for w in warnings), warnings
    listed = logged_in_client.get(reverse("chat:project_files", args=[project.pk])).json()
    assert [f["name"] for f in listed["files"]] == ["big.txt"]


def test_rj4_a_project_deleted_while_its_upload_is_read_is_a_404_and_stores_nothing(
    logged_in_client, project, media_root, monkeypatch
):
    """Reading a document takes seconds outside any transaction; the project may be
    deleted meanwhile (another tab). The upload then finds no project, not a 500."""
    from chat import attachments

    real_extract = attachments.extract_upload

    def extract_while_the_project_goes(*args, **kwargs):
        Project.objects.filter(pk=project.pk).delete()
        return real_extract(*args, **kwargs)

    monkeypatch.setattr(attachments, "extract_upload", extract_while_the_project_goes)
    response = upload(logged_in_client, project, "late.txt", b"Late text.", "text/plain")
    assert response.status_code == 404, response.content[:300]
    assert response.json()["error"]["code"] == "not_found"
    assert not Attachment.objects.exists()
    assert not [p for p in Path(media_root).rglob("*") if p.is_file()]


def test_a_conversation_deleted_while_its_upload_is_read_is_a_404_and_stores_nothing(
    logged_in_client, conversation, media_root, monkeypatch
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from chat import attachments
    from chat.models import Conversation

    real_extract = attachments.extract_upload

    def extract_while_the_conversation_goes(*args, **kwargs):
        Conversation.objects.filter(pk=conversation.pk).delete()
        return real_extract(*args, **kwargs)

    monkeypatch.setattr(attachments, "extract_upload", extract_while_the_conversation_goes)
    file = SimpleUploadedFile("late.txt", b"Late text.", content_type="text/plain")
    url = reverse("chat:attachment_upload", args=[conversation.pk])
    response = logged_in_client.post(url, {"file": file})
    assert response.status_code == 404, response.content[:300]
    assert not Attachment.objects.exists()
    assert not [p for p in Path(media_root).rglob("*") if p.is_file()]
