"""Durability: SIGKILL a real daphne in the middle of a run (issue 9; DESIGN §3, RU.3).

A real daphne subprocess talks to the scripted OpenAI-compatible server (in this process)
through the real ``openai`` SDK. The model is made slow, a run starts, and once the model
request is on the wire the server process is killed with SIGKILL — no shutdown handler
runs. Then the restart path of ``bin/run`` (``manage.py recover_runs``, then daphne)
brings it back on the same database, and the test shows:

- the user's message is stored, exactly as typed;
- the run's messages are ``interrupted`` — nothing is left ``running``/``pending`` forever;
- the messages API shows the same to a reconnecting browser;
- a new run in the same conversation answers.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import websockets

from tests.support import scripted_server as scripted

# Kills daphne mid-write: in parallel runs it shares the worker of the scale tests (never
# beside them), see docs/testing.md.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("servers")]

WAIT = 60.0  # hang guard on a small shared machine, not a speed requirement


def _stored(server, conversation_id: str) -> list[dict]:
    """The conversation's messages, read from the server's own database."""
    out = server.manage_shell(
        "import json; from chat.models import Message;"
        f"rows = Message.objects.filter(conversation_id='{conversation_id}').order_by('id');"
        "print(json.dumps([{'role': m.role, 'kind': m.kind, 'status': m.status,"
        " 'content': m.content, 'run_id': m.run_id or None} for m in rows]))"
    )
    return json.loads(out.strip().splitlines()[-1])


async def _events_until(ws, *types: str) -> list[dict]:
    events = []
    async with asyncio.timeout(WAIT):
        while True:
            event = json.loads(await ws.recv())
            events.append(event)
            if event["type"] in types:
                return events


def _wait_for_request(llm: scripted.ScriptedServer, count: int) -> None:
    deadline = time.monotonic() + WAIT
    while len(llm.requests) < count:
        assert time.monotonic() < deadline, "the run never called the model"
        time.sleep(0.05)


async def test_sigkill_mid_run_leaves_the_message_and_marks_the_run_interrupted(
    scripted_server, live_daphne_factory
):
    # Every model call waits 60 s: the run is certainly mid-call when the process dies.
    scripted_server.default = scripted.slow(60.0, "too late")
    server = live_daphne_factory(
        env={
            "LLM_BASE_URL": scripted_server.base_url,
            "LLM_API_KEY": "sk-durability",
            "LLM_MODEL": "durable-model",
        }
    )
    conversation = server.api("POST", "/api/conversations/", {"title": "durability"})["id"]
    url = f"{server.ws_url}/ws/chat/{conversation}/"
    typed = "Please remember: the launch code is 0000 — and don't lose this message!"

    async with websockets.connect(url, additional_headers=server.ws_headers()) as ws:
        await ws.send(json.dumps({"type": "message", "content": typed, "mode": "react"}))
        started = (await _events_until(ws, "run.started"))[-1]
        await asyncio.to_thread(_wait_for_request, scripted_server, 1)
        before = _stored(server, conversation)
        assert [(m["role"], m["status"]) for m in before] == [
            ("user", "pending"),
            ("assistant", "running"),
        ]
        server.kill()  # SIGKILL: no shutdown handler, no finally block runs
        with pytest.raises(websockets.ConnectionClosed):
            async with asyncio.timeout(WAIT):
                while True:
                    await ws.recv()

    # bin/run's restart path: mark what the dead process left, then serve again.
    recovered = server.manage("recover_runs").stdout
    assert "2" in recovered
    scripted_server.reset()
    scripted_server.default = scripted.text("Back again: the code was 0000.")
    server.start()

    after = _stored(server, conversation)
    assert [(m["role"], m["kind"], m["status"], m["run_id"]) for m in after] == [
        ("user", "query", "interrupted", started["run_id"]),
        ("assistant", "answer", "interrupted", started["run_id"]),
    ]
    assert after[0]["content"] == typed
    listed = server.api("GET", f"/api/conversations/{conversation}/messages/")
    items = listed["messages"]
    assert [(m["content"], m["status"]) for m in items][:1] == [(typed, "interrupted")]
    assert {m["status"] for m in items} == {"interrupted"}

    # The conversation goes on: a new run answers, the interrupted turn stays as it was.
    async with websockets.connect(url, additional_headers=server.ws_headers()) as ws:
        await ws.send(json.dumps({"type": "message", "content": "Still there?"}))
        events = await _events_until(ws, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    final = _stored(server, conversation)
    assert [(m["role"], m["status"]) for m in final] == [
        ("user", "interrupted"),
        ("assistant", "interrupted"),
        ("user", "done"),
        ("assistant", "done"),
    ]
    assert final[-1]["content"] == "Back again: the code was 0000."
    # The model saw the interrupted question as history: nothing the user typed was lost.
    last_request = scripted_server.requests[-1]["messages"]
    assert any(typed in (m.get("content") or "") for m in last_request if m["role"] == "user")
    # The server's own log (both lives) never printed the API key.
    assert server.log() and "sk-durability" not in server.log()
