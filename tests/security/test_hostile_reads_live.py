"""What a tool reads, through a real daphne (``config.server``): a page sent one byte per
chunk, slow documents of one user, a tool server's huge JSON result. While each attack
runs, ``/healthz`` and another user's streaming answer keep their pace, and another user's
small upload is served (RO.9, RO.10).

"Keep their pace" is the longest wait for a ``/healthz`` answer and the longest pause
between two deltas of a stream sent every 50 ms, measured while the attack is still under
way, against a bound far above what an idle machine shows: the old code paused them from
2.3 s (a 20 MB tool result) to 19.5 s (a page in one-byte chunks). Where the attack lasts
long (the page), the bound is a share of the attack's own time in the same run: a loop the
attack blocks pauses for about all of it, a free loop on a loaded machine for a second or
two. One user's slow files are never done before the test ends them, so the others are
served while they are read however slowly the machine runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import websockets

from tests.support import documents
from tests.support.mcp_servers import REPO_ROOT, SERVER_MODULE
from tests.support.scripted_server import text, tool_calls
from tests.support.web_server import ARTICLE_FACT, serve_pages
from tests.support.ws_client import streamed_gaps

pytestmark = pytest.mark.slow

# The longest wait for /healthz, or pause of another user's stream, that the tests accept
# while an attack runs (generous for a shared 2-core machine; the old code: 2.3 s and more).
LARGEST_PAUSE_SECONDS = 1.5
# A long attack's share that a pause may take: a loop it blocks pauses for about all of its
# time (the old code: the whole fetch deadline), a free one on a machine at a load of 14 for
# 1.6 s of a 12 s attack.
PAUSE_SHARE_OF_ATTACK = 0.25


class HealthWatch:
    """``/healthz`` asked again and again in a thread until ``stop()``: how long each
    answer took."""

    def __init__(self, server) -> None:
        self.server = server
        self.waits: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(120)

    def _watch(self) -> None:
        while not self._stop.is_set():
            connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=120)
            asked = time.monotonic()
            try:
                connection.request("GET", "/healthz")
                connection.getresponse().read()
            finally:
                connection.close()
            self.waits.append(time.monotonic() - asked)
            self._stop.wait(0.05)


async def tool_turn(server, conversation_id: str, content: str) -> list[dict]:
    """One turn's frames, up to its end."""
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    frames: list[dict] = []
    async with websockets.connect(url, additional_headers=server.ws_headers()) as ws:
        await ws.send(json.dumps({"type": "message", "content": content, "mode": "react"}))
        async with asyncio.timeout(180):
            while True:
                frames.append(json.loads(await ws.recv()))
                if frames[-1]["type"] in ("done", "error"):
                    return frames


def tool_results(frames: list[dict]) -> list[str]:
    return [f["result"] for f in frames if f["type"] == "step" and f["kind"] == "tool_result"]


def streaming_answer(words: int = 240):
    """An answer of ``words`` deltas 50 ms apart."""
    return text("".join(f"w{i} " for i in range(words)), chunk_delay=0.05)


async def attack_and_watch(server, victim, attack, attack_started, attack_done):
    """Run ``attack`` (a coroutine); from the moment it is under way, ask /healthz again
    and again and stream the victim's answer. Returns the attack's result and what the
    victim saw (``Watched``)."""
    victim_cid = victim.api("POST", "/api/conversations/", {})["id"]
    attacking = asyncio.create_task(attack)
    async with asyncio.timeout(120):
        await attack_started()
    under_way = time.monotonic()
    streaming = asyncio.Event()
    with HealthWatch(server) as health:
        gaps = await streamed_gaps(victim, victim_cid, streaming)
        still_attacking = not attack_done()
    result = await attacking
    return result, Watched(gaps, health.waits, still_attacking, time.monotonic() - under_way)


@dataclass(frozen=True)
class Watched:
    """What the victim saw during an attack: the pauses of its stream, the waits for
    /healthz, and whether the attack was still running when the stream ended."""

    gaps: list[float]
    waits: list[float]
    during_the_attack: bool
    # From the moment the attack was under way to its end (its turn's last frame).
    attack_seconds: float

    def assert_kept_pace_through_a_long_attack(self) -> None:
        """No pause took more than ``PAUSE_SHARE_OF_ATTACK`` of the attack's time."""
        bound = PAUSE_SHARE_OF_ATTACK * self.attack_seconds
        lasted = f"of a {self.attack_seconds:.1f} s attack (bound {bound:.1f} s)"
        assert self.waits, "/healthz was never answered"
        assert max(self.waits) < bound, f"/healthz waited {max(self.waits):.1f} s {lasted}"
        # Fewer deltas: the answer came after the attack, and another reply than the stream.
        assert len(self.gaps) > 100, f"the answer did not stream: {len(self.gaps)} gaps"
        assert max(self.gaps) < bound, f"the stream paused {max(self.gaps):.1f} s {lasted}"
        assert self.during_the_attack, "the attack ended before the answer did: measure longer"


