"""The offline model's own sentences follow the user: the request's language when it shows
one, else the interface language the run gave it (``OfflineLLM.speaking``)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextmgmt.core.masking import record_stub
from contextmgmt.core.messages import ChatMessage, ToolCall
from fimone.agent.dag_context import enriched_query, format_history
from fimone.agent.prompts import SYNTHESIS_SYSTEM
from fimone.llm.offline.model import OfflineLLM
from fimone.llm.offline.phrases import PHRASES, language_of
from fimone.llm.offline.text import detect_language

PLANNER = "You are the planner. Reply with a JSON plan only."
ANALYSER = "Reply with a JSON verdict only."


def calculated(query: str, result: str) -> list[ChatMessage]:
    call = ToolCall(id="c1", name="calculator", arguments=json.dumps({"expression": query}))
    return [
        ChatMessage(role="system", content="You are fimone."),
        ChatMessage(role="user", content=query, pinned=True),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=result, tool_call_id="c1"),
    ]


def latin_words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]{3,}", text.replace("fimone", ""))


@pytest.mark.parametrize(
    ("code", "short"),
    [("zh-hans", "zh"), ("zh_Hans", "zh"), ("de", "de"), ("de-AT", "de"), ("en", "en"),
     ("fr", "en"), ("", "en"), (None, "en")],
)  # fmt: skip
def test_language_codes_map_to_the_phrase_table(code, short):
    assert language_of(code) == short


def test_speaking_gives_the_same_model_in_another_language():
    chinese = OfflineLLM().speaking("zh-hans")
    assert isinstance(chinese, OfflineLLM)
    assert (chinese.model_name, chinese.language) == (OfflineLLM().model_name, "zh")
    assert OfflineLLM().language == "en"


async def test_a_bare_expression_is_answered_in_the_interface_language():
    messages = calculated("3+4", "`3+4` = 7")
    chinese = (await OfflineLLM().speaking("zh-hans").chat(messages)).message.content
    assert "7" in chinese and PHRASES["note"]["zh"] in chinese
    assert not latin_words(chinese), chinese
    german = (await OfflineLLM().speaking("de").chat(messages)).message.content
    assert PHRASES["note"]["de"] in german
    english = (await OfflineLLM().chat(messages)).message.content
    assert PHRASES["note"]["en"] in english


async def test_a_request_in_its_own_language_keeps_it_whatever_the_interface():
    messages = calculated("What is 3+4?", "`3+4` = 7")
    reply = (await OfflineLLM().speaking("zh-hans").chat(messages)).message.content
    assert PHRASES["note"]["en"] in reply
    messages = calculated("3+4 等于多少？", "`3+4` = 7")
    reply = (await OfflineLLM().speaking("de").chat(messages)).message.content
    assert PHRASES["note"]["zh"] in reply


async def test_a_german_interface_gets_a_german_plan_and_verdict():
    llm = OfflineLLM().speaking("de")
    plan = [
        ChatMessage(role="system", content=PLANNER),
        ChatMessage(role="user", content="12*7"),
    ]
    steps = json.loads((await llm.chat(plan)).message.content)["steps"]
    assert steps[0]["task"].startswith("Die Fakten, Zahlen und Werkzeugergebnisse sammeln")
    assert steps[-1]["task"] == PHRASES["plan_answer"]["de"]
    analysis = "User request:\n12*7\n\nStep results:\n\n### Step s1: task s1\n"
    verdict = [
        ChatMessage(role="system", content=ANALYSER),
        ChatMessage(role="user", content=analysis),
    ]
    got = json.loads((await llm.chat(verdict)).message.content)
    assert got["achieved"] is False
    assert got["reason"] == PHRASES["verdict_failed"]["de"].format(steps="s1")


async def test_a_chinese_interface_gets_a_chinese_verdict_for_a_bare_request():
    llm = OfflineLLM().speaking("zh-hans")
    analysis = "User request:\n3+4\n\nStep results:\n\n### Step s1: task s1\n`3+4` = 7\n"
    verdict = [
        ChatMessage(role="system", content=ANALYSER),
        ChatMessage(role="user", content=analysis),
    ]
    got = json.loads((await llm.chat(verdict)).message.content)
    assert got == {"achieved": True, "confidence": 0.9, "reason": PHRASES["verdict_ok"]["zh"]}


def dag_answer_call(earlier_question: str, request: str) -> list[ChatMessage]:
    """The DAG engine's final-answer call after a calculation earlier in the conversation:
    the step results, then the request after the earlier conversation as text, whose tool
    result is the stored stub (English frames around the user's words)."""
    call = ToolCall(id="c1", name="calculator", arguments=json.dumps({"expression": "12*7"}))
    history = [
        ChatMessage(role="user", content=earlier_question),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=record_stub(call, 2, "84", "r1"), tool_call_id="c1"),
        ChatMessage(role="assistant", content="`12*7` = 84"),
    ]
    result = "`19*29` = 551"
    return [
        ChatMessage(role="system", content=SYNTHESIS_SYSTEM),
        ChatMessage(role="user", content=f"Result of step s1 (calculate 19*29):\n{result}"),
        ChatMessage(role="user", content=f"Result of step s2 (write the answer):\n{result}"),
        ChatMessage(
            role="user", content=enriched_query(format_history(history), request), pinned=True
        ),
    ]


@pytest.mark.parametrize(
    ("interface", "earlier_question", "question", "language"),
    [
        ("zh-hans", "12*7 等于多少？", "计算 19*29", "zh"),
        ("de", "Was ist 12*7, bitte?", "Berechne 19*29 bitte", "de"),
        ("zh-hans", "12*7 等于多少？", "What is 19*29, please?", "en"),
    ],
)
async def test_a_dag_answer_speaks_the_request_not_the_history_frames(
    interface, earlier_question, question, language
):
    """The DAG answer's request comes after the earlier conversation as text, framed in
    English ("Previous conversation:", "Tool result: [Tool result masked …]"): the note
    is in the language of the request itself."""
    messages = dag_answer_call(earlier_question, question)
    reply = (await OfflineLLM().speaking(interface).chat(messages)).message.content
    assert "551" in reply
    assert PHRASES["note"][language] in reply, reply


@given(
    st.text(alphabet="你好世界预算会议", min_size=3, max_size=20),
    st.sampled_from(["en", "de", "zh"]),
)
def test_chinese_text_is_chinese_whatever_the_default(text, default):
    assert detect_language(text, default=default) == "zh"


@given(st.text(alphabet="0123456789+-*/ ().", max_size=20), st.sampled_from(["en", "de", "zh"]))
def test_text_without_words_takes_the_default(text, default):
    assert detect_language(text, default=default) == default
