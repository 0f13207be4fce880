"""End to end: a real daphne on a loopback port, a real websocket client (issue 7).

Log in through ``/accounts/login/`` (CSRF cookie and form token), create a conversation
through the JSON API, connect with the session cookie and an Origin header, and drive a
ReAct and a DAG run; then check what the server's own database holds. The server runs on
the built-in offline model, and once against the scripted OpenAI-compatible server through
the real ``openai`` SDK.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from tests.support.scripted_server import text
from tests.support.ws_client import WAIT, Browserless, run_turn, stored_messages, types

pytestmark = pytest.mark.slow


async def test_react_and_dag_runs_against_a_real_daphne(live_daphne):
    client = Browserless(live_daphne)
    client.login()
    conversation = client.api("POST", "/api/conversations/", {"title": "e2e"})
    url = f"{live_daphne.ws_url}/ws/chat/{conversation['id']}/"

    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        react = await run_turn(ws, "What is 17*23?", "react")
        dag = await run_turn(ws, "Compare 6*7 and 5*8 and say which is larger.", "dag")

    assert types(react)[0] == "run.started" and types(react)[-1] == "done", react
    tool_calls = [e for e in react if e["type"] == "step" and e["kind"] == "tool_call"]
    assert [e["name"] for e in tool_calls] == ["calculator"]
    assert "391" in "".join(e["text"] for e in react if e["type"] == "answer.delta")

    assert types(dag)[0] == "run.started" and types(dag)[-1] == "done", dag
    for kind in ("dag.plan", "dag.step", "dag.analysis", "answer.delta"):
        assert kind in types(dag)

    stored = stored_messages(live_daphne, conversation["id"])
    assert [(m["role"], m["status"]) for m in stored] == [
        ("user", "done"),
        ("assistant", "done"),
        ("user", "done"),
        ("assistant", "done"),
    ]
    # Stored unpinned: ``pinned`` is the user's keep-verbatim pin, not the run's query.
    assert stored[0]["content"] == "What is 17*23?" and not stored[0]["pinned"]
    assert stored[1]["metadata"]["usage"] == react[-1]["usage"]
    assert stored[3]["metadata"]["usage"] == dag[-1]["usage"]
    assert stored[3]["metadata"]["mode"] == "dag"
    # What the HTTP API shows a reconnecting client is the same.
    listed = client.api("GET", f"/api/conversations/{conversation['id']}/messages/")
    assert [m["id"] for m in listed["messages"]] == [
        react[0]["message_id"],
        react[-1]["message_id"],
        dag[0]["message_id"],
        dag[-1]["message_id"],
    ]


async def test_socket_refusals_on_a_real_server(live_daphne):
    client = Browserless(live_daphne)
    client.login()
    conversation = client.api("POST", "/api/conversations/", {})
    url = f"{live_daphne.ws_url}/ws/chat/{conversation['id']}/"

    # No session: accepted, then closed with 4401.
    async with websockets.connect(url, additional_headers={"Origin": live_daphne.origin}) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), WAIT)
    assert closed.value.rcvd.code == 4401

    # A foreign origin never gets a socket.
    headers = {**client.ws_headers(), "Origin": "https://evil.example"}
    with pytest.raises(websockets.InvalidStatus):
        async with websockets.connect(url, additional_headers=headers):
            pass

    # A bad frame is answered and the socket stays open.
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        await ws.send("{not json")
        assert json.loads(await asyncio.wait_for(ws.recv(), WAIT))["code"] == "invalid_json"
        await ws.send(json.dumps({"type": "cancel"}))
        assert json.loads(await asyncio.wait_for(ws.recv(), WAIT))["code"] == "no_active_run"


async def test_run_through_the_openai_sdk_against_the_scripted_server(
    shared_daphne_factory, scripted_server
):
    server = shared_daphne_factory(
        env={
            "LLM_BASE_URL": scripted_server.base_url,
            "LLM_API_KEY": "test-key",
            "LLM_MODEL": "scripted-model",
        }
    )
    scripted_server.enqueue(text("Hello from the scripted model.", usage=(120, 9)))
    client = Browserless(server)
    client.login()
    conversation = client.api("POST", "/api/conversations/", {})
    url = f"{server.ws_url}/ws/chat/{conversation['id']}/"
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        events = await run_turn(ws, "Say hello", "react")

    assert types(events)[-1] == "done", events
    assert "".join(e["text"] for e in events if e["type"] == "answer.delta") == (
        "Hello from the scripted model."
    )
    assert events[-1]["usage"]["input_tokens"] == 120
    assert events[-1]["usage"]["output_tokens"] == 9
    assert scripted_server.requests[0]["model"] == "scripted-model"
    stored = stored_messages(server, conversation["id"])
    assert stored[-1]["content"] == "Hello from the scripted model."


async def test_server_killed_mid_run_loses_nothing_the_user_typed(
    live_daphne_factory, scripted_server
):
    """SIGKILL during a run: after restart (bin/run's recover_runs) the question is still
    there, the run is marked interrupted, and the conversation goes on."""
    from tests.support.scripted_server import slow

    server = live_daphne_factory(
        env={
            "LLM_BASE_URL": scripted_server.base_url,
            "LLM_API_KEY": "test-key",
            "LLM_MODEL": "scripted-model",
        }
    )
    scripted_server.enqueue(slow(60))
    client = Browserless(server)
    client.login()
    conversation = client.api("POST", "/api/conversations/", {})
    url = f"{server.ws_url}/ws/chat/{conversation['id']}/"
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        await ws.send(json.dumps({"type": "message", "content": "Do not lose me", "mode": "react"}))
        started = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
        assert started["type"] == "run.started"
        server.kill()
    scripted_server.reset()
    server.manage("recover_runs")
    server.start()

    stored = stored_messages(server, conversation["id"])
    assert [(m["role"], m["content"], m["status"]) for m in stored] == [
        ("user", "Do not lose me", "interrupted"),
        ("assistant", "", "interrupted"),
    ]
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        events = await run_turn(ws, "Are you back?", "react")
    assert types(events)[-1] == "done", events