# --- a page sent one byte per chunk -----------------------------------------------------------


@pytest.fixture(scope="module")
def site():
    with serve_pages() as pages:
        yield pages


def test_a_page_sent_one_byte_per_chunk_does_not_stall_the_server(
    shared_daphne_factory, scripted_server, site
):
    """RO.9: the body is read off the event loop; /healthz and another user's stream keep
    their pace for the whole fetch deadline."""
    # The fetch deadline (16 s) outlasts the victim's answer (7 s) with room for it to
    # start on a busy machine; the old code paused everything for the whole deadline, so a
    # pause is measured against the attack's time (PAUSE_SHARE_OF_ATTACK: 4 s of 16).
    env = scripted_server.daphne_env(
        FIMONE_FETCH_ALLOWED_HOSTS="127.0.0.1", FIMONE_FETCH_TIMEOUT_SECONDS="16"
    )
    attacker, victim = shared_daphne_factory(env), shared_daphne_factory(env)
    page = site.url(f"/one-byte-chunks?s=60&n={uuid.uuid4().hex}")
    scripted_server.enqueue(tool_calls(("fetch_url", {"url": page})))
    frames: list[dict] = []

    async def attack() -> list[dict]:
        cid = attacker.api("POST", "/api/conversations/", {})["id"]
        frames.extend(await tool_turn(attacker, cid, "read that page"))
        return frames

    async def fetch_started() -> None:
        while not any(page.endswith(r.split(" ", 1)[1]) for r in site.requests):  # noqa: ASYNC110 - a thread appends
            await asyncio.sleep(0.05)
        # The victim's answer comes next, then the attacker's run gets the default reply.
        scripted_server.enqueue(streaming_answer(140))

    def fetch_done() -> bool:
        return any(f["type"] == "step" and f["kind"] == "tool_result" for f in frames)

    frames_seen, watched = asyncio.run(
        attack_and_watch(attacker, victim, attack(), fetch_started, fetch_done)
    )
    watched.assert_kept_pace_through_a_long_attack()
    assert frames_seen[-1]["type"] == "done", frames_seen[-1]
    [result] = tool_results(frames_seen)
    assert result.startswith("URL: ") and "xxxx" in result, result[:300]  # what arrived


# --- one user's slow documents ----------------------------------------------------------------


