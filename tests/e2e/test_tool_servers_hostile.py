"""Hostile tool servers against a real daphne (``config.server``), as the round-4 test from
outside saw them (RO.12, RT.3's cap):

- a server that never answers its start costs one start timeout, and is then skipped for
  a while: later runs and the tools menu do not start it (nor wait for it) again;
- a server listing 10,000 tools offers only the first ``FIMONE_MCP_MAX_TOOLS``, the tools
  menu says so, and the runs that carry them leave the event loop free.

While each is configured, a second user's answer streams and ``/healthz`` is asked over and
over; the longest pause of either is the observable (generous bounds: the old code paused
them for seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
import time
import urllib.request
from collections.abc import Awaitable, Callable

import pytest
import websockets

from tests.support.mcp_servers import REPO_ROOT, SERVER_MODULE
from tests.support.scripted_server import text
from tests.support.ws_client import run_turn

pytestmark = pytest.mark.slow

# The longest pause between two deltas of a second user's answer (streamed every 50 ms), and
# the longest a /healthz asked over and over waits, while the hostile server is configured.
LARGEST_GAP_SECONDS = 1.5
STREAMED_WORDS = 120  # 6 s of answer


def mcp_config(tmp_path, **servers: list[str]) -> str:
    """An mcpServers file of stdio servers run from the test server module."""
    path = tmp_path / "mcp.json"
    entries = {
        name: {
            "command": sys.executable,
            "args": ["-m", SERVER_MODULE, *args],
            "cwd": str(REPO_ROOT),
        }
        for name, args in servers.items()
    }
    path.write_text(json.dumps({"mcpServers": entries}))
    return str(path)


async def turn(server, content: str) -> list[dict]:
    """One run in a new conversation of ``server``'s user; its frames."""
    cid = server.api("POST", "/api/conversations/", {})["id"]
    url = f"{server.ws_url}/ws/chat/{cid}/"
    async with websockets.connect(url, additional_headers=server.ws_headers()) as ws:
        return await run_turn(ws, content, "react")


def notes(frames: list[dict]) -> list[dict]:
    return [f for f in frames if f["type"] == "step" and f.get("kind") == "note"]


@contextlib.contextmanager
def healthz_waits(server):
    """Asks ``/healthz`` over and over in a thread; yields the list of its waits (s)."""
    waits: list[float] = []
    stop = threading.Event()

    def ask() -> None:
        while not stop.is_set():
            started = time.monotonic()
            with urllib.request.urlopen(server.base_url + "/healthz", timeout=60) as answer:
                answer.read()
            waits.append(time.monotonic() - started)
            stop.wait(0.05)

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    try:
        yield waits
    finally:
        stop.set()
        asker.join(60)


async def streamed_gaps_while(
    reader, scripted_server, meanwhile: Callable[[asyncio.Event], Awaitable[None]]
) -> list[float]:
    """Seconds between the deltas of ``reader``'s streamed answer; ``meanwhile(done)`` runs
    from the answer's first delta, ``done`` set once the answer ended."""
    scripted_server.enqueue(
        text("".join(f"w{i} " for i in range(STREAMED_WORDS)), chunk_delay=0.05)
    )
    cid = reader.api("POST", "/api/conversations/", {})["id"]
    url = f"{reader.ws_url}/ws/chat/{cid}/"
    done = asyncio.Event()
    stamps: list[float] = []
    task = None
    async with websockets.connect(url, additional_headers=reader.ws_headers()) as ws:
        await ws.send(json.dumps({"type": "message", "content": "stream, please"}))
        async with asyncio.timeout(180):
            while True:
                frame = json.loads(await ws.recv())
                if frame["type"] == "answer.delta":
                    stamps.append(time.monotonic())
                    if task is None:
                        task = asyncio.create_task(meanwhile(done))
                if frame["type"] in ("done", "error"):
                    assert frame["type"] == "done", frame
                    break
    done.set()
    assert task is not None, "the answer streamed nothing"
    await task
    return [later - earlier for earlier, later in zip(stamps, stamps[1:], strict=False)]


