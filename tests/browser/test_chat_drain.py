"""A deploy seen from the chat UI (RO.1): the server is draining when the user sends.

The message is refused with ``server_draining``; the UI keeps it on screen, says the server
is restarting, reconnects and sends it again once a server takes new runs (here the same
port, restarted): it is stored once and answered.
"""

from __future__ import annotations

import json
import signal
import threading

import pytest
from playwright.sync_api import expect
from websockets.sync.client import connect

from tests.browser.conftest import send
from tests.support.scripted_server import held, text

# SIGTERMs and restarts its daphne.
pytestmark = [pytest.mark.browser, pytest.mark.own_server]

DEFAULT_REPLY = "This is the scripted server's default reply."


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env(FIMONE_DRAIN_SECONDS="20")


def long_run_elsewhere(server, started: threading.Event) -> None:
    """A run in another conversation that keeps the server draining until it is released."""
    conversation = server.api("POST", "/api/conversations/", {})["id"]
    url = f"{server.ws_url}/ws/chat/{conversation}/"
    with connect(url, additional_headers=server.ws_headers()) as ws:
        ws.send(json.dumps({"type": "message", "content": "keep the server busy"}))
        while True:
            frame = json.loads(ws.recv(timeout=60))
            if frame["type"] == "answer.delta":
                started.set()
            if frame["type"] in ("done", "error"):
                return


def test_a_message_sent_during_a_deploy_is_sent_again_and_answered(
    logged_in_page, live_daphne, scripted_server
):
    page = logged_in_page
    send(page, "Before the deploy")
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)

    words = " ".join(f"w{i}" for i in range(25))
    release = threading.Event()
    scripted_server.enqueue(text(""), held(text(words), release))  # streams until released
    started = threading.Event()
    busy = threading.Thread(target=long_run_elsewhere, args=(live_daphne, started), daemon=True)
    busy.start()
    assert started.wait(30)
    live_daphne.proc.send_signal(signal.SIGTERM)

    send(page, "During the deploy")
    expect(page.locator("#connection")).to_contain_text("restarting")
    expect(page.locator(".msg-user").last).to_contain_text("During the deploy")

    release.set()  # the busy run ends, and with it the drain
    busy.join(60)
    live_daphne.proc.wait(timeout=60)  # drained: the busy run finished, then it exited
    live_daphne.restart()  # the deploy's new process on the same port

    expect(page.locator(".msg-assistant .usage-card")).to_have_count(2)
    expect(page.locator(".msg-assistant .answer").last).to_have_text(DEFAULT_REPLY)
    expect(page.locator(".msg-user", has_text="During the deploy")).to_have_count(1)
    stored = [
        m["content"]
        for m in live_daphne.api("GET", f"/api/conversations/{_current(page)}/messages/")[
            "messages"
        ]
        if m["role"] == "user"
    ]
    assert stored == ["Before the deploy", "During the deploy"]


def _current(page) -> str:
    return page.url.rstrip("/").rsplit("/", 1)[-1]
