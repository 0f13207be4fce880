"""Two daphne processes on one PostgreSQL and one Redis (issue 10, DESIGN §5, §8, RP.1).

A conversation runs in process A; a follow-up and a cancel sent through process B reach
that run through the channel layer; sockets on either process see every event; the
database agrees afterwards. The model is a scripted OpenAI-compatible server; a run's
first call answers only when the test releases it (``gated``), so a run is still going
when B speaks, however busy the machine.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from pathlib import Path

import pytest

from tests.scale.ws_client import Socket, of_type
from tests.support.live_server import LiveServer, free_port, server_env, start_live_server
from tests.support.scripted_server import Reply, ScriptedServer, gated, held

pytestmark = [pytest.mark.scale, pytest.mark.slow]


@pytest.fixture(scope="module")
def slow_model():
    """The model: what a test does not script is answered at once."""
    with ScriptedServer(default=Reply(content="Scripted answer.")) as s:
        yield s


@pytest.fixture(scope="module")
def cluster_env(postgres_server, migrated_template, redis_server, slow_model) -> dict[str, str]:
    """What every process of one deployment shares: database, channel layer, key, model."""
    return {
        "DATABASE_URL": postgres_server.create_database(
            f"two_{secrets.token_hex(6)}", template=migrated_template
        ),
        "REDIS_URL": redis_server.url,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "LLM_BASE_URL": slow_model.base_url,
        "LLM_API_KEY": "test-key",
        "LLM_MODEL": "scripted",
        "LLM_MAX_RETRIES": "0",
    }


def another_process(first: LiveServer, cluster_env: dict[str, str], data_dir: Path) -> LiveServer:
    """One more daphne of the deployment. The database is the first one's, migrated and
    holding the test user and its session, so it only starts (a setup process costs some
    three seconds of CPU)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    server = LiveServer(
        port=free_port(),
        data_dir=data_dir,
        env=server_env(data_dir, cluster_env),
        username=first.username,
        password=first.password,
        session_cookie=first.session_cookie,
    )
    server.start()
    return server


@pytest.fixture(scope="module")
def processes(cluster_env, tmp_path_factory):
    """Daphne A and B (A sets the database up: its user and session)."""
    servers = []
    try:
        servers.append(start_live_server(cluster_env, data_dir=tmp_path_factory.mktemp("a")))
        servers.append(another_process(servers[0], cluster_env, tmp_path_factory.mktemp("b")))
        yield servers
    finally:
        for server in servers:
            server.stop()


def new_conversation(server) -> str:
    return (
        server.manage_shell(
            "from django.contrib.auth import get_user_model\n"
            "from chat import services\n"
            f"user = get_user_model().objects.get(username='{server.username}')\n"
            "print(services.conversation_create(owner=user, title='scale').pk)"
        )
        .strip()
        .splitlines()[-1]
    )  # Django's shell may print a notice first


def messages_in_db(server, conversation_id: str) -> list[dict]:
    """The conversation's messages as stored, read by a separate process."""
    out = server.manage_shell(
        "import json\n"
        "from chat.models import Message\n"
        f"rows = Message.objects.filter(conversation_id='{conversation_id}').order_by('id')\n"
        "print(json.dumps([{'role': m.role, 'kind': m.kind, 'status': m.status,\n"
        "    'content': m.content, 'run_id': m.run_id or None} for m in rows]))"
    )
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(autouse=True)
def fresh_script(slow_model):
    """Each test starts with an empty reply queue: a reply one test left unused (a run
    cancelled before its model call, a test that failed midway) must not answer the next."""
    slow_model.reset()


async def test_follow_up_through_b_reaches_the_run_in_a(processes, slow_model):
    a, b = processes
    conversation = new_conversation(a)
    # The first model call answers only once B's follow-up is in, however busy the machine.
    answer = threading.Event()
    slow_model.enqueue(gated("Scripted answer.", answer))
    on_a = await Socket.open(a, conversation, "A")
    on_b = await Socket.open(b, conversation, "B")
    try:
        await on_a.send(type="message", content="What is the capital of France?")
        started = await on_a.wait_type("run.started")
        # B's socket sees A's run: its start, or, when B's socket joined the conversation
        # a moment after it (a busy process), the run's snapshot.
        seen_on_b = await on_b.wait_for(lambda e: e.get("type") in ("run.started", "run.active"))
        assert seen_on_b["run_id"] == started["run_id"]

        await on_b.send(type="message", content="Answer in one word, please.")
        injected = await on_b.wait_type("injected")
        assert injected["run_id"] == started["run_id"]  # injected, not a second run
        assert await on_a.wait_type("injected") == injected

        answer.set()
        done = await on_a.wait_type("done")
        assert await on_b.wait_type("done") == done
        assert done["run_id"] == started["run_id"]
    finally:
        answer.set()
        await on_a.close()
        await on_b.close()

    # A's engine saw B's follow-up: its last model call carried it (RP.1).
    last_request = json.dumps(slow_model.requests[-1])
    assert "Answer in one word, please." in last_request
    assert [e for e in on_b.events if e["type"] == "run.started"] == [started]

    stored = messages_in_db(b, conversation)
    # In storage order: the answer is started with the run, the follow-up comes later.
    assert [(m["role"], m["kind"], m["status"]) for m in stored] == [
        ("user", "query", "done"),
        ("assistant", "answer", "done"),
        ("user", "injected", "done"),
    ]
    assert {m["run_id"] for m in stored} == {started["run_id"]}


