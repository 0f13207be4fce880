"""OpenAIChatLLM through the real openai SDK against the scripted server (issue 4, DESIGN §6, §7).

Retries run through the SDK's own ``max_retries`` (the scripted 5xx/429 replies carry
``retry-after-ms: 1``, so retried tests stay quick); timeouts through its ``timeout``.
"""

from __future__ import annotations

import asyncio
import json

import httpx2
import openai
import pytest

from contextmgmt.core.llm import (
    LLM,
    ContextOverflow,
    LLMAuthError,
    LLMBadResponse,
    LLMError,
    LLMRateLimited,
    LLMTimeout,
    LLMUnavailable,
    Usage,
)
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens
from fimone.llm.providers.openai_client import OpenAIChatLLM, map_error
from fimone.llm.providers.wire import INVALID_ARGUMENTS_KEY
from tests.support.scripted_server import (
    context_overflow,
    cut_off,
    ends_early,
    free_port,
    http_error,
    malformed,
    no_choices,
    rate_limited,
    server_error,
    slow,
    stream_error,
    text,
    tool_calls,
)

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


def conversation() -> list[ChatMessage]:
    """A short conversation carrying fimone's own fields, which must never reach the wire."""
    return [
        ChatMessage(role="system", content="You are terse.", metadata={"db_id": 1}),
        ChatMessage(role="user", content="Hi, I am Ada.", metadata={"db_id": 2}),
        ChatMessage(role="assistant", content="Hello Ada.", metadata={"created_at": "x"}),
        ChatMessage(role="user", content="What is 6*7?", pinned=True, metadata={"db_id": 4}),
    ]


@pytest.fixture
async def llm_on_scripted_server(scripted_server):
    llm = OpenAIChatLLM(
        model="scripted-model",
        base_url=scripted_server.base_url,
        api_key="sk-test-123",
        timeout=5.0,
        max_retries=0,
        rate_limit_retries=0,
    )
    yield llm
    await llm.aclose()


@pytest.fixture
async def llm_with_two_retries(scripted_server):
    llm = OpenAIChatLLM(
        model="scripted-model",
        base_url=scripted_server.base_url,
        api_key="k",
        timeout=5.0,
        max_retries=2,
        rate_limit_retries=2,
    )
    yield llm
    await llm.aclose()


async def collect(stream) -> tuple[str, list]:
    chunks = [chunk async for chunk in stream]
    return "".join(c.text for c in chunks), chunks


# --- chat ------------------------------------------------------------------------------------


def test_client_satisfies_the_llm_protocol():
    llm = OpenAIChatLLM(model="m", base_url="http://127.0.0.1:9/v1")
    assert isinstance(llm, LLM)
    assert llm.model_name == "m" and llm.offline is False


async def test_chat_returns_the_reply_and_the_providers_usage(
    scripted_server, llm_on_scripted_server
):
    scripted_server.enqueue(text("It is 42.", usage=(31, 5)))
    result = await llm_on_scripted_server.chat(conversation())
    assert result.message.role == "assistant"
    assert result.message.content == "It is 42."
    assert result.message.tool_calls is None
    assert result.usage == Usage(31, 5)


async def test_the_wire_carries_exactly_to_openai_and_never_fimones_fields(
    scripted_server, llm_on_scripted_server
):
    """Pinned, injected and metadata stay home (DESIGN §2)."""
    messages = conversation()
    messages.append(ChatMessage(role="user", content="also 2+2", pinned=True, injected=True))
    await llm_on_scripted_server.chat(messages)
    (body,) = scripted_server.requests
    assert body["model"] == "scripted-model"
    assert body["messages"] == [m.to_openai() for m in messages]
    raw = json.dumps(body)
    for field in ("pinned", "injected", "metadata", "db_id", "created_at"):
        assert field not in raw
    assert "stream" not in body and "tools" not in body


