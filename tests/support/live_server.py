"""A real daphne server in a subprocess, for browser tests, end-to-end tests and benchmarks.

Each server gets its own data directory (SQLite database, media, secret key), is migrated
and seeded with one user before daphne starts, and is reachable on a free loopback port.

In pytest use the ``live_daphne`` fixture (extra environment: override the
``live_daphne_env`` fixture in your module, or call ``live_daphne_factory(env={...})``).
Browser tests share one server per environment and worker, each test logged in as a user
of its own (``SharedServers``; docs/testing.md says which tests keep a server to themselves).
Outside pytest (benchmarks)::

    server = start_live_server(env={"LLM_BASE_URL": "http://127.0.0.1:9000/v1"})
    try:
        ...  # server.base_url, server.ws_url, server.session_cookie
    finally:
        server.stop()

The subprocess database is NOT pytest-django's test database: create data in it through
``server.manage_shell(code)`` or the HTTP API.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.server_shell import ServerShell

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_USERNAME = "tester"
DEFAULT_PASSWORD = "pw-tester-123!"

# Variables from the caller's environment that would change what the server talks to.
# A test server is offline and self-contained unless the test asks otherwise via ``env``.
_STRIPPED_PREFIXES = ("LLM_", "FAST_LLM_")
_STRIPPED_NAMES = {"DATABASE_URL", "REDIS_URL", "FIMONE_TEST_DB", "MEDIA_ROOT", "SECRET_KEY"}

# Runs inside the subprocess's environment before daphne starts: migrate, seed the user,
# and open a session for it (so websocket clients need no login round trip).
_SETUP_SCRIPT = """
import os, sys, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
username, password = sys.argv[1], sys.argv[2]
User = get_user_model()
user = User.objects.filter(username=username).first()
if user is None:
    user = User.objects.create_user(username=username, password=password)
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print("SESSION", session.session_key)
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    port: int
    data_dir: Path
    env: dict[str, str]
    username: str = DEFAULT_USERNAME
    password: str = DEFAULT_PASSWORD
    session_cookie: str = ""
    proc: subprocess.Popen | None = None
    owns_data_dir: bool = False
    startup_timeout: float = 60.0
    # What ``python -m`` runs: fimone's daphne command line, or "daphne" itself (the usual
    # Channels command, which must be as safe).
    server_module: str = "config.server"
    _log_file: object | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def origin(self) -> str:
        """The Origin header websocket clients must send (AllowedHostsOriginValidator)."""
        return self.base_url

    @property
    def log_path(self) -> Path:
        return self.data_dir / "daphne.log"

    def ws_headers(self) -> dict[str, str]:
        """Headers for an authenticated websocket client (``websockets.connect(...)``)."""
        return {"Origin": self.origin, "Cookie": f"sessionid={self.session_cookie}"}

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def wait_for_log(self, line: str, *, timeout: float = 60.0) -> None:
        """Wait until the server's log holds ``line`` (a hang guard, not a speed bound)."""
        deadline = time.monotonic() + timeout
        while line not in self.log():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{line!r} not logged within {timeout}s:\n{self.log()[-4000:]}"
                )
            time.sleep(0.05)

    def wait_until_draining(self, *, timeout: float = 300.0) -> None:
        """Wait until ``/healthz`` says the process is draining (once a SIGTERM has acted)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.base_url + "/healthz", timeout=5).close()
            except urllib.error.HTTPError as exc:  # 503 while draining
                if json.loads(exc.read())["checks"]["process"] == "draining":
                    return
            time.sleep(0.05)
        raise AssertionError(f"{self.base_url} never began draining")

    # -- lifecycle ---------------------------------------------------------------------

    def setup(self) -> None:
        """Migrate the database, create the user and a session (idempotent).

        A fresh SQLite data directory starts as a copy of one migrated and seeded once per
        process (``_seeded_template``): the same schema, user and session, without running
        every migration again for each server.
        """
        if _may_copy_template(self.env, self.data_dir):
            template, self.session_cookie = _seeded_template(self.username, self.password)
            shutil.copytree(template, self.data_dir, dirs_exist_ok=True)
            return
        self.migrate_and_seed()

    def migrate_and_seed(self) -> None:
        result = subprocess.run(
            [sys.executable, "-c", _SETUP_SCRIPT, self.username, self.password],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        if result.returncode != 0:
            raise RuntimeError(f"live server setup failed:\n{result.stdout}\n{result.stderr}")
        for line in result.stdout.splitlines():
            if line.startswith("SESSION "):
                self.session_cookie = line.split(" ", 1)[1].strip()

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                self.server_module,
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "config.asgi:application",
            ],
            cwd=REPO_ROOT,
            env=self.env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            # Own session: a Ctrl-C in the test runner is not delivered twice, and
            # kill() hits only this process.
            start_new_session=True,
        )
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited during start-up:\n{self.log()[-4000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/accounts/login/", timeout=2):
                    return
            except urllib.error.HTTPError:
                return  # it answered; the status is the app's business
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"daphne did not answer within {self.startup_timeout}s:\n{self.log()}")

    def _close_log(self) -> None:
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                self._log_file.close()
            self._log_file = None

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful stop (SIGTERM, then SIGKILL if it does not exit)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        self._close_log()

    def kill(self) -> None:
        """SIGKILL: the process dies mid-whatever (durability tests)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._close_log()

    def restart(self, *, hard: bool = False, env: dict[str, str] | None = None) -> None:
        """Stop (or kill, with ``hard``) and start again on the same port and data.

        Like ``bin/run``, runs ``recover_runs`` before starting, so runs the old process
        left unfinished are marked interrupted. A server already stopped just starts.
        """
        if hard:
            self.kill()
        else:
            self.stop()
        if env:
            self.env.update(env)
        self.manage("recover_runs")
        self.start()

    def close(self) -> None:
        self.stop()
        shell = _shells.pop(_shell_key(self.env), None)
        if shell is not None:
            shell.close()
        if self.owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- helpers -----------------------------------------------------------------------

    def api(self, method: str, path: str, body: dict | None = None, timeout: float = 30):
        """An authenticated JSON API call as the seeded user; returns the decoded answer.

        HTTP errors raise ``urllib.error.HTTPError`` (its ``.code`` and ``.read()`` tell why).
        """
        csrf = "c" * 32  # any well-formed token works when the cookie carries the same one
        request = urllib.request.Request(
            self.base_url + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={
                "Cookie": f"sessionid={self.session_cookie}; csrftoken={csrf}",
                "X-CSRFToken": csrf,
                "Content-Type": "application/json",
                "Origin": self.origin,
                "Referer": self.base_url + "/",
            },
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def manage(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run ``manage.py <args>`` against this server's database."""
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )

    def manage_shell(self, code: str, timeout: float = 120) -> str:
        """Run Python code as ``manage.py shell -c`` would, against this server's database
        and settings; returns what it printed (tests/support/server_shell.py)."""
        key = _shell_key(self.env)
        shell = _shells.get(key)
        if shell is None or not shell.alive():
            shell = _shells[key] = ServerShell(env=dict(self.env), cwd=REPO_ROOT)
        return shell.run(code, timeout)


# A server's environment -> the shell process running test code with its settings; the
# users of a shared server share it.
_shells: dict[tuple[tuple[str, str], ...], ServerShell] = {}


def _shell_key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(env.items()))