async def test_cancel_through_b_stops_the_run_in_a(processes, slow_model):
    a, b = processes
    conversation = new_conversation(a)
    answer = threading.Event()  # never set before the cancel: the model is still thinking
    slow_model.enqueue(gated("Scripted answer.", answer))
    on_a = await Socket.open(a, conversation, "A")
    on_b = await Socket.open(b, conversation, "B")
    try:
        await on_a.send(type="message", content="Write a long essay.")
        started = await on_b.wait_type("run.started")

        await on_b.send(type="cancel")
        cancelled = await on_a.wait_type("run.cancelled")
        assert cancelled["run_id"] == started["run_id"]
        assert await on_b.wait_type("run.cancelled") == cancelled
        assert not on_b.matching(of_type("error"))  # B found A's run: no "no_active_run"
    finally:
        answer.set()
        await on_a.close()
        await on_b.close()

    stored = messages_in_db(a, conversation)
    assert [(m["role"], m["status"]) for m in stored] == [
        ("user", "done"),
        ("assistant", "cancelled"),
    ]


async def test_messages_sent_to_both_processes_at_once_make_one_run(processes, slow_model):
    a, b = processes
    conversation = new_conversation(a)
    # The losing process may need two pings to find the run just started (its listener
    # joins a moment after the commit): the first model call answers only once the other
    # message is injected, so it cannot be left for a follow-up run on a busy machine.
    answer = threading.Event()
    slow_model.enqueue(gated("Scripted answer.", answer))
    on_a = await Socket.open(a, conversation, "A")
    on_b = await Socket.open(b, conversation, "B")
    try:
        await asyncio.gather(
            on_a.send(type="message", content="first, via A"),
            on_b.send(type="message", content="first, via B"),
        )
        started = await on_a.wait_type("run.started")
        injected = await on_a.wait_type("injected")
        assert injected["run_id"] == started["run_id"]
        # The sockets hear of the follow-up once it is stored; the message handing it to
        # the run may still be on its way, but an engine about to end reads the follow-ups
        # stored for its run (chat.runs.state.TrackedInjections): released now, the run
        # still takes it.
        answer.set()
        await on_a.wait_type("done")
        assert len(on_a.matching(of_type("run.started"))) == 1
    finally:
        answer.set()
        await on_a.close()
        await on_b.close()

    # Both messages are kept, and the later one went to the first one's run (checked
    # above) and was answered by it. Either process may win the race: whichever message
    # came first is the query.
    stored = messages_in_db(a, conversation)
    users = sorted((m["content"], m["kind"]) for m in stored if m["role"] == "user")
    assert [content for content, _ in users] == ["first, via A", "first, via B"], stored
    assert sorted(kind for _, kind in users) == ["injected", "query"], stored
    answers = [m for m in stored if m["role"] == "assistant"]
    assert [(m["status"], m["run_id"]) for m in answers] == [("done", started["run_id"])], stored
    last_request = json.dumps(slow_model.requests[-1])
    assert "first, via A" in last_request and "first, via B" in last_request


