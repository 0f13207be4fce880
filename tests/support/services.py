"""Private PostgreSQL and Redis servers for scale tests and benchmarks (issue 10, DESIGN §8).

Each server runs from a temporary directory on a free loopback port and is removed when
stopped. Use them as session-scoped pytest fixtures (``postgres_server``, ``redis_server``)
or as plain functions from scripts::

    with start_postgres() as pg, start_redis() as redis:
        env = {"DATABASE_URL": pg.url, "REDIS_URL": redis.url}

When the Debian binaries are missing the fixtures skip with the reason — except under CI
(``CI=true``), where they fail: CI must never skip the scale tests silently.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` system
user (``runuser``) in a temp directory that user owns. Authentication is ``trust`` on
loopback only: these servers hold throw-away test data and listen on 127.0.0.1 alone.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PG_USER = "postgres"  # the database superuser created by initdb
PG_DATABASE = "fimone"
START_TIMEOUT_SECONDS = 30.0


class ServiceUnavailable(RuntimeError):
    """The binaries needed to start a service are not installed."""


def free_port() -> int:
    """A TCP port free on loopback right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen | None, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} during start-up")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {START_TIMEOUT_SECONDS}s")


# --- PostgreSQL -------------------------------------------------------------------------


def find_postgres_bindir() -> Path | None:
    """The newest PostgreSQL server bin dir (Debian keeps them out of PATH)."""
    candidates = sorted(
        (Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    if candidates:
        return candidates[0]
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class PostgresServer:
    port: int
    base_dir: Path
    bindir: Path
    run_as: str | None  # system user the server runs as, None for the current user
    database: str = PG_DATABASE
    stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        return f"postgres://{PG_USER}@127.0.0.1:{self.port}/{self.database}"

    def url_for(self, database: str) -> str:
        return f"postgres://{PG_USER}@127.0.0.1:{self.port}/{database}"

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    def create_database(self, name: str, *, template: str = "") -> str:
        """A new database on this server, empty or a copy of ``template`` (a database
        nobody is connected to); returns its URL."""
        import psycopg

        copy = f' TEMPLATE "{template}"' if template else ""
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=PG_USER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"{copy}')
        return self.url_for(name)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        pg_ctl = str(self.bindir / "pg_ctl")
        subprocess.run(
            _as_user(self.run_as, [pg_ctl, "-D", str(self.data_dir), "-m", "fast", "-w", "stop"]),
            cwd=self.base_dir,
            capture_output=True,
            check=False,
            timeout=60,
        )
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _as_user(user: str | None, argv: list[str]) -> list[str]:
    return ["runuser", "-u", user, "--", *argv] if user else argv


def start_postgres() -> PostgresServer:
    """initdb a fresh cluster in a temp dir and start it on a free loopback port."""
    bindir = find_postgres_bindir()
    if bindir is None:
        raise ServiceUnavailable("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    run_as = None
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            raise ServiceUnavailable("running as root and runuser is missing")
        try:
            pwd.getpwnam(PG_USER)
        except KeyError as exc:
            raise ServiceUnavailable(f"running as root and no '{PG_USER}' system user") from exc
        run_as = PG_USER

    base_dir = Path(tempfile.mkdtemp(prefix="fimone-pg-"))
    data_dir, socket_dir = base_dir / "data", base_dir / "sock"
    socket_dir.mkdir()
    if run_as:
        entry = pwd.getpwnam(run_as)
        for path in (base_dir, socket_dir):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    initdb = [
        str(bindir / "initdb"),
        "-D",
        str(data_dir),
        "-U",
        PG_USER,
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--no-locale",
        "--no-sync",
    ]
    # cwd: the server user may not be allowed into the caller's folder (a root-owned clone).
    done = subprocess.run(
        _as_user(run_as, initdb), cwd=base_dir, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        shutil.rmtree(base_dir, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")

    # A free port can be taken between the probe and the bind: retry a few times.
    last_error = ""
    for _attempt in range(5):
        port = free_port()
        # Durability is irrelevant for throw-away test data; speed is not.
        options = (
            f"-p {port} -c listen_addresses=127.0.0.1 -k {socket_dir} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        start = [
            str(bindir / "pg_ctl"),
            "-D",
            str(data_dir),
            "-l",
            str(base_dir / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            str(int(START_TIMEOUT_SECONDS)),
            "start",
        ]
        done = subprocess.run(
            _as_user(run_as, start), cwd=base_dir, capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            server = PostgresServer(port=port, base_dir=base_dir, bindir=bindir, run_as=run_as)
            try:
                server.create_database(PG_DATABASE)
            except Exception:
                server.stop()
                raise
            return server
        log = base_dir / "server.log"
        last_error = log.read_text(errors="replace")[-2000:] if log.exists() else done.stderr
    shutil.rmtree(base_dir, ignore_errors=True)
    raise RuntimeError(f"PostgreSQL did not start: {last_error}")


# --- Redis ------------------------------------------------------------------------------


@dataclass
class RedisServer:
    port: int
    base_dir: Path
    process: subprocess.Popen = field(repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_redis() -> RedisServer:
    """redis-server on a free loopback port, no persistence, in a temp dir."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServiceUnavailable("redis-server is not installed")
    last_error = ""
    for _attempt in range(5):
        base_dir = Path(tempfile.mkdtemp(prefix="fimone-redis-"))
        port = free_port()
        argv = [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(base_dir),
            "--daemonize",
            "no",
            "--logfile",
            str(base_dir / "redis.log"),
        ]
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = RedisServer(port=port, base_dir=base_dir, process=process)
        try:
            _wait_for_port(port, process, "redis-server")
            return server
        except RuntimeError as exc:
            log = base_dir / "redis.log"
            last_error = log.read_text(errors="replace")[-2000:] if log.exists() else str(exc)
            server.stop()
    raise RuntimeError(f"redis-server did not start: {last_error}")


# --- pytest fixtures --------------------------------------------------------------------


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _unavailable(exc: ServiceUnavailable) -> None:
    reason = f"{exc} (bin/setup dev installs it)"
    if _in_ci():
        pytest.fail(f"CI must run the scale tests, but: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL server for the whole test session."""
    try:
        server = start_postgres()
    except ServiceUnavailable as exc:
        _unavailable(exc)
    with server:
        yield server


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A private Redis server for the whole test session."""
    try:
        server = start_redis()
    except ServiceUnavailable as exc:
        _unavailable(exc)
    with server:
        yield server
