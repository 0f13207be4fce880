"""The client against each provider profile of the scripted server: requests adapted,
refused parameters retried once and remembered, reasoning apart, usage right or estimated."""

from __future__ import annotations

import pytest

from contextmgmt.core.llm import StreamChunk
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.providers import PROFILES, ProviderProfile
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.support.scripted_server import Reply, text, tool_calls

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "arithmetic",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
        },
    }
]
THOUGHT = "The user wants a product. I should use the calculator."


def question() -> list[ChatMessage]:
    return [ChatMessage(role="user", content="What is 6*7?")]


class Learnt:
    """Collects what the client reports through ``on_learn``."""

    def __init__(self) -> None:
        self.reports: list[tuple[ProviderProfile, str | None, str]] = []

    async def __call__(self, profile: ProviderProfile, param: str | None, message: str) -> None:
        self.reports.append((profile, param, message))


@pytest.fixture
async def make_llm(scripted_server):
    made = []

    def make(profile: ProviderProfile | None = None, learnt: Learnt | None = None):
        llm = OpenAIChatLLM(
            model="m",
            base_url=scripted_server.base_url,
            api_key="k",
            max_retries=0,
            profile=profile,
            on_learn=learnt,
        )
        made.append(llm)
        return llm

    yield make
    for llm in made:
        await llm.aclose()


async def collect(stream) -> list[StreamChunk]:
    return [chunk async for chunk in stream]


async def test_a_reasoning_model_refusing_max_tokens_and_temperature_is_retried_and_learnt(
    scripted_server, make_llm
):
    scripted_server.use_profile("openai_reasoning").enqueue(text("42.", usage=(30, 4)))
    learnt = Learnt()
    llm = make_llm(PROFILES["openai_compatible"], learnt)
    result = await llm.chat(question(), max_tokens=200, temperature=0.2)
    assert result.message.content == "42."
    sent = scripted_server.requests
    assert ("max_tokens" in sent[0], "max_completion_tokens" in sent[1]) == (True, True)
    assert "temperature" in sent[1] and "temperature" not in sent[2]
    assert sent[2]["max_completion_tokens"] == 200
    assert [param for _, param, _ in learnt.reports] == ["max_tokens", "temperature"]
    assert learnt.reports[-1][0] == ProviderProfile(
        token_limit_param="max_completion_tokens", send_temperature=False
    )
    # Remembered: the next call goes out right the first time.
    scripted_server.enqueue(text("Again."))
    await llm.chat(question(), max_tokens=200, temperature=0.2)
    assert len(scripted_server.requests) == 4 and "max_tokens" not in sent[3]


async def test_reasoning_tokens_are_counted_inside_the_output(scripted_server, make_llm):
    scripted_server.use_profile("openai_reasoning").enqueue(
        text("42.", reasoning=THOUGHT, usage=(30, 4))
    )
    chunks = await collect(make_llm(PROFILES["openai_reasoning"]).stream_chat(question()))
    usage = chunks[-1].usage
    assert usage.reasoning_tokens == len(THOUGHT) // 4 + 8
    assert usage.output_tokens == 4 + usage.reasoning_tokens and not usage.estimated
    assert not any(c.reasoning for c in chunks)  # OpenAI sends no reasoning text


@pytest.mark.parametrize(
    ("profile", "field"), [("deepseek", "reasoning_content"), ("ollama", "reasoning")]
)
async def test_streamed_reasoning_arrives_apart_from_the_answer(
    scripted_server, make_llm, profile, field
):
    scripted_server.use_profile(profile).enqueue(text("It is 42.", reasoning=THOUGHT))
    learnt = Learnt()
    chunks = await collect(make_llm(PROFILES["openai_compatible"], learnt).stream_chat(question()))
    assert "".join(c.reasoning for c in chunks) == THOUGHT
    assert "".join(c.text for c in chunks) == "It is 42."
    assert learnt.reports[-1][0].reasoning_field == field


async def test_reasoning_of_a_non_streamed_reply_stays_out_of_the_content(
    scripted_server, make_llm
):
    scripted_server.use_profile("deepseek").enqueue(text("42.", reasoning=THOUGHT))
    llm = make_llm(PROFILES["deepseek"])
    result = await llm.chat(question())
    assert (result.message.content, result.message.metadata["reasoning"]) == ("42.", THOUGHT)
    # Sent back in the history, the reply carries no reasoning (DeepSeek would refuse it).
    scripted_server.enqueue(text("Done."))
    follow_up = [*question(), result.message, ChatMessage(role="user", content="Thanks")]
    assert (await llm.chat(follow_up)).message.content == "Done."
    assert "reasoning_content" not in scripted_server.requests[-1]["messages"][1]


async def test_a_gateway_refusing_stream_options_streams_without_and_estimates(
    scripted_server, make_llm
):
    scripted_server.use_profile("gateway_no_stream_usage").enqueue(text("Hello there."))
    learnt = Learnt()
    llm = make_llm(PROFILES["openai_compatible"], learnt)
    chunks = await collect(llm.stream_chat(question()))
    assert "".join(c.text for c in chunks) == "Hello there."
    assert chunks[-1].usage.estimated
    assert [param for _, param, _ in learnt.reports] == ["stream_options"]
    assert "stream_options" not in scripted_server.requests[1]
    assert llm.endpoint.profile.stream_usage is False


async def test_ollama_sends_no_stream_usage_and_whole_tool_calls_without_index(
    scripted_server, make_llm
):
    scripted_server.use_profile("ollama").enqueue(
        tool_calls(("calculator", {"expression": "6*7"}), ("calculator", {"expression": "5*8"}))
    )
    learnt = Learnt()
    llm = make_llm(PROFILES["openai_compatible"], learnt)
    chunks = await collect(llm.stream_chat(question(), tools=TOOLS))
    calls = chunks[-1].tool_calls
    assert [c.arguments for c in calls] == ['{"expression": "6*7"}', '{"expression": "5*8"}']
    assert chunks[-1].usage.estimated
    assert learnt.reports[-1][0].stream_usage is False  # observed, so asked no more


async def test_a_400_that_names_no_parameter_is_not_retried(scripted_server, make_llm):
    scripted_server.enqueue(
        Reply(content=None, status=400, error={"message": "Invalid image URL", "param": None})
    )
    learnt = Learnt()
    with pytest.raises(Exception, match="Invalid image URL"):
        await make_llm(None, learnt).chat(question(), temperature=0.5)
    assert len(scripted_server.requests) == 1 and learnt.reports == []
