"""End to end: the offline model reads a web page through ``fetch_url`` over the real
websocket of a real daphne, and answers from it.

The page server is on 127.0.0.1, so the first server allows loopback through
FIMONE_FETCH_ALLOWED_HOSTS, as an operator would for an intranet; the second runs with the
default policy and the same request is refused, which the answer says.
"""

from __future__ import annotations

import json

import pytest
import websockets

from tests.support.web_server import ARTICLE_FACT, BOILERPLATE_MARKERS, serve_pages
from tests.support.ws_client import Browserless, run_turn, stored_messages, types

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site():
    with serve_pages() as server:
        yield server


async def ask(server, text: str) -> tuple[list[dict], str]:
    client = Browserless(server)
    client.login()
    conversation = client.api("POST", "/api/conversations/", {"title": "fetch"})
    url = f"{server.ws_url}/ws/chat/{conversation['id']}/"
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        return await run_turn(ws, text, "react"), conversation["id"]


async def test_the_offline_model_fetches_a_page_and_answers_from_it(live_daphne_factory, site):
    server = live_daphne_factory(env={"FIMONE_FETCH_ALLOWED_HOSTS": "127.0.0.1"})
    events, conversation_id = await ask(
        server, f"Fetch {site.url('/hop/2')} and tell me the lighthouse code word"
    )

    assert types(events)[0] == "run.started" and types(events)[-1] == "done", events
    steps = [e for e in events if e["type"] == "step"]
    assert [(s["kind"], s["name"]) for s in steps] == [
        ("tool_call", "fetch_url"),
        ("tool_result", "fetch_url"),
    ]
    assert json.loads(steps[0]["arguments"]) == {"url": site.url("/hop/2")}
    answer = "".join(e["text"] for e in events if e["type"] == "answer.delta")
    assert ARTICLE_FACT in answer
    assert f"`{site.url('/article')}`" in answer  # the page it was redirected to
    for marker in BOILERPLATE_MARKERS:
        assert marker not in answer, marker
    stored = stored_messages(server, conversation_id)
    assert stored[-1]["status"] == "done" and ARTICLE_FACT in stored[-1]["content"]


async def test_without_the_allow_list_the_same_request_is_refused(live_daphne_factory, site):
    server = live_daphne_factory()
    before = len(site.requests)
    events, _ = await ask(server, f"fetch {site.url('/article')}")

    assert types(events)[-1] == "done", events
    answer = "".join(e["text"] for e in events if e["type"] == "answer.delta")
    assert "I could not read the page: refused to connect to 127.0.0.1" in answer
    assert "loopback" in answer and ARTICLE_FACT not in answer
    assert len(site.requests) == before
