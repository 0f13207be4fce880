"""Running the chat app's migrations back and forth in a test: a data migration is checked
on rows stored as the version before it stored them."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def chat_migration_and_previous(name_part: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """The chat migration whose name holds ``name_part`` (found by name: it may be
    renumbered) and the one before it."""
    loader = MigrationExecutor(connection).loader
    (target,) = [k for k in loader.disk_migrations if k[0] == "chat" and name_part in k[1]]
    (previous,) = [d for d in loader.get_migration(*target).dependencies if d[0] == "chat"]
    return target, previous


def migrate(targets) -> MigrationExecutor:
    """Migrate to ``targets``; an executor with a fresh graph and state after the change."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return MigrationExecutor(connection)
