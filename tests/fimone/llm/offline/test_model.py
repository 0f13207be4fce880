"""The offline model's behaviours: deterministic, honest, drives every path."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.llm import LLM, Usage
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage, ToolCall
from contextmgmt.core.prompts import COMPACT_PROMPTS
from contextmgmt.core.tokens import (
    estimate_message_tokens,
    estimate_messages_tokens,
    estimate_tokens,
)
from fimone.llm.offline.model import OFFLINE_MODEL_NAME, OfflineLLM
from fimone.llm.offline.text import detect_language

TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("calculator", "current_time", "recall")
]
PLANNER = "You are the planner. Reply with a JSON plan only."
ANALYSER = "Reply with a JSON verdict only."

ENGLISH_TRANSCRIPT = "\n\n".join(
    [
        "user: Hi!",
        "assistant: Hello! How can I help?",
        "user: I'm planning a trip to Lisbon with Maria Santos. Our budget is 3,450 EUR and we "
        "fly on 2026-03-14 with flight TP1234.",
        "assistant: Great. I found hotel options at https://example.com/hotels/lisbon?id=77 "
        "for about 180 EUR per night.",
        "user: ok",
        "user: Please keep the booking reference ABC-991 and the file trip_plan_v2.xlsx in mind.",
        "assistant: Sure, noted. The weather in March is mild, usually around 17 degrees.",
        "user: thanks",
    ]
)

CHINESE_TRANSCRIPT = """user: 你好！

assistant: 你好，有什么可以帮你？

user: 我们下周三要和张伟开会，讨论第二季度预算 120 万元。

assistant: 好的，我记下了。会议地点在上海办公室 3 楼。

user: 另外，项目编号是 PRJ-2048，截止日期是 2026年6月30日。

assistant: 明白了。需要我准备议程吗？

