"""The test database is migrated once and copied by every other test process
(tests/support/migrated_database.py), so that a pytest-xdist worker's start is not its
migrations (RD.6)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tests.support.lock_waiters import wait_until_someone_waits_on
from tests.support.migrated_database import place_test_database, publish_template


def _migrate(path: Path) -> sqlite3.Connection:
    """A stand-in for the migrations: a table and a row, the row still in the write-ahead
    log of the connection returned (open, as a test process's connection stays)."""
    database = sqlite3.connect(path)
    database.execute("PRAGMA journal_mode=WAL")
    database.execute("PRAGMA wal_autocheckpoint=0")
    database.execute("CREATE TABLE django_migrations (app TEXT, name TEXT)")
    database.execute("INSERT INTO django_migrations VALUES ('chat', '0001_initial')")
    database.commit()
    return database


def _applied(path: Path) -> list[tuple[str, str]]:
    database = sqlite3.connect(path)
    try:
        return database.execute("SELECT app, name FROM django_migrations").fetchall()
    finally:
        database.close()


@pytest.fixture
def template_folder(tmp_path):
    folder = tmp_path / "templates"
    folder.mkdir()
    return folder


def test_rd6_the_first_process_migrates_and_the_next_one_copies_its_database(
    tmp_path, template_folder
):
    first, second = tmp_path / "test.sqlite3_gw0", tmp_path / "test.sqlite3_gw1"

    assert place_test_database(first, folder=template_folder) is False  # nothing to copy yet
    migrated = _migrate(first)
    try:
        publish_template(first)
    finally:
        migrated.close()

    assert place_test_database(second, folder=template_folder) is True
    assert _applied(second) == [("chat", "0001_initial")]
    assert sorted(p.suffix for p in template_folder.iterdir()) == [".lock", ".sqlite3"]


def test_rd6_a_process_that_starts_while_another_migrates_waits_and_copies(
    tmp_path, template_folder
):
    first, second = tmp_path / "test.sqlite3_gw0", tmp_path / "test.sqlite3_gw1"
    assert place_test_database(first, folder=template_folder) is False
    placed: list[bool] = []
    waiting = threading.Thread(
        target=lambda: placed.append(place_test_database(second, folder=template_folder))
    )
    waiting.start()
    try:
        (lock_file,) = template_folder.glob("*.lock")
        wait_until_someone_waits_on(lock_file)
        assert not second.exists()  # it copies nothing before the template is there
        migrated = _migrate(first)
        try:
            publish_template(first)
        finally:
            migrated.close()
    finally:
        waiting.join(timeout=30)

    assert placed == [True]
    assert _applied(second) == [("chat", "0001_initial")]
