"""Fixtures around tests/support/mcp_server.py: server definitions for a stdio child and a
streamable-HTTP server on a loopback port, and a pool that is closed after each test."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fimone.agent.tools.mcp_client import McpPool
from fimone.agent.tools.mcp_config import McpServerSpec, SecretRefused

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVER_MODULE = "tests.support.mcp_server"


def stdio_spec(marker_dir: Path, name: str = "test", **changes) -> McpServerSpec:
    """The test server as a stdio child process."""
    fields = {
        "name": name,
        "transport": "stdio",
        "command": sys.executable,
        "args": ("-m", SERVER_MODULE, "stdio", "--marker-dir", str(marker_dir)),
        "cwd": str(REPO_ROOT),
        "timeout": 20.0,
    }
    return McpServerSpec(**{**fields, **changes})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def http_server(marker_dir: Path, *extra: str, port: int = 0) -> Iterator[str]:
    """The test server over streamable HTTP on loopback; yields its URL."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", SERVER_MODULE, "http", "--port", str(port)]
        + ["--marker-dir", str(marker_dir), *extra],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert proc.poll() is None, "the MCP test server exited"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def no_secrets(name: str) -> str:
    raise SecretRefused(name)


@pytest.fixture
async def mcp_pool():
    """A pool of MCP connections, closed (its stdio children stopped) after the test."""
    pool = McpPool(no_secrets, start_timeout=30.0)
    yield pool
    await pool.aclose()


@pytest.fixture
def marker_dir(tmp_path) -> Path:
    path = tmp_path / "markers"
    path.mkdir()
    return path


@pytest.fixture(scope="module")
def http_mcp(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """One streamable-HTTP test server for a module: (URL, its marker folder)."""
    markers = tmp_path_factory.mktemp("http-markers")
    with http_server(markers) as url:
        yield url, markers