def upload(server, conversation_id: str, name: str, data: bytes) -> tuple[int, dict]:
    """(status, JSON answer) of a document upload as ``server``'s user."""
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    csrf = "c" * 32
    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Cookie": f"sessionid={server.session_cookie}; csrftoken={csrf}",
        "X-CSRFToken": csrf,
        "Origin": server.origin,
        "Referer": server.base_url + "/",
    }
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=180)
    try:
        connection.request(
            "POST", f"/api/conversations/{conversation_id}/attachments/", body, headers
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def extraction_workers(server_pid: int) -> dict[int, str]:
    """The server's extraction worker processes just now: pid -> state (``R``: running)."""
    workers = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == server_pid and b"fimone.extract.worker" in command:
            workers[int(entry.name)] = stat[0]
    return workers


def busy_extraction_workers(server_pid: int) -> list[int]:
    """The server's extraction worker processes running just now (reading a file)."""
    return [pid for pid, state in extraction_workers(server_pid).items() if state == "R"]


def end_extractions(server_pid: int, uploads: list[threading.Thread]) -> None:
    """Kill the server's extraction workers until the ``uploads`` have their answers: the
    slow files are read by one worker after another, and a worker killed mid-file is the
    upload's clear error (the pool starts a new one for the next file)."""
    deadline = time.monotonic() + 120
    while any(upload.is_alive() for upload in uploads):
        assert time.monotonic() < deadline, "the slow files never ended"
        for pid in extraction_workers(server_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def test_one_users_slow_documents_leave_a_worker_for_the_others(
    shared_daphne_factory, scripted_server, site
):
    """RO.10: three slow files of one user; meanwhile another user's small upload, and a
    third user's fetch_url of a small page, are served before any of the three is done."""
    # A slow file's worker is stopped (SIGSTOP) once it reads: it holds its worker, and no
    # file is done, however long the others take on a loaded machine (with a 10 s limit a
    # reader's turn took longer at a load of 14). The test then ends them by killing their
    # workers. A product that let them hold every worker keeps the others waiting until
    # their requests time out.
    env = scripted_server.daphne_env(
        FIMONE_FETCH_ALLOWED_HOSTS="127.0.0.1", FIMONE_DOCUMENT_EXTRACT_SECONDS="600"
    )
    attacker, victim, reader = (shared_daphne_factory(env) for _ in range(3))
    conversations = [
        user.api("POST", "/api/conversations/", {})["id"] for user in (attacker, victim)
    ]
    slow = documents.slow_pdf()
    answered: list[tuple[int, dict]] = []

    def attack(number: int) -> None:
        answered.append(upload(attacker, conversations[0], f"slow-{number}.pdf", slow))

    threads = [threading.Thread(target=attack, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 60
        while not (reading := busy_extraction_workers(attacker.proc.pid)):
            assert time.monotonic() < deadline, "no worker started reading the slow files"
            time.sleep(0.05)
        for pid in reading:
            os.kill(pid, signal.SIGSTOP)

        status, small = upload(victim, conversations[1], "note.txt", b"nineteen bytes here")
        uploads_done_before = len(answered)
        scripted_server.enqueue(
            tool_calls(("fetch_url", {"url": site.url("/article")})), text("Read.")
        )
        reader_cid = reader.api("POST", "/api/conversations/", {})["id"]
        frames = asyncio.run(tool_turn(reader, reader_cid, "read the article"))
        fetches_done_before = len(answered)
    finally:
        end_extractions(attacker.proc.pid, threads)

    assert (status, small.get("kind")) == (201, "document"), small
    assert uploads_done_before == 0, "the small upload waited for the slow files"
    [page] = tool_results(frames)
    assert ARTICLE_FACT in page, page[:300]
    assert fetches_done_before == 0, "the page waited for the slow files"
    # The slow files themselves end with a clear error: a worker that died mid-file reads as
    # one out of memory (test_isolated.py checks the time limit).
    codes = {answer.get("error", {}).get("code") for _, answer in answered}
    assert len(answered) == 3 and codes == {"document_too_large"}, answered


# --- a tool server's huge JSON result ----------------------------------------------------------


def test_a_tool_servers_huge_json_result_does_not_stall_the_server(
    shared_daphne_factory, scripted_server, tmp_path
):
    """RO.9: a 20 MB JSON text from a stdio tool server is cut in the relay process before
    the server reads it; /healthz and another user's stream keep their pace meanwhile."""
    config = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": ["-m", SERVER_MODULE, "stdio"]}
    config.write_text(json.dumps({"mcpServers": {"notes": {**entry, "cwd": str(REPO_ROOT)}}}))
    env = scripted_server.daphne_env(FIMONE_MCP_CONFIG=str(config))
    attacker, victim = shared_daphne_factory(env), shared_daphne_factory(env)
    scripted_server.enqueue(tool_calls(("notes__big_json", {"megabytes": 20})))
    frames: list[dict] = []
    called = asyncio.Event()

    async def attack() -> list[dict]:
        cid = attacker.api("POST", "/api/conversations/", {})["id"]
        url = f"{attacker.ws_url}/ws/chat/{cid}/"
        async with websockets.connect(url, additional_headers=attacker.ws_headers()) as ws:
            await ws.send(json.dumps({"type": "message", "content": "the big list, please"}))
            async with asyncio.timeout(180):
                while frames[-1:] == [] or frames[-1]["type"] not in ("done", "error"):
                    frames.append(json.loads(await ws.recv()))
                    if frames[-1]["type"] == "step" and frames[-1]["kind"] == "tool_call":
                        scripted_server.enqueue(streaming_answer(60))
                        called.set()
        return frames

    async def tool_called() -> None:
        await called.wait()

    def result_in() -> bool:
        return any(f["type"] == "step" and f["kind"] == "tool_result" for f in frames)

    frames_seen, watched = asyncio.run(
        attack_and_watch(attacker, victim, attack(), tool_called, result_in)
    )
    assert watched.waits and max(watched.waits) < LARGEST_PAUSE_SECONDS, watched.waits
    assert watched.gaps and max(watched.gaps) < LARGEST_PAUSE_SECONDS, max(watched.gaps)
    assert frames_seen[-1]["type"] == "done", frames_seen[-1]
    [result] = tool_results(frames_seen)
    assert result.startswith('[{"id": 12345'), result[:200]