@atexit.register
def _close_shells() -> None:
    for shell in _shells.values():
        shell.close()
    _shells.clear()


# (username, password) -> a migrated data directory with that user and its session cookie.
_templates: dict[tuple[str, str], tuple[Path, str]] = {}


def _may_copy_template(env: dict[str, str], data_dir: Path) -> bool:
    """A copy fits a server on its own SQLite file and the key kept in its data directory
    (the session cookie is signed with it), into a data directory that holds neither yet."""
    if env.get("DATABASE_URL") or env.get("SECRET_KEY"):
        return False
    return not (data_dir / "fimone.sqlite3").exists() and not (data_dir / "secret_key").exists()


# A copy of this process's test database as pytest-django migrated it, before any test ran
# (``keep_migrated_database``); None until then, or where the test database is not a file.
_migrated_database: Path | None = None


def keep_migrated_database() -> None:
    """Copy the test database, freshly migrated: the servers' template starts from it and
    its ``migrate`` finds nothing to do (tests/conftest.py calls this once the test
    database is set up)."""
    global _migrated_database
    from django.db import connection

    name = str(connection.settings_dict["NAME"])
    if connection.vendor != "sqlite" or not Path(name).is_file():
        return
    path = Path(tempfile.mkdtemp(prefix="fimone-migrated-")) / "fimone.sqlite3"
    atexit.register(shutil.rmtree, path.parent, ignore_errors=True)
    source, target = sqlite3.connect(name), sqlite3.connect(path)
    try:
        source.backup(target)  # a consistent copy, whatever the write-ahead log still holds
    finally:
        source.close()
        target.close()
    _migrated_database = path


