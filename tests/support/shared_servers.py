"""Daphne servers shared by the tests of one process, each test logged in as a user of its
own (browser tests; docs/testing.md, "Servers shared by browser tests").

Starting a daphne per test cost ~2.3 s of wall time and ~2 s of CPU each. A shared server is
one per extra environment (``live_daphne_env``) and process; its data directory is a copy of
the seeded template plus a pool of users that each have a session already, so handing a
test a fresh user costs nothing. Users never see each other's conversations, so a test on a
shared server sees what it would see on a server of its own.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.live_server import (
    DEFAULT_PASSWORD,
    DEFAULT_USERNAME,
    REPO_ROOT,
    LiveServer,
    _seeded_template,
    free_port,
    server_env,
)

# Runs against a copy of a seeded data directory: many more users with one session each, for
# tests that share a server. One password hash for all (hashing is the slow part); bulk
# inserts in one transaction.
_POOL_SCRIPT = """
import os, sys, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.sessions.backends.db import SessionStore
from django.db import transaction
prefix, password, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
User = get_user_model()
hashed = make_password(password)
# Letters only: a page's text is checked word by word (tests/browser/test_i18n.py), and a
# username must read as one word there, as the seeded user's does.
letters = "abcdefghijklmnopqrstuvwxyz"
names = [prefix + letters[i // 26] + letters[i % 26] for i in range(count)]
with transaction.atomic():
    User.objects.bulk_create([User(username=name, password=hashed) for name in names])
    for user in User.objects.filter(username__in=names).order_by("id"):
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        print("USER", user.username, session.session_key)
"""
POOL_SIZE = 200  # users per shared server; one more test starts a fresh server


@dataclass(frozen=True)
class PooledUser:
    username: str
    session_cookie: str


# (username, password) -> a data directory like the seeded template's plus POOL_SIZE users.
_pooled_templates: dict[tuple[str, str], tuple[Path, list[PooledUser]]] = {}


def _pooled_template(username: str, password: str) -> tuple[Path, list[PooledUser]]:
    """The seeded template plus a pool of users with sessions, made once per process."""
    key = (username, password)
    if key not in _pooled_templates:
        seeded, _ = _seeded_template(username, password)
        path = Path(tempfile.mkdtemp(prefix="fimone-live-pool-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        shutil.copytree(seeded, path, dirs_exist_ok=True)
        result = subprocess.run(
            [sys.executable, "-c", _POOL_SCRIPT, username, password, str(POOL_SIZE)],
            cwd=REPO_ROOT,
            env=server_env(path),
            capture_output=True,
            text=True,
            timeout=180,
        )
        if result.returncode != 0:
            raise RuntimeError(f"seeding the user pool failed:\n{result.stdout}\n{result.stderr}")
        users = [
            PooledUser(*line.split()[1:3])
            for line in result.stdout.splitlines()
            if line.startswith("USER ")
        ]
        _pooled_templates[key] = (path, users)
    return _pooled_templates[key]


class UserOnSharedServer(LiveServer):
    """One test's own user on a daphne that other tests use too: ``api``, ``ws_headers``,
    ``manage_shell`` and a browser login act as this user. Stopping, killing or restarting
    the shared process is refused: such a test needs a server of its own (``own_server``)."""

    def _refuse(self, *args, **kwargs) -> None:
        raise RuntimeError(
            "this daphne is shared with other tests; mark the test or module "
            "`pytest.mark.own_server` to stop, kill or restart it (docs/testing.md)"
        )

    start = stop = kill = restart = _refuse

    def close(self) -> None:
        """Nothing to do: the shared server is closed by ``SharedServers``."""


@dataclass
class _SharedServer:
    server: LiveServer
    users: list[PooledUser]  # not handed out yet


class SharedServers:
    """Daphne servers shared by tests in one process, one per extra environment, each test
    handed a user of its own from a pool seeded into the data directory.

    A server is handed out only once no answer is running on it any more (a run a previous
    test left going would otherwise ask the scripted model while the next test talks to it);
    one that stays busy, has died or has no user left is replaced by a fresh server.
    """

    def __init__(self, make_dir, *, limit: int = 6, idle_timeout: float = 20.0) -> None:
        self._make_dir = make_dir
        self._limit = limit
        self._idle_timeout = idle_timeout
        # (group, *sorted environment) -> its server, the most recently used last.
        self._servers: dict[tuple, _SharedServer] = {}
        self.started = 0  # how many servers this process started (docs/testing.md)

    def user_server(self, env: dict[str, str], *, group: str = "") -> UserOnSharedServer | None:
        """A fresh user on a server with ``env``; None when the environment names its own
        database or key (a pooled SQLite copy cannot serve it). A ``group`` names tests that
        share a server of their own: what one of them changes for every user of its server
        (model configurations, say) the tests outside the group never see."""
        if env.get("DATABASE_URL") or env.get("SECRET_KEY"):
            return None
        key = (group, *sorted(env.items()))
        # A worker runs a group's tests one after another (collection order): another
        # group's servers are done with.
        for done in [k for k in self._servers if k[0] and k[0] != group]:
            self._servers.pop(done).server.close()
        shared = self._servers.pop(key, None)
        if shared is not None and not (
            shared.users and shared.server.proc.poll() is None and self._idle(shared.server)
        ):
            shared.server.close()
            shared = None
        if shared is None:
            shared = self._start(env)
        self._servers[key] = shared  # the most recently used last
        while len(self._servers) > self._limit:
            oldest = next(iter(self._servers))
            self._servers.pop(oldest).server.close()
        user = shared.users.pop(0)
        server = shared.server
        return UserOnSharedServer(
            port=server.port,
            data_dir=server.data_dir,
            env=dict(server.env),
            username=user.username,
            password=server.password,
            session_cookie=user.session_cookie,
            proc=server.proc,
        )

    def settle(self, user: UserOnSharedServer) -> None:
        """After a test: wait until no run is left going on its server (the caller has
        aborted the scripted model's pending replies), or replace the server if one stays."""
        for key, shared in list(self._servers.items()):
            if shared.server.port == user.port and not self._idle(shared.server):
                self._servers.pop(key).server.close()

    def _start(self, env: dict[str, str]) -> _SharedServer:
        data_dir = Path(self._make_dir())
        template, users = _pooled_template(DEFAULT_USERNAME, DEFAULT_PASSWORD)
        shutil.copytree(template, data_dir, dirs_exist_ok=True)
        server = LiveServer(
            port=free_port(), data_dir=data_dir, env=server_env(data_dir, env), owns_data_dir=True
        )
        server.start()
        self.started += 1
        return _SharedServer(server=server, users=list(users))

    def _idle(self, server: LiveServer) -> bool:
        """Wait until no answer is running and no question waits for one, for any user."""
        uri = f"file:{server.data_dir / 'fimone.sqlite3'}?mode=ro"
        deadline = time.monotonic() + self._idle_timeout
        while time.monotonic() < deadline:
            try:
                with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
                    (busy,) = db.execute(
                        "SELECT COUNT(*) FROM chat_message WHERE status = 'pending'"
                        " OR (role = 'assistant' AND status = 'running')"
                    ).fetchone()
            except sqlite3.OperationalError:
                busy = 1  # locked by a writer just now: look again
            if not busy:
                return True
            time.sleep(0.1)
        return False

    def close(self) -> None:
        for shared in self._servers.values():
            shared.server.close()
        self._servers.clear()


@pytest.fixture(scope="session")
def shared_live_servers(tmp_path_factory):
    servers = SharedServers(lambda: tmp_path_factory.mktemp("live-daphne-shared"))
    yield servers
    servers.close()


@pytest.fixture
def shared_daphne_factory(request, shared_live_servers, live_daphne_factory):
    """``make(env, group="")``: a fresh user of the test's own on the process's daphne for
    ``env`` (for ``env`` and ``group``: ``SharedServers.user_server``; a server of the
    test's own when ``env`` names its own database or key). After the
    test, no run of its may be left asking the scripted model while the next one talks to
    it: the scripted model's pending replies end, then the server is waited for."""
    scripted = (
        request.getfixturevalue("scripted_server")
        if "scripted_server" in request.fixturenames
        else None
    )
    handed: list[UserOnSharedServer] = []

    def make(env: dict[str, str] | None = None, *, group: str = "") -> LiveServer:
        server = shared_live_servers.user_server(dict(env or {}), group=group)
        if server is None:
            return live_daphne_factory(env=env)
        handed.append(server)
        return server

    make.servers = handed  # for a failed test's report (tests/browser/conftest.py)
    yield make
    if handed and scripted is not None:
        scripted.reset()  # ends replies still sleeping, held or gated
    for server in handed:
        shared_live_servers.settle(server)
    if handed and scripted is not None:
        scripted.reset()  # a request a run made while it was waited for
