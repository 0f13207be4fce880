"""Streaming seen from outside (RS.1, RS.4): a real daphne, real websockets, the real
``openai`` SDK against the scripted server.

The scripted server holds back the rest of its stream until the test releases it, so a
test can prove an ``answer.delta`` reached the client while the provider was still
streaming (behaviour, not timing). Stop and a provider error mid-stream keep exactly the
text the client was shown.
"""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.request

import pytest
import websockets

from tests.e2e.test_ws_runs import WAIT, Browserless, stored_messages
from tests.support.scripted_server import held, stream_error, text, tool_calls

pytestmark = pytest.mark.slow


@pytest.fixture
def scripted_daphne(shared_daphne_factory, scripted_server):
    server = shared_daphne_factory(
        env={
            "LLM_BASE_URL": scripted_server.base_url,
            "LLM_API_KEY": "test-key",
            "LLM_MODEL": "scripted-model",
        }
    )
    client = Browserless(server)
    client.login()
    return server, client


class Shown:
    """What a client shows: the answer built from deltas and retracts, and every event."""

    def __init__(self, ws) -> None:
        self.ws = ws
        self.events: list[dict] = []
        self.answer = ""

    async def next(self) -> dict:
        event = json.loads(await self.ws.recv())
        self.events.append(event)
        if event["type"] == "answer.delta":
            self.answer += event["text"]
        elif event["type"] == "answer.retract":
            self.answer = self.answer[: len(self.answer) - event["chars"]]
        return event

    async def until(self, *kinds: str) -> dict:
        async with asyncio.timeout(WAIT):
            while True:
                event = await self.next()
                if event["type"] in kinds:
                    return event


async def open_socket(server, client, conversation_id=None):
    """A socket on ``conversation_id``, or on a new conversation."""
    if conversation_id is None:
        conversation_id = client.api("POST", "/api/conversations/", {})["id"]
    url = f"{server.ws_url}/ws/chat/{conversation_id}/"
    ws = await websockets.connect(url, additional_headers=client.ws_headers())
    return conversation_id, ws


async def send(ws, **frame) -> None:
    await ws.send(json.dumps(frame))


async def test_the_first_delta_reaches_the_browser_before_the_provider_finished(
    scripted_daphne, scripted_server
):
    server, client = scripted_daphne
    release = threading.Event()
    scripted_server.enqueue(held(text("Streaming is live now."), release))
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="Say something", mode="react")
        await shown.until("answer.delta")
        # The provider has sent one piece and is holding the rest: the client has it.
        assert shown.answer == "Streaming " and not release.is_set()
        release.set()
        done = await shown.until("done", "error")
    assert done["type"] == "done", shown.events
    assert shown.answer == "Streaming is live now."
    assert stored_messages(server, conversation_id)[-1]["content"] == "Streaming is live now."


async def test_pre_tool_text_moves_into_the_step_live_and_after_a_reload(
    scripted_daphne, scripted_server
):
    server, client = scripted_daphne
    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "6*7"}), content="Let me compute that. "),
        text("Six times seven is 42."),
    )
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="What is 6*7?", mode="react")
        done = await shown.until("done", "error")
    assert done["type"] == "done", shown.events
    kinds = [e["type"] for e in shown.events]
    assert kinds.index("answer.delta") < kinds.index("answer.retract") < kinds.index("step")
    retract = next(e for e in shown.events if e["type"] == "answer.retract")
    assert retract["text"] == "Let me compute that." and retract["iteration"] == 1
    assert shown.answer == "Six times seven is 42."

    answer = stored_messages(server, conversation_id)[-1]
    assert answer["content"] == "Six times seven is 42."
    steps = answer["metadata"]["steps"]
    assert [(s["kind"], s.get("text")) for s in steps][0] == ("thought", "Let me compute that.")
    page = client.api("GET", f"/api/conversations/{conversation_id}/messages/")
    reloaded = page["messages"][-1]
    assert reloaded["content"] == "Six times seven is 42."
    assert reloaded["steps"][0]["text"] == "Let me compute that."


async def test_stop_mid_stream_keeps_exactly_the_text_shown(scripted_daphne, scripted_server):
    server, client = scripted_daphne
    release = threading.Event()  # never set: the provider is still streaming at Stop
    scripted_server.enqueue(held(text("one two three four five six"), release, after=3))
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="Count", mode="react")
        async with asyncio.timeout(WAIT):
            while shown.answer != "one two three ":
                await shown.next()
        await send(ws, type="cancel")
        ended = await shown.until("run.cancelled", "done", "error")
    assert ended["type"] == "run.cancelled", shown.events
    answer = stored_messages(server, conversation_id)[-1]
    assert (answer["status"], answer["content"]) == ("cancelled", shown.answer)
    assert shown.answer == "one two three "


async def test_an_error_mid_stream_keeps_the_partial_text_and_retry_answers(
    scripted_daphne, scripted_server
):
    server, client = scripted_daphne
    scripted_server.enqueue(
        stream_error("The worker crashed.", partial="The answer is "),
        text("The answer is 42."),
    )
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="What is it?", mode="react")
        failed = await shown.until("done", "error")
        assert failed["type"] == "error" and failed["code"] == "llm_unavailable", shown.events
        assert shown.answer == "The answer is "
        stored = stored_messages(server, conversation_id)[-1]
        assert (stored["status"], stored["content"]) == ("error", "The answer is ")

        retry = Shown(ws)
        await send(ws, type="retry", message_id=failed["message_id"])
        done = await retry.until("done", "error")
    assert done["type"] == "done", retry.events
    assert retry.answer == "The answer is 42."
    answers = [m for m in stored_messages(server, conversation_id) if m["role"] == "assistant"]
    assert [(m["status"], m["content"]) for m in answers] == [
        ("error", "The answer is "),
        ("done", "The answer is 42."),
    ]


ESSAY = "\n\n".join(f"Part {i}. " + " ".join(["The essay goes on and on."] * 10) for i in range(24))


async def test_an_answer_interrupted_by_a_follow_up_is_kept_whole_and_exported(
    scripted_daphne, scripted_server
):
    """A long answer the user watched stream, then a follow-up before it ended: the answer
    keeps all of it (no thought, nothing cut), the reply to the follow-up after it; the
    stored answer and the export hold the whole text."""
    assert len(ESSAY) > 6_000
    server, client = scripted_daphne
    release = threading.Event()
    scripted_server.enqueue(held(text(ESSAY), release, after=3), text("In short: it goes on."))
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="Write a long essay", mode="react")
        await shown.until("answer.delta")
        await send(ws, type="message", content="And now in one line?")
        # The run is handed the follow-up before any socket is told it was ``injected``
        # (docs/protocol.md), so the essay may end now: the run answers it.
        await shown.until("injected")
        release.set()
        done = await shown.until("done", "error")
    assert done["type"] == "done", shown.events
    whole = ESSAY.strip() + "\n\nIn short: it goes on."
    assert "answer.retract" not in [e["type"] for e in shown.events]
    assert shown.answer.strip() == whole

    stored = stored_messages(server, conversation_id)
    assert [m["role"] for m in stored] == ["user", "assistant", "user"]  # one run answered
    answer = stored[1]
    assert answer["content"] == whole
    assert not [s for s in answer["metadata"].get("steps", []) if s["kind"] == "thought"]
    request = urllib.request.Request(
        f"{server.base_url}/api/conversations/{conversation_id}/export/?format=markdown"
    )
    with client.opener.open(request, timeout=30) as response:
        exported = response.read().decode()
    assert ESSAY.strip() in exported and "In short: it goes on." in exported
