"""Approval and the per-conversation switch with a real MCP server (a stdio child written
with the SDK's own server, tests/support/mcp_server.py) whose tool the operator marked
``needsApproval``, over a real websocket run: declined, it is never called and the model
reads the decline; approved for the conversation, the server answers and the next call is
not asked; a server switched off for the conversation offers no tools there."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from chat.tools import settings as tool_settings
from tests.chat.tool_servers.test_runs import mcp_file, server_entry  # noqa: F401 (fixture)
from tests.support.runs import events_until, of_type, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


@pytest.fixture
def notes_server(mcp_file, marker_dir):  # noqa: F811 - the imported fixture
    mcp_file({"notes": {**server_entry(marker_dir), "needsApproval": ["echo"]}})


def echo(llm, text: str, call_id: str):
    return llm.tool_call("notes__echo", json.dumps({"text": text}), call_id)


@pytest.mark.usefixtures("notes_server")
async def test_a_declined_server_tool_is_not_called_and_the_model_reads_why(socket, ws_fake_llm):
    ws_fake_llm.enqueue(echo(ws_fake_llm, "secret", "e1"), "Not sent.")
    await send(socket, type="message", content="Echo the secret", mode="react")
    request = (await events_until(socket, "tool.approval"))[-1]
    assert (request["tool"], request["source"]) == ("notes__echo", "mcp:notes")
    await send(socket, type="approval", request_id=request["request_id"], decision="decline")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events
    reply = ws_fake_llm.calls[1].messages[-1].content
    assert "declined" in reply and "echo: secret" not in reply


@pytest.mark.usefixtures("notes_server")
async def test_approved_for_the_conversation_the_server_answers_without_asking_again(
    socket, ws_fake_llm
):
    ws_fake_llm.enqueue(echo(ws_fake_llm, "one", "e1"), "First.")
    await send(socket, type="message", content="Echo one", mode="react")
    request = (await events_until(socket, "tool.approval"))[-1]
    await send(socket, type="approval", request_id=request["request_id"], decision="conversation")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    assert ws_fake_llm.calls[1].messages[-1].content == "echo: one"

    ws_fake_llm.enqueue(echo(ws_fake_llm, "two", "e2"), "Second.")
    await send(socket, type="message", content="Echo two", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done" and of_type(events, "tool.approval") == []
    assert ws_fake_llm.calls[-1].messages[-1].content == "echo: two"
    # Another tool of the same server was never marked: it never asks.
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("notes__pid", "{}", "p1"), "Noted.")
    await send(socket, type="message", content="Which process?", mode="react")
    events = await events_until(socket, "done", "error")
    assert of_type(events, "tool.approval") == []


@pytest.mark.usefixtures("notes_server")
async def test_a_server_switched_off_for_the_conversation_offers_nothing_there(
    socket, user, conversation, ws_fake_llm
):
    await sync_to_async(tool_settings.tool_source_switch)(
        user=user, conversation_id=conversation.id, source="mcp:notes", enabled=False
    )
    ws_fake_llm.enqueue("Nothing to call.")
    await send(socket, type="message", content="hi", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done"
    offered = {t["function"]["name"] for t in ws_fake_llm.calls[0].tools}
    assert "calculator" in offered and not any(n.startswith("notes__") for n in offered)
    assert [s for s in of_type(events, "step") if s.get("kind") == "note"] == []
