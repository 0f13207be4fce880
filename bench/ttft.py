"""Time to first token: what the server adds between the provider's first content chunk and
the client's first ``answer.delta``.

    .venv/bin/python bench/ttft.py [--turns 20] [--clients 50] [--client-turns 3] [--think 5]

Starts the scripted OpenAI-compatible server in this process, streaming like a provider: a
300 ms pause before the first delta (``--first-chunk-delay``), then 20 ms between deltas
(``--chunk-delay``). A daphne subprocess (SQLite, in-memory channel layer) talks to it
through the real ``openai`` SDK. The scripted server takes a ``time.perf_counter()`` stamp
right after it writes a stream's first content chunk; the websocket client, in the same
process, stamps the arrival of the first ``answer.delta`` of that turn. The difference is
the server-added time: the SDK reading the chunk, the ReAct loop, the event publisher, the
channel layer, daphne and the socket (both ends on loopback). Printed as p50/p95/max:

- at 1 client (``--turns`` turns one after another);
- at ``--clients`` paced clients (each sends ``--client-turns`` turns, ``--think`` s apart on
  average, starts spread over one think time).

Targets: p95 <= 10 ms at 1 client, <= 30 ms at 50 paced clients.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import websockets  # noqa: E402

from bench._daphne import start_bench_server  # noqa: E402
from bench.ws_load import create_conversations, percentile  # noqa: E402
from tests.support import scripted_server as scripted  # noqa: E402

REPLY = "The first words arrive while the model is still writing the rest of this reply."
TURN_TIMEOUT = 120.0

_first_content: dict[str, float] = {}
_lock = threading.Lock()


def _marker_of(body: dict) -> str | None:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            if message["content"].startswith("[ttft "):
                return message["content"].split("]", 1)[0] + "]"
    return None


def _on_first_content(body: dict, stamp: float) -> None:
    marker = _marker_of(body)
    if marker:
        with _lock:
            _first_content.setdefault(marker, stamp)


async def client(server, conversation_id: str, index: int, turns: int, think: float) -> dict:
    """{marker: perf_counter at the first answer.delta of that turn}."""
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    seen: dict[str, float] = {}
    pace = random.Random(index)
    async with websockets.connect(url, additional_headers=server.ws_headers()) as ws:
        if think:
            await asyncio.sleep(pace.uniform(0, think))
        for turn in range(turns):
            if think and turn:
                await asyncio.sleep(think * pace.uniform(0.5, 1.5))
            marker = f"[ttft c{index} t{turn}]"
            await ws.send(json.dumps({"type": "message", "content": f"{marker} hi"}))
            async with asyncio.timeout(TURN_TIMEOUT):
                while True:
                    event = json.loads(await ws.recv())
                    if event["type"] == "answer.delta" and marker not in seen:
                        seen[marker] = time.perf_counter()
                    elif event["type"] in ("done", "error"):
                        break
    return seen


async def phase(server, conversations: list[str], turns: int, think: float) -> list[float]:
    results = await asyncio.gather(
        *(client(server, cid, i, turns, think) for i, cid in enumerate(conversations))
    )
    added = []
    for seen in results:
        for marker, at in seen.items():
            with _lock:
                sent = _first_content.pop(marker, None)
            if sent is not None:
                added.append((at - sent) * 1000)
    return added


def report(label: str, added: list[float], expected: int, target: str) -> None:
    if not added:
        print(f"{label}: no measurements")
        return
    print(
        f"{label}: server-added ms p50={percentile(added, 0.5):.1f} "
        f"p95={percentile(added, 0.95):.1f} max={max(added):.1f} "
        f"mean={statistics.fmean(added):.1f} (n={len(added)} of {expected}; target {target})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=20, help="turns of the single client")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--client-turns", type=int, default=3)
    parser.add_argument("--think", type=float, default=5.0)
    parser.add_argument("--first-chunk-delay", type=float, default=0.3)
    parser.add_argument("--chunk-delay", type=float, default=0.02)
    args = parser.parse_args()

    reply = scripted.text(
        REPLY,
        usage=(200, 20),
        first_chunk_delay=args.first_chunk_delay,
        chunk_delay=args.chunk_delay,
    )
    llm = scripted.ScriptedServer(default=reply).start()
    llm.on_first_content = _on_first_content
    server = start_bench_server(llm)
    try:
        warm = create_conversations(server, 1)
        asyncio.run(phase(server, warm, 2, 0.0))  # imports, first SDK client, caches
        single = create_conversations(server, 1)
        one = asyncio.run(phase(server, single, args.turns, 0.0))
        many_ids = create_conversations(server, args.clients)
        many = asyncio.run(phase(server, many_ids, args.client_turns, args.think))
    finally:
        server.close()
        llm.stop()
    print(
        f"provider: first chunk after {args.first_chunk_delay * 1000:.0f} ms, "
        f"then {args.chunk_delay * 1000:.0f} ms per chunk"
    )
    report("1 client", one, args.turns, "p95 <= 10 ms")
    report(
        f"{args.clients} paced clients (think {args.think:g}s)",
        many,
        args.clients * args.client_turns,
        "p95 <= 30 ms",
    )


if __name__ == "__main__":
    main()
