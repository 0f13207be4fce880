"""Websocket load benchmark: N concurrent clients against a real daphne.

    .venv/bin/python bench/ws_load.py [--clients 50] [--turns 5] [--mode react]

Starts a scripted OpenAI-compatible server in this process (zero latency, default reply)
and a daphne subprocess pointed at it (own temp data dir, SQLite, in-memory channel
layer), then opens ``--clients`` websocket connections, each on its own conversation,
each sending ``--turns`` messages one after another. Prints:

- runs/s over the whole load phase;
- p50/p95/max server overhead per run: client's send -> ``done`` received, minus the time
  the scripted LLM spent handling that run's requests (measured inside its handler);
- server CPU per run: the daphne process's user+system CPU time over the load phase
  divided by the runs (what a run costs the server, whatever else the machine is doing);
- lost runs (no ``done``, or no finished assistant message in the database), duplicated
  messages (a turn stored twice, a run answered twice) and garbled streams (the streamed
  text is not exactly the model's reply: a dropped or repeated ``answer.delta``).

Targets: p95 overhead <= 50 ms at 50 clients, 0 lost, 0 duplicated. Traffic goes
to 127.0.0.1 only; every wait is bounded, so the benchmark always ends by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import websockets  # noqa: E402

from bench._daphne import start_bench_server  # noqa: E402
from tests.support import scripted_server as scripted  # noqa: E402

REPLY = "Benchmark reply: the quick brown fox jumps over the lazy dog, 42 times."
TURN_TIMEOUT = 120.0


# --- how long the scripted LLM itself spent, per (client, turn) ---------------------------

_llm_seconds: dict[str, float] = defaultdict(float)
_llm_lock = threading.Lock()
_local = threading.local()


def _instrument_scripted_server() -> None:
    """Time every request inside the scripted server's handler, keyed by the turn marker."""
    take, do_post = scripted.ScriptedServer._take, scripted._Handler.do_POST

    def remembering_take(self, body, headers):
        _local.body = body
        return take(self, body, headers)

    def timed_post(self):
        _local.body = None
        start = time.perf_counter()
        do_post(self)
        spent = time.perf_counter() - start
        marker = _marker_of(_local.body)
        if marker:
            with _llm_lock:
                _llm_seconds[marker] += spent

    scripted.ScriptedServer._take = remembering_take
    scripted._Handler.do_POST = timed_post


def _marker_of(body: dict | None) -> str | None:
    if not body:
        return None
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            text = message["content"]
            if text.startswith("[bench "):
                return text.split("]", 1)[0] + "]"
    return None


# --- clients -----------------------------------------------------------------------------


@dataclass
class TurnResult:
    marker: str
    seconds: float | None = None  # None: no done (lost)
    text: str = ""
    run_ids: set[str] = field(default_factory=set)
    dones: int = 0
    events: int = 0  # frames the server sent for this turn
    error: str | None = None


async def client(
    server,
    conversation_id: str,
    index: int,
    turns: int,
    mode: str,
    label: str = "bench",
    think: float = 0.0,
) -> list:
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    results = []
    # People are not synchronised: with --think, clients arrive (open their socket) spread
    # over one think time and pause 0.5-1.5x it between turns (seeded: the same schedule
    # every run). Without, all connect at once and send back to back.
    pace = random.Random(index)
    if think:
        await asyncio.sleep(pace.uniform(0, think))
    async with websockets.connect(
        url, additional_headers=server.ws_headers(), max_size=2**22, open_timeout=60
    ) as ws:
        for turn in range(turns):
            if think and turn:
                await asyncio.sleep(think * pace.uniform(0.5, 1.5))
            marker = f"[{label} c{index} t{turn}]"
            result = TurnResult(marker)
            results.append(result)
            started = time.perf_counter()
            await ws.send(
                json.dumps({"type": "message", "content": f"{marker} hello", "mode": mode})
            )
            try:
                async with asyncio.timeout(TURN_TIMEOUT):
                    while True:
                        event = json.loads(await ws.recv())
                        kind = event["type"]
                        result.events += 1
                        if kind == "run.started":
                            result.run_ids.add(event["run_id"])
                        elif kind == "answer.delta":
                            result.text += event["text"]
                        elif kind == "done":
                            result.seconds = time.perf_counter() - started
                            result.dones += 1
                            break
                        elif kind == "error":
                            result.error = f"{event.get('code')}: {event.get('message')}"
                            break
            except TimeoutError:
                result.error = "timeout"
                break
    return results


# --- the database after the run ---------------------------------------------------------------


