"""Rate limits through a real websocket: a 429 is waited out as the endpoint says, the user
is told ("rate limited, retrying in N s", ``llm.notice``), Stop ends the wait, and a budget
spent ends the answer with ``llm_rate_limited`` and the question kept for Retry.

The 429s are OpenAI's (body and headers as its API sends them: ``x-ratelimit-reset-*``,
platform.openai.com/docs/guides/rate-limits) and a gateway's ``Retry-After`` as an HTTP date
(RFC 9110 §10.2.3; Azure OpenAI and most proxies send seconds, which the unit tests read).
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import websockets

from tests.support.scripted_server import rate_limited_as_openai, text
from tests.support.ws_client import Browserless, run_turn, stored_messages, types

pytestmark = pytest.mark.slow


def open_chat(shared_daphne_factory, scripted_server, retries: int):
    env = scripted_server.daphne_env(LLM_RATE_LIMIT_RETRIES=str(retries))
    server = shared_daphne_factory(env=env)
    client = Browserless(server)
    client.login()
    conversation = client.api("POST", "/api/conversations/", {})
    url = f"{server.ws_url}/ws/chat/{conversation['id']}/"
    return server, client, conversation["id"], url


async def test_a_rate_limit_is_waited_out_as_told_and_shown(shared_daphne_factory, scripted_server):
    server, client, conversation, url = open_chat(shared_daphne_factory, scripted_server, 3)
    # A date four seconds ahead: whole seconds on the wire, and a busy machine may take two
    # before the second refusal is read; what is left must still be ahead.
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=4), usegmt=True)
    scripted_server.enqueue(
        rate_limited_as_openai(
            {"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "200ms"}
        ),
        rate_limited_as_openai({"retry-after": soon}),
        text("Done after the wait."),
    )
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        events = await run_turn(ws, "Hello?", "react")
    assert types(events)[-1] == "done", events
    notices = [e for e in events if e["type"] == "llm.notice"]
    assert [(n["kind"], n["attempt"], n["attempts"]) for n in notices] == [
        ("rate_limited", 1, 3),
        ("rate_limited", 2, 3),
    ]
    assert 1.0 <= notices[0]["retry_in"] <= 1.1  # the later of the two resets, plus jitter
    assert 0 < notices[1]["retry_in"] <= 4.2  # what is left until the date
    assert len(scripted_server.requests) == 3
    assert scripted_server.requests[0]["messages"] == scripted_server.requests[2]["messages"]
    stored = stored_messages(server, conversation)
    assert [m["content"] for m in stored] == ["Hello?", "Done after the wait."]


async def test_stop_ends_the_wait(shared_daphne_factory, scripted_server):
    server, client, conversation, url = open_chat(shared_daphne_factory, scripted_server, 3)
    scripted_server.enqueue(rate_limited_as_openai({"retry-after": "45"}))
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        await ws.send(json.dumps({"type": "message", "content": "Keep this.", "mode": "react"}))
        events = []
        async with asyncio.timeout(30):  # far less than the 45 s asked for
            while True:
                event = json.loads(await ws.recv())
                events.append(event)
                if event["type"] == "llm.notice":
                    assert 45 <= event["retry_in"] <= 49.5
                    await ws.send(json.dumps({"type": "cancel"}))
                if event["type"] in ("run.cancelled", "done", "error"):
                    break
    assert events[-1]["type"] == "run.cancelled", events
    assert len(scripted_server.requests) == 1
    stored = stored_messages(server, conversation)
    assert [(m["role"], m["content"]) for m in stored][0] == ("user", "Keep this.")
    assert stored[-1]["status"] == "cancelled"


async def test_a_spent_budget_ends_rate_limited_and_retry_answers(
    shared_daphne_factory, scripted_server
):
    server, client, conversation, url = open_chat(shared_daphne_factory, scripted_server, 1)
    fast = {"retry-after": "0.2"}
    scripted_server.enqueue(rate_limited_as_openai(fast), rate_limited_as_openai(fast))
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        events = await run_turn(ws, "Still there?", "react")
        assert events[-1]["type"] == "error" and events[-1]["code"] == "llm_rate_limited"
        assert "Rate limit reached" in events[-1]["message"]
        scripted_server.enqueue(text("Yes."))
        await ws.send(json.dumps({"type": "retry", "message_id": events[-1]["message_id"]}))
        retried = []
        async with asyncio.timeout(30):
            while not retried or retried[-1]["type"] not in ("done", "error"):
                retried.append(json.loads(await ws.recv()))
    assert retried[-1]["type"] == "done", retried
    user = [m for m in stored_messages(server, conversation) if m["role"] == "user"]
    assert [m["content"] for m in user] == ["Still there?"]  # kept, not sent twice
