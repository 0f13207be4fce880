"""Fixtures of the scale tests: a migrated PostgreSQL database and Django subprocesses."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid

import pytest

from tests.scale.django_procs import REPO_ROOT, DjangoSubprocesses, django_env


@pytest.fixture(scope="session")
def migrated_postgres(postgres_server) -> str:
    """The URL of a PostgreSQL database with every migration applied (shared by the session)."""
    url = postgres_server.create_database(f"scale_{uuid.uuid4().hex[:12]}")
    env = django_env(tempfile.mkdtemp(prefix="fimone-scale-"), DATABASE_URL=url)
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"migrate failed:\n{done.stdout}\n{done.stderr}"
    return url


@pytest.fixture
def on_postgres(migrated_postgres, tmp_path) -> DjangoSubprocesses:
    """Django subprocesses on the shared migrated PostgreSQL database."""
    return DjangoSubprocesses(django_env(tmp_path, DATABASE_URL=migrated_postgres))
