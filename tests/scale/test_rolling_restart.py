"""A rolling restart of one of two daphne processes on PostgreSQL + Redis loses no run (RO.1).

Process A gets SIGTERM while it streams an answer: the run finishes and both sockets (on A
and on B) see its ``done``; a new message sent to A meanwhile is refused with
``server_draining`` and, sent again through B, answered there; A exits, starts again and
serves. The database ends with every question answered and nothing interrupted or pending.
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import threading

import pytest

from tests.scale.test_two_processes import messages_in_db, new_conversation
from tests.scale.ws_client import Socket
from tests.support.live_server import start_live_server
from tests.support.scripted_server import Reply, ScriptedServer, held, tool_calls

pytestmark = [pytest.mark.scale, pytest.mark.slow]


@pytest.fixture(scope="module")
def model():
    with ScriptedServer(default=Reply(content="Scripted answer.")) as server:
        yield server


@pytest.fixture(scope="module")
def two_processes(postgres_server, migrated_template, redis_server, model, tmp_path_factory):
    env = {
        "DATABASE_URL": postgres_server.create_database(
            f"roll_{secrets.token_hex(6)}", template=migrated_template
        ),
        "REDIS_URL": redis_server.url,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "LLM_BASE_URL": model.base_url,
        "LLM_API_KEY": "test-key",
        "LLM_MODEL": "scripted",
        "LLM_MAX_RETRIES": "0",
        "FIMONE_DRAIN_SECONDS": "20",
    }
    servers = []
    try:
        for name in ("a", "b"):
            data_dir = tmp_path_factory.mktemp(f"roll-{name}")
            servers.append(start_live_server(env, data_dir=data_dir))
        yield servers
    finally:
        for server in servers:
            server.stop(timeout=30)


async def test_restarting_a_process_mid_run_loses_no_run(two_processes, model):
    a, b = two_processes
    running, waiting = new_conversation(a), new_conversation(a)
    words = [f"w{i}" for i in range(30)]
    # The run in A streams its answer: one word, then the rest once the deploy is under
    # way (however long the signal takes to act on a busy machine).
    rest = threading.Event()
    streamed = held(Reply(content=" ".join(words), chunk_delay=0.02), rest, after=1)
    model.enqueue(Reply(content=""), streamed)
    on_a, on_b = await Socket.open(a, running, "A"), await Socket.open(b, running, "B")
    other_on_a = await Socket.open(a, waiting, "A, second conversation")
    try:
        await on_a.send(type="message", content="Stream while A restarts.")
        started = await on_a.wait_type("run.started")
        await on_a.wait_type("answer.delta")

        a.proc.send_signal(signal.SIGTERM)  # the deploy reaches A
        await asyncio.to_thread(a.wait_until_draining)
        await other_on_a.send(type="message", content="Sent during the deploy.")
        refused = await other_on_a.wait_type("error")
        assert refused["code"] == "server_draining"
        rest.set()

        # The run in A finishes, and B's socket sees it too.
        for sock in (on_a, on_b):
            done = await sock.wait_type("done")
            assert done["run_id"] == started["run_id"]

        # The client sends the refused message again, through B this time.
        retried_on_b = await Socket.open(b, waiting, "B, second conversation")
        try:
            await retried_on_b.send(type="message", content="Sent during the deploy.")
            assert (await retried_on_b.wait_type("done"))["type"] == "done"
        finally:
            await retried_on_b.close()
    finally:
        rest.set()
        for sock in (on_a, on_b, other_on_a):
            await sock.close()

    assert await asyncio.to_thread(a.proc.wait, 30) is not None  # A drained and exited
    await asyncio.to_thread(a.manage, "recover_runs")  # as bin/run does at every start
    a.start()
    on_new_a = await Socket.open(a, running, "A again")
    try:
        await on_new_a.send(type="message", content="And after the restart?")
        assert (await on_new_a.wait_type("done"))["type"] == "done"
    finally:
        await on_new_a.close()

    stored = messages_in_db(b, running) + messages_in_db(b, waiting)
    assert {m["status"] for m in stored} == {"done"}, stored
    assert [m["role"] for m in stored].count("assistant") == 3


async def test_deleting_through_b_stops_the_run_in_a(two_processes, model):
    """RO.3 across processes: the delete reaches the run's control channel in A."""
    a, b = two_processes
    conversation = new_conversation(a)
    # A model that takes half a second to ask for a tool, again and again.
    looping = tool_calls(("calculator", {"expression": "1+1"}), delay=0.5)
    model.default = looping
    on_a, on_b = await Socket.open(a, conversation, "A"), await Socket.open(b, conversation, "B")
    try:
        await on_a.send(type="message", content="Go on forever.")
        started = await on_a.wait_type("run.started")
        await on_a.wait_type("step")
        await asyncio.to_thread(b.api, "DELETE", f"/api/conversations/{conversation}/")
        calls_at_delete = len(model.requests)
        for sock in (on_a, on_b):
            gone = await sock.wait_type("error")
            assert gone["code"] == "not_found"
        # The run (on A, whose socket asked) has ended: unstopped, it would make a call
        # every ~0.5 s and never log this.
        await asyncio.to_thread(
            a.wait_for_log, f"run {started['run_id']}: its conversation was deleted"
        )
        assert len(model.requests) <= calls_at_delete + 1  # at most the call in flight
    finally:
        model.default = Reply(content="Scripted answer.")
        await on_a.close()
        await on_b.close()
    assert messages_in_db(a, conversation) == []