async def test_options_and_tools_are_sent(scripted_server, llm_on_scripted_server):
    await llm_on_scripted_server.chat(
        conversation(),
        tools=TOOLS,
        max_tokens=77,
        temperature=0.25,
        response_format={"type": "json_object"},
        timeout=3,
    )
    (body,) = scripted_server.requests
    assert body["tools"] == TOOLS
    assert body["max_tokens"] == 77
    assert body["temperature"] == 0.25
    assert body["response_format"] == {"type": "json_object"}
    assert "timeout" not in body  # a client-side setting, not a request field


async def test_the_api_key_goes_in_the_authorization_header(
    scripted_server, llm_on_scripted_server
):
    await llm_on_scripted_server.chat(conversation())
    assert scripted_server.request_headers[0]["authorization"] == "Bearer sk-test-123"


async def test_image_parts_reach_the_wire_unchanged(scripted_server, llm_on_scripted_server):
    parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    await llm_on_scripted_server.chat([ChatMessage(role="user", content=parts, pinned=True)])
    assert scripted_server.requests[0]["messages"][0]["content"] == parts


async def test_an_unknown_option_is_an_error_and_nothing_is_sent(
    scripted_server, llm_on_scripted_server
):
    with pytest.raises(TypeError, match="top_k"):
        await llm_on_scripted_server.chat(conversation(), top_k=3)
    with pytest.raises(TypeError, match="top_k"):
        await collect(llm_on_scripted_server.stream_chat(conversation(), top_k=3))
    assert scripted_server.requests == []


async def test_a_server_without_usage_gets_the_estimate(scripted_server, llm_on_scripted_server):
    scripted_server.enqueue(text("Forty-two.", usage=None))
    messages = conversation()
    result = await llm_on_scripted_server.chat(messages)
    assert result.usage == Usage(
        estimate_messages_tokens(messages), estimate_message_tokens(result.message), estimated=True
    )


# --- tool calls ------------------------------------------------------------------------------


async def test_chat_returns_a_single_tool_call(scripted_server, llm_on_scripted_server):
    scripted_server.enqueue(tool_calls(("calculator", {"expression": "6*7"}), usage=(40, 9)))
    result = await llm_on_scripted_server.chat(conversation(), tools=TOOLS)
    assert result.message.tool_calls == [
        ToolCall(id="call_0_calculator", name="calculator", arguments='{"expression": "6*7"}')
    ]
    assert result.message.content is None
    assert result.usage == Usage(40, 9)


async def test_chat_returns_parallel_tool_calls_in_order(scripted_server, llm_on_scripted_server):
    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "1+1"}), ("current_time", {}), ("recall", "{}"))
    )
    result = await llm_on_scripted_server.chat(conversation(), tools=TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in result.message.tool_calls] == [
        ("calculator", {"expression": "1+1"}),
        ("current_time", {}),
        ("recall", {}),
    ]
    assert len({c.id for c in result.message.tool_calls}) == 3


async def test_tool_call_arguments_that_are_not_json_come_back_verbatim(
    scripted_server, llm_on_scripted_server
):
    """Issue 9: not a bad response — the tool registry answers them so the model can correct
    its call, as with an in-process model."""
    scripted_server.enqueue(tool_calls(("calculator", '{"expression": "6*')))
    result = await llm_on_scripted_server.chat(conversation(), tools=TOOLS)
    (call,) = result.message.tool_calls
    assert (call.name, call.arguments) == ("calculator", '{"expression": "6*')


