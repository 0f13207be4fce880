"""The offline model calls a tool the user names ("call <tool> {json}") when that tool is
offered, and only then: with the built-in tools alone it behaves as before."""

from __future__ import annotations

import json

from contextmgmt.core.messages import ChatMessage
from fimone.agent import default_tools
from fimone.llm.offline.model import OfflineLLM
from fimone.llm.offline.tools import decide_tool_calls
from tests.support.approval_tool import approval_tools


def offered(*extra) -> list[dict]:
    return default_tools().openai_tools() + [t.openai() for t in extra]


async def test_a_named_offered_tool_is_called_with_the_given_arguments():
    llm = OfflineLLM()
    query = ChatMessage(role="user", content='Please call send_note {"text": "ship it"}')
    result = await llm.chat([query], tools=offered(*approval_tools()))
    (call,) = result.message.tool_calls
    assert call.name == "send_note"
    assert json.loads(call.arguments) == {"text": "ship it"}


async def test_without_the_tool_offered_the_same_words_call_nothing():
    llm = OfflineLLM()
    query = ChatMessage(role="user", content='Please call send_note {"text": "ship it"}')
    result = await llm.chat([query], tools=offered())
    assert not result.message.tool_calls


def test_built_in_tools_keep_their_own_rules_and_are_not_called_twice():
    calls = decide_tool_calls("use calculator to work out 6*7", {"calculator"}, "c")
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("calculator", {"expression": "6*7"})
    ]


def test_unreadable_arguments_call_the_tool_without_any():
    (call,) = decide_tool_calls("run send_note {not json}", {"send_note"}, "c")
    assert (call.name, call.arguments) == ("send_note", "{}")


async def test_the_answer_reports_the_tool_result():
    llm = OfflineLLM()
    messages = [
        ChatMessage(role="user", content='call send_note {"text": "hi"}'),
        (
            await llm.chat(
                [ChatMessage(role="user", content='call send_note {"text": "hi"}')],
                tools=offered(*approval_tools()),
            )
        ).message,
    ]
    call = messages[1].tool_calls[0]
    messages.append(ChatMessage(role="tool", content="note sent: hi", tool_call_id=call.id))
    answer = await llm.chat(messages, tools=offered(*approval_tools()))
    assert not answer.message.tool_calls
    assert "note sent: hi" in answer.message.text()
