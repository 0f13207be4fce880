"""The offline model reads web pages: it calls ``fetch_url`` when asked to read a URL and
answers from the page it got."""

from __future__ import annotations

import json

import pytest

from contextmgmt.core.messages import ChatMessage, ToolCall
from fimone.llm.offline.model import OfflineLLM
from fimone.llm.offline.tools import find_urls

TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("calculator", "current_time", "recall", "fetch_url")
]
PAGE = (
    "URL: https://birds.example/terns\nTitle: The Tern Report\n\n"
    "# Arctic terns fly farther than any other bird\n\n"
    "The arctic tern migrates from the Arctic to the Antarctic every year.\n\n"
    "The lighthouse keeper's code word is **heliotrope-42**.\n\n"
    "- Weight: about 100 grams\n\n"
    "[Characters 0–200 of 900.]"
)


def turn(text: str) -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="You are fimone."),
        ChatMessage(role="user", content=text, pinned=True),
    ]


def answered(text: str, result: str, url: str = "https://birds.example/terns") -> list:
    call = ToolCall(id="c1", name="fetch_url", arguments=json.dumps({"url": url}))
    return [
        *turn(text),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content=result, tool_call_id="c1", name="fetch_url"),
    ]


async def calls_for(text: str, tools=TOOLS) -> list[tuple[str, dict]]:
    reply = (await OfflineLLM().chat(turn(text), tools=tools)).message
    return [(c.name, json.loads(c.arguments)) for c in reply.tool_calls or []]


@pytest.mark.parametrize(
    "text,url",
    [
        ("fetch https://birds.example/terns", "https://birds.example/terns"),
        ("Please read https://birds.example/terns.", "https://birds.example/terns"),
        (
            "lies https://vögel.example/seeschwalben und fasse zusammen",
            "https://vögel.example/seeschwalben",
        ),
        ("获取 https://birds.example/terns，告诉我内容", "https://birds.example/terns"),
        ("https://birds.example/terns?id=7&x=1", "https://birds.example/terns?id=7&x=1"),
        ("What does (https://birds.example/terns) say?", "https://birds.example/terns"),
    ],
)
async def test_a_url_it_is_asked_to_read_is_fetched(text, url):
    assert await calls_for(text) == [("fetch_url", {"url": url})]


async def test_a_url_merely_mentioned_is_not_fetched():
    assert await calls_for("My blog is at https://birds.example, I write about terns") == []


async def test_another_scheme_goes_to_the_tool_which_refuses_it():
    assert await calls_for("fetch file:///etc/passwd") == [
        ("fetch_url", {"url": "file:///etc/passwd"})
    ]


async def test_without_the_tool_nothing_is_fetched():
    assert await calls_for("fetch https://birds.example/terns", tools=TOOLS[:3]) == []


async def test_a_urls_digits_are_no_arithmetic():
    text = "fetch http://127.0.0.1:8000/a/10/2 and what is 3*4?"
    assert await calls_for(text) == [
        ("fetch_url", {"url": "http://127.0.0.1:8000/a/10/2"}),
        ("calculator", {"expression": "3*4"}),
    ]


def test_urls_are_found_in_order_without_trailing_punctuation():
    text = "Compare https://a.example/x, https://b.example/y. And https://a.example/x!"
    assert find_urls(text) == ["https://a.example/x", "https://b.example/y"]


async def test_the_answer_quotes_the_page():
    reply = (await OfflineLLM().chat(answered("fetch https://birds.example/terns", PAGE))).message
    text = reply.content
    assert text.startswith("From the page `https://birds.example/terns` (The Tern Report):")
    assert "> The lighthouse keeper's code word is **heliotrope-42**." in text
    assert "Characters 0–200" not in text  # the tool's notes are for the model
    assert "offline model" in text


async def test_a_question_about_the_page_quotes_the_paragraph_that_answers_it():
    text = "Read https://birds.example/terns and tell me the lighthouse code word"
    reply = (await OfflineLLM().chat(answered(text, PAGE))).message.content
    assert "heliotrope-42" in reply and "Weight" not in reply


async def test_german_and_chinese_requests_get_their_own_words():
    text = "Lies bitte https://birds.example/terns und sag mir, worum es geht"
    german = (await OfflineLLM().chat(answered(text, PAGE))).message
    assert german.content.startswith("Von der Seite `https://birds.example/terns`")
    # Two words show no language: the user's interface language decides.
    terse = (await OfflineLLM(language="de").chat(answered("lies https://b.example", PAGE))).message
    assert terse.content.startswith("Von der Seite")
    chinese = (await OfflineLLM().chat(answered("获取 https://birds.example/terns", PAGE))).message
    assert chinese.content.startswith("网页 `https://birds.example/terns`")


async def test_a_refusal_is_said_as_one():
    refusal = (
        "Error: refused to connect to 127.0.0.1: that is a loopback address, and fetch_url "
        "only reads public web pages."
    )
    reply = (await OfflineLLM().chat(answered("fetch http://127.0.0.1/", refusal))).message
    assert reply.content.startswith("I could not read the page: refused to connect to 127.0.0.1")


async def test_an_error_status_is_said_before_the_page():
    page = "Error: the server answered HTTP 404.\nURL: https://birds.example/gone\n\nNo such page."
    reply = (await OfflineLLM().chat(answered("fetch https://birds.example/gone", page))).message
    assert reply.content.startswith("The server did not give the page as asked: the server")
    assert "> No such page." in reply.content
