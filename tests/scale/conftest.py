"""Fixtures of the scale tests: a migrated PostgreSQL database and Django subprocesses."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid

import pytest

from tests.scale.django_procs import REPO_ROOT, DjangoSubprocesses, django_env


@pytest.fixture(scope="session")
def migrated_template(postgres_server) -> str:
    """The name of a PostgreSQL database with every migration applied and nothing else:
    only copied (``CREATE DATABASE ... TEMPLATE``), never connected to."""
    name = f"template_{uuid.uuid4().hex[:12]}"
    url = postgres_server.create_database(name)
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
    return name


@pytest.fixture(scope="session")
def migrated_postgres(postgres_server, migrated_template) -> str:
    """The URL of a migrated PostgreSQL database shared by the session."""
    return postgres_server.create_database(
        f"scale_{uuid.uuid4().hex[:12]}", template=migrated_template
    )


@pytest.fixture(scope="module")
def own_migrated_postgres(postgres_server, migrated_template) -> str:
    """The URL of a migrated PostgreSQL database for one module: what it holds, and the
    planner's statistics of it, are the module's own whatever ran before."""
    return postgres_server.create_database(
        f"own_{uuid.uuid4().hex[:12]}", template=migrated_template
    )


@pytest.fixture
def on_postgres(migrated_postgres, tmp_path) -> DjangoSubprocesses:
    """Django subprocesses on the shared migrated PostgreSQL database."""
    return DjangoSubprocesses(django_env(tmp_path, DATABASE_URL=migrated_postgres))
