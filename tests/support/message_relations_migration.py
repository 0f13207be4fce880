"""The migration that moves the facts relating messages from the metadata JSON to columns,
run on a database with rows of the old shape: by ``tests/chat/test_migration_message_relations.py``
(SQLite) and, in a Django subprocess, by ``tests/scale/test_migration_postgres.py``."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.support.migrations import chat_migration_and_previous, migrate


def migration_and_previous() -> tuple[tuple[str, str], tuple[str, str]]:
    return chat_migration_and_previous("message_relations")


def newest_nodes() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def old_shape_rows() -> dict[str, int]:
    """Migrate back to before the columns and store rows as that version did."""
    _target, previous = migration_and_previous()
    executor = migrate([previous])
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
    return {name: row.pk for name, row in rows.items()}


def rows_after_migrating(ids: dict[str, int]) -> dict[str, dict]:
    """Migrate forward over the move; each row's columns and metadata then."""
    target, _previous = migration_and_previous()
    executor = migrate([target])
    Message = executor.loader.project_state([target]).apps.get_model("chat", "Message")
    fields = ("run_id", "superseded_by_id", "question_id", "metadata")
    return {name: Message.objects.values(*fields).get(pk=pk) for name, pk in ids.items()}


def expected_after(ids: dict[str, int]) -> dict[str, dict]:
    return {
        "query": {
            "run_id": "r1",
            "superseded_by_id": None,
            "question_id": None,
            "metadata": {"images": [{"file_id": "f", "mime_type": "x"}]},
        },
        "failed": {
            "run_id": "r1",
            "superseded_by_id": ids["retry"],
            "question_id": ids["query"],
            "metadata": {"mode": "react"},
        },
        "retry": {
            "run_id": "r2",
            "superseded_by_id": None,
            "question_id": ids["query"],
            "metadata": {"mode": "dag", "usage": {"input_tokens": 3}},
        },
        # A pointer to a missing message is dropped rather than kept dangling.
        "edited": {"run_id": "r3", "superseded_by_id": None, "question_id": None, "metadata": {}},
        "plain": {"run_id": "", "superseded_by_id": None, "question_id": None, "metadata": {}},
    }
