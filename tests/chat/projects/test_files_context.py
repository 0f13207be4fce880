"""A project's files in its conversations (RJ.3): inline while small within their share of
the budget, smallest first, else as an outline; ``read_document`` reads a project file by
name or id and says so when it was removed."""

from __future__ import annotations

import json

import pytest

from chat import services
from chat.documents.context import read_document_text
from chat.projects import services as project_services
from chat.projects.context import NAMED_FILES_MAX, project_files_for
from tests.chat.images import image_bytes
from tests.chat.recall.test_project_files import FACT, long_text_with_fact
from tests.support.factories import add_project_file, make_project, make_user, said

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(django_capture_on_commit_callbacks):
    """A project with a small note and a 60,000-character handbook."""
    project = make_project(make_user(), name="Depots")
    with django_capture_on_commit_callbacks(execute=True):
        add_project_file(project, "note.txt", b"The depot opens at 7:15.", "text/plain")
        add_project_file(project, "handbook.txt", long_text_with_fact(), "text/plain")
    return project


def test_rj3_small_files_go_inline_and_large_ones_as_outlines(project):
    files = project_files_for(project_id=project.pk, owner_id=project.owner_id, budget=12_000)
    assert [v.name for v in files.inline] == ["note.txt"]
    assert [v.name for v in files.outlined] == ["handbook.txt"]
    note = files.note()
    assert "The depot opens at 7:15." in note
    assert "[document: handbook.txt — " in note and "read_document" in note
    assert "recall" in note and FACT not in note


def test_rj3_the_inline_share_decides_and_smallest_go_first(project, settings):
    settings.FIMONE_PROJECT_INLINE_SHARE = 0.0
    files = project_files_for(project_id=project.pk, owner_id=project.owner_id, budget=12_000)
    assert not files.inline and len(files.outlined) == 2
    settings.FIMONE_PROJECT_INLINE_SHARE = 1.0
    files = project_files_for(project_id=project.pk, owner_id=project.owner_id, budget=200_000)
    assert [v.name for v in files.inline] == ["note.txt", "handbook.txt"]
    assert FACT in files.note()


def test_rj3_read_document_reads_a_project_file_by_name_and_by_id(project):
    conversation = services.conversation_create(owner=project.owner, project_id=project.pk)
    by_name = read_document_text(
        conversation.pk, file="handbook.txt", query="spare key Oslo", project_id=project.pk
    )
    assert FACT in by_name and by_name.startswith("handbook.txt, the pages matching")
    handbook = project.files.get(original_name="handbook.txt")
    by_id = read_document_text(
        conversation.pk, file=str(handbook.pk), pages="1", project_id=project.pk
    )
    assert by_id.startswith("handbook.txt, pages 1 of ")


def test_rj3_read_document_says_a_removed_file_was_removed(project):
    conversation = services.conversation_create(owner=project.owner, project_id=project.pk)
    handbook = project.files.get(original_name="handbook.txt")
    handbook_id = str(handbook.pk)
    project_services.project_file_delete(attachment=handbook)
    for asked in ("handbook.txt", handbook_id):
        answer = read_document_text(conversation.pk, file=asked, pages="1", project_id=project.pk)
        assert "the file 'handbook.txt' was removed from the project" in answer
    unknown = read_document_text(conversation.pk, file="atlas.pdf", project_id=project.pk)
    assert unknown.startswith("Error: no document named 'atlas.pdf' in this conversation or")
    assert "note.txt" in unknown


def test_rj3_read_document_reads_a_project_file_by_its_exact_name_only(project):
    """A project file is read by its whole name (any case, with or without extension),
    never by a part of it: "hand" names the handbook as a close name and reads nothing."""
    conversation = services.conversation_create(owner=project.owner, project_id=project.pk)
    partial = read_document_text(conversation.pk, file="hand", project_id=project.pk)
    assert partial.startswith("Error: no document named 'hand' in this conversation or")
    assert "handbook.txt" in partial and FACT not in partial and "Section" not in partial
    stem = read_document_text(conversation.pk, file="HANDBOOK", pages="1", project_id=project.pk)
    assert stem.startswith("handbook.txt, pages 1 of ")


def test_rj3_past_their_share_files_are_named_in_a_line_each_up_to_a_limit(settings):
    settings.FIMONE_PROJECT_INLINE_SHARE = 0.0
    project = make_project(make_user(), name="Archive")
    for n in range(NAMED_FILES_MAX + 5):
        add_project_file(project, f"minutes-{n:02}.txt", f"Minutes {n}.".encode(), "text/plain")
    files = project_files_for(project_id=project.pk, owner_id=project.owner_id, budget=12_000)
    note = files.note()
    assert note.count("[document: minutes-") == NAMED_FILES_MAX
    assert "[5 more files of the project" in note


def test_rj3_a_runs_project_files_cost_two_queries_however_many(project, django_assert_num_queries):
    for n in range(5):
        add_project_file(project, f"memo-{n}.txt", f"Memo {n}.".encode(), "text/plain")
    with django_assert_num_queries(2):
        files = project_files_for(project_id=project.pk, owner_id=project.owner_id, budget=12_000)
    assert len(files.inline) == 6 and [v.name for v in files.outlined] == ["handbook.txt"]


def test_rj3_the_sidebar_search_leaves_project_files_out(project, client):
    conversation = services.conversation_create(owner=project.owner, project_id=project.pk)
    said(conversation, "Which depot has the spare key?")
    client.force_login(project.owner)
    results = client.get("/api/search/?q=spare key").json()["results"]
    assert {r["conversation"]["id"] for r in results} == {str(conversation.pk)}
    assert FACT not in json.dumps(results)


@pytest.fixture
def project_with_picture(project):
    """``project`` with a picture of the depot's floor plan uploaded to it."""
    picture = add_project_file(project, "floor-plan.png", image_bytes("PNG"), "image/png")
    assert picture.kind == "image" and picture.description
    return project


def test_rj3_a_project_picture_is_in_the_note_as_its_stored_description(project_with_picture):
    picture = project_with_picture.files.get(original_name="floor-plan.png")
    files = project_files_for(
        project_id=project_with_picture.pk, owner_id=project_with_picture.owner_id, budget=12_000
    )
    note = files.note()
    assert "[image: floor-plan.png; a description of the picture" in note
    assert picture.description in note


def test_rj3_past_the_shares_a_project_picture_is_named_not_described(
    project_with_picture, settings
):
    settings.FIMONE_PROJECT_INLINE_SHARE = 0.0
    picture = project_with_picture.files.get(original_name="floor-plan.png")
    files = project_files_for(
        project_id=project_with_picture.pk, owner_id=project_with_picture.owner_id, budget=12_000
    )
    note = files.note()
    assert "[image: floor-plan.png; its description is read with read_document" in note
    assert picture.description not in note


def test_rj3_read_document_answers_a_project_picture_with_its_description(project_with_picture):
    picture = project_with_picture.files.get(original_name="floor-plan.png")
    conversation = services.conversation_create(
        owner=project_with_picture.owner, project_id=project_with_picture.pk
    )
    text = read_document_text(
        conversation.pk, file="floor-plan.png", project_id=project_with_picture.pk
    )
    assert text.startswith("floor-plan.png is a picture of the project; its description")
    assert picture.description in text
    missing = read_document_text(conversation.pk, file="nope", project_id=project_with_picture.pk)
    assert "floor-plan.png (picture)" in missing
