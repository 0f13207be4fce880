"""Reading a chat-completions event stream (RS.1, RX.4): lines however the reads split
them, one batch of payloads per read, the text of one read passed on as one piece."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextmgmt.core.llm import StreamChunk, ToolCallDelta
from fimone.llm.providers.sse import LineSplitter, sse_batches
from fimone.llm.providers.streaming import coalesced


class Response:
    """An SDK response whose body arrives in the given reads."""

    http_request = None

    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads
        self.read = 0

    async def iter_bytes(self):
        for data in self.reads:
            self.read += 1
            yield data


def batches(reads: list[bytes]) -> list[list[dict]]:
    async def collect():
        return [batch async for batch in sse_batches(Response(reads))]

    return asyncio.run(collect())


def event(n: int) -> bytes:
    return b"data: " + json.dumps({"n": n, "text": "é中"}, ensure_ascii=False).encode() + b"\n\n"


def lines_of(stream: bytes) -> list[str]:
    """What the event stream's rule makes of the whole stream at once."""
    return stream.replace(b"\r\n", b"\n").replace(b"\r", b"\n").decode("utf-8").split("\n")


@given(
    st.lists(st.sampled_from(["data: x", "", "é中", ":c", "event: e"]), max_size=12),
    st.lists(st.sampled_from([b"\n", b"\r\n", b"\r"]), min_size=12, max_size=12),
    st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
def test_lines_are_the_same_however_the_reads_split_them(texts, ends, cuts):
    stream = b"".join(t.encode() + end for t, end in zip(texts, ends, strict=False))
    points = sorted({min(c, len(stream)) for c in cuts})
    reads = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    splitter = LineSplitter()
    lines = [line for data in reads for line in splitter.feed(data)] + splitter.close()
    assert lines == lines_of(stream)[:-1]  # the whole stream ends with a line end


def test_a_last_line_without_its_end_is_kept():
    splitter = LineSplitter()
    assert splitter.feed(b"one\r") == []  # a CRLF may follow
    assert splitter.feed(b"\ntwo") == ["one"]
    assert splitter.close() == ["two"]


def test_one_batch_per_read_in_order():
    assert batches([event(1) + event(2), event(3)]) == [
        [{"n": 1, "text": "é中"}, {"n": 2, "text": "é中"}],
        [{"n": 3, "text": "é中"}],
    ]


def test_an_event_split_between_reads_and_inside_a_character_is_put_together():
    whole = event(1)
    cut = whole.index("中".encode()) + 1
    assert batches([whole[:cut], whole[cut:]]) == [[{"n": 1, "text": "é中"}]]


def test_the_stream_ends_at_done_and_is_read_to_its_end():
    response = Response([event(1) + b"data: [DONE]\n\n" + event(2), event(3)])

    async def collect():
        return [batch async for batch in sse_batches(response)]

    assert asyncio.run(collect()) == [[{"n": 1, "text": "é中"}]]
    assert response.read == 2  # the rest is read, so the connection goes back to the pool


def test_an_error_inside_the_stream_raises_after_what_came_before():
    error = b'data: {"error": {"message": "overloaded"}}\n\n'

    async def collect(seen):
        async for batch in sse_batches(Response([event(1), error])):
            seen.append(batch)

    seen: list = []
    with pytest.raises(openai.APIError, match="overloaded"):
        asyncio.run(collect(seen))
    assert seen == [[{"n": 1, "text": "é中"}]]


def test_text_pieces_of_one_read_go_on_as_one_and_nothing_else_is_joined():
    call = ToolCallDelta(index=0, id="c1", name="calculator", arguments="{}")
    chunks = [
        StreamChunk(reasoning="think "),
        StreamChunk(reasoning="more"),
        StreamChunk(text="The "),
        StreamChunk(text="answer"),
        StreamChunk(tool_call_deltas=[call]),
        StreamChunk(text=" is"),
        StreamChunk(text=" 42"),
    ]
    assert coalesced(chunks) == [
        StreamChunk(reasoning="think more"),
        StreamChunk(text="The answer"),
        StreamChunk(tool_call_deltas=[call]),
        StreamChunk(text=" is 42"),
    ]
    assert coalesced([]) == []
