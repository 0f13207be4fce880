"""Tool calls that need the user's approval, over real Channels websockets with the real
ReAct engine and a scripted model: approve once, approve for the conversation (the next
call is not put to the user), decline (the model reads it), no answer in time (the run
ends cancelled with a note), Stop while waiting, an answer from a second socket, and a
socket that reconnects while the run waits."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from chat.models import Message, ToolApproval
from chat.runs.deps import make_tools
from chat.tools import settings as tool_settings
from fimone.agent.approval import declined_result
from tests.support import approval_tool
from tests.support.runs import connect, events_until, next_event, of_type, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


@pytest.fixture(autouse=True)
def with_send_note(run_deps):
    """Runs are offered ``send_note`` (needs approval) besides the built-in tools."""
    approval_tool.SENT.clear()

    def tools(conversation_id, **kwargs):
        registry = make_tools(conversation_id, **kwargs)
        for tool in approval_tool.approval_tools():
            if tool.source not in kwargs.get("disabled_sources", ()):
                registry.register(tool)
        return registry

    run_deps.use(make_tools=tools)


def note_call(llm, text: str, call_id: str = "n1"):
    return llm.tool_call("send_note", json.dumps({"text": text}), call_id)


async def ask_and_wait(socket, content: str = "Tell the team hello") -> dict:
    await send(socket, type="message", content=content, mode="react")
    events = await events_until(socket, "tool.approval", "done", "error")
    assert events[-1]["type"] == "tool.approval", events
    return events[-1]


async def answer_of(conversation) -> Message:
    return await Message.objects.filter(conversation=conversation, role="assistant").alast()


async def test_approved_once_the_tool_runs_and_the_next_call_is_asked_again(
    socket, conversation, ws_fake_llm
):
    ws_fake_llm.enqueue(note_call(ws_fake_llm, "hello"), "The note is out.")
    request = await ask_and_wait(socket)
    assert request["tool"] == "send_note" and request["source"] == "test"
    assert json.loads(request["arguments"]) == {"text": "hello"}
    assert request["call_id"] == "n1" and request["timeout_seconds"] > 0
    assert approval_tool.SENT == []  # nothing runs before the answer

    await send(socket, type="approval", request_id=request["request_id"], decision="once")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events
    (resolved,) = of_type(events, "tool.approval.resolved")
    assert (resolved["request_id"], resolved["decision"]) == (request["request_id"], "once")
    assert approval_tool.SENT == ["hello"]
    assert ws_fake_llm.calls[1].messages[-1].content == "note sent: hello"
    stored = await answer_of(conversation)
    (step,) = [s for s in stored.metadata["steps"] if s["kind"] == "approval"]
    assert (step["tool"], step["status"]) == ("send_note", "once")
    assert not await ToolApproval.objects.filter(conversation=conversation).aexists()

    ws_fake_llm.enqueue(note_call(ws_fake_llm, "again", "n2"), "Out again.")
    again = await ask_and_wait(socket, "And once more")
    assert again["request_id"] != request["request_id"]
    await send(socket, type="approval", request_id=again["request_id"], decision="once")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"


async def test_approved_for_the_conversation_later_calls_run_without_asking(
    socket, conversation, ws_fake_llm
):
    ws_fake_llm.enqueue(note_call(ws_fake_llm, "one"), "Sent one.")
    request = await ask_and_wait(socket)
    await send(socket, type="approval", request_id=request["request_id"], decision="conversation")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    assert await sync_to_async(tool_settings.approved_tools)(conversation_id=conversation.id) == [
        "send_note"
    ]

    ws_fake_llm.enqueue(note_call(ws_fake_llm, "two", "n2"), "Sent two.")
    await send(socket, type="message", content="Another note", mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events
    assert of_type(events, "tool.approval") == []
    assert approval_tool.SENT == ["one", "two"]


async def test_a_declined_call_does_not_run_and_the_model_reads_that_the_user_declined(
    socket, conversation, ws_fake_llm
):
    ws_fake_llm.enqueue(note_call(ws_fake_llm, "secret"), "Understood, I did not send it.")
    request = await ask_and_wait(socket)
    await send(socket, type="approval", request_id=request["request_id"], decision="decline")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events
    assert approval_tool.SENT == []
    tool_message = ws_fake_llm.calls[1].messages[-1]
    assert (tool_message.role, tool_message.tool_call_id) == ("tool", "n1")
    assert tool_message.content == declined_result("send_note")
    results = [s for s in of_type(events, "step") if s["kind"] == "tool_result"]
    assert "declined" in results[0]["result"]
    stored = await answer_of(conversation)
    assert stored.content == "Understood, I did not send it."


async def test_no_answer_in_time_ends_the_run_cancelled_with_a_note(
    socket, conversation, ws_fake_llm, settings
):
    settings.FIMONE_TOOL_APPROVAL_SECONDS = 0.3
    ws_fake_llm.enqueue(note_call(ws_fake_llm, "late"), "unreachable")
    request = await ask_and_wait(socket)
    events = await events_until(socket, "run.cancelled", "done", "error")
    cancelled = events[-1]
    assert cancelled["type"] == "run.cancelled", events
    assert cancelled["note"]["code"] == "approval_timeout"
    assert "send_note" in cancelled["note"]["message"]
    (resolved,) = of_type(events, "tool.approval.resolved")
    assert (resolved["request_id"], resolved["decision"]) == (request["request_id"], "timed_out")
    assert approval_tool.SENT == [] and len(ws_fake_llm.calls) == 1
    stored = await answer_of(conversation)
    assert stored.status == "cancelled"
    assert stored.metadata["note"]["code"] == "approval_timeout"
    # A late answer finds nothing waiting.
    await send(socket, type="approval", request_id=request["request_id"], decision="once")
    assert (await next_event(socket))["code"] == "no_pending_approval"


async def test_stop_while_waiting_ends_the_run_and_the_request(socket, conversation, ws_fake_llm):
    ws_fake_llm.enqueue(note_call(ws_fake_llm, "never"), "unreachable")
    await ask_and_wait(socket)
    await send(socket, type="cancel")
    events = await events_until(socket, "run.cancelled", "done", "error")
    assert events[-1]["type"] == "run.cancelled" and "note" not in events[-1]
    assert approval_tool.SENT == []
    stored = await answer_of(conversation)
    assert stored.status == "cancelled" and "note" not in stored.metadata
    (step,) = [s for s in stored.metadata["steps"] if s["kind"] == "approval"]
    assert step["status"] == "cancelled"


async def test_a_second_socket_sees_the_request_and_its_answer_counts(
    socket, user, conversation, ws_fake_llm
):
    second = await connect(user, conversation.id)
    try:
        ws_fake_llm.enqueue(note_call(ws_fake_llm, "from tab two"), "Sent.")
        request = await ask_and_wait(socket)
        seen = (await events_until(second, "tool.approval"))[-1]
        assert seen["request_id"] == request["request_id"]
        await send(second, type="approval", request_id=request["request_id"], decision="once")
        for comm in (socket, second):
            events = await events_until(comm, "done", "error")
            assert events[-1]["type"] == "done", events
            assert of_type(events, "tool.approval.resolved")[0]["decision"] == "once"
        # The first tab answering too late is told so; nothing runs twice.
        await send(socket, type="approval", request_id=request["request_id"], decision="once")
        assert (await next_event(socket))["code"] == "no_pending_approval"
        assert approval_tool.SENT == ["from tab two"]
    finally:
        await second.disconnect()


async def test_a_socket_reconnecting_while_the_run_waits_gets_the_request_and_answers(
    socket, user, conversation, ws_fake_llm
):
    ws_fake_llm.enqueue(note_call(ws_fake_llm, "after reload"), "Sent after the reload.")
    request = await ask_and_wait(socket)
    await socket.disconnect()
    again = await connect(user, conversation.id)
    try:
        active = await next_event(again)
        assert active["type"] == "run.active"
        (pending,) = [s for s in active["steps"] if s["kind"] == "approval"]
        assert (pending["request_id"], pending["status"]) == (request["request_id"], "pending")
        assert pending["tool"] == "send_note"
        await send(again, type="approval", request_id=pending["request_id"], decision="once")
        events = await events_until(again, "done", "error")
        assert events[-1]["type"] == "done", events
        assert approval_tool.SENT == ["after reload"]
    finally:
        await again.disconnect()


async def test_a_switched_off_source_offers_none_of_its_tools(
    socket, user, conversation, ws_fake_llm
):
    await sync_to_async(tool_settings.tool_source_switch)(
        user=user, conversation_id=conversation.id, source="test", enabled=False
    )
    ws_fake_llm.enqueue("No tools needed.")
    await send(socket, type="message", content="hi", mode="react")
    assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    offered = [t["function"]["name"] for t in ws_fake_llm.calls[0].tools]
    assert "send_note" not in offered and "calculator" in offered


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ({"request_id": 7, "decision": "once"}, "bad_request_id"),
        ({"request_id": "x" * 65, "decision": "once"}, "bad_request_id"),
        ({"request_id": "abc", "decision": "always"}, "bad_decision"),
        ({"request_id": "abc", "decision": "once"}, "no_pending_approval"),
    ],
)
async def test_bad_approval_frames_get_a_clear_error(socket, frame, code):
    await send(socket, type="approval", **frame)
    event = await next_event(socket)
    assert (event["type"], event["code"]) == ("error", code)