user: 好的"""


def compaction_call(transcript: str, hint: str = "general") -> list[ChatMessage]:
    """The shape of a compaction call: system = hint prompt, user = transcript (compact.py)."""
    return [
        ChatMessage(role="system", content=COMPACT_PROMPTS[hint]),
        ChatMessage(role="user", content=transcript),
    ]


def user_turn(text: str) -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="You are fimone."),
        ChatMessage(role="user", content=text, pinned=True),
    ]


def test_it_is_an_llm_labelled_offline(offline_llm):
    assert isinstance(offline_llm, LLM)
    assert offline_llm.offline is True
    assert offline_llm.model_name == OFFLINE_MODEL_NAME == "fimone-offline"


async def test_unknown_options_are_an_error(offline_llm):
    with pytest.raises(TypeError, match="top_k"):
        await offline_llm.chat(user_turn("hi"), top_k=1)


async def test_known_options_are_accepted(offline_llm):
    result = await offline_llm.chat(
        user_turn("hi"), timeout=1, max_tokens=10, temperature=0, response_format=None
    )
    assert result.message.content


# --- compaction ------------------------------------------------------------------------------


@pytest.mark.parametrize("hint", sorted(COMPACT_PROMPTS))
async def test_compaction_keeps_numbers_names_identifiers_and_urls(offline_llm, hint):
    result = await offline_llm.chat(compaction_call(ENGLISH_TRANSCRIPT, hint))
    summary = result.message.content
    for fact in (
        "3,450 EUR",
        "2026-03-14",
        "TP1234",
        "Maria Santos",
        "Lisbon",
        "https://example.com/hotels/lisbon?id=77",
        "ABC-991",
        "trip_plan_v2.xlsx",
        "180 EUR",
    ):
        assert fact in summary, fact
    assert estimate_tokens(summary) < estimate_tokens(ENGLISH_TRANSCRIPT)
    assert detect_language(summary) == "en"


async def test_compaction_drops_greetings_and_filler(offline_llm):
    summary = (await offline_llm.chat(compaction_call(ENGLISH_TRANSCRIPT))).message.content
    lines = summary.splitlines()
    assert not any(re.fullmatch(r"- User: (Hi!|ok|thanks)", line) for line in lines)


async def test_a_chinese_conversation_is_summarised_in_chinese(offline_llm):
    summary = (await offline_llm.chat(compaction_call(CHINESE_TRANSCRIPT))).message.content
    assert detect_language(summary) == "zh"
    for fact in ("张伟", "120 万元", "PRJ-2048", "2026年6月30日", "上海办公室 3 楼"):
        assert fact in summary, fact
    assert "用户：" in summary  # its own labels are Chinese too
    assert "User" not in summary and "Assistant" not in summary
    assert "你好！" not in summary


async def test_an_earlier_summary_is_folded_in(offline_llm):
    transcript = (
        f"system: {SUMMARY_PREFIX}\n- User: The server runs on port 8443 at db-7.internal.\n\n"
        "user: Now let us talk about the deploy window.\n\n"
        "assistant: The deploy window is Friday 18:00 to 20:00 UTC."
    )
    summary = (await offline_llm.chat(compaction_call(transcript))).message.content
    assert "port 8443" in summary and "db-7.internal" in summary
    assert "18:00 to 20:00 UTC" in summary
    assert SUMMARY_PREFIX not in summary  # the caller adds the prefix, once


async def test_compaction_usage_comes_from_the_estimator(offline_llm):
    messages = compaction_call(ENGLISH_TRANSCRIPT)
    result = await offline_llm.chat(messages)
    assert result.usage == Usage(
        estimate_messages_tokens(messages), estimate_message_tokens(result.message)
    )


async def test_compaction_respects_max_tokens(offline_llm):
    long_transcript = "\n\n".join(
        f"user: Order {i} ships to warehouse W-{i:03d} with {i * 7} crates." for i in range(200)
    )
    result = await offline_llm.chat(compaction_call(long_transcript), max_tokens=150)
    assert 0 < estimate_tokens(result.message.content) <= 150


_sentence = (
    st.text(
        alphabet=st.sampled_from(list("abcdefghij KLMNOP 0123456789 ,-_/ 预算会议张伟")),
        min_size=1,
        max_size=60,
    )
    .map(str.strip)
    .filter(lambda s: len(s) > 2)
)


@settings(max_examples=120, deadline=None)
@given(
    turns=st.lists(
        st.tuples(st.sampled_from(["user", "assistant", "tool"]), _sentence),
        min_size=1,
        max_size=25,
    ),
    cap=st.integers(min_value=20, max_value=400),
)
def test_summaries_are_extractive_and_within_the_cap(turns, cap):
    """Property: every summary line is a transcript sentence (nothing invented), under the cap."""
    import asyncio

    transcript = "\n\n".join(f"{role}: {text}" for role, text in turns)
    llm = OfflineLLM()
    result = asyncio.run(llm.chat(compaction_call(transcript), max_tokens=cap))
    summary = result.message.content
    assert estimate_tokens(summary) <= cap
    for line in summary.splitlines():
        body = re.sub(r"^- [^:：]+[:：] ?", "", line).rstrip("…")
        assert body and body in transcript, line


async def test_the_same_input_gives_the_same_output(offline_llm):
    first = await offline_llm.chat(compaction_call(CHINESE_TRANSCRIPT))
    second = await OfflineLLM().chat(compaction_call(CHINESE_TRANSCRIPT))
    assert first == second


# --- tool decisions --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What is 12*(3+4)?", [("calculator", {"expression": "12*(3+4)"})]),
        ("what's 1,234 plus 66", [("calculator", {"expression": "1234 + 66"})]),
        ("Calculate 2^10", [("calculator", {"expression": "2**10"})]),
        ("计算 12 乘以 7 等于多少", [("calculator", {"expression": "12 * 7"})]),
        ("What time is it?", [("current_time", {})]),
        ("现在几点？", [("current_time", {})]),
        ("What did I say about the budget earlier?", [("recall", {"query": "the budget"})]),
        ("我之前说过关于预算的什么？", [("recall", {"query": "预算"})]),
        (
            "Compute 15% of 80 and tell me today's date",
            [("calculator", {"expression": "15/100*80"}), ("current_time", {})],
        ),
    ],
)
async def test_the_query_decides_the_tool_call(offline_llm, query, expected):
    result = await offline_llm.chat(user_turn(query), tools=TOOLS)
    calls = result.message.tool_calls
    assert [(c.name, json.loads(c.arguments)) for c in calls] == expected
    assert len({c.id for c in calls}) == len(calls)


@pytest.mark.parametrize(
    "query", ["Hello there", "We meet on 2024-05-01 at 10:30", "Tell me a story about 3 bears"]
)
async def test_no_tool_when_the_query_needs_none(offline_llm, query):
    result = await offline_llm.chat(user_turn(query), tools=TOOLS)
    assert result.message.tool_calls is None
    assert "offline model" in result.message.content


async def test_only_offered_tools_are_called(offline_llm):
    only_time = [t for t in TOOLS if t["function"]["name"] == "current_time"]
    result = await offline_llm.chat(user_turn("What is 6*7? What time is it?"), tools=only_time)
    assert [c.name for c in result.message.tool_calls] == ["current_time"]
    result = await offline_llm.chat(user_turn("What is 6*7?"))
    assert result.message.tool_calls is None


async def test_after_the_tool_result_it_answers_with_it(offline_llm):
    call = ToolCall(id="c1", name="calculator", arguments='{"expression": "6*7"}')
    messages = [
        *user_turn("What is 6*7?"),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content="42", tool_call_id="c1", name="calculator"),
    ]
    result = await offline_llm.chat(messages, tools=TOOLS)
    assert result.message.tool_calls is None
    assert "`6*7` = 42" in result.message.content  # inline code: Markdown keeps the *
    assert "fimone's offline model" in result.message.content


async def test_a_follow_up_after_a_tool_result_is_decided_afresh(offline_llm):
    call = ToolCall(id="c1", name="calculator", arguments='{"expression": "6*7"}')
    messages = [
        *user_turn("What is 6*7?"),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content="42", tool_call_id="c1"),
        ChatMessage(role="user", content="and what time is it?", pinned=True, injected=True),
    ]
    result = await offline_llm.chat(messages, tools=TOOLS)
    assert [c.name for c in result.message.tool_calls] == ["current_time"]


# --- plain answers ---------------------------------------------------------------------------


async def test_a_plain_answer_says_honestly_it_is_the_offline_model(offline_llm):
    result = await offline_llm.chat(user_turn("Write me a poem about the sea"))
    assert "Write me a poem about the sea" in result.message.content
    assert "fimone's offline model" in result.message.content


async def test_a_chinese_question_gets_a_chinese_answer(offline_llm):
    result = await offline_llm.chat(user_turn("请介绍一下你自己"))
    assert detect_language(result.message.content) == "zh"
    assert "离线模型" in result.message.content


async def test_step_results_given_in_the_turn_reach_the_answer_without_repeated_notes(
    offline_llm,
):
    """DAG synthesis: step results come as user messages before the request."""
    step_answer = (await offline_llm.chat(user_turn("hello"))).message.content
    messages = [
        ChatMessage(role="system", content="Write the final answer."),
        ChatMessage(role="user", content="Result of step s1 (add):\n6*7 = 42\n\n" + step_answer),
        ChatMessage(role="user", content="Result of step s2 (time):\nIt is 10:30 UTC."),
        ChatMessage(role="user", content="What is 6*7 and what time is it?", pinned=True),
    ]
    answer = (await offline_llm.chat(messages)).message.content
    assert "6*7 = 42" in answer and "10:30 UTC" in answer
    assert answer.count("fimone's offline model") == 1


async def test_images_it_cannot_see_are_acknowledged(offline_llm):
    parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    result = await offline_llm.chat([ChatMessage(role="user", content=parts, pinned=True)])
    assert "I received an image, but" in result.message.content
    assert offline_llm.supports_vision is False


# --- misfires a user hit ---------------------------------------------------------------------


async def test_pictures_it_cannot_see_are_not_read_as_arithmetic(offline_llm):
    """Without vision the pictures arrive as "[image: name, WxH]" labels: "640x480" is not
    a calculation, and the answer says the model cannot see images."""
    parts = [
        {"type": "text", "text": "What is in these pictures?"},
        {"type": "text", "text": "[image: cat.png, 640x480]"},
        {"type": "text", "text": "[image: dog.png, 640x480]"},
    ]
    messages = [ChatMessage(role="user", content=parts, pinned=True)]
    result = await offline_llm.chat(messages, tools=TOOLS)
    assert result.message.tool_calls is None
    assert "307200" not in result.message.content
    assert "I received 2 images, but" in result.message.content
    assert "cannot see images" in result.message.content


async def test_please_remember_it_is_not_a_recall(offline_llm):
    for query in ("Please remember it", "Remember that my locker code is 4711", "请记住这个"):
        result = await offline_llm.chat(user_turn(query), tools=TOOLS)
        assert result.message.tool_calls is None, query
    answer = (await offline_llm.chat(user_turn("Please remember it"), tools=TOOLS)).message
    assert answer.content.startswith("Noted.")
    asked = await offline_llm.chat(user_turn("Do you remember my locker code?"), tools=TOOLS)
    assert [c.name for c in asked.message.tool_calls] == ["recall"]


def recall_turn(query: str, passages: str) -> list[ChatMessage]:
    call = ToolCall(id="c1", name="recall", arguments=json.dumps({"query": "locker"}))
    return [
        *user_turn(query),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=passages, tool_call_id="c1", name="recall"),
    ]


async def test_recall_does_not_list_its_own_earlier_non_answer(offline_llm):
    passages = (
        "Passages of this conversation matching 'locker', quoted exactly:\n\n"
        "[1] assistant (2026-01-01 10:05): You asked: “Where is my locker?”.\n\n"
        "(fimone's offline model answered this: no language model is configured, so I can "
        "only run tools and repeat what I was given.)\n\n"
        "[2] user (2026-01-01 10:00): My locker is number 12 in hall B."
    )
    answer = await offline_llm.chat(recall_turn("What did I say about my locker?", passages))
    text = answer.message.content
    assert "My locker is number 12 in hall B." in text
    assert "You asked" not in text
    passages = passages.split("\n\n[2]")[0]  # only the non-answer matched
    text = await offline_llm.chat(recall_turn("What did I say about my locker?", passages))
    assert "found nothing" in text.message.content


async def test_chinese_answers_carry_no_english_boilerplate(offline_llm):
    passages = (
        "Passages of this conversation matching '储物柜', quoted exactly:\n\n"
        "[1] user (2026-01-01 10:00): 我的储物柜是 B 区 12 号。"
    )
    reply = await offline_llm.chat(recall_turn("我之前说过储物柜在哪里？", passages))
    text = reply.message.content
    assert "储物柜是 B 区 12 号" in text and "用户" in text
    assert not re.search(r"[A-Za-z]{3,}", text.replace("fimone", "")), text
    call = ToolCall(id="c2", name="current_time", arguments="{}")
    messages = [
        *user_turn("现在几点？"),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content="2026-01-01 10:00 UTC", tool_call_id="c2"),
    ]
    text = (await offline_llm.chat(messages)).message.content
    assert "现在的时间" in text and "current time" not in text


async def test_german_answers_use_the_german_sentences(offline_llm):
    parts = [
        {"type": "text", "text": "Was ist auf diesem Bild, bitte?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    text = (await offline_llm.chat([ChatMessage(role="user", content=parts)])).message.content
    assert "kann aber keine Bilder sehen" in text and "Offline-Modell" in text
    assert "offline model" not in text
