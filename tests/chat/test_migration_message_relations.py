"""The migration that moves the facts relating messages (their run, what replaced them, an
answer's question) from the metadata JSON to columns, run forward on a database holding
rows of the old shape, and back (PostgreSQL: tests/scale/test_migration_postgres.py)."""

from __future__ import annotations

import pytest

from tests.support import message_relations_migration as moved

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def old_shape_rows():
    """Rows as the version before the columns stored them; every app migrated to its newest
    again afterwards."""
    try:
        yield moved.old_shape_rows()
    finally:
        moved.migrate(moved.newest_nodes())


def test_the_metadata_keys_become_columns_and_leave_the_json(old_shape_rows):
    ids = old_shape_rows
    assert moved.rows_after_migrating(ids) == moved.expected_after(ids)


def test_migrating_back_puts_the_keys_into_the_metadata_again(old_shape_rows):
    ids = old_shape_rows
    moved.rows_after_migrating(ids)
    _target, previous = moved.migration_and_previous()
    executor = moved.migrate([previous])
    Message = executor.loader.project_state([previous]).apps.get_model("chat", "Message")
    failed = Message.objects.get(pk=ids["failed"]).metadata
    assert failed == {
        "mode": "react",
        "run_id": "r1",
        "superseded_by": ids["retry"],
        "query_id": ids["query"],
    }
    assert Message.objects.get(pk=ids["plain"]).metadata == {}
