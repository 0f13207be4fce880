"""``manage.py rebuild_search_index`` (chat/management/commands/rebuild_search_index.py)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from chat import services
from chat.models import SearchDocument
from chat.recall.lookup import recall_passages
from chat.search.conversations import search
from tests.support.factories import add_project_file, make_project
from tests.support.search_scenarios import make_user, new_conversation, say

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("rebuild_search_index", *args, stdout=out)
    return out.getvalue()


def test_rebuild_restores_lost_documents_and_a_drifted_fts_table():
    owner = make_user()
    conversation = new_conversation(owner, title="Puffin log")
    say(conversation, "Puffins nest in burrows.")
    SearchDocument.objects.all().delete()
    with connection.cursor() as cursor:  # an FTS table out of step with its content
        cursor.execute(
            "INSERT INTO chat_searchdocument_fts(chat_searchdocument_fts) VALUES ('delete-all')"
        )
    assert search(query="puffins", owner_id=owner.pk) == []

    assert run() == "Indexed 2 texts of 1 conversations and 0 passages of project files.\n"

    assert {h.document.kind for h in search(query="puffin puffins", owner_id=owner.pk)} == {
        "title",
        "message",
    }


def test_rebuild_of_named_conversations_only():
    first, second = new_conversation(title="Tern"), new_conversation(title="Skua")
    SearchDocument.objects.all().delete()
    assert run(str(first.pk)) == "Indexed 1 texts of 1 conversations.\n"
    assert list(SearchDocument.objects.values_list("body", flat=True)) == ["Tern"]
    assert second.pk


def test_rj3_rebuild_restores_the_passages_of_project_files(django_capture_on_commit_callbacks):
    project = make_project(name="Depots")
    with django_capture_on_commit_callbacks(execute=True):
        add_project_file(project, "depot.txt", b"The gate code is 4471.", "text/plain")
    conversation = services.conversation_create(owner=project.owner, project_id=project.pk)
    SearchDocument.objects.all().delete()
    assert (
        recall_passages(conversation_id=conversation.pk, query="gate code", project_id=project.pk)
        == []
    )

    assert run().endswith(" and 1 passages of project files.\n")

    [found] = recall_passages(
        conversation_id=conversation.pk, query="gate code", project_id=project.pk
    )
    assert found.startswith("project file depot.txt, page 1: ") and "4471" in found
    run()  # again: replaced, not doubled
    assert SearchDocument.objects.filter(project=project).count() == 1


@pytest.mark.parametrize("bad", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_unknown_conversation_ids_are_a_clear_error(bad):
    with pytest.raises(CommandError):
        run(bad)
