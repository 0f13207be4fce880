"""Event-loop stalls of a real daphne while 50 clients chat and one long conversation compacts.

    .venv/bin/python bench/loop_stall.py [--clients 50] [--turns 5] [--messages 2000]

Starts the scripted OpenAI-compatible server and a daphne subprocess (as bench/ws_load.py
does) with the event-loop lag monitor waking every 2 ms and writing its figures to a file.
A conversation of ``--messages`` stored messages (questions, answers, pasted log excerpts)
is prepared; the budget (16,000 usable input tokens) makes its next request compact it.

Phase 1: the clients chat (``--turns`` each, back to back) — the largest stall of the
process while it serves chat only. Phase 2: the same load again while one more client sends
a message on the long conversation: DbMemory loads it and compacts it with the LLM (the
transcript split and fact check run in a worker thread) — the largest stall over both
phases, and how long that one request took. Target: no stall over 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import websockets  # noqa: E402
from ws_load import REPLY, create_conversations, load  # noqa: E402

from tests.support import scripted_server as scripted  # noqa: E402
from tests.support.live_server import start_live_server  # noqa: E402


def long_conversation(server, messages: int) -> str:
    out = server.manage_shell(
        "import json, random\n"
        "from django.contrib.auth import get_user_model\n"
        "from chat.models import Conversation, Message\n"
        f"user = get_user_model().objects.get(username={server.username!r})\n"
        "c = Conversation.objects.create(owner=user, title='long')\n"
        "rng = random.Random(5)\n"
        "rows = []\n"
        f"for i in range({messages}):\n"
        "    if i % 2 == 0:\n"
        "        text = f'Question {i}: order ORD-{40000 + i} weighs {rng.randint(2, 90)} kg, '"
        " + 'please check the staging config and the dashboard again. ' * 2\n"
        "        if i % 50 == 0:\n"
        "            text += '\\n' + '\\n'.join(f'2026-03-{d % 28 + 1:02d}T10:00:00Z INFO "
        "req={rng.randint(1000, 99999)} took {rng.randint(1, 900)}ms' for d in range(60))\n"
        "        rows.append(Message(conversation=c, role='user', kind='query', content=text,"
        " status='done'))\n"
        "    else:\n"
        "        rows.append(Message(conversation=c, role='assistant', kind='answer',"
        " content=f'Answer {i}: the numbers are consistent, latency p95 is "
        "{rng.randint(80, 400)} ms. ' * 3, status='done'))\n"
        "Message.objects.bulk_create(rows)\n"
        "print(json.dumps(str(c.id)))\n",
        timeout=300,
    )
    return json.loads(out.strip().splitlines()[-1])


def report(path: Path) -> dict:
    for _ in range(50):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.1)
    return {}


async def long_request(server, conversation_id: str) -> tuple[float, list[str]]:
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    kinds = []
    async with websockets.connect(
        url, additional_headers=server.ws_headers(), max_size=2**22, open_timeout=60
    ) as ws:
        await asyncio.sleep(0.5)  # start while the chat load is running
        started = time.perf_counter()
        await ws.send(json.dumps({"type": "message", "content": "What next?", "mode": "react"}))
        async with asyncio.timeout(300):
            while True:
                event = json.loads(await ws.recv())
                kinds.append(event["type"] + (f":{event['scope']}" if "scope" in event else ""))
                if event["type"] in ("done", "error"):
                    return time.perf_counter() - started, kinds


async def phase_two(server, conversations, turns, long_id):
    return await asyncio.gather(
        load(server, conversations, turns, "react"), long_request(server, long_id)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()

    lag_file = Path(tempfile.mkdtemp(prefix="fimone-lag-")) / "lag.json"
    llm = scripted.ScriptedServer(default=scripted.text(REPLY, usage=(200, 20))).start()
    server = start_live_server(
        env={
            "LLM_BASE_URL": llm.base_url,
            "LLM_API_KEY": "bench-key",
            "LLM_MODEL": "bench-model",
            "LLM_CONTEXT_SIZE": "20000",
            "LLM_MAX_OUTPUT_TOKENS": "4000",
            "LOG_LEVEL": "WARNING",
            "FIMONE_WS_RATE_LIMIT": "1000000",
            "FIMONE_LOOP_MONITOR_INTERVAL_MS": "2",
            "FIMONE_LOOP_STALL_LOG_MS": "20",
            "FIMONE_LOOP_MONITOR_REPORT": str(lag_file),
        }
    )
    try:
        conversations = create_conversations(server, args.clients)
        long_id = long_conversation(server, args.messages)
        warm = create_conversations(server, 1)
        asyncio.run(load(server, warm, 1, "react", label="warm-up"))
        time.sleep(1.5)
        before = report(lag_file)
        results, wall = asyncio.run(load(server, conversations, args.turns, "react"))
        time.sleep(1.5)
        chat_only = report(lag_file)
        (results2, _), (long_seconds, kinds) = asyncio.run(
            phase_two(server, conversations, args.turns, long_id)
        )
        time.sleep(1.5)
        overall = report(lag_file)
    finally:
        server.close()
        llm.stop()

    print(f"clients={args.clients} turns={args.turns} long conversation={args.messages} messages")
    print(f"warm-up: largest stall {before.get('max_stall_ms', float('nan')):.1f} ms (imports)")
    print(
        f"chat only: {len(results)} runs in {wall:.1f} s; largest stall since start "
        f"{chat_only.get('max_stall_ms', float('nan')):.1f} ms"
    )
    compacted = [k for k in kinds if k.startswith("compact")]
    print(
        f"chat + long compaction: {len(results2)} runs; the long request took "
        f"{long_seconds * 1000:.0f} ms ({', '.join(compacted) or 'no compaction'}, "
        f"ended {kinds[-1]}); largest stall since start "
        f"{overall.get('max_stall_ms', float('nan')):.1f} ms; stalls over 20 ms: "
        f"{overall.get('stalls_over_threshold', '?')} of {overall.get('samples', '?')} wake-ups"
    )


if __name__ == "__main__":
    main()
