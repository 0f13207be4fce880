"""Runs with the tools of MCP servers from the operator's configuration file: a real stdio
child process (tests/support/mcp_server.py) called over a real websocket run."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys

import pytest

from chat.models import Message
from chat.tool_servers import pool as tool_servers
from tests.support.mcp_servers import REPO_ROOT, SERVER_MODULE
from tests.support.runs import WAIT, events_until, of_type, send

pytestmark = [
    pytest.mark.slow,  # real MCP servers, a process each (not in bin/test --fast)
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


def server_entry(marker_dir, *mode: str) -> dict:
    return {
        "command": sys.executable,
        "args": ["-m", SERVER_MODULE, *(mode or ("stdio",)), "--marker-dir", str(marker_dir)]
        if not mode or mode[0] != "fail-at-start"
        else ["-m", SERVER_MODULE, "fail-at-start"],
        "cwd": str(REPO_ROOT),
        "timeout": 30,
    }


@pytest.fixture
async def mcp_file(tmp_path, settings, marker_dir):
    """Writes the operator's mcpServers file; the servers are closed after the test."""

    def write(servers: dict) -> None:
        path = tmp_path / "mcp.json"
        path.write_text(json.dumps({"mcpServers": servers}))
        settings.FIMONE_MCP_CONFIG = str(path)
        tool_servers.forget_cached_servers()

    yield write
    await tool_servers.close()
    tool_servers.forget_cached_servers()


async def wait_for_file(path) -> None:
    async with asyncio.timeout(WAIT):
        while not path.exists():  # noqa: ASYNC110 - the server process writes it
            await asyncio.sleep(0.05)


