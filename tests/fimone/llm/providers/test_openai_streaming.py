"""Streamed replies through the real openai SDK against the scripted server (RS.1, RS.4).

Every shape real providers stream in: tool-call arguments in fragments or whole, with or
without ``index``, several calls in parallel, text before the calls, usage in the last chunk
or not at all, ``stream_options`` refused, a stream cut off or failing mid-way.
"""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmgmt.core.llm import (
    LLMBadResponse,
    LLMError,
    LLMUnavailable,
    StreamCutOff,
    ToolCallAssembler,
    ToolCallDelta,
    Usage,
)
from contextmgmt.core.messages import ChatMessage
from fimone.llm.providers import openai_client
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.support.scripted_server import (
    cut_off,
    ends_early,
    held,
    http_error,
    stream_error,
    text,
    tool_calls,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name in ("calculator", "recall")
]
QUESTION = [ChatMessage(role="user", content="What is 6*7, and what did Ada say?")]
CALLS = (
    ("calculator", {"expression": "(12.5 + 7) * 3"}),
    ("recall", {"query": "the budget Ada mentioned, in euros"}),
)


@pytest.fixture(autouse=True)
def no_remembered_endpoints(monkeypatch):
    """Each test starts with no endpoint remembered as refusing ``stream_options``."""
    monkeypatch.setattr(openai_client, "_NO_STREAM_OPTIONS", set())


@pytest.fixture
async def llm(scripted_server):
    llm = OpenAIChatLLM(
        model="m", base_url=scripted_server.base_url, api_key="k", timeout=5.0, max_retries=0
    )
    yield llm
    await llm.aclose()


async def collect(stream) -> tuple[str, list]:
    chunks = [chunk async for chunk in stream]
    return "".join(c.text for c in chunks), chunks


def as_tuples(calls) -> list[tuple[str, str, dict]]:
    return [(c.id, c.name, json.loads(c.arguments)) for c in calls]


EXPECTED = [
    ("call_0_calculator", "calculator", {"expression": "(12.5 + 7) * 3"}),
    ("call_1_recall", "recall", {"query": "the budget Ada mentioned, in euros"}),
]


# --- tool calls in every shape ---------------------------------------------------------------


@pytest.mark.parametrize("chunks", ["split", "whole"])
@pytest.mark.parametrize("index", [True, False], ids=["index", "no_index"])
async def test_parallel_tool_calls_are_assembled_in_every_streamed_shape(
    scripted_server, llm, chunks, index
):
    scripted_server.enqueue(tool_calls(*CALLS, tool_chunks=chunks, tool_index=index))
    _, out = await collect(llm.stream_chat(QUESTION, tools=TOOLS))
    final = out[-1]
    assert final.finish_reason == "tool_calls"
    assert as_tuples(final.tool_calls) == EXPECTED
    deltas = [d for c in out[:-1] for d in c.tool_call_deltas or []]
    # The deltas themselves reach the caller as they arrive, not only the final calls.
    assert len(deltas) > 2 if chunks == "split" else len(deltas) == 2
    assert all((d.index is not None) == index for d in deltas)


async def test_text_before_the_tool_calls_streams_first(scripted_server, llm):
    scripted_server.enqueue(tool_calls(*CALLS, content="Let me look that up. "))
    joined, out = await collect(llm.stream_chat(QUESTION, tools=TOOLS))
    assert joined == "Let me look that up. "
    first_delta = next(i for i, c in enumerate(out) if c.tool_call_deltas)
    assert all(c.text for c in out[:first_delta])  # the text came before any call piece
    assert as_tuples(out[-1].tool_calls) == EXPECTED


# --- usage -----------------------------------------------------------------------------------


async def test_usage_from_the_last_chunk_is_the_providers(scripted_server, llm):
    scripted_server.enqueue(text("Forty two.", usage=(50, 3)))
    _, out = await collect(llm.stream_chat(QUESTION))
    assert out[-1].usage == Usage(50, 3) and not out[-1].usage.estimated
    assert all(c.usage is None for c in out[:-1])


async def test_no_usage_in_the_stream_is_estimated_and_marked(scripted_server, llm):
    scripted_server.enqueue(text("Forty two.", usage=None))
    _, out = await collect(llm.stream_chat(QUESTION))
    usage = out[-1].usage
    assert usage.estimated and usage.input_tokens > 0 and usage.output_tokens > 0


async def test_a_refused_stream_options_is_dropped_once_and_remembered(scripted_server, llm):
    """RS.4: a 400 naming stream_options → asked again without it; the endpoint is
    remembered, so the next call leaves it out from the start; usage estimated."""
    scripted_server.reject_stream_options = True
    scripted_server.enqueue(text("First."), text("Second."))
    joined, out = await collect(llm.stream_chat(QUESTION))
    assert joined == "First." and out[-1].usage.estimated
    refused, retried = scripted_server.requests
    assert refused["stream_options"] == {"include_usage": True}
    assert "stream_options" not in retried and retried["stream"] is True

    joined, out = await collect(llm.stream_chat(QUESTION))
    assert joined == "Second." and out[-1].usage.estimated
    assert len(scripted_server.requests) == 3
    assert "stream_options" not in scripted_server.requests[2]


async def test_the_remembered_refusal_is_per_endpoint(scripted_server, llm):
    scripted_server.reject_stream_options = True
    scripted_server.enqueue(text("First."))
    await collect(llm.stream_chat(QUESTION))
    other = OpenAIChatLLM(model="m", base_url=scripted_server.base_url + "/", api_key="k")
    body = other._request(QUESTION, None, {}, stream=True)
    assert body["stream_options"] == {"include_usage": True}


