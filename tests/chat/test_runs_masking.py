"""Tool outputs in a run's context: masked before summarised, brought back whole by id,
and earlier runs' tool calls found again (through the websocket run path)."""

from __future__ import annotations

import json

import pytest

from chat.models import ToolResult
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.prompts import hint_of
from tests.support.log_tool import log_fact, log_text, with_log_tool
from tests.support.runs import connect, events_until, of_type, send, use_small_budget

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]


def call(name: str, arguments: dict, call_id: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content=None,
        tool_calls=[ToolCall(call_id, name, json.dumps(arguments))],
    )


class Script:
    """Main-model replies in order; any summariser call gets a short summary."""

    def __init__(self, *replies) -> None:
        self.replies = list(replies)

    def __call__(self, messages):
        if hint_of(messages[0].text()):
            return "Earlier logs were read."
        return self.replies.pop(0)


def tool_texts(fake, call_id: str) -> list[str]:
    """What each model call carried as the result of ``call_id``."""
    out = []
    for c in fake.calls:
        if hint_of(c.messages[0].text()):
            continue
        out += [m.text() for m in c.messages if m.role == "tool" and m.tool_call_id == call_id]
    return out


async def test_a_masked_result_comes_back_whole_and_an_earlier_calculation_is_found(
    user, conversation, ws_fake_llm, run_deps
):
    with_log_tool(run_deps)
    use_small_budget(run_deps, usable=4_000)
    socket = await connect(user, conversation.id)
    try:
        ws_fake_llm.default = Script(
            call("calculator", {"expression": "42500*0.19"}, "vat"), "The VAT is 8,075 EUR."
        )
        await send(socket, type="message", content="How much VAT is due on 42,500 EUR at 19%?")
        first = await events_until(socket, "done", "error")
        assert first[-1]["type"] == "done", first[-1]

        reads = [call("read_log", {"n": n}, f"log{n}") for n in range(6)]
        ws_fake_llm.default = Script(
            *reads,
            call("recall", {"id": "log0"}, "back"),
            call("recall", {"query": "VAT"}, "vat-again"),
            "Batch 0's checksum and the VAT are above.",
        )
        ws_fake_llm.calls.clear()
        await send(socket, type="message", content="Read the six import logs, then batch 0.")
        second = await events_until(socket, "done", "error")
        assert second[-1]["type"] == "done", second[-1]
    finally:
        await socket.disconnect()

    compacts = of_type(second, "compact")
    assert compacts and compacts[0]["strategy"] == "mask"
    assert compacts[0]["masked"][0]["tool"] == "read_log"
    assert compacts[0]["masked"][0]["call_id"] == "log0"
    # log0 was sent whole, then as its stub, which says how to get it back ...
    seen = tool_texts(ws_fake_llm, "log0")
    assert seen[0] == log_text(0)
    stub = seen[-1]
    assert stub.startswith("[Tool result masked") and 'recall with id "log0"' in stub
    assert log_fact(0) not in stub
    # ... and recall with that id brought the whole result back.
    (back,) = set(tool_texts(ws_fake_llm, "back"))
    assert log_text(0) in back
    # The earlier run's calculation is found by a word of its question.
    (found,) = set(tool_texts(ws_fake_llm, "vat-again"))
    assert "calculator" in found and "8075" in found
    # The run's whole results are kept for the next runs.
    stored = [r async for r in ToolResult.objects.filter(conversation=conversation)]
    assert {r.call_id for r in stored} >= {"vat", "log0", "log5"}
    log0 = next(r for r in stored if r.call_id == "log0")
    assert log0.content == log_text(0) and log0.chars == len(log_text(0))


async def test_an_earlier_runs_tool_calls_come_as_masked_records_and_back_by_id(
    user, conversation, ws_fake_llm, run_deps
):
    """The next run's history holds the earlier run's calls as valid tool pairs whose
    results are stubs; recall with a stub's id brings the stored result back whole."""
    with_log_tool(run_deps)
    socket = await connect(user, conversation.id)
    try:
        ws_fake_llm.default = Script(call("read_log", {"n": 3}, "first"), "Log 3 is fine.")
        await send(socket, type="message", content="Check the third import log.")
        first = await events_until(socket, "done", "error")
        assert first[-1]["type"] == "done", first[-1]
        stored = await ToolResult.objects.aget(conversation=conversation, call_id="first")

        ws_fake_llm.calls.clear()
        ws_fake_llm.default = Script(
            call("recall", {"id": stored.result_id}, "again"), "Its checksum is above."
        )
        await send(socket, type="message", content="What was that checksum again?")
        second = await events_until(socket, "done", "error")
        assert second[-1]["type"] == "done", second[-1]
    finally:
        await socket.disconnect()

    request = ws_fake_llm.calls[0].messages
    roles = [m.role for m in request]
    i = next(k for k, m in enumerate(request) if m.tool_calls)
    assert roles[i - 1 : i + 3] == ["user", "assistant", "tool", "assistant"]
    (record_call,) = request[i].tool_calls
    assert record_call.name == "read_log" and json.loads(record_call.arguments) == {"n": 3}
    stub = request[i + 1].text()
    assert request[i + 1].tool_call_id == record_call.id
    assert f'recall with id "{stored.result_id}"' in stub and log_fact(3) not in stub
    assert request[i + 2].text() == "Log 3 is fine."
    (back,) = set(tool_texts(ws_fake_llm, "again"))
    assert log_text(3) in back
