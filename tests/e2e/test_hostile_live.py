"""What the hostile test saw from outside, against a real daphne and real websockets.

- RO.2: a legal 99,000-emoji message and a 20 MB model answer keep every socket of the
  conversation open, and both see the run's ``done`` (no frame over daphne's 1 MiB);
- JSON nested 1,100 deep is an ``invalid_json`` error frame, and the socket stays open;
- two messages sent back to back leave no user message ``pending``;
- RO.3: deleting a conversation mid-run stops the run: its sockets are closed with 4404,
  no delta follows, and the model is not called again.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import pytest
import websockets

from tests.e2e.test_ws_runs import stored_messages
from tests.support.scripted_server import text, tool_calls

pytestmark = pytest.mark.slow

WAIT = 120.0


@pytest.fixture
def scripted_daphne(shared_daphne_factory, scripted_server):
    return shared_daphne_factory(
        env={"LLM_BASE_URL": scripted_server.base_url, "LLM_API_KEY": "k", "LLM_MODEL": "m"}
    )


async def connect(server, conversation_id: str):
    # No client pings: a browser sends none, and on a loaded machine a daphne busy writing a
    # 20 MB answer can answer a ping after the client library's 20 s, which closed the
    # socket with 1011 before ``done`` arrived; WAIT still bounds every wait.
    return await websockets.connect(
        f"{server.ws_url}/ws/chat/{conversation_id}/",
        additional_headers=server.ws_headers(),
        ping_interval=None,
    )


async def until(ws, *kinds: str) -> list[dict]:
    """Every frame up to and including the first of ``kinds``."""
    frames = []
    async with asyncio.timeout(WAIT):
        while True:
            frame = json.loads(await ws.recv())
            frames.append(frame)
            if frame["type"] in kinds:
                return frames


async def still_open(ws) -> None:
    await ws.send(json.dumps({"type": "cancel"}))
    frames = await until(ws, "error")
    assert frames[-1]["code"] == "no_active_run"


async def test_a_99000_emoji_message_keeps_both_tabs_open(scripted_daphne, scripted_server):
    scripted_server.enqueue(text("Nice emoji."))
    cid = scripted_daphne.api("POST", "/api/conversations/", {})["id"]
    sender, other_tab = await connect(scripted_daphne, cid), await connect(scripted_daphne, cid)
    try:
        content = "😀" * 99_000  # under the 100,000-character limit
        # UTF-8 on the wire (396 KB): escaped it would exceed daphne's inbound limit itself.
        await sender.send(json.dumps({"type": "message", "content": content}, ensure_ascii=False))
        for ws in (sender, other_tab):
            frames = await until(ws, "done", "error")
            assert frames[-1]["type"] == "done", frames[-1]
            started = next(f for f in frames if f["type"] == "run.started")
            assert started["truncated"] is True and started["content"].startswith("😀" * 100)
            await still_open(ws)
    finally:
        await sender.close()
        await other_tab.close()
    stored = stored_messages(scripted_daphne, cid)
    assert stored[0]["content"] == content  # the whole message is kept


async def test_a_20_mb_answer_reaches_both_tabs_whole(scripted_daphne, scripted_server):
    answer = " ".join(["y" * 999_999] * 20)  # 20 MB
    scripted_server.enqueue(text(answer))
    cid = scripted_daphne.api("POST", "/api/conversations/", {})["id"]
    sender, other_tab = await connect(scripted_daphne, cid), await connect(scripted_daphne, cid)
    try:
        await sender.send(json.dumps({"type": "message", "content": "a long one, please"}))
        for ws in (sender, other_tab):
            frames = await until(ws, "done", "error")
            assert frames[-1]["type"] == "done", frames[-1]
            streamed = "".join(f["text"] for f in frames if f["type"] == "answer.delta")
            assert streamed == answer
            await still_open(ws)
    finally:
        await sender.close()
        await other_tab.close()


async def test_json_nested_1100_deep_is_an_error_frame_and_the_socket_lives(scripted_daphne):
    cid = scripted_daphne.api("POST", "/api/conversations/", {})["id"]
    async with await connect(scripted_daphne, cid) as ws:
        await ws.send("[" * 1_100 + "]" * 1_100)
        frames = await until(ws, "error")
        assert frames[-1]["code"] == "invalid_json"
        await ws.send('{"type": "message", "content": ' + "[" * 1_100 + "]" * 1_100 + "}")
        assert (await until(ws, "error"))[-1]["code"] == "invalid_json"
        await still_open(ws)


async def _until_second_is_taken(ws, runs_started: int) -> None:
    """Read until the server has taken the second message: injected into a run, or a run
    started for it (``runs_started``: the runs this socket already saw start)."""
    async with asyncio.timeout(WAIT):
        while True:
            frame = json.loads(await ws.recv())
            assert frame["type"] != "error", frame
            if frame["type"] == "injected":
                return
            if frame["type"] == "run.started":
                runs_started += 1
                if runs_started == 2:
                    return


@pytest.mark.parametrize("second_at", ["once", "done"])
async def test_messages_sent_back_to_back_leave_nothing_pending(
    scripted_daphne, scripted_server, second_at
):
    """RO.2-adjacent finding: follow-ups answered by a follow-up run were left ``pending``.
    ``once``: both frames at once; ``done``: the second the moment the first answer is done,
    while the run is still closing."""
    scripted_server.default = text("An answer.", delay=0.2)
    ids = [scripted_daphne.api("POST", "/api/conversations/", {})["id"] for _ in range(6)]
    sockets = [await connect(scripted_daphne, cid) for cid in ids]
    message = {"type": "message", "content": "first"}
    try:
        for ws in sockets:
            await ws.send(json.dumps(message))
            if second_at == "once":
                await ws.send(json.dumps({**message, "content": "second"}))
        if second_at == "done":
            for ws in sockets:
                await until(ws, "done")
                await ws.send(json.dumps({**message, "content": "second"}))
        for ws in sockets:
            await _until_second_is_taken(ws, 0 if second_at == "once" else 1)
    finally:
        for ws in sockets:
            await ws.close()
    for cid in ids:
        stored = settled_messages(scripted_daphne, cid)
        users = [(m["content"], m["status"]) for m in stored if m["role"] == "user"]
        assert users == [("first", "done"), ("second", "done")], stored


def settled_messages(server, conversation_id: str) -> list[dict]:
    """The stored messages once no question waits and no answer runs, or as they are after
    ``WAIT``. The sockets cannot tell when the last run ends: the second message may be
    taken by the first run or answered by a follow-up run that starts after its ``done``."""
    deadline = time.monotonic() + WAIT
    while True:
        stored = stored_messages(server, conversation_id)
        busy = [
            m
            for m in stored
            if (m["role"], m["status"]) in (("user", "pending"), ("assistant", "running"))
        ]
        if not busy or time.monotonic() > deadline:
            return stored
        time.sleep(0.1)


def _delete(server, conversation_id: str) -> int:
    csrf = "c" * 32
    request = urllib.request.Request(
        f"{server.base_url}/api/conversations/{conversation_id}/",
        method="DELETE",
        headers={
            "Cookie": f"sessionid={server.session_cookie}; csrftoken={csrf}",
            "X-CSRFToken": csrf,
            "Origin": server.origin,
            "Referer": server.base_url + "/",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


async def test_deleting_a_conversation_mid_run_stops_the_run(scripted_daphne, scripted_server):
    # A model that takes half a second to ask for a tool, again and again.
    scripted_server.default = tool_calls(("calculator", {"expression": "1+1"}), delay=0.5)
    cid = scripted_daphne.api("POST", "/api/conversations/", {})["id"]
    ws, other_tab = await connect(scripted_daphne, cid), await connect(scripted_daphne, cid)
    try:
        await ws.send(json.dumps({"type": "message", "content": "go on forever"}))
        (started,) = [f for f in await until(ws, "step") if f["type"] == "run.started"]
        assert _delete(scripted_daphne, cid) == 204
        deleted_at = time.monotonic()
        calls_at_delete = len(scripted_server.requests)
        for sock in (ws, other_tab):
            late = []
            with pytest.raises(websockets.ConnectionClosed) as closed:
                async with asyncio.timeout(WAIT):
                    while True:
                        late.append(json.loads(await sock.recv()))
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404
            # Whatever was in flight at the 204 came first; the close is the last word.
            assert time.monotonic() - deleted_at < 10
        # The run has ended (unstopped, it would call the model every ~0.5 s and never
        # log this); whatever it asked after the delete was the call in flight.
        await asyncio.to_thread(
            scripted_daphne.wait_for_log,
            f"run {started['run_id']}: its conversation was deleted",
            timeout=WAIT,
        )
        assert len(scripted_server.requests) <= calls_at_delete + 1
    finally:
        await ws.close()
        await other_tab.close()
    assert stored_messages(scripted_daphne, cid) == []
