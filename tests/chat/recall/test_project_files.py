"""``recall`` in a project's conversation (RJ.3): it searches the conversation and the
project's files — a fact deep in a long file is found and cited by file and page — and
never the project's other conversations, another user's project, or a project the
conversation is not in."""

from __future__ import annotations

import pytest

from chat import services
from chat.projects import services as project_services
from chat.projects.context import project_files_for
from chat.recall.lookup import recall_passages
from tests.support.factories import add_project_file, make_project, make_user, said

pytestmark = pytest.mark.django_db

FACT = "The spare key of the Oslo depot hangs behind the blue fuse box."
TEXT_CHARS = 60_000


def long_text_with_fact(*, at: float = 0.7, chars: int = TEXT_CHARS) -> bytes:
    """Plain text of about ``chars`` characters in paragraphs, ``FACT`` at ``at`` of it."""
    paragraphs = []
    size = 0
    placed = False
    number = 0
    while size < chars:
        number += 1
        if not placed and size >= chars * at:
            paragraphs.append(FACT)
            placed = True
        paragraph = (
            f"Section {number}. The working group reviewed the minutes, the rota for the "
            "canteen and the plans for the autumn fair; nothing here needs any action."
        )
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs).encode()


@pytest.fixture
def project_with_handbook(django_capture_on_commit_callbacks):
    """Alice's project holding a 60,000-character text file, the fact at 70 % of it
    (indexed as on the upload's commit)."""
    project = make_project(make_user(), name="Depots")
    with django_capture_on_commit_callbacks(execute=True):
        add_project_file(project, "handbook.txt", long_text_with_fact(), "text/plain")
    return project


def recall_in(conversation, query: str) -> list:
    files = project_files_for(
        project_id=conversation.project_id, owner_id=conversation.owner_id, budget=12_000
    )
    return recall_passages(
        conversation_id=conversation.pk, query=query, project_id=files.project_id
    )


def test_rj3_a_fact_deep_in_a_project_file_is_recalled_with_its_file_and_page(
    project_with_handbook,
):
    conversation = services.conversation_create(
        owner=project_with_handbook.owner, project_id=project_with_handbook.pk
    )
    said(conversation, "Hello, where do we keep things?")
    found = recall_in(conversation, "spare key Oslo depot")
    assert found, "the project's file was not searched"
    assert FACT in found[0]
    assert found[0].startswith("project file handbook.txt, page ")
    page = int(found[0].split("page ", 1)[1].split(":", 1)[0])
    assert page > 10  # 70 % into a file of about 20 pages


def test_rj3_another_users_conversation_never_finds_the_projects_file(project_with_handbook):
    stranger = services.conversation_create(owner=make_user())
    # Even handed the project's id, the run of another user's conversation gets no project.
    files = project_files_for(
        project_id=project_with_handbook.pk, owner_id=stranger.owner_id, budget=12_000
    )
    assert files.project_id is None and not files.any
    assert recall_passages(conversation_id=stranger.pk, query="spare key Oslo depot") == []


def test_rj3_a_conversation_outside_the_project_never_finds_its_file(project_with_handbook):
    outside = services.conversation_create(owner=project_with_handbook.owner)
    assert recall_in(outside, "spare key Oslo depot") == []


def test_rj3_the_projects_other_conversations_are_not_searched(project_with_handbook):
    owner = project_with_handbook.owner
    first = services.conversation_create(owner=owner, project_id=project_with_handbook.pk)
    second = services.conversation_create(owner=owner, project_id=project_with_handbook.pk)
    said(first, "The pass phrase of the tandem bicycle is marmalade.")
    assert recall_in(second, "tandem bicycle pass phrase") == []
    assert "marmalade" in recall_in(first, "tandem bicycle pass phrase")[0]


def test_rj3_a_deleted_project_file_is_no_longer_recalled(project_with_handbook):
    conversation = services.conversation_create(
        owner=project_with_handbook.owner, project_id=project_with_handbook.pk
    )
    assert recall_in(conversation, "spare key Oslo depot")
    [attachment] = project_with_handbook.files.all()
    project_services.project_file_delete(attachment=attachment)
    assert recall_in(conversation, "spare key Oslo depot") == []