def stored_counts(server) -> dict:
    out = server.manage_shell(
        "import json, collections\n"
        "from chat.models import Message\n"
        "users = collections.Counter()\n"
        "answers = collections.Counter()\n"
        "for content, in Message.objects.filter(role='user').values_list('content'):\n"
        "    users[content.split(']', 1)[0] + ']'] += 1\n"
        "for run_id, status in Message.objects.filter(role='assistant')"
        ".values_list('run_id', 'status'):\n"
        "    answers[(run_id, status)] += 1\n"
        "print(json.dumps({'users': users,"
        " 'answers': [[r, s, n] for (r, s), n in answers.items()]}))\n",
        timeout=300,
    )
    return json.loads(out.strip().splitlines()[-1])


def create_conversations(server, count: int) -> list[str]:
    out = server.manage_shell(
        "import json\n"
        "from django.contrib.auth import get_user_model\n"
        "from chat.models import Conversation\n"
        f"user = get_user_model().objects.get(username={server.username!r})\n"
        f"rows = [Conversation(owner=user) for _ in range({count})]\n"
        "rows = Conversation.objects.bulk_create(rows)\n"
        "print(json.dumps([str(c.id) for c in rows]))\n"
    )
    return json.loads(out.strip().splitlines()[-1])


# --- main ----------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc), None where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After the command: state is field 3, utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """User + system CPU time of each thread of a process so far (Linux /proc)."""
    times = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        times[int(task.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return times


def cpu_split(pid: int, before: dict[int, float], after: dict[int, float]) -> tuple[float, float]:
    """CPU seconds between two readings: the event loop's (the main thread) and the rest
    (the database thread, the executor's threads; a thread that ended meanwhile is left
    out, so the rest is a lower bound)."""
    spent = {tid: after[tid] - before.get(tid, 0.0) for tid in after}
    loop = spent.pop(pid, 0.0)
    return loop, sum(spent.values())


def start_profiler(pid: int, path: str, *, every_thread: bool = False) -> subprocess.Popen:
    """py-spy sampling the process until stopped (``stop_profiler``): the thread holding the
    GIL, or with ``every_thread`` each thread that is on a CPU (a database thread inside
    SQLite's C code, the GIL released, counts too), its id in front of each stack."""
    spy = Path(sys.executable).with_name("py-spy")
    which = ["--threads"] if every_thread else ["--gil"]
    command = [str(spy), "record", *which, "--format", "raw", "--rate", "250"]
    command += ["--pid", str(pid), "--output", path]
    profiler = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # py-spy attaches before the load starts
    return profiler


def stop_profiler(profiler: subprocess.Popen) -> None:
    profiler.send_signal(signal.SIGINT)  # py-spy writes its file on an interrupt
    try:
        profiler.wait(timeout=60)
    except subprocess.TimeoutExpired:
        profiler.kill()


def print_hops(hops_dir: str, runs: int) -> None:
    """The database thread hops' CPU (``--hop-cpu``), per function, per run."""
    spent: dict[str, list] = {}
    for path in Path(hops_dir).glob("hops.*.json"):
        spent.update(json.loads(path.read_text(encoding="utf-8")))
    shutil.rmtree(hops_dir, ignore_errors=True)
    print("database thread hops (CPU of the thread that ran them):")
    for name, (calls, seconds) in sorted(spent.items(), key=lambda item: -item[1][1]):
        print(
            f"  {seconds * 1000 / runs:6.2f} ms per run  {calls:6d} calls  "
            f"{seconds * 1e6 / calls:7.0f} µs each  {name}"
        )
    total = sum(seconds for _calls, seconds in spent.values())
    print(f"  {total * 1000 / runs:6.2f} ms per run in all")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def load(
    server,
    conversations: list[str],
    turns: int,
    mode: str,
    label: str = "bench",
    think: float = 0.0,
) -> tuple[list, float]:
    started = time.perf_counter()
    per_client = await asyncio.gather(
        *(client(server, cid, i, turns, mode, label, think) for i, cid in enumerate(conversations)),
        return_exceptions=True,
    )
    wall = time.perf_counter() - started
    results, failures = [], 0
    for outcome in per_client:
        if isinstance(outcome, BaseException):
            failures += 1
            print(f"client failed: {type(outcome).__name__}: {outcome}")
        else:
            results.extend(outcome)
    return results, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--mode", choices=["react", "dag"], default="react")
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="mean seconds a client waits between its turns (0: send again at once)",
    )
    parser.add_argument(
        "--profile",
        metavar="PATH",
        help="record the server with py-spy during the load phase (collapsed stacks of the "
        "thread holding the GIL) into PATH; bench/profile_stacks.py sums them per run",
    )
    parser.add_argument(
        "--every-thread",
        action="store_true",
        help="with --profile: sample every thread on a CPU, not only the one holding the GIL",
    )
    parser.add_argument(
        "--hop-cpu",
        action="store_true",
        help="print the CPU time of each database thread hop per run (bench/_hop_cpu)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the server (repeatable), e.g. DATABASE_URL=…",
    )
    args = parser.parse_args()

    _instrument_scripted_server()
    llm = scripted.ScriptedServer(default=scripted.text(REPLY, usage=(200, 20))).start()
    env = dict(item.split("=", 1) for item in args.env)
    hops_dir = tempfile.mkdtemp(prefix="fimone-bench-hops-") if args.hop_cpu else None
    if hops_dir is not None:
        env.update(PYTHONPATH=str(REPO / "bench" / "_hop_cpu"), FIMONE_BENCH_HOP_CPU=hops_dir)
    server = start_bench_server(llm, **env)
    try:
        conversations = create_conversations(server, args.clients)
        # One warm-up turn on a conversation of its own (imports, first SDK client, caches).
        warm = create_conversations(server, 1)
        asyncio.run(load(server, warm, 1, args.mode, label="warm-up"))

        if hops_dir is not None:
            os.kill(server.proc.pid, signal.SIGUSR1)  # count the load's hops only
        profiler = (
            start_profiler(server.proc.pid, args.profile, every_thread=args.every_thread)
            if args.profile
            else None
        )
        cpu_before = cpu_seconds(server.proc.pid)
        threads_before = thread_cpu_seconds(server.proc.pid)
        results, wall = asyncio.run(
            load(server, conversations, args.turns, args.mode, think=args.think)
        )
        cpu_after = cpu_seconds(server.proc.pid)
        threads_after = thread_cpu_seconds(server.proc.pid)
        if profiler is not None:
            stop_profiler(profiler)
        db = stored_counts(server)
    finally:
        server.close()
        llm.stop()

    expected = args.clients * args.turns
    finished = [r for r in results if r.seconds is not None]
    overhead_ms = [(r.seconds - _llm_seconds.get(r.marker, 0.0)) * 1000 for r in finished]
    llm_ms = [_llm_seconds.get(r.marker, 0.0) * 1000 for r in finished]
    users = db["users"]
    done_answers = defaultdict(int)
    for run_id, status, count in db["answers"]:
        if status == "done":
            done_answers[run_id] += count
    markers = {f"[bench c{i} t{t}]" for i in range(args.clients) for t in range(args.turns)}
    run_ids = {rid for r in results for rid in r.run_ids}
    lost_client = expected - len(finished)
    lost_db = sum(1 for m in markers if users.get(m, 0) == 0) + sum(
        1 for rid in run_ids if done_answers.get(rid, 0) == 0
    )
    duplicated = (
        sum(users.get(m, 0) - 1 for m in markers if users.get(m, 0) > 1)
        + sum(n - 1 for n in done_answers.values() if n > 1)
        + sum(r.dones - 1 for r in results if r.dones > 1)
        + sum(len(r.run_ids) - 1 for r in results if len(r.run_ids) > 1)
    )
    garbled = sum(1 for r in finished if r.text != REPLY)
    errors = [r.error for r in results if r.error]

    print(
        f"clients={args.clients} turns={args.turns} mode={args.mode} think={args.think}s "
        f"runs={expected}"
    )
    print(f"wall={wall:.2f}s  runs/s={len(finished) / wall:.1f}")
    if overhead_ms:
        print(
            "server overhead per run (ms): "
            f"p50={percentile(overhead_ms, 0.5):.1f} p95={percentile(overhead_ms, 0.95):.1f} "
            f"max={max(overhead_ms):.1f} mean={statistics.fmean(overhead_ms):.1f}"
        )
        print(
            "scripted LLM time per run (ms): "
            f"p50={percentile(llm_ms, 0.5):.1f} p95={percentile(llm_ms, 0.95):.1f}"
        )
    if cpu_before is not None and cpu_after is not None and finished:
        cpu_ms = (cpu_after - cpu_before) * 1000 / len(finished)
        print(
            f"server CPU per run: {cpu_ms:.1f} ms ({(cpu_after - cpu_before) / wall:.0%} of a core)"
        )
        loop_s, rest_s = cpu_split(server.proc.pid, threads_before, threads_after)
        print(
            f"  of which the event loop's thread {loop_s * 1000 / len(finished):.1f} ms, "
            f"other threads (database, executor) {rest_s * 1000 / len(finished):.1f} ms"
        )
    if finished:
        print(f"frames per run: {statistics.fmean(r.events for r in finished):.1f}")
    if hops_dir is not None and finished:
        print_hops(hops_dir, len(finished))
    print(f"lost: client={lost_client} db={lost_db}  duplicated={duplicated}  garbled={garbled}")
    if errors:
        print(f"errors ({len(errors)}): {sorted(set(errors))[:5]}")


if __name__ == "__main__":
    main()