async def test_another_bad_request_is_not_mistaken_for_a_refused_field(scripted_server, llm):
    scripted_server.enqueue(http_error(400, "Invalid value for 'temperature'."))
    with pytest.raises(LLMError, match="temperature"):
        await collect(llm.stream_chat(QUESTION))
    assert len(scripted_server.requests) == 1
    assert not openai_client.refuses_stream_options(scripted_server.base_url)


# --- streams that do not finish --------------------------------------------------------------


async def test_a_dropped_connection_mid_stream_is_a_cut_off_after_the_partial_text(
    scripted_server, llm
):
    scripted_server.enqueue(cut_off("The answer is"))
    received = []
    with pytest.raises(StreamCutOff):
        async for chunk in llm.stream_chat(QUESTION):
            received.append(chunk.text)
    assert "".join(received) == "The answer is"


async def test_a_body_that_ends_without_a_finish_reason_is_a_cut_off(scripted_server, llm):
    scripted_server.enqueue(ends_early("Half an"))
    received = []
    with pytest.raises(StreamCutOff, match="ended before"):
        async for chunk in llm.stream_chat(QUESTION):
            received.append(chunk.text)
    assert "".join(received) == "Half an"


async def test_an_error_mid_stream_propagates_after_the_partial_text(scripted_server, llm):
    scripted_server.enqueue(stream_error("Worker crashed.", partial="Forty two is"))
    received = []
    with pytest.raises(LLMUnavailable, match="Worker crashed") as info:
        async for chunk in llm.stream_chat(QUESTION):
            received.append(chunk.text)
    assert not isinstance(info.value, StreamCutOff)
    assert "".join(received) == "Forty two is"


async def test_text_arrives_while_the_provider_still_streams(scripted_server, llm):
    """Behaviour, not timing: the server holds the rest of its stream until the test has
    the first piece, so the first piece cannot have waited for the whole reply."""
    release = threading.Event()
    scripted_server.enqueue(held(text("one two three"), release))
    stream = aiter(llm.stream_chat(QUESTION))
    first = await anext(stream)
    assert first.text == "one " and not release.is_set()
    release.set()
    rest = [chunk async for chunk in stream]
    assert "".join(c.text for c in rest) == "two three"
    assert rest[-1].finish_reason == "stop"


# --- the assembler on its own ----------------------------------------------------------------


def test_a_call_without_a_name_is_a_bad_response():
    assembler = ToolCallAssembler()
    assembler.add(ToolCallDelta(index=0, id="c1", arguments="{}"))
    with pytest.raises(LLMBadResponse):
        assembler.calls()


def test_calls_numbered_zero_by_a_server_are_kept_apart_by_their_ids():
    """Some servers give every parallel call index 0; the new id starts a new call."""
    assembler = ToolCallAssembler()
    for call_id, name in (("a", "calculator"), ("b", "recall")):
        assembler.add(ToolCallDelta(index=0, id=call_id, name=name, arguments=""))
        assembler.add(ToolCallDelta(index=0, arguments='{"x": '))
        assembler.add(ToolCallDelta(index=0, arguments="1}"))
    assert [(c.id, c.name, c.arguments) for c in assembler.calls()] == [
        ("a", "calculator", '{"x": 1}'),
        ("b", "recall", '{"x": 1}'),
    ]


def test_missing_ids_and_arguments_get_defaults():
    assembler = ToolCallAssembler()
    assembler.add(ToolCallDelta(name="current_time"))
    assert [(c.id, c.name, c.arguments) for c in assembler.calls()] == [
        ("call_0", "current_time", "{}")
    ]


call_specs = st.lists(
    st.tuples(
        st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
        st.text(max_size=60),
        st.lists(st.integers(min_value=1, max_value=20), max_size=8),
    ),
    min_size=1,
    max_size=4,
)


def fragments(text: str, cuts: list[int]) -> list[str]:
    pieces, start = [], 0
    for size in cuts:
        pieces.append(text[start : start + size])
        start += size
    pieces.append(text[start:])
    return [p for p in pieces if p] or [""]


@settings(max_examples=200, deadline=None)
@given(calls=call_specs, with_index=st.booleans(), interleave=st.randoms())
def test_any_fragmentation_reassembles_the_calls(calls, with_index, interleave):
    """RS.1 property: every split of the arguments, calls interleaved when indexed, comes
    back as exactly the calls that were sent."""
    streams = []
    for n, (name, arguments, cuts) in enumerate(calls):
        index = n if with_index else None
        pieces = fragments(arguments, cuts)
        deltas = [ToolCallDelta(index=index, id=f"id{n}", name=name, arguments=pieces[0])]
        deltas += [ToolCallDelta(index=index, arguments=p) for p in pieces[1:]]
        streams.append(deltas)
    order = []
    if with_index:  # indexed calls may interleave; each call's own pieces stay in order
        pending = [list(s) for s in streams]
        while any(pending):
            live = [p for p in pending if p]
            order.append(interleave.choice(live).pop(0))
    else:
        order = [d for s in streams for d in s]
    assembler = ToolCallAssembler()
    for delta in order:
        assembler.add(delta)
    got = [(c.id, c.name, c.arguments) for c in assembler.calls()]
    want = [(f"id{n}", name, arguments or "{}") for n, (name, arguments, _) in enumerate(calls)]
    if with_index:
        got.sort()
    assert got == want
