"""Websocket load against several daphne processes on PostgreSQL + Redis.

    .venv/bin/python bench/ws_load_scale.py [--processes 2] [--clients 50] [--turns 5]

The deployment of docs/operations.md "Running at scale", on one machine: a private PostgreSQL and
Redis (tests/support/services.py), ``--processes`` daphne processes sharing them, and a
zero-latency scripted OpenAI-compatible server. Clients are spread round-robin over the
processes, each on its own conversation, each sending ``--turns`` messages one after
another (the client and checks of bench/ws_load.py). With ``--cross`` every client also
keeps a second socket on the *next* process, which must see the same ``done`` (events
cross processes through Redis).

Prints runs/s, p50/p95 server overhead per run (send -> ``done``, minus the scripted LLM's
own time), lost / duplicated / garbled runs, and for ``--cross`` the runs whose ``done``
the second socket missed. All traffic stays on 127.0.0.1; every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import websockets  # noqa: E402

from bench import ws_load  # noqa: E402
from tests.support import scripted_server as scripted  # noqa: E402
from tests.support.live_server import start_live_server  # noqa: E402
from tests.support.services import start_postgres, start_redis  # noqa: E402


async def watcher(server, conversation_id: str, expected_dones: int, stop: asyncio.Event) -> int:
    """A second socket on another process: counts the ``done`` events it sees."""
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    seen = 0
    async with websockets.connect(
        url, additional_headers=server.ws_headers(), max_size=2**22, open_timeout=60
    ) as ws:
        while seen < expected_dones and not stop.is_set():
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=1.0)
            except TimeoutError:
                continue
            if json.loads(raw).get("type") == "done":
                seen += 1
    return seen


async def load(servers, conversations, turns, mode, *, cross: bool, label="bench"):
    n = len(servers)
    stop = asyncio.Event()
    watchers = []
    if cross:
        watchers = [
            asyncio.create_task(watcher(servers[(i + 1) % n], cid, turns, stop))
            for i, cid in enumerate(conversations)
        ]
        await asyncio.sleep(1.0)  # let every watcher join its group before the load starts
    started = time.perf_counter()
    per_client = await asyncio.gather(
        *(
            ws_load.client(servers[i % n], cid, i, turns, mode, label)
            for i, cid in enumerate(conversations)
        ),
        return_exceptions=True,
    )
    wall = time.perf_counter() - started
    # The last done may still be on its way to a watcher: give them a moment, bounded.
    seen = []
    if watchers:
        await asyncio.wait(watchers, timeout=10)
        stop.set()
        seen = await asyncio.gather(*watchers, return_exceptions=True)
    results = []
    for outcome in per_client:
        if isinstance(outcome, BaseException):
            print(f"client failed: {type(outcome).__name__}: {outcome}")
        else:
            results.extend(outcome)
    return results, wall, seen


def report(args, results, wall, db, seen) -> None:
    expected = args.clients * args.turns
    finished = [r for r in results if r.seconds is not None]
    overhead = [(r.seconds - ws_load._llm_seconds.get(r.marker, 0.0)) * 1000 for r in finished]
    done_answers: dict[str, int] = defaultdict(int)
    for run_id, status, count in db["answers"]:
        if status == "done":
            done_answers[run_id] += count
    users = db["users"]
    markers = {f"[bench c{i} t{t}]" for i in range(args.clients) for t in range(args.turns)}
    run_ids = {rid for r in results for rid in r.run_ids}
    lost_db = sum(1 for m in markers if users.get(m, 0) == 0) + sum(
        1 for rid in run_ids if done_answers.get(rid, 0) == 0
    )
    duplicated = (
        sum(users.get(m, 0) - 1 for m in markers if users.get(m, 0) > 1)
        + sum(n - 1 for n in done_answers.values() if n > 1)
        + sum(r.dones - 1 for r in results if r.dones > 1)
        + sum(len(r.run_ids) - 1 for r in results if len(r.run_ids) > 1)
    )
    garbled = sum(1 for r in finished if r.text != ws_load.REPLY)
    print(
        f"processes={args.processes} clients={args.clients} turns={args.turns} "
        f"mode={args.mode} runs={expected} backend=postgresql+redis "
        f"CONN_MAX_AGE={args.conn_max_age}"
    )
    print(f"wall={wall:.2f}s  runs/s={len(finished) / wall:.1f}")
    if overhead:
        print(
            "server overhead per run (ms): "
            f"p50={ws_load.percentile(overhead, 0.5):.1f} "
            f"p95={ws_load.percentile(overhead, 0.95):.1f} "
            f"max={max(overhead):.1f} mean={statistics.fmean(overhead):.1f}"
        )
    print(
        f"lost: client={expected - len(finished)} db={lost_db}  duplicated={duplicated}  "
        f"garbled={garbled}"
    )
    if args.cross:
        missed = sum(args.turns - (s if isinstance(s, int) else 0) for s in seen)
        print(f"cross-process: second sockets missed {missed} of {expected} done events")
    errors = [r.error for r in results if r.error]
    if errors:
        print(f"errors ({len(errors)}): {sorted(set(errors))[:5]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--mode", choices=["react", "dag"], default="react")
    parser.add_argument("--cross", action="store_true", help="a second socket per client")
    parser.add_argument("--conn-max-age", type=int, default=60, help="CONN_MAX_AGE (seconds)")
    args = parser.parse_args()

    ws_load._instrument_scripted_server()
    llm = scripted.ScriptedServer(default=scripted.text(ws_load.REPLY, usage=(200, 20))).start()
    pg, redis, servers = start_postgres(), start_redis(), []
    try:
        env = {
            "DATABASE_URL": pg.url,
            "REDIS_URL": redis.url,
            "SECRET_KEY": secrets.token_urlsafe(50),
            "CONN_MAX_AGE": str(args.conn_max_age),
            "LLM_BASE_URL": llm.base_url,
            "LLM_API_KEY": "bench-key",
            "LLM_MODEL": "bench-model",
            "LOG_LEVEL": "WARNING",
            "FIMONE_WS_RATE_LIMIT": "1000000",
        }
        for _ in range(args.processes):  # one after the other: the first one migrates
            servers.append(start_live_server(env=env))
        conversations = ws_load.create_conversations(servers[0], args.clients)
        warm = ws_load.create_conversations(servers[0], args.processes)
        asyncio.run(load(servers, warm, 1, args.mode, cross=False, label="warm-up"))
        results, wall, seen = asyncio.run(
            load(servers, conversations, args.turns, args.mode, cross=args.cross)
        )
        db = ws_load.stored_counts(servers[0])
    finally:
        for server in servers:
            server.close()
        redis.stop()
        pg.stop()
        llm.stop()
    report(args, results, wall, db, seen)


if __name__ == "__main__":
    main()