async def test_an_earlier_call_with_unparsable_arguments_goes_back_as_valid_json(
    scripted_server, llm_on_scripted_server
):
    """Servers that parse earlier calls' arguments (vLLM templates, proxies) must not refuse
    the request that carries the correction: the raw text is wrapped in a JSON object."""
    bad = ToolCall(id="call_1", name="calculator", arguments='{"expression": "6*')
    good = ToolCall(id="call_2", name="calculator", arguments='{"expression": "6*7"}')
    messages = [
        *conversation(),
        ChatMessage(role="assistant", content=None, tool_calls=[bad, good]),
        ChatMessage(role="tool", content="Error: bad arguments", tool_call_id="call_1"),
        ChatMessage(role="tool", content="42", tool_call_id="call_2"),
    ]
    await llm_on_scripted_server.chat(messages, tools=TOOLS)
    sent = scripted_server.requests[0]["messages"][-3]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in sent] == [
        {INVALID_ARGUMENTS_KEY: '{"expression": "6*'},
        {"expression": "6*7"},
    ]
    assert bad.arguments == '{"expression": "6*'  # the caller's message is not changed


async def test_a_tool_call_result_conversation_round_trips(scripted_server, llm_on_scripted_server):
    """The assistant's tool call and the tool result go back exactly in OpenAI form."""
    call = ToolCall(id="call_7", name="calculator", arguments='{"expression": "6*7"}')
    messages = [
        *conversation(),
        ChatMessage(role="assistant", content=None, tool_calls=[call]),
        ChatMessage(role="tool", content="42", tool_call_id="call_7", name="calculator"),
    ]
    await llm_on_scripted_server.chat(messages, tools=TOOLS)
    sent = scripted_server.requests[0]["messages"]
    assert sent[-2]["tool_calls"] == [call.to_openai()]
    assert sent[-1] == {
        "role": "tool",
        "content": "42",
        "tool_call_id": "call_7",
        "name": "calculator",
    }


# --- streaming -------------------------------------------------------------------------------


async def test_stream_yields_text_deltas_then_a_final_chunk_with_usage(
    scripted_server, llm_on_scripted_server
):
    scripted_server.enqueue(text("The answer is forty two.", usage=(50, 6)))
    joined, chunks = await collect(llm_on_scripted_server.stream_chat(conversation()))
    assert joined == "The answer is forty two."
    assert len([c for c in chunks if c.text]) == 5  # word by word, as the server sent it
    final = chunks[-1]
    assert final.usage == Usage(50, 6)
    assert final.finish_reason == "stop"
    assert final.tool_calls is None
    assert all(c.usage is None for c in chunks[:-1])
    body = scripted_server.requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_stream_assembles_parallel_tool_calls_from_fragments(
    scripted_server, llm_on_scripted_server
):
    scripted_server.enqueue(
        tool_calls(
            ("calculator", {"expression": "(12.5 + 7) * 3"}),
            ("recall", {"query": "the budget Ada mentioned"}),
            usage=(60, 20),
        )
    )
    joined, chunks = await collect(llm_on_scripted_server.stream_chat(conversation(), tools=TOOLS))
    assert joined == ""
    final = chunks[-1]
    assert final.finish_reason == "tool_calls"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in final.tool_calls] == [
        ("call_0_calculator", "calculator", {"expression": "(12.5 + 7) * 3"}),
        ("call_1_recall", "recall", {"query": "the budget Ada mentioned"}),
    ]
    assert final.usage == Usage(60, 20)


async def test_stream_without_usage_falls_back_to_the_estimate(
    scripted_server, llm_on_scripted_server
):
    scripted_server.enqueue(text("Fine, thanks.", usage=None))
    messages = conversation()
    joined, chunks = await collect(llm_on_scripted_server.stream_chat(messages))
    reply = ChatMessage(role="assistant", content=joined)
    assert chunks[-1].usage == Usage(
        estimate_messages_tokens(messages), estimate_message_tokens(reply), estimated=True
    )


async def test_stream_with_bad_tool_arguments_returns_them_verbatim(
    scripted_server, llm_on_scripted_server
):
    """Issue 9: the streamed path assembles the same raw arguments as chat()."""
    scripted_server.enqueue(tool_calls(("calculator", "{oops"), ("current_time", "{}")))
    _, chunks = await collect(llm_on_scripted_server.stream_chat(conversation(), tools=TOOLS))
    final = chunks[-1]
    assert final.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [
        ("calculator", "{oops"),
        ("current_time", "{}"),
    ]


