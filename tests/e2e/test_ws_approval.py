"""Tool approval against a real daphne, real websockets and the real ``openai`` SDK talking
to the scripted server: the model calls ``send_note`` (a test tool that needs approval,
loaded through FIMONE_EXTRA_TOOLS). Approve after a reconnect, approve for the conversation
(the next call is not asked), decline (the model's next request carries the decline), no
answer in time (the run ends cancelled with a note, stored so), Stop while waiting."""

from __future__ import annotations

import json

import pytest

from fimone.agent.approval import declined_result
from tests.e2e.test_ws_runs import Browserless
from tests.e2e.test_ws_streaming import Shown, open_socket, send
from tests.support.scripted_server import text, tool_calls

pytestmark = pytest.mark.slow


def scripted(shared_daphne_factory, scripted_server, **env):
    server = shared_daphne_factory(
        env={
            "LLM_BASE_URL": scripted_server.base_url,
            "LLM_API_KEY": "test-key",
            "LLM_MODEL": "scripted-model",
            "FIMONE_EXTRA_TOOLS": "tests.support.approval_tool:approval_tools",
            **env,
        }
    )
    client = Browserless(server)
    client.login()
    return server, client


@pytest.fixture
def scripted_daphne(shared_daphne_factory, scripted_server):
    return scripted(shared_daphne_factory, scripted_server)


def note(text_: str, call_id: str = "n1"):
    return tool_calls(
        {"id": call_id, "name": "send_note", "arguments": json.dumps({"text": text_})}
    )


def tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def stored_answer(client, conversation_id) -> dict:
    messages = client.api("GET", f"/api/conversations/{conversation_id}/messages/")["messages"]
    return [m for m in messages if m["role"] == "assistant"][-1]


async def test_approve_after_a_reconnect_then_for_the_conversation(
    scripted_daphne, scripted_server
):
    server, client = scripted_daphne
    scripted_server.enqueue(note("first"), text("The first note is out."))
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="Send the team a note", mode="react")
        request = await shown.until("tool.approval")
        assert request["tool"] == "send_note" and request["source"] == "test"
    # The tab is closed while the run waits; a new one (a reload) gets the request.
    _, again = await open_socket(server, client, conversation_id)
    async with again:
        shown = Shown(again)
        active = await shown.until("run.active")
        (pending,) = [s for s in active["steps"] if s["kind"] == "approval"]
        assert (pending["request_id"], pending["status"]) == (request["request_id"], "pending")
        await send(
            again, type="approval", request_id=pending["request_id"], decision="conversation"
        )
        resolved = await shown.until("tool.approval.resolved")
        assert resolved["decision"] == "conversation"
        assert (await shown.until("done", "error"))["type"] == "done"
        assert tool_messages(scripted_server.requests[-1]) == ["note sent: first"]

        scripted_server.enqueue(note("second", "n2"), text("The second note is out."))
        await send(again, type="message", content="And another one", mode="react")
        done = await shown.until("done", "error")
        assert done["type"] == "done", shown.events
        later = shown.events[shown.events.index(resolved) + 1 :]
        assert not [e for e in later if e["type"] == "tool.approval"]
        assert tool_messages(scripted_server.requests[-1])[-1] == "note sent: second"
    steps = stored_answer(client, conversation_id)["steps"]
    assert [s for s in steps if s["kind"] == "approval"] == []  # the second run never asked


async def test_a_decline_is_what_the_model_reads_next(scripted_daphne, scripted_server):
    server, client = scripted_daphne
    scripted_server.enqueue(note("secret"), text("I did not send it."))
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="Send the secret", mode="react")
        request = await shown.until("tool.approval")
        await send(ws, type="approval", request_id=request["request_id"], decision="decline")
        assert (await shown.until("done", "error"))["type"] == "done"
    assert tool_messages(scripted_server.requests[-1]) == [declined_result("send_note")]
    answer = stored_answer(client, conversation_id)
    assert answer["content"] == "I did not send it."
    (step,) = [s for s in answer["steps"] if s["kind"] == "approval"]
    assert step["status"] == "decline"


async def test_no_answer_in_time_ends_the_run_cancelled_with_a_note(
    shared_daphne_factory, scripted_server
):
    server, client = scripted(
        shared_daphne_factory, scripted_server, FIMONE_TOOL_APPROVAL_SECONDS="1"
    )
    scripted_server.enqueue(note("late"))
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="Send it", mode="react")
        await shown.until("tool.approval")
        cancelled = await shown.until("run.cancelled", "done", "error")
    assert cancelled["type"] == "run.cancelled"
    assert cancelled["note"]["code"] == "approval_timeout"
    answer = stored_answer(client, conversation_id)
    assert answer["status"] == "cancelled"
    assert answer["note"]["code"] == "approval_timeout"
    assert len(scripted_server.requests) == 1  # the model was not asked again


async def test_stop_while_waiting(scripted_daphne, scripted_server):
    server, client = scripted_daphne
    scripted_server.enqueue(note("never"))
    conversation_id, ws = await open_socket(server, client)
    async with ws:
        shown = Shown(ws)
        await send(ws, type="message", content="Send it", mode="react")
        await shown.until("tool.approval")
        await send(ws, type="cancel")
        cancelled = await shown.until("run.cancelled", "done", "error")
    assert cancelled["type"] == "run.cancelled" and "note" not in cancelled
    answer = stored_answer(client, conversation_id)
    assert answer["status"] == "cancelled"
    assert [s["status"] for s in answer["steps"] if s["kind"] == "approval"] == ["cancelled"]
    assert json.dumps(scripted_server.requests).count("send_note") >= 1
    assert len(scripted_server.requests) == 1


async def test_a_frame_for_a_finished_run_gets_a_clear_error(scripted_daphne):
    server, client = scripted_daphne
    _, ws = await open_socket(server, client)
    async with ws:
        await send(ws, type="approval", request_id="gone", decision="once")
        event = json.loads(await ws.recv())
    assert (event["type"], event["code"]) == ("error", "no_pending_approval")
