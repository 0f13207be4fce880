"""Event-loop stalls of a real daphne while 50 clients chat and one long conversation compacts.

    .venv/bin/python bench/loop_stall.py [--clients 50] [--turns 5] [--think 3] [--messages 2000]

Starts the scripted OpenAI-compatible server (zero latency) and a daphne subprocess (as
bench/ws_load.py does) with the event-loop lag monitor waking every 2 ms and writing its
figures to a file. The monitor runs inside daphne, on the loop that serves the sockets; the
websocket clients and the scripted server run in this process, so their own work is not
counted. Every stall over 5 ms is kept with its time, and each phase reports the largest
within its own time window (warm-up and imports excluded).

The monitor also records daphne's full garbage collections (how long each took, how many
objects it freed: cyclic garbage), and for each stall the CPU time daphne's loop thread spent
during it: a stall the thread spent computing is code on the loop; the rest of a stall is the
thread not running at all (other processes on a busy machine, or the GIL held by daphne's
worker threads). Both are printed, with the machine's load average.

Phases, each on fresh conversations:

0. a connection burst: ``--clients`` sockets opened at the same moment, no message sent
   (what a restart with every browser reconnecting at once looks like), reported apart;
1. paced chat: ``--clients`` clients arriving spread over one think time, ``--turns`` each,
   ``--think`` s apart on average (people, not a saturation test);
2. the same, while one more client sends a message on a conversation of ``--messages``
   stored messages (questions, answers, pasted log excerpts): DbMemory loads it and compacts
   it with the LLM (a 16,000-token budget); how long that request took;
3. and 4. the same two back to back (no think time): the loop is then saturated and a
   stall is a queue of ready work, reported for comparison.

Target: no stall over 20 ms in phases 1 and 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
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


def stalls_between(path: Path, started: float, ended: float) -> dict:
    """The largest stall (wall and loop-thread CPU) the monitor saw in [started, ended]."""
    time.sleep(1.5)  # the monitor writes its report about once a second
    figures = report(path)
    stalls = [s for s in figures.get("recent_stalls", []) if started <= s[0] <= ended]
    largest = max(stalls, key=lambda s: s[1], default=[0.0, 0.0, 0.0, 0.0])
    full = [c for c in figures.get("full_collections", []) if started <= c[0] <= ended]
    return {
        "full_collections": len(full),
        "full_max_ms": max((c[1] for c in full), default=0.0),
        "full_max_cpu": max((c[2] for c in full), default=0.0),
        "full_max_freed": max((c[3] for c in full), default=0),
        "max": largest[1],
        "max_loop": largest[2],
        "max_process": largest[3],
        "busy": max((s[2] for s in stalls), default=0.0),
        "over_20": sum(1 for s in stalls if s[1] > 20),
        "over_20_busy": sum(1 for s in stalls if s[2] > 20),
        "load": os.getloadavg()[0],
    }


async def long_request(server, conversation_id: str, delay: float) -> tuple[float, list[str]]:
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    kinds = []
    async with websockets.connect(
        url, additional_headers=server.ws_headers(), max_size=2**22, open_timeout=60
    ) as ws:
        await asyncio.sleep(delay)  # start while the chat load is running
        started = time.perf_counter()
        await ws.send(json.dumps({"type": "message", "content": "What next?", "mode": "react"}))
        async with asyncio.timeout(300):
            while True:
                event = json.loads(await ws.recv())
                kinds.append(event["type"] + (f":{event['scope']}" if "scope" in event else ""))
                if event["type"] in ("done", "error"):
                    return time.perf_counter() - started, kinds


async def connection_burst(server, conversations: list[str]) -> None:
    """Every client opens its socket at the same moment (and closes it again)."""
    async with contextlib.AsyncExitStack() as stack:
        await asyncio.gather(
            *(
                stack.enter_async_context(
                    websockets.connect(
                        f"{server.ws_url}/ws/chat/{cid}/",
                        additional_headers=server.ws_headers(),
                        open_timeout=60,
                    )
                )
                for cid in conversations
            )
        )


async def chat_with_compaction(server, conversations, turns, think, long_id):
    (results, _), (seconds, kinds) = await asyncio.gather(
        load(server, conversations, turns, "react", think=think),
        long_request(server, long_id, delay=max(0.5, think)),
    )
    return results, seconds, kinds


def phase_line(name: str, runs: int, wall: float, figures: dict) -> str:
    return (
        f"{name}: {runs} runs in {wall:.1f} s; largest stall {figures['max']:.1f} ms (the "
        f"loop thread computing {figures['max_loop']:.1f} ms of it, the process running "
        f"{figures['max_process']:.1f} ms); most loop-thread computing in a stall "
        f"{figures['busy']:.1f} ms; stalls over 20 ms: {figures['over_20']} "
        f"({figures['over_20_busy']} with over 20 ms computing); full garbage collections: "
        f"{figures['full_collections']}, longest {figures['full_max_ms']:.1f} ms (most CPU "
        f"{figures['full_max_cpu']:.1f} ms), most objects "
        f"freed by one {figures['full_max_freed']}; load average {figures['load']:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--think", type=float, default=3.0)
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
            "FIMONE_LOOP_STALL_LOG_MS": "5",
            "FIMONE_LOOP_MONITOR_REPORT": str(lag_file),
        }
    )
    lines = []
    try:
        warm = create_conversations(server, 1)
        asyncio.run(load(server, warm, 1, "react", label="warm-up"))
        burst = create_conversations(server, args.clients)
        started = time.time()
        asyncio.run(connection_burst(server, burst))
        lines.append(
            phase_line(
                f"{args.clients} clients connecting at once (no message)",
                0,
                time.time() - started,
                stalls_between(lag_file, started, time.time()),
            )
        )
        for name, think in (("paced chat", args.think), ("back-to-back chat", 0.0)):
            conversations = create_conversations(server, args.clients)
            long_id = long_conversation(server, args.messages)
            started = time.time()
            results, wall = asyncio.run(
                load(server, conversations, args.turns, "react", think=think)
            )
            lines.append(
                phase_line(name, len(results), wall, stalls_between(lag_file, started, time.time()))
            )
            started = time.time()
            results, seconds, kinds = asyncio.run(
                chat_with_compaction(server, conversations, args.turns, think, long_id)
            )
            figures = stalls_between(lag_file, started, time.time())
            compacted = [k for k in kinds if k.startswith("compact")]
            lines.append(
                phase_line(
                    f"{name} + long compaction", len(results), time.time() - started, figures
                )
                + f"; the long request took {seconds * 1000:.0f} ms "
                f"({', '.join(compacted) or 'no compaction'}, ended {kinds[-1]})"
            )
    finally:
        server.close()
        llm.stop()

    print(
        f"clients={args.clients} turns={args.turns} think={args.think}s "
        f"long conversation={args.messages} messages; {os.cpu_count()} cores"
    )
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
