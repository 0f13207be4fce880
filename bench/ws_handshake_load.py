"""Websocket handshakes while HTTP clients keep the server busy, against a real daphne.

    .venv/bin/python bench/ws_handshake_load.py [--sockets 40] [--http-clients 16]

Starts fimone's server (``config.server``, SQLite, offline model) on a temp data dir with
one conversation of a few long answers, then measures opening ``--sockets`` websockets at
once (connect until the socket is open, i.e. the handshake answered and the consumer
accepted): first with no other traffic, then while ``--http-clients`` threads read that
conversation's messages page and the conversation list in a loop. Prints the median and the
largest handshake and the HTTP requests served meanwhile. Loopback only; every wait is
bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import websockets  # noqa: E402

from tests.support.live_server import start_live_server  # noqa: E402

ANSWER = (
    "Some **bold** text, `code`, a [link](https://example.com) and a table:\n\n"
    "| a | b |\n|---|--:|\n| 1 | 2 |\n\n"
) * 400  # about 40 KB of Markdown


def seed(server) -> str:
    out = server.manage_shell(
        "from django.contrib.auth import get_user_model\n"
        "from chat import services\n"
        f"user = get_user_model().objects.get(username='{server.username}')\n"
        "c = services.conversation_create(owner=user, title='bench')\n"
        "for i in range(6):\n"
        "    services.user_message_create(conversation=c, content=f'question {i}')\n"
        "    m = services.assistant_message_start(conversation=c, run_id=f'r{i}', mode='react')\n"
        f"    services.assistant_message_finish(message=m, content={ANSWER!r})\n"
        "print(c.pk)"
    )
    return out.strip().splitlines()[-1]


def http_load(server, conversation: str, stop: threading.Event, served: list[int]) -> None:
    headers = {"Cookie": f"sessionid={server.session_cookie}"}
    paths = [f"/api/conversations/{conversation}/messages/", "/api/conversations/"]
    i = 0
    while not stop.is_set():
        request = urllib.request.Request(server.base_url + paths[i % 2], headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
            served.append(1)
        except OSError:
            pass
        i += 1


async def open_sockets(server, conversation: str, count: int) -> list[float]:
    url = f"{server.ws_url}/ws/chat/{conversation}/"

    async def one() -> float:
        started = time.monotonic()
        ws = await websockets.connect(url, additional_headers=server.ws_headers(), open_timeout=60)
        took = time.monotonic() - started
        await ws.close()
        return took

    return list(await asyncio.gather(*(one() for _ in range(count))))


def report(label: str, times: list[float], served: int | None = None) -> None:
    extra = f", {served} HTTP requests served meanwhile" if served is not None else ""
    print(
        f"{label}: {len(times)} handshakes, median {statistics.median(times):.3f} s, "
        f"largest {max(times):.3f} s{extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sockets", type=int, default=40)
    parser.add_argument("--http-clients", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=3.0)
    args = parser.parse_args()
    server = start_live_server()
    try:
        conversation = seed(server)
        asyncio.run(open_sockets(server, conversation, 2))  # first-use imports
        report("idle", asyncio.run(open_sockets(server, conversation, args.sockets)))
        stop, served = threading.Event(), []
        threads = [
            threading.Thread(target=http_load, args=(server, conversation, stop, served))
            for _ in range(args.http_clients)
        ]
        for thread in threads:
            thread.start()
        time.sleep(args.warmup)
        before = len(served)
        times = asyncio.run(open_sockets(server, conversation, args.sockets))
        report(f"{args.http_clients} HTTP clients", times, len(served) - before)
        stop.set()
        for thread in threads:
            thread.join(60)
    finally:
        server.close()
    print(json.dumps({"sockets": args.sockets, "http_clients": args.http_clients}))


if __name__ == "__main__":
    main()