async def test_a_cut_off_stream_delivers_the_partial_text_then_fails(
    scripted_server, llm_on_scripted_server
):
    scripted_server.enqueue(cut_off("The answer is"))
    received = []
    with pytest.raises(LLMUnavailable):
        async for chunk in llm_on_scripted_server.stream_chat(conversation()):
            received.append(chunk.text)
    assert "".join(received) == "The answer is"


async def test_a_stream_that_ends_without_finishing_is_unavailable(
    scripted_server, llm_on_scripted_server
):
    scripted_server.enqueue(ends_early("Half an"))
    with pytest.raises(LLMUnavailable, match="ended before"):
        await collect(llm_on_scripted_server.stream_chat(conversation()))


async def test_a_consumer_may_stop_reading_early(scripted_server, llm_on_scripted_server):
    """Breaking out of the stream closes it; the client stays usable for the next call."""
    scripted_server.enqueue(text("one two three four five six"), text("next"))
    stream = llm_on_scripted_server.stream_chat(conversation())
    async for _chunk in stream:
        break
    await stream.aclose()
    result = await llm_on_scripted_server.chat(conversation())
    assert result.message.content == "next"


# --- faults: mapped or retried ---------------------------------------------------------------


async def call(llm: OpenAIChatLLM, streaming: bool, **opts):
    if streaming:
        return await collect(llm.stream_chat(conversation(), **opts))
    return await llm.chat(conversation(), **opts)


@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "stream"])
@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (server_error(500), LLMUnavailable),
        (server_error(503), LLMUnavailable),
        (rate_limited(), LLMRateLimited),
        (malformed(), LLMBadResponse),
        (no_choices(), LLMBadResponse),
        (cut_off(), LLMUnavailable),
        (context_overflow(400), ContextOverflow),
        (context_overflow(413), ContextOverflow),
        (http_error(401, "Incorrect API key provided."), LLMAuthError),
        (http_error(403, "Project lacks access."), LLMAuthError),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else None,
)
async def test_each_fault_maps_to_its_exception_without_retries(
    scripted_server, llm_on_scripted_server, fault, expected, streaming
):
    scripted_server.enqueue(fault)
    with pytest.raises(expected):
        await call(llm_on_scripted_server, streaming)
    assert len(scripted_server.requests) == 1


@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "stream"])
async def test_a_bad_request_that_is_not_an_overflow_is_a_plain_llm_error(
    scripted_server, llm_on_scripted_server, streaming
):
    scripted_server.enqueue(http_error(400, "Invalid value for 'temperature'."))
    with pytest.raises(LLMError) as info:
        await call(llm_on_scripted_server, streaming)
    assert not isinstance(info.value, ContextOverflow)
    assert "400" in str(info.value)


@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "stream"])
@pytest.mark.parametrize("fault", [rate_limited(), server_error(500), server_error(502)])
async def test_transient_faults_are_retried(
    scripted_server, llm_with_two_retries, fault, streaming
):
    scripted_server.enqueue(fault, fault, text("Recovered."))
    result = await call(llm_with_two_retries, streaming)
    answer = result[0] if streaming else result.message.content
    assert answer == "Recovered."
    assert len(scripted_server.requests) == 3
    assert scripted_server.requests[0] == scripted_server.requests[2]


async def test_rate_limiting_past_the_retry_budget_raises_rate_limited(
    scripted_server, llm_with_two_retries
):
    scripted_server.enqueue(rate_limited(), rate_limited(), rate_limited(), text("too late"))
    with pytest.raises(LLMRateLimited):
        await llm_with_two_retries.chat(conversation())
    assert len(scripted_server.requests) == 3  # the first try and max_retries=2


