"""The offline model streams like a provider (RS.1, RX.4): the chat answer in small pieces,
handed over per read of the stream (the event loop runs between reads, not between
pieces), and a tool decision whole on the final chunk."""

from __future__ import annotations

import asyncio

import pytest

from contextmgmt.core.tokens import estimate_messages_tokens
from fimone.llm.offline.model import PIECES_PER_READ
from tests.fimone.llm.offline.test_model import TOOLS, user_turn


@pytest.mark.parametrize(
    "query", ["Write me a poem about the sea", "请介绍一下你自己，并说明你能做什么"]
)
async def test_stream_gives_the_chat_answer_in_small_pieces(offline_llm, query):
    messages = user_turn(query)
    expected = await offline_llm.chat(messages)
    chunks = [c async for c in offline_llm.stream_chat(messages)]
    pieces = [c.text for c in chunks if c.text]
    assert "".join(pieces) == expected.message.content
    assert len(pieces) > 10 and max(len(p) for p in pieces) <= 20
    final = chunks[-1]
    assert final.finish_reason == "stop" and final.tool_calls is None
    assert final.usage == expected.usage


async def test_a_long_stream_lets_the_loop_run_once_per_read_not_once_per_piece(offline_llm):
    # A network stream's read hands over the pieces that arrived meanwhile; the loop runs
    # between reads. Counted by a task that ticks whenever the loop gets to run it.
    ticks = 0
    streaming = True

    async def ticker():
        nonlocal ticks
        while streaming:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    start = ticks
    long_query = "Write me a long essay. " + " ".join(
        f"Sentence {i} is about the sea." for i in range(PIECES_PER_READ)
    )
    pieces = [c.text async for c in offline_llm.stream_chat(user_turn(long_query)) if c.text]
    ran = ticks - start
    streaming = False
    await task
    reads = -(-len(pieces) // PIECES_PER_READ)
    assert len(pieces) > 2 * PIECES_PER_READ
    assert reads <= ran <= reads + 1  # the loop ran between reads (cancellation gets in)


async def test_stream_delivers_tool_calls_on_the_final_chunk(offline_llm):
    chunks = [c async for c in offline_llm.stream_chat(user_turn("What is 2+2?"), tools=TOOLS)]
    assert [c.text for c in chunks] == [""]
    assert chunks[0].finish_reason == "tool_calls"
    assert chunks[0].tool_calls[0].name == "calculator"
    assert chunks[0].usage.input_tokens == estimate_messages_tokens(user_turn("What is 2+2?"))
    assert chunks[0].usage.estimated  # fimone's own count, shown as such (RS.4)
