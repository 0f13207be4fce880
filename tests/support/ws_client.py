"""A websocket client that behaves like a browser without one, for end-to-end tests:
log in through the login form, call the JSON API with the CSRF token, open the chat socket
with the session cookie and an Origin header, and run one turn."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import time
import urllib.parse
import urllib.request

import websockets

WAIT = 60.0  # hang guard on a small shared machine, not a speed requirement


class Browserless:
    """An HTTP client that logs in like a person: CSRF cookie, form token, session cookie."""

    def __init__(self, server) -> None:
        self.server = server
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def cookie(self, name: str) -> str:
        return next(c.value for c in self.jar if c.name == name)

    def login(self) -> None:
        self.opener.open(self.server.base_url + "/accounts/login/", timeout=30).read()
        form = urllib.parse.urlencode(
            {
                "username": self.server.username,
                "password": self.server.password,
                "csrfmiddlewaretoken": self.cookie("csrftoken"),
            }
        ).encode()
        request = urllib.request.Request(
            self.server.base_url + "/accounts/login/",
            data=form,
            headers={"Referer": self.server.base_url + "/accounts/login/"},
        )
        self.opener.open(request, timeout=30).read()
        assert self.cookie("sessionid")

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            self.server.base_url + path,
            data=json.dumps(body).encode() if body is not None else None,
            method=method,
            headers={
                "Content-Type": "application/json",
                "X-CSRFToken": self.cookie("csrftoken"),
                "Referer": self.server.base_url + "/",
            },
        )
        with self.opener.open(request, timeout=30) as response:
            return json.loads(response.read())

    def ws_headers(self) -> dict[str, str]:
        cookies = "; ".join(f"{c.name}={c.value}" for c in self.jar)
        return {"Origin": self.server.origin, "Cookie": cookies}


async def run_turn(ws, content: str, mode: str) -> list[dict]:
    await ws.send(json.dumps({"type": "message", "content": content, "mode": mode}))
    events = []
    async with asyncio.timeout(WAIT):
        while True:
            event = json.loads(await ws.recv())
            events.append(event)
            if event["type"] in ("done", "error"):
                return events


def types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


def stored_messages(server, conversation_id: str) -> list[dict]:
    """The server's database, read by the server's own code (not pytest's test DB)."""
    out = server.manage_shell(
        "import json\n"
        "from chat.models import Message\n"
        f"rows = Message.objects.filter(conversation_id='{conversation_id}').order_by('id')\n"
        "print(json.dumps([{'role': m.role, 'kind': m.kind, 'status': m.status,"
        " 'pinned': m.pinned, 'content': m.content, 'metadata': m.metadata} for m in rows]))\n"
    )
    return json.loads(out.strip().splitlines()[-1])


async def streamed_gaps(server, conversation_id: str, started) -> list[float]:
    """Seconds between the deltas of one answer, as a client receives them; ``started``
    (an asyncio or threading Event) is set at the first delta."""
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    async with websockets.connect(url, additional_headers=server.ws_headers()) as ws:
        await ws.send(json.dumps({"type": "message", "content": "stream, please"}))
        stamps: list[float] = []
        async with asyncio.timeout(120):
            while True:
                frame = json.loads(await ws.recv())
                if frame["type"] == "answer.delta":
                    stamps.append(time.monotonic())
                    started.set()
                if frame["type"] in ("done", "error"):
                    assert frame["type"] == "done", frame
                    break
    return [later - earlier for earlier, later in zip(stamps, stamps[1:], strict=False)]
