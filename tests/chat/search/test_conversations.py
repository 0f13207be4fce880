"""The full-text search selector on SQLite (FTS5); the same scenarios run on PostgreSQL in
tests/scale/test_search_postgres.py (RF.4)."""

from __future__ import annotations

import pytest
from django.db import connection

from chat.models import SearchDocument
from chat.search.conversations import search
from tests.support import search_scenarios
from tests.support.search_scenarios import new_conversation, say

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("scenario", search_scenarios.ALL, ids=lambda f: f.__name__)
def test_scenario_on_sqlite(scenario):
    assert connection.vendor == "sqlite"
    scenario()


def test_scope_is_required():
    assert search(query="anything") == []


def test_documents_are_the_fts_content():
    conversation = new_conversation(title="t")
    message = say(conversation, "Naïve café in Zürich")
    (document,) = SearchDocument.objects.filter(message=message)
    assert document.terms == "naïve café in zürich"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rowid FROM chat_searchdocument_fts WHERE chat_searchdocument_fts MATCH ?",
            ['"zürich"'],
        )
        assert [row[0] for row in cursor.fetchall()] == [document.pk]
