"""A tool-calling step's reasoning sent back within its turn, for a provider that wants it.

DeepSeek's thinking mode today (the ``deepseek`` fake) refuses a request whose tool-calling
assistant message lacks its ``reasoning_content``; its older reasoner (``deepseek_legacy``)
refused one that carried it. The client follows its profile's ``reasoning_echo`` and learns
either rule from the refusal, once. Sources of both rules: tests/support/provider_profiles.py.
"""

from __future__ import annotations

from contextmgmt.core.messages import STEP_REASONING, ChatMessage, ToolCall
from contextmgmt.core.providers import REASONING_ECHO, REASONING_MISSING
from tests.support.scripted_server import text

THOUGHT = "I need the calculator for this."


def turn_after_a_tool_call(reasoning: str | None = THOUGHT) -> list[ChatMessage]:
    """A question, the step that called a tool (with the reasoning the loop kept), its result."""
    metadata = {STEP_REASONING: reasoning} if reasoning is not None else {}
    return [
        ChatMessage(role="user", content="What is 6*7?"),
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall("c1", "calculator", '{"expression": "6*7"}')],
            metadata=metadata,
        ),
        ChatMessage(role="tool", content="42", tool_call_id="c1"),
    ]


async def test_deepseek_gets_the_steps_reasoning_back_within_the_turn(scripted_server, llm_for):
    scripted_server.use_profile("deepseek").enqueue(text("6*7 = 42."))
    reply = await llm_for("deepseek").chat(turn_after_a_tool_call())
    assert reply.message.content == "6*7 = 42."
    sent = scripted_server.requests
    assert len(sent) == 1  # right the first time
    assert sent[0]["messages"][1]["reasoning_content"] == THOUGHT
    assert "reasoning_content" not in sent[0]["messages"][0]


async def test_a_step_without_kept_reasoning_goes_back_with_an_empty_one(scripted_server, llm_for):
    scripted_server.use_profile("deepseek").enqueue(text("42."))
    await llm_for("deepseek").chat(turn_after_a_tool_call(reasoning=None))
    assert scripted_server.requests[0]["messages"][1]["reasoning_content"] == ""


async def test_an_endpoint_that_wants_the_reasoning_back_is_learnt_once(scripted_server, llm_for):
    # A generic profile (DeepSeek behind a gateway): refused once, then sent from then on.
    scripted_server.use_profile("deepseek").enqueue(text("42."), text("Still 42."))
    llm = llm_for("openai_compatible")
    assert (await llm.chat(turn_after_a_tool_call())).message.content == "42."
    sent = scripted_server.requests
    assert "reasoning_content" not in sent[0]["messages"][1]
    assert sent[1]["messages"][1]["reasoning_content"] == THOUGHT
    assert [param for param, _ in llm_for.learnt] == [REASONING_MISSING]
    assert "must be passed back" in llm_for.learnt[0][1]
    assert (await llm.chat(turn_after_a_tool_call())).message.content == "Still 42."
    assert len(sent) == 3 and sent[2]["messages"][1]["reasoning_content"] == THOUGHT


async def test_the_old_rule_refusing_reasoning_back_is_learnt_once(scripted_server, llm_for):
    scripted_server.use_profile("deepseek_legacy").enqueue(text("42."))
    llm = llm_for("deepseek")
    assert (await llm.chat(turn_after_a_tool_call())).message.content == "42."
    sent = scripted_server.requests
    assert "reasoning_content" in sent[0]["messages"][1]
    assert "reasoning_content" not in sent[1]["messages"][1]
    assert [param for param, _ in llm_for.learnt] == [REASONING_ECHO]
    assert llm.endpoint.profile.reasoning_echo is False


async def test_a_provider_without_the_rule_never_sees_the_reasoning(scripted_server, llm_for):
    scripted_server.use_profile("vllm").enqueue(text("42."))
    await llm_for("vllm").chat(turn_after_a_tool_call())
    assert all("reasoning_content" not in m for m in scripted_server.requests[0]["messages"])
