"""Start-up detection of the window through a real daphne: an environment endpoint without
``LLM_CONTEXT_SIZE`` is asked once when the process starts (TGI's ``GET /info``, Ollama's
``POST /api/show`` with its smaller ``num_ctx``; fakes and sources in
tests/support/provider_profiles.py); the context gauge and the run then use that budget."""

from __future__ import annotations

import asyncio
import time

import pytest
import websockets

from tests.support.provider_profiles import OLLAMA_NUM_CTX, TGI_MAX_TOTAL
from tests.support.scripted_server import text
from tests.support.ws_client import Browserless, run_turn, types

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("name", "window"), [("tgi", TGI_MAX_TOTAL), ("ollama", OLLAMA_NUM_CTX)])
async def test_the_window_is_read_at_start_up_and_used(
    live_daphne_factory, scripted_server, name, window
):
    scripted_server.use_profile(name)
    env = scripted_server.daphne_env(model="scripted", LLM_DISCOVER_CONTEXT="true")
    server = live_daphne_factory(env=env)
    client = Browserless(server)
    client.login()
    conversation = client.api("POST", "/api/conversations/", {})
    path = f"/api/conversations/{conversation['id']}/context/"
    deadline = time.monotonic() + 30
    budget = client.api("GET", path)["budget"]
    while budget["source"] != "endpoint" and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        budget = client.api("GET", path)["budget"]
    assert (budget["source"], budget["context_size"]) == ("endpoint", window)
    assert budget["max_output_tokens"] == window // 4
    if name == "ollama":
        assert "num_ctx 8,192, smaller than" in server.log()

    scripted_server.enqueue(text("Within the window."))
    url = f"{server.ws_url}/ws/chat/{conversation['id']}/"
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        events = await run_turn(ws, "Hello?", "react")
    assert types(events)[-1] == "done", events