@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "stream"])
async def test_context_overflow_is_not_retried(scripted_server, llm_with_two_retries, streaming):
    scripted_server.enqueue(context_overflow(), text("never"))
    with pytest.raises(ContextOverflow, match="maximum context length"):
        await call(llm_with_two_retries, streaming)
    assert len(scripted_server.requests) == 1


@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "stream"])
async def test_a_slow_reply_past_the_per_call_timeout_is_a_timeout(
    scripted_server, llm_on_scripted_server, streaming
):
    scripted_server.enqueue(slow(30))
    with pytest.raises(LLMTimeout):
        await call(llm_on_scripted_server, streaming, timeout=0.2)


async def test_a_slow_reply_within_the_timeout_is_fine(scripted_server, llm_on_scripted_server):
    scripted_server.enqueue(slow(0.05, "worth the wait"))
    result = await llm_on_scripted_server.chat(conversation(), timeout=5)
    assert result.message.content == "worth the wait"


@pytest.mark.parametrize("streaming", [False, True], ids=["chat", "stream"])
async def test_nothing_listening_is_unavailable(streaming):
    llm = OpenAIChatLLM(
        model="m", base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=2, max_retries=0
    )
    try:
        with pytest.raises(LLMUnavailable):
            await call(llm, streaming)
    finally:
        await llm.aclose()


# --- overflow wording of other providers, straight through map_error ------------------------


def status_error(status: int, body: dict) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(status, json=body, request=request)
    cls = openai.BadRequestError if status == 400 else openai.APIStatusError
    return cls(json.dumps(body), response=response, body=body.get("error", body))


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"error": {"message": "x", "code": "context_length_exceeded"}}),
        (400, {"error": {"message": "This model's maximum context length is 4096 tokens."}}),
        (400, {"error": {"message": "the request exceeds the available context size"}}),
        (413, {"error": {"message": "Too many tokens in the request"}}),
        (400, {"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
        (400, {"message": "input exceeds the context window of the model"}),
    ],
)
def test_overflow_is_recognised_in_the_wordings_of_common_servers(status, body):
    assert isinstance(map_error(status_error(status, body)), ContextOverflow)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, {"error": {"message": "messages[1].role must be one of user, assistant"}}),
        (404, {"error": {"message": "The model 'gpt-9' does not exist"}}),
        (422, {"error": {"message": "maximum context length"}}),  # not an overflow status
    ],
)
def test_other_refusals_are_not_overflows(status, body):
    err = map_error(status_error(status, body))
    assert type(err) is LLMError


def test_a_stream_error_event_that_reports_an_overflow_is_an_overflow():
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    err = openai.APIError("maximum context length exceeded", request, body=None)
    assert isinstance(map_error(err), ContextOverflow)
    other = openai.APIError("An error occurred during streaming", request, body=None)
    assert isinstance(map_error(other), LLMUnavailable)


# --- event loops -----------------------------------------------------------------------------


def test_one_llm_object_serves_several_event_loops(scripted_server):
    """An httpx client is bound to its loop: the LLM keeps one SDK client per loop."""
    llm = OpenAIChatLLM(model="m", base_url=scripted_server.base_url, max_retries=0, timeout=5)
    scripted_server.enqueue("first", "second")

    async def once(close: bool) -> str:
        result = await llm.chat(conversation())
        if close:
            await llm.aclose()
        return result.message.content

    # A loop that ends without aclose(): its client is dropped when the next loop needs one.
    assert asyncio.run(once(close=False)) == "first"
    assert asyncio.run(once(close=True)) == "second"
    assert llm._clients == {}


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (stream_error("Worker crashed."), LLMUnavailable),
        (stream_error("This model's maximum context length is 4096 tokens."), ContextOverflow),
    ],
)
async def test_an_error_event_inside_a_stream_is_mapped(
    scripted_server, llm_on_scripted_server, fault, expected
):
    scripted_server.enqueue(fault)
    with pytest.raises(expected):
        await collect(llm_on_scripted_server.stream_chat(conversation()))