async def test_a_run_whose_process_died_is_reclaimed_by_the_next_message(
    processes, cluster_env, slow_model, tmp_path
):
    _, b = processes
    doomed = another_process(b, cluster_env, tmp_path / "doomed")
    conversation = new_conversation(b)
    never = threading.Event()  # the doomed run's model never answers: it dies mid-run
    in_call = threading.Event()
    slow_model.enqueue(gated("Scripted answer.", never, taken=in_call))
    try:
        on_doomed = await Socket.open(doomed, conversation, "doomed")
        await on_doomed.send(type="message", content="This run will be orphaned.")
        orphan = await on_doomed.wait_type("run.started")
        # The run is inside its model call (a fresh process's first call can take a minute
        # on a loaded machine; the bound only stops a hang).
        assert await asyncio.to_thread(in_call.wait, 300)
        doomed.kill()  # SIGKILL mid-run: its "running" answer stays behind
        await on_doomed.close()
    finally:
        never.set()
        doomed.close()

    on_b = await Socket.open(b, conversation, "B")
    try:
        await on_b.send(type="message", content="Are you still there?")
        started = await on_b.wait_type("run.started")  # a new run, not an injection
        assert started["run_id"] != orphan["run_id"]
        await on_b.wait_type("done")
        assert not on_b.matching(of_type("injected"))
    finally:
        await on_b.close()

    stored = messages_in_db(b, conversation)
    assert [(m["role"], m["status"], m["run_id"]) for m in stored] == [
        ("user", "interrupted", orphan["run_id"]),
        ("assistant", "interrupted", orphan["run_id"]),
        ("user", "done", started["run_id"]),
        ("assistant", "done", started["run_id"]),
    ]


async def test_recover_runs_at_a_restart_spares_the_live_runs_of_other_processes(
    processes, cluster_env, slow_model, tmp_path
):
    a, b = processes
    # An orphan: its process was killed mid-run.
    doomed = another_process(a, cluster_env, tmp_path / "doomed")
    orphaned_conversation = new_conversation(a)
    never = threading.Event()  # the doomed run's model never answers: it dies mid-run
    in_call = threading.Event()
    slow_model.enqueue(gated("Scripted answer.", never, taken=in_call))
    try:
        on_doomed = await Socket.open(doomed, orphaned_conversation, "doomed")
        await on_doomed.send(type="message", content="Orphan me.")
        orphan = await on_doomed.wait_type("run.started")
        # The run is inside its model call (a fresh process's first call can take a minute
        # on a loaded machine; the bound only stops a hang).
        assert await asyncio.to_thread(in_call.wait, 300)
        doomed.kill()
        await on_doomed.close()
    finally:
        never.set()
        doomed.close()
    # A live run in process A, its model answering only after recover_runs has looked.
    live_conversation = new_conversation(a)
    answer = threading.Event()
    slow_model.enqueue(gated("Scripted answer.", answer))
    on_a = await Socket.open(a, live_conversation, "A")
    try:
        await on_a.send(type="message", content="Keep going while B restarts.")
        live = await on_a.wait_type("run.started")

        # Process B restarts and recovers, as bin/run does, while A's run is going.
        await asyncio.to_thread(b.manage, "recover_runs")
        assert not on_a.matching(of_type("done"))  # A's run was still going meanwhile

        answer.set()
        done = await on_a.wait_type("done")
        assert done["run_id"] == live["run_id"]
    finally:
        answer.set()
        await on_a.close()

    assert [m["status"] for m in messages_in_db(a, live_conversation)] == ["done", "done"]
    orphaned = messages_in_db(a, orphaned_conversation)
    assert [(m["status"], m["run_id"]) for m in orphaned] == [
        ("interrupted", orphan["run_id"]),
        ("interrupted", orphan["run_id"]),
    ]


async def test_a_socket_joining_on_b_mid_run_gets_the_answer_so_far_exactly_once(
    processes, slow_model
):
    a, b = processes
    conversation = new_conversation(a)
    words = [f"w{i}" for i in range(40)]
    # An empty tool-free reply makes the engine write the answer with stream_chat(), which
    # the scripted server streams word by word: five words, then the rest once the late
    # socket has joined (however long its handshake takes on a busy machine).
    rest = threading.Event()
    streamed = held(Reply(content=" ".join(words), chunk_delay=0.02), rest, after=5)
    slow_model.enqueue(Reply(content=""), streamed)
    on_a = await Socket.open(a, conversation, "A")
    try:
        await on_a.send(type="message", content="Stream a long answer.")
        started = await on_a.wait_type("run.started")
        await on_a.wait_type("answer.delta")  # streaming has begun in A
        late = await Socket.open(b, conversation, "late on B")
        try:
            await late.wait_type("run.active")
            rest.set()
            done = await late.wait_type("done")
            assert done["run_id"] == started["run_id"]
        finally:
            await late.close()
    finally:
        rest.set()
        await on_a.close()

    first = late.events[0]
    assert first["type"] == "run.active" and first["run_id"] == started["run_id"]
    assert first["text"]  # it joined mid-stream: some answer text was already out
    deltas = [e["text"] for e in late.events if e["type"] == "answer.delta"]
    streamed_on_a = "".join(e["text"] for e in on_a.events if e["type"] == "answer.delta")
    assert first["text"] + "".join(deltas) == streamed_on_a  # no piece lost, none twice
    assert streamed_on_a.split() == words