async def test_a_run_calls_a_tool_of_a_stdio_server(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    mcp_file({"notes": server_entry(marker_dir)})
    ws_fake_llm.enqueue(
        ws_fake_llm.tool_call("notes__echo", json.dumps({"text": "hello"})), "It said hello."
    )
    await send(socket, type="message", content="Echo hello", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    results = [s for s in of_type(events, "step") if s["kind"] == "tool_result"]
    assert [(s["name"], s["result"]) for s in results] == [("notes__echo", "echo: hello")]
    offered = {t["function"]["name"] for t in ws_fake_llm.calls[0].tools}
    assert {"notes__echo", "notes__add", "calculator"} <= offered


async def test_a_server_that_fails_at_start_leaves_a_note_and_the_run_goes_on(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    mcp_file(
        {"broken": server_entry(marker_dir, "fail-at-start"), "notes": server_entry(marker_dir)}
    )
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("notes__add", '{"a": 1, "b": 2}'), "Three.")
    await send(socket, type="message", content="Add 1 and 2", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    notes = [s for s in of_type(events, "step") if s["kind"] == "note"]
    assert len(notes) == 1 and notes[0]["server"] == "broken"
    assert "broken" in notes[0]["text"] and "unavailable right now" in notes[0]["text"]
    answer = await Message.objects.filter(conversation=conversation, role="assistant").alast()
    kept = [s for s in answer.metadata["steps"] if s["kind"] == "note"]
    assert kept and "broken" in kept[0]["text"]  # a reload shows it too
    assert json.loads(answer.metadata["steps"][-1]["result"])["total"] == 3


async def test_stop_during_a_long_call_cancels_the_request_on_the_server(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    mcp_file({"notes": server_entry(marker_dir)})
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("notes__slow", '{"seconds": 60}'), "never")
    await send(socket, type="message", content="Take your time", mode="react")
    await wait_for_file(marker_dir / "slow-started")
    await send(socket, type="cancel")
    events = await events_until(socket, "run.cancelled", "done", "error")
    assert events[-1]["type"] == "run.cancelled", events[-1]
    await wait_for_file(marker_dir / "slow-cancelled")


async def test_an_image_result_reaches_a_model_that_sees_images(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    mcp_file({"notes": server_entry(marker_dir)})
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("notes__picture", "{}"), "A red dot.")
    await send(socket, type="message", content="Show me the picture", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    second = json.dumps([m.content for m in ws_fake_llm.calls[1].messages], default=str)
    assert "data:image/png;base64,iVBOR" in second


async def test_the_context_gauge_counts_the_servers_tool_schemas_once_listed(
    user, socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    from asgiref.sync import sync_to_async
    from django.test import Client

    client = Client()
    await sync_to_async(client.force_login)(user)
    url = f"/api/conversations/{conversation.id}/context/"
    before = (await sync_to_async(client.get)(url)).json()["used_tokens"]
    mcp_file({"notes": server_entry(marker_dir)})
    ws_fake_llm.enqueue("Fine.")
    await send(socket, type="message", content="Hello", mode="react")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    # An empty conversation again, now with the servers' tools known to this process.
    other = await conversation.__class__.objects.acreate(owner=user, title="other")
    url = f"/api/conversations/{other.id}/context/"
    after = (await sync_to_async(client.get)(url)).json()["used_tokens"]
    assert after > before + 100  # nine tool schemas more


async def test_closing_the_tool_servers_stops_the_child(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    """What the drain and the shutdown call (config/asgi.py): the child exits with it."""
    import os

    mcp_file({"notes": server_entry(marker_dir)})
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("notes__pid", "{}"), "Noted.")
    await send(socket, type="message", content="Which process?", mode="react")
    events = await events_until(socket, "done", "error")
    pid = int(next(s for s in of_type(events, "step") if s["kind"] == "tool_result")["result"])
    os.kill(pid, 0)  # running, kept for the next run
    await tool_servers.close()
    async with asyncio.timeout(WAIT):
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            await asyncio.sleep(0.05)


async def test_a_tool_marked_in_the_file_as_needing_approval_waits_for_the_user(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    mcp_file({"notes": {**server_entry(marker_dir), "needsApproval": ["slow"]}})
    ws_fake_llm.enqueue(
        ws_fake_llm.tool_call("notes__slow", '{"seconds": 0}'),
        ws_fake_llm.tool_call("notes__echo", '{"text": "free"}'),
        "Done.",
    )
    await send(socket, type="message", content="Sleep, then echo", mode="react")
    events = await events_until(socket, "tool.approval", "done", "error")
    request = events[-1]
    assert request["type"] == "tool.approval" and request["tool"] == "notes__slow"
    assert request["source"] == "mcp:notes"
    assert not (marker_dir / "slow-started").exists()  # nothing ran before the answer
    await send(socket, type="approval", request_id=request["request_id"], decision="once")
    events = await events_until(socket, "tool.approval", "done", "error")
    assert events[-1]["type"] == "done", events[-1]  # echo needed no approval
    results = [
        (s["name"], s["result"]) for s in of_type(events, "step") if s["kind"] == "tool_result"
    ]
    assert results == [("notes__slow", "slept 0.0"), ("notes__echo", "echo: free")]


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(FileNotFoundError, IndexError):  # a zombie is gone too
        return open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "Z"
    return False


async def test_a_server_taken_out_of_the_file_is_stopped_before_the_next_run(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    mcp_file({"notes": server_entry(marker_dir)})
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("notes__pid", "{}"), "Noted.")
    await send(socket, type="message", content="Which process?", mode="react")
    events = await events_until(socket, "done", "error")
    [result] = [s for s in of_type(events, "step") if s["kind"] == "tool_result"]
    pid = int(result["result"])
    assert process_alive(pid)

    mcp_file({})
    ws_fake_llm.enqueue("No tools of that server now.")
    await send(socket, type="message", content="And now?", mode="react")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    assert "notes__pid" not in {t["function"]["name"] for t in ws_fake_llm.calls[-1].tools}
    async with asyncio.timeout(WAIT):
        while process_alive(pid):  # noqa: ASYNC110 - the child exits once its stdin closes
            await asyncio.sleep(0.05)


async def test_a_server_listing_more_tools_than_the_cap_is_cut_with_a_note_in_the_menu(
    user, socket, conversation, ws_fake_llm, mcp_file, settings
):
    """RO.12 / RT.3: the SDK's own server listing 300 tools, FIMONE_MCP_MAX_TOOLS=20: the
    run completes, its request carries the first 20, and the tools menu says why."""
    from asgiref.sync import sync_to_async
    from django.test import AsyncClient

    settings.FIMONE_MCP_MAX_TOOLS = 20
    many = {
        "command": sys.executable,
        "args": ["-m", SERVER_MODULE, "many-tools", "--count", "300"],
    }
    mcp_file({"many": {**many, "cwd": str(REPO_ROOT)}})
    ws_fake_llm.enqueue(ws_fake_llm.tool_call("many__tool_00007", "{}"), "Called it.")
    await send(socket, type="message", content="Use tool 7", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    results = [s for s in of_type(events, "step") if s["kind"] == "tool_result"]
    assert [s["result"] for s in results] == ["called tool_00007"]
    for call in ws_fake_llm.calls:
        offered = [
            t["function"]["name"] for t in call.tools if t["function"]["name"].startswith("many__")
        ]
        assert offered == [f"many__tool_{i:05d}" for i in range(20)]

    client = AsyncClient()
    await sync_to_async(client.force_login)(user)
    menu = (await client.get(f"/api/conversations/{conversation.id}/tools/")).json()
    source = next(s for s in menu["sources"] if s["source"] == "mcp:many")
    assert len(source["tools"]) == 20
    assert source["note"] == (
        "This server lists more tools than are offered: only its first 20 are "
        "(at most 20 per server)."
    )


async def test_a_missing_server_program_gives_users_a_plain_note_and_staff_the_detail(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    """RU.12: the exception (a path, an errno) reaches the admin's row and the log, never
    the answer; the row also keeps a working server's listing."""
    from chat.models.tool_servers import ToolServer

    mcp_file(
        {
            "orders": {"command": "/nonexistent/mcp-server", "args": []},
            "notes": server_entry(marker_dir),
        }
    )
    ws_fake_llm.enqueue("Fine.")
    await send(socket, type="message", content="Hello", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    [note] = [s for s in of_type(events, "step") if s["kind"] == "note"]
    assert note["text"] == (
        "The orders tool server is unavailable right now; the answer goes on without its tools."
    )
    orders = await ToolServer.objects.aget(name="orders")
    assert orders.last_error and orders.last_error_at
    assert orders.last_error not in json.dumps(events) and "Error" not in note["text"]
    notes = await ToolServer.objects.aget(name="notes")
    assert notes.last_listed_at and notes.tool_count >= 5 and not notes.last_error
    assert "echo" in {t["name"] for t in notes.listed_tools}


async def test_a_server_tool_switched_off_in_the_chat_is_not_offered_to_its_run(
    socket, conversation, ws_fake_llm, mcp_file, marker_dir
):
    """RU.12: the per-tool switch really removes the tool from the model's request."""
    conversation.disabled_tool_sources = ["tool:notes__echo", "tool:fetch_url"]
    await conversation.asave(update_fields=["disabled_tool_sources"])
    mcp_file({"notes": server_entry(marker_dir)})
    ws_fake_llm.enqueue("Fine.")
    await send(socket, type="message", content="Hello", mode="react")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    offered = {t["function"]["name"] for t in ws_fake_llm.calls[0].tools}
    assert "notes__add" in offered and "calculator" in offered
    assert "notes__echo" not in offered and "fetch_url" not in offered