def _seeded_template(username: str, password: str) -> tuple[Path, str]:
    """Migrating takes several seconds on a small machine, most of a server's start: the
    template is migrated once per process, from a copy of the migrated test database when
    there is one (the same migrations; then ``migrate`` only checks)."""
    key = (username, password)
    if key not in _templates:
        path = Path(tempfile.mkdtemp(prefix="fimone-live-template-"))
        atexit.register(shutil.rmtree, path, ignore_errors=True)
        if _migrated_database is not None:
            shutil.copyfile(_migrated_database, path / "fimone.sqlite3")
        seed = LiveServer(
            port=0, data_dir=path, env=server_env(path), username=username, password=password
        )
        seed.migrate_and_seed()
        _templates[key] = (path, seed.session_cookie)
    return _templates[key]


def server_env(data_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(_STRIPPED_PREFIXES) and key not in _STRIPPED_NAMES
    }
    env.update(
        {
            "FIMONE_DATA_DIR": str(data_dir),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONUNBUFFERED": "1",
            "DEBUG": "false",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            # stop() sends SIGTERM: a run still going is interrupted after this drain.
            "FIMONE_DRAIN_SECONDS": "5",
        }
    )
    env.update(extra or {})
    if "STATIC_ROOT" not in env:
        # Pages name their scripts through collectstatic's manifest (DEBUG=False): a server
        # started outside the test session (bin/screenshots, benches) needs one too.
        from tests.support.static_files import collected_static_root

        env["STATIC_ROOT"] = str(collected_static_root())
    return env


def start_live_server(
    env: dict[str, str] | None = None,
    *,
    data_dir: Path | str | None = None,
    port: int | None = None,
    username: str = DEFAULT_USERNAME,
    password: str = DEFAULT_PASSWORD,
    server_module: str = "config.server",
) -> LiveServer:
    """Migrate, seed and start a daphne server; the caller must ``stop()``/``close()`` it."""
    owns = data_dir is None
    path = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="fimone-live-"))
    path.mkdir(parents=True, exist_ok=True)
    server = LiveServer(
        port=port or free_port(),
        data_dir=path,
        env=server_env(path, env),
        username=username,
        password=password,
        owns_data_dir=owns,
        server_module=server_module,
    )
    server.setup()
    server.start()
    return server


@contextlib.contextmanager
def live_server(env: dict[str, str] | None = None, **kwargs) -> Iterator[LiveServer]:
    server = start_live_server(env, **kwargs)
    try:
        yield server
    finally:
        server.close()


# -- pytest fixtures (registered in tests/conftest.py) -----------------------------------


@pytest.fixture
def live_daphne_env() -> dict[str, str]:
    """Extra environment for ``live_daphne``; override this fixture in a test module."""
    return {}


@pytest.fixture
def live_daphne_factory(tmp_path_factory):
    """Start any number of servers: ``live_daphne_factory(env={...})``; all stopped after."""
    servers: list[LiveServer] = []

    def make(env: dict[str, str] | None = None, **kwargs) -> LiveServer:
        kwargs.setdefault("data_dir", tmp_path_factory.mktemp("live-daphne"))
        server = start_live_server(env, **kwargs)
        servers.append(server)
        return server

    make.servers = servers  # for a failed test's report (tests/browser/conftest.py)
    yield make
    for server in servers:
        server.close()  # with its manage_shell process; the data folder is the factory's


@pytest.fixture
def live_daphne_shared() -> bool:
    """Whether ``live_daphne`` may be a server shared with other tests under a user of the
    test's own (tests/browser/conftest.py says yes unless a test is marked ``own_server``)."""
    return False


@pytest.fixture
def live_daphne_group() -> str:
    """The tests a shared ``live_daphne`` is shared with: "" for every test of the process
    (``SharedServers.user_server``; tests/browser/conftest.py names a module's own)."""
    return ""


@pytest.fixture
def live_daphne(
    request, live_daphne_factory, live_daphne_env, live_daphne_shared, live_daphne_group
) -> LiveServer:
    """A running daphne with a migrated database and a user (``.username``/``.password``)."""
    if live_daphne_shared:
        shared = request.getfixturevalue("shared_daphne_factory")
        return shared(live_daphne_env, group=live_daphne_group)
    return live_daphne_factory(env=live_daphne_env)