async def test_a_hung_server_costs_one_start_timeout_then_is_skipped(
    shared_daphne_factory, scripted_server, tmp_path
):
    """RO.12: the failure is remembered from when it happened (the start timeout, 6 s here,
    is longer than the old 5 s memory counted from before the attempt)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    env = scripted_server.daphne_env(
        FIMONE_MCP_CONFIG=mcp_config(
            tmp_path, mute=["hang-at-start", "--marker-dir", str(markers)]
        ),
        FIMONE_MCP_START_TIMEOUT_SECONDS="6",
    )
    writer, reader = shared_daphne_factory(env), shared_daphne_factory(env)
    first = await turn(writer, "hello")
    assert first[-1]["type"] == "done", first[-1]
    assert [n["server"] for n in notes(first)] == ["mute"]
    assert len(list(markers.glob("hang-started-*"))) == 1

    later: list[list[dict]] = []
    menus: list[dict] = []

    async def meanwhile(done: asyncio.Event) -> None:
        for _ in range(2):
            later.append(await turn(writer, "again"))
            menus.append(await asyncio.to_thread(writer.api, "GET", "/api/tools/"))

    with healthz_waits(writer) as waits:
        gaps = await streamed_gaps_while(reader, scripted_server, meanwhile)
    for frames in later:
        assert frames[-1]["type"] == "done", frames[-1]
        assert [n["server"] for n in notes(frames)] == ["mute"]  # the note, without a wait
    for menu in menus:
        mute = next(s for s in menu["sources"] if s["source"] == "mcp:mute")
        # Users get the plain note (RU.12); the timeout itself is for the admin and the log.
        assert "unavailable" in mute["error"] and mute["tools"] == []
    # Nothing started it again: one start, one start timeout.
    assert len(list(markers.glob("hang-started-*"))) == 1
    assert waits and max(waits) < LARGEST_GAP_SECONDS, f"longest /healthz wait {max(waits):.2f} s"
    assert max(gaps) < LARGEST_GAP_SECONDS, f"largest pause {max(gaps):.2f} s"


async def test_a_server_of_10000_tools_is_cut_to_the_cap_and_the_loop_stays_free(
    shared_daphne_factory, scripted_server, tmp_path
):
    """RO.12 / RT.3: every request carries at most FIMONE_MCP_MAX_TOOLS (128 by default)
    of the server's tools (beside ``find_tools``, which searches them when their
    definitions do not fit the request), the tools menu says the server was cut, and runs
    listing and carrying them while another user's answer streams do not pause it, nor
    /healthz. Measured from the first listing: the relay passes on one tool more than is
    offered, so the SDK's parse on the loop is of 129 tools, not 10,000."""
    env = scripted_server.daphne_env(
        FIMONE_MCP_CONFIG=mcp_config(tmp_path, many=["many-tools", "--count", "10000"]),
    )
    writer, reader = shared_daphne_factory(env), shared_daphne_factory(env)
    runs: list[list[dict]] = []

    async def meanwhile(done: asyncio.Event) -> None:
        while not done.is_set() and len(runs) < 20:
            runs.append(await turn(writer, "again"))

    with healthz_waits(writer) as waits:
        gaps = await streamed_gaps_while(reader, scripted_server, meanwhile)
    assert runs and all(frames[-1]["type"] == "done" for frames in runs)
    offered = [
        [t["function"]["name"] for t in body.get("tools", [])] for body in scripted_server.requests
    ]
    many = [[name for name in names if name.startswith("many__")] for names in offered]
    assert offered and all(len(names) <= 128 for names in many), [len(n) for n in many]
    # The server's tools reach every request, as definitions or through the finder.
    assert all(
        names or "find_tools" in all_names for names, all_names in zip(many, offered, strict=True)
    )
    menu = await asyncio.to_thread(writer.api, "GET", "/api/tools/")
    listed = next(s for s in menu["sources"] if s["source"] == "mcp:many")
    assert len(listed["tools"]) == 128
    assert "128" in listed["note"]
    assert waits and max(waits) < LARGEST_GAP_SECONDS, f"longest /healthz wait {max(waits):.2f} s"
    assert max(gaps) < LARGEST_GAP_SECONDS, f"largest pause {max(gaps):.2f} s"
