"""The request body OpenAIChatLLM posts is what ``chat.completions.create`` would post
(issue 7 bench target; DESIGN §7).

The client posts through the SDK client's own ``post`` without ``create``'s TypedDict
transform (it cost ~40 % of a server's CPU per run). That is only sound while the transform
is the identity for every request ``_request`` builds; these tests run the SDK's transform
on each shape of request and fail the day it would change one (an SDK upgrade that starts
renaming or formatting a field fimone sends).
"""

from __future__ import annotations

import pytest
from openai._utils import async_maybe_transform
from openai.types.chat import completion_create_params

from contextmgmt.core.messages import ChatMessage, ToolCall
from fimone.llm.openai_client import OpenAIChatLLM

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
]
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def every_message_shape() -> list[ChatMessage]:
    return [
        ChatMessage(role="system", content="You are fimone. Ünïcödé ✓"),
        ChatMessage(role="user", content="[Conversation summary] earlier: 42 apples", pinned=True),
        ChatMessage(role="user", content=[{"type": "text", "text": "What is this?"}, IMAGE]),
        ChatMessage(role="user", content=[IMAGE, {"type": "text", "text": "[image: a.png]"}]),
        ChatMessage(
            role="assistant",
            content=None,
            tool_calls=[
                ToolCall(id="call_1", name="calculator", arguments='{"expression": "6*7"}'),
                ToolCall(id="call_2", name="calculator", arguments="6*7 (not JSON)"),
            ],
        ),
        ChatMessage(role="tool", content="42", tool_call_id="call_1", name="calculator"),
        ChatMessage(role="tool", content="error: bad JSON", tool_call_id="call_2"),
        ChatMessage(role="assistant", content="It is 42.", metadata={"id": 7}),
        ChatMessage(role="user", content="And 6*8?", pinned=True, injected=True),
        ChatMessage(role="user", content="", name="alice"),
    ]


OPTIONS = [
    {},
    {"max_tokens": 256, "temperature": 0.0},
    {"response_format": {"type": "json_object"}},
    {"max_tokens": 10, "timeout": 5.0},
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tools", [None, TOOLS])
@pytest.mark.parametrize("opts", OPTIONS)
async def test_the_sdk_transform_leaves_every_request_as_built(stream, tools, opts):
    llm = OpenAIChatLLM(model="m", base_url="http://127.0.0.1:9/v1")
    body = llm._request(every_message_shape(), tools, dict(opts), stream=stream)
    body.pop("timeout", None)  # a request option, not part of the body (as in create())
    params = (
        completion_create_params.CompletionCreateParamsStreaming
        if stream
        else completion_create_params.CompletionCreateParamsNonStreaming
    )
    transformed = await async_maybe_transform(body, params)
    assert transformed == body
    # Nothing fimone-only (pinned, injected, metadata) is on the wire.
    assert all(
        set(m) <= {"role", "content", "name", "tool_calls", "tool_call_id"}
        for m in body["messages"]
    )
