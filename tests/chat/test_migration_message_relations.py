"""The migration that moves the facts relating messages (their run, what replaced them, an
answer's question) from the metadata JSON to columns, run forward on a database holding
rows of the old shape, and back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def _migration_and_previous() -> tuple[tuple[str, str], tuple[str, str]]:
    """The migration (found by name: it may be renumbered) and the one before it."""
    loader = MigrationExecutor(connection).loader
    (target,) = [
        k for k in loader.disk_migrations if k[0] == "chat" and "message_relations" in k[1]
    ]
    (previous,) = [d for d in loader.get_migration(*target).dependencies if d[0] == "chat"]
    return target, previous


def _migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection)  # a fresh graph and state after the change


@pytest.fixture
def old_shape_rows():
    """Migrated back to before the columns, rows as that version stored them; every app
    migrated to its newest again afterwards."""
    target, previous = _migration_and_previous()
    executor = _migrate([previous])
    apps = executor.loader.project_state([previous]).apps
    user = apps.get_model("auth", "User").objects.create(username="old", password="x")
    conversation = apps.get_model("chat", "Conversation").objects.create(owner=user, title="t")
    Message = apps.get_model("chat", "Message")

    def add(role, **metadata):
        return Message.objects.create(
            conversation=conversation, role=role, content=role, metadata=metadata
        )

    rows = {}
    rows["query"] = add("user", run_id="r1", images=[{"file_id": "f", "mime_type": "x"}])
    rows["failed"] = add("assistant", run_id="r1", mode="react")
    rows["retry"] = add("assistant", run_id="r2", mode="dag")
    rows["failed"].metadata.update(superseded_by=rows["retry"].pk, query_id=rows["query"].pk)
    rows["failed"].save()
    rows["retry"].metadata.update(query_id=rows["query"].pk, usage={"input_tokens": 3})
    rows["retry"].save()
    # An edited question pointing at a message that is gone; a message without a run.
    rows["edited"] = add("user", run_id="r3", superseded_by=10**9)
    rows["plain"] = add("user", run_id=None)
    yield {name: row.pk for name, row in rows.items()}, target, previous
    _migrate(executor.loader.graph.leaf_nodes())


def test_the_metadata_keys_become_columns_and_leave_the_json(old_shape_rows):
    ids, target, previous = old_shape_rows
    executor = _migrate([target])
    Message = executor.loader.project_state([target]).apps.get_model("chat", "Message")
    rows = {
        name: Message.objects.values("run_id", "superseded_by_id", "question_id", "metadata").get(
            pk=pk
        )
        for name, pk in ids.items()
    }
    assert rows["query"] == {
        "run_id": "r1",
        "superseded_by_id": None,
        "question_id": None,
        "metadata": {"images": [{"file_id": "f", "mime_type": "x"}]},
    }
    assert rows["failed"] == {
        "run_id": "r1",
        "superseded_by_id": ids["retry"],
        "question_id": ids["query"],
        "metadata": {"mode": "react"},
    }
    assert rows["retry"] == {
        "run_id": "r2",
        "superseded_by_id": None,
        "question_id": ids["query"],
        "metadata": {"mode": "dag", "usage": {"input_tokens": 3}},
    }
    # A pointer to a missing message is dropped rather than kept dangling.
    assert rows["edited"]["superseded_by_id"] is None and rows["edited"]["metadata"] == {}
    assert rows["plain"]["run_id"] == "" and rows["plain"]["metadata"] == {}


def test_migrating_back_puts_the_keys_into_the_metadata_again(old_shape_rows):
    ids, target, previous = old_shape_rows
    _migrate([target])
    executor = _migrate([previous])
    Message = executor.loader.project_state([previous]).apps.get_model("chat", "Message")
    failed = Message.objects.get(pk=ids["failed"]).metadata
    assert failed == {
        "mode": "react",
        "run_id": "r1",
        "superseded_by": ids["retry"],
        "query_id": ids["query"],
    }
    assert Message.objects.get(pk=ids["plain"]).metadata == {}
