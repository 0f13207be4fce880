"""A deploy loses no run (RO.1): SIGTERM to a real daphne process on SQLite.

A run in flight finishes and its socket sees ``done``; a new message gets ``server_draining``
(nothing stored: the client sends it again elsewhere); ``/healthz`` says draining; a run
still going when the grace period ends is stored ``interrupted`` and the process exits.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time

import pytest
import websockets

from tests.e2e.test_ws_runs import stored_messages
from tests.support.scripted_server import text

pytestmark = pytest.mark.slow

WAIT = 60.0
GRACE = 4.0


def words(count: int) -> str:
    return " ".join(f"w{i}" for i in range(count))


async def next_of(ws, *kinds: str) -> dict:
    async with asyncio.timeout(WAIT):
        while True:
            event = json.loads(await ws.recv())
            if event["type"] in kinds:
                return event


async def test_sigterm_drains_finishes_refuses_then_interrupts(
    live_daphne_factory, scripted_server
):
    server = live_daphne_factory(
        env={
            "LLM_BASE_URL": scripted_server.base_url,
            "LLM_API_KEY": "k",
            "LLM_MODEL": "scripted-model",
            "FIMONE_DRAIN_SECONDS": str(GRACE),
        }
    )
    # Each run: a first call that decides to answer, then the streamed answer: the long
    # run's streams for ~60 s, the short one's for ~1.5 s.
    scripted_server.enqueue(
        text(""), text(words(120), chunk_delay=0.5), text(""), text(words(6), chunk_delay=0.25)
    )
    ids = [server.api("POST", "/api/conversations/", {})["id"] for _ in range(3)]
    long_id, short_id, new_id = ids
    sockets = [
        await websockets.connect(
            f"{server.ws_url}/ws/chat/{cid}/", additional_headers=server.ws_headers()
        )
        for cid in ids
    ]
    long_ws, short_ws, new_ws = sockets
    try:
        await long_ws.send(json.dumps({"type": "message", "content": "long one"}))
        await next_of(long_ws, "answer.delta")  # its model call is the first request
        await short_ws.send(json.dumps({"type": "message", "content": "short one"}))
        await next_of(short_ws, "run.started")

        server.proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        await asyncio.to_thread(server.wait_until_draining, timeout=WAIT)
        await new_ws.send(json.dumps({"type": "message", "content": "after the signal"}))
        refused = await next_of(new_ws, "error", "run.started")
        assert refused["code"] == "server_draining", refused

        done = await next_of(short_ws, "done", "error")
        assert done["type"] == "done", done
        ended = await next_of(long_ws, "done", "error", "run.cancelled")
        assert ended["type"] == "error" and ended["code"] == "interrupted", ended
        assert time.monotonic() - signalled >= GRACE - 0.5
        assert server.proc.wait(timeout=30) is not None
    finally:
        for ws in sockets:
            await ws.close()

    short = stored_messages(server, short_id)
    assert [(m["role"], m["status"]) for m in short] == [("user", "done"), ("assistant", "done")]
    assert short[1]["content"] == words(6)
    long = stored_messages(server, long_id)
    assert [(m["role"], m["status"]) for m in long] == [
        ("user", "interrupted"),
        ("assistant", "interrupted"),
    ]
    assert long[1]["content"].startswith("w0 w1")  # the text shown so far is kept
    assert stored_messages(server, new_id) == []  # refused: nothing stored, nothing lost
