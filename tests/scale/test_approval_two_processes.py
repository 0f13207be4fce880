"""Tool approval across two daphne processes on one PostgreSQL and one Redis: the run waits
in process A, the user answers on a socket of process B, and the answer reaches the run
through the channel layer (its control group, as a cancel does). A socket of B joining
while the run waits gets the request in ``run.active`` (the owner's snapshot)."""

from __future__ import annotations

import json
import secrets

import pytest

from tests.scale.test_two_processes import messages_in_db, new_conversation
from tests.scale.ws_client import Socket
from tests.support.live_server import start_live_server
from tests.support.scripted_server import ScriptedServer, text, tool_calls

pytestmark = [pytest.mark.scale, pytest.mark.slow]


@pytest.fixture(scope="module")
def model():
    with ScriptedServer() as server:
        yield server


@pytest.fixture(scope="module")
def processes(postgres_server, migrated_template, redis_server, model, tmp_path_factory):
    env = {
        "DATABASE_URL": postgres_server.create_database(
            f"appr_{secrets.token_hex(6)}", template=migrated_template
        ),
        "REDIS_URL": redis_server.url,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "LLM_BASE_URL": model.base_url,
        "LLM_API_KEY": "test-key",
        "LLM_MODEL": "scripted",
        "FIMONE_EXTRA_TOOLS": "tests.support.approval_tool:approval_tools",
    }
    servers = []
    try:
        for name in ("a", "b"):
            data_dir = tmp_path_factory.mktemp(f"daphne-{name}")
            servers.append(start_live_server(env, data_dir=data_dir))
        yield servers
    finally:
        for server in servers:
            server.stop()


def note(text_: str):
    return tool_calls({"id": "n1", "name": "send_note", "arguments": json.dumps({"text": text_})})


async def test_an_answer_on_process_b_reaches_the_run_waiting_in_a(processes, model):
    a, b = processes
    conversation = new_conversation(a)
    model.enqueue(note("across processes"), text("The note went out."))
    on_a = await Socket.open(a, conversation, "A")
    try:
        await on_a.send(type="message", content="Send the note", mode="react")
        request = await on_a.wait_type("tool.approval")
        # B joins while the run waits in A: the owner's snapshot carries the request.
        on_b = await Socket.open(b, conversation, "B")
        try:
            active = await on_b.wait_type("run.active")
            (pending,) = [s for s in active["steps"] if s["kind"] == "approval"]
            assert (pending["request_id"], pending["status"]) == (request["request_id"], "pending")
            await on_b.send(type="approval", request_id=request["request_id"], decision="once")
            resolved = await on_a.wait_type("tool.approval.resolved")
            assert resolved["decision"] == "once"
            assert (await on_b.wait_type("tool.approval.resolved")) == resolved
            done = await on_a.wait_type("done")
            assert await on_b.wait_type("done") == done
            assert not [e for e in on_b.events if e["type"] == "error"]
        finally:
            await on_b.close()
    finally:
        await on_a.close()
    tool_results = [m for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_results] == ["note sent: across processes"]
    stored = messages_in_db(b, conversation)
    assert [(m["role"], m["status"]) for m in stored] == [("user", "done"), ("assistant", "done")]
