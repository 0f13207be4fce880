"""Two daphne processes read one mcpServers file: each starts its own child of the stdio
server, every run of a process reuses that child, and SIGTERM (the drain) stops it."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import pytest
import websockets

from tests.support.mcp_servers import REPO_ROOT, SERVER_MODULE
from tests.support.scripted_server import text, tool_calls
from tests.support.ws_client import run_turn

pytestmark = [pytest.mark.slow]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child that exited but is not reaped yet is a zombie: gone for our purpose.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def mcp_config(tmp_path) -> str:
    path = tmp_path / "mcp.json"
    entry = {
        "command": sys.executable,
        "args": ["-m", SERVER_MODULE, "stdio"],
        "cwd": str(REPO_ROOT),
    }
    path.write_text(json.dumps({"mcpServers": {"notes": entry}}))
    return str(path)


async def child_pid(server, scripted_server) -> int:
    """One run on ``server`` that calls the stdio server's ``pid`` tool."""
    scripted_server.enqueue(tool_calls(("notes__pid", {})), text("Noted."))
    conversation_id = server.api("POST", "/api/conversations/", {})["id"]
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    async with websockets.connect(url, additional_headers=server.ws_headers()) as ws:
        events = await run_turn(ws, "Which process?", "react")
    assert events[-1]["type"] == "done", events[-1]
    results = [e for e in events if e["type"] == "step" and e["kind"] == "tool_result"]
    return int(results[0]["result"])


async def test_two_processes_share_one_definition_each_with_its_own_child(
    live_daphne_factory, scripted_server, mcp_config
):
    env = scripted_server.daphne_env(FIMONE_MCP_CONFIG=mcp_config)
    a = live_daphne_factory(env=env)
    b = live_daphne_factory(env=env)
    a_first = await child_pid(a, scripted_server)
    b_first = await child_pid(b, scripted_server)
    a_again = await child_pid(a, scripted_server)
    assert a_first == a_again  # reused across runs, not one process per call
    assert a_first != b_first  # one child per server process
    assert alive(a_first) and alive(b_first)

    a.stop()  # SIGTERM: the drain, then the shutdown closes the tool servers
    deadline = time.monotonic() + 20
    while alive(a_first) and time.monotonic() < deadline:  # noqa: ASYNC110 - another process
        await asyncio.sleep(0.1)
    assert not alive(a_first)
    assert alive(b_first)  # the other process's child is untouched
    assert await child_pid(b, scripted_server) == b_first
