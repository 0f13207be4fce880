"""The SQLite test database, migrated once per version of the migrations and copied by every
test process: each pytest-xdist worker has a database of its own, and migrating one costs
some 3 s of CPU (most of a worker's start, docs/testing.md, "Workers"); a copy costs
nothing to speak of, and pytest-django's ``migrate`` on it then finds nothing to do.

The template lies in the temporary folder under a key of the migrations' sources (all the
installed apps', Django's version), like the collected static files
(tests/support/static_files.py). The first process that finds none migrates its own test
database as usual, under a lock the others wait on, and leaves a copy of it there."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TemplateLock:
    """This process migrates the test database for every process: it holds the lock the
    others wait on until the template is in place."""

    descriptor: int
    template: Path


# Held between the test database's placement and its migration (publish_template).
_building: TemplateLock | None = None


def _migrations_key() -> str:
    import django
    from django.apps import apps

    digest = hashlib.sha256(django.get_version().encode())
    for app in sorted(apps.get_app_configs(), key=lambda config: config.label):
        for path in sorted((Path(app.path) / "migrations").glob("*.py")):
            digest.update(f"{app.label}/{path.name}".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def sqlite_test_database() -> Path | None:
    """The file pytest-django migrates the default database into (with the worker's
    suffix), or None where it is not an SQLite file."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    name = str(database.get("TEST", {}).get("NAME") or "")
    if not database["ENGINE"].endswith("sqlite3") or not name:
        return None
    if name == ":memory:" or "mode=memory" in name:
        return None
    return Path(name)


def _remove_database_file(path: Path) -> None:
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        leftover.unlink(missing_ok=True)


def place_test_database(target: Path, *, folder: Path | None = None) -> bool:
    """Put a copy of the migrated template (in ``folder``, the temporary one by default)
    at ``target``, where the test database goes; True if done (the caller then keeps that
    database instead of creating it). False where there is no template yet: this process
    migrates, and ``publish_template`` shares the result."""
    global _building
    folder = Path(tempfile.gettempdir()) if folder is None else folder
    template = folder / f"fimone-test-database-{_migrations_key()}.sqlite3"
    descriptor = os.open(f"{template}.lock", os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(descriptor, fcntl.LOCK_EX)  # while another process migrates for everyone
    if not template.exists():
        _building = TemplateLock(descriptor=descriptor, template=template)
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_database_file(target)
        shutil.copyfile(template, target)
    finally:
        os.close(descriptor)
    return True


def publish_template(migrated: Path) -> None:
    """Once this process migrated its test database (``migrated``): keep a copy as the
    template (made under another name and renamed, so no process ever copies half of one)
    and let the waiting processes in."""
    global _building
    if _building is None:
        return
    building, _building = _building, None
    scratch = building.template.with_name(f"{building.template.name}.{os.getpid()}.tmp")
    try:
        source, copy = sqlite3.connect(migrated), sqlite3.connect(scratch)
        try:
            source.backup(copy)  # a consistent copy, whatever the write-ahead log still holds
        finally:
            source.close()
            copy.close()
        os.replace(scratch, building.template)
    finally:
        scratch.unlink(missing_ok=True)
        os.close(building.descriptor)


def remove_test_database(target: Path) -> None:
    """A kept database is not removed by pytest-django: remove the copy at the end."""
    _remove_database_file(target)
