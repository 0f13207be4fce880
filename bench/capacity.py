"""Memory of one idle websocket and of one running run, against a real daphne.

    .venv/bin/python bench/capacity.py [--sockets 500] [--runs 100]

Starts fimone's server (``config.server``, SQLite, in-memory channel layer) pointed at a
scripted OpenAI-compatible model whose streams stop after a few pieces until released, so
runs stay in the middle of streaming as long as needed. Then, reading daphne's resident
memory (VmRSS in /proc) after each step settles:

1. after a warm-up (imports, first SDK client, one finished run);
2. with ``--sockets`` websockets open and idle, each on its own conversation: RSS growth
   / sockets = memory of one idle socket; and daphne's CPU over 10 s of doing nothing with
   them (what idle sockets cost);
3. with ``--runs`` of those sockets each running a run that has streamed part of its answer
   and waits for the rest: RSS growth / runs = memory of one running run (on top of its
   socket);
4. the runs released and finished: what stays (caches, the allocator's free lists).

Prints each figure; docs/operations.md ("Capacity") turns them into a capacity model.
Loopback only; every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import websockets  # noqa: E402

from bench import ws_load  # noqa: E402
from bench._daphne import start_bench_server  # noqa: E402
from tests.support import scripted_server as scripted  # noqa: E402

ANSWER = " ".join(f"word{i}" for i in range(400))  # ~3 KB, streamed in pieces


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def settled_rss(pid: int, seconds: float = 3.0) -> int:
    """RSS once it stops moving (allocations of the last step done), read a few times."""
    time.sleep(seconds)
    return min(rss_kib(pid) for _ in range(3) if not time.sleep(0.2))


async def open_idle(server, conversations: list[str]) -> list:
    async def one(cid: str):
        return await websockets.connect(
            f"{server.ws_url}/ws/chat/{cid}/",
            additional_headers=server.ws_headers(),
            max_size=2**22,
            open_timeout=120,
        )

    sockets = []
    for start in range(0, len(conversations), 50):  # in waves, as people arrive
        sockets += await asyncio.gather(*(one(c) for c in conversations[start : start + 50]))
    return sockets


async def start_runs(sockets: list, held: threading.Event) -> list[asyncio.Task]:
    """Send a message on each socket; return once every run has streamed some text."""
    started = [asyncio.Event() for _ in sockets]

    async def drive(i: int, ws) -> str:
        await ws.send(json.dumps({"type": "message", "content": f"[cap {i}] hello"}))
        async with asyncio.timeout(300):
            while True:
                event = json.loads(await ws.recv())
                if event["type"] == "answer.delta":
                    started[i].set()
                elif event["type"] in ("done", "error"):
                    started[i].set()
                    return event["type"]

    tasks = [asyncio.create_task(drive(i, ws)) for i, ws in enumerate(sockets)]
    async with asyncio.timeout(300):
        await asyncio.gather(*(e.wait() for e in started))
    return tasks


async def gather(awaitables: list) -> list:
    return await asyncio.gather(*awaitables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sockets", type=int, default=500)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    runs = min(args.runs, args.sockets)

    release = threading.Event()
    reply = scripted.text(ANSWER, usage=(200, 400), hold=release, hold_after=5)
    llm = scripted.ScriptedServer(default=reply).start()
    server = start_bench_server(llm)
    pid = server.proc.pid
    loop = asyncio.new_event_loop()
    try:
        conversations = ws_load.create_conversations(server, args.sockets + 1)
        release.set()  # the warm-up run streams to the end
        loop.run_until_complete(ws_load.load(server, conversations[-1:], 2, "react", "warm-up"))
        release.clear()
        base = settled_rss(pid)

        sockets = loop.run_until_complete(open_idle(server, conversations[: args.sockets]))
        with_sockets = settled_rss(pid)
        cpu_before = ws_load.cpu_seconds(pid)
        time.sleep(10)
        idle_cpu = ws_load.cpu_seconds(pid) - cpu_before

        tasks = loop.run_until_complete(start_runs(sockets[:runs], release))
        running = settled_rss(pid)
        cpu_before = ws_load.cpu_seconds(pid)
        time.sleep(10)
        held_cpu = ws_load.cpu_seconds(pid) - cpu_before

        release.set()
        outcomes = loop.run_until_complete(gather(tasks))
        after = settled_rss(pid)
        loop.run_until_complete(gather([ws.close() for ws in sockets]))
        closed = settled_rss(pid)
    finally:
        release.set()
        server.close()
        llm.stop()
        loop.close()
        gc.collect()

    per_socket = (with_sockets - base) / args.sockets
    per_run = (running - with_sockets) / runs
    print(f"sockets={args.sockets} runs={runs} pid-rss-after-warm-up={base / 1024:.1f} MiB")
    print(
        f"idle sockets: +{(with_sockets - base) / 1024:.1f} MiB -> {per_socket:.1f} KiB per socket;"
        f" CPU over 10 s idle: {idle_cpu * 1000:.0f} ms"
    )
    print(
        f"running runs (mid-stream, waiting for the model): +{(running - with_sockets) / 1024:.1f}"
        f" MiB -> {per_run:.1f} KiB per run; CPU over 10 s waiting: {held_cpu * 1000:.0f} ms"
    )
    print(
        f"after the runs finished: {after / 1024:.1f} MiB; after the sockets closed: "
        f"{closed / 1024:.1f} MiB; outcomes: {sorted(set(outcomes))} x {len(outcomes)}"
    )
    print(
        json.dumps(
            {
                "per_socket_kib": round(per_socket, 1),
                "per_run_kib": round(per_run, 1),
                "base_mib": round(base / 1024, 1),
                "idle_cpu_ms_per_10s": round(idle_cpu * 1000),
                "pid": os.getpid(),
            }
        )
    )


if __name__ == "__main__":
    main()
