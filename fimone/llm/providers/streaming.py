"""Reading one streamed chat completion: its chunks (plain JSON, ``providers.sse``) turned into
fimone's ``StreamChunk``s, as ``OpenAIChatLLM.stream_chat`` yields them.

``StreamReader`` keeps what the whole reply needs (the answer text, tool-call pieces, the
usage and finish reason): reasoning arrives in the profile's delta field or inline as
``<think>…</think>`` in the content (``think_tags``); either way it is yielded as
``StreamChunk.reasoning`` and never becomes answer text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from contextmgmt.core.llm import (
    LLMResult,
    StreamChunk,
    ToolCallAssembler,
    ToolCallDelta,
    Usage,
)
from fimone.llm.providers.endpoint import Endpoint
from fimone.llm.providers.think_tags import Split, ThinkSplitter


class StreamReader:
    """``inside``: the reply starts inside a think block its prompt opened (``think_tags``)."""

    def __init__(self, endpoint: Endpoint, *, inside: bool = False) -> None:
        self.endpoint = endpoint
        self.text: list[str] = []
        self.calls = ToolCallAssembler()
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.saw_choice = False
        self._think = ThinkSplitter.inside() if inside else ThinkSplitter()

    def read(self, chunk: dict[str, Any]) -> Iterator[StreamChunk]:
        """The ``StreamChunk``s one SSE payload makes (none, one or two)."""
        self.usage = usage_of(chunk.get("usage")) or self.usage
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            self.saw_choice = True
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            reasoning = self.endpoint.reasoning_text(choice.get("delta"))
            if reasoning:  # apart from the answer, never part of ``text``
                self._think.settle()  # a reasoning parser: the content is the answer
                yield StreamChunk(reasoning=reasoning)
            out = stream_chunk(choice.get("delta"))
            if out is None:
                continue
            for delta in out.tool_call_deltas or ():
                self.calls.add(delta)
            if out.text:
                split = self._think.feed(out.text)
                if split.reasoning:
                    yield StreamChunk(reasoning=split.reasoning)
                out.text = split.text
                self.text.append(split.text)
            if out.text or out.tool_call_deltas:
                yield out

    @property
    def saw_orphan_close(self) -> bool:
        """A ``</think>`` came without a ``<think>``: the prompt opens the block."""
        return self._think.saw_orphan_close

    def flush(self) -> Iterator[StreamChunk]:
        """What the think-tag splitter held back, once the stream has ended."""
        yield from _chunks(self._think.flush(), self.text)


def coalesced(chunks: Iterable[StreamChunk]) -> list[StreamChunk]:
    """``chunks`` with each run of text-only pieces (and of reasoning-only pieces) joined
    into one: what arrived in one read of the stream goes on as one piece where nothing
    else comes between (``fimone.llm.providers.sse``)."""
    out: list[StreamChunk] = []
    for chunk in chunks:
        last = out[-1] if out else None
        if last is not None and _text_only(chunk) and _text_only(last):
            out[-1] = StreamChunk(text=last.text + chunk.text)
        elif last is not None and _reasoning_only(chunk) and _reasoning_only(last):
            out[-1] = StreamChunk(reasoning=last.reasoning + chunk.reasoning)
        else:
            out.append(chunk)
    return out


def _text_only(chunk: StreamChunk) -> bool:
    return chunk == StreamChunk(text=chunk.text) and bool(chunk.text)


def _reasoning_only(chunk: StreamChunk) -> bool:
    return chunk == StreamChunk(reasoning=chunk.reasoning) and bool(chunk.reasoning)


def whole_reply_chunks(result: LLMResult) -> Iterator[StreamChunk]:
    """A reply that was asked whole (the model may not stream), as the chunks of a stream."""
    message = result.message
    reasoning = message.metadata.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        yield StreamChunk(reasoning=reasoning)
    if message.text():
        yield StreamChunk(text=message.text())
    yield StreamChunk(
        tool_calls=message.tool_calls,
        usage=result.usage,
        finish_reason=message.metadata.get("finish_reason") or "stop",
    )


def _chunks(split: Split, text: list[str]) -> Iterator[StreamChunk]:
    if split.reasoning:
        yield StreamChunk(reasoning=split.reasoning)
    if split.text:
        text.append(split.text)
        yield StreamChunk(text=split.text)


def stream_chunk(delta: Any) -> StreamChunk | None:
    """One wire delta as a ``StreamChunk`` (text and tool-call pieces), or None if empty."""
    if not isinstance(delta, dict):
        return None
    deltas = []
    for tc in delta.get("tool_calls") or ():
        function = tc.get("function") or {}
        deltas.append(
            ToolCallDelta(
                index=tc.get("index"),
                id=tc.get("id"),
                name=function.get("name"),
                arguments=function.get("arguments") or "",
            )
        )
    content = delta.get("content")
    if not content and not deltas:
        return None
    return StreamChunk(text=content or "", tool_call_deltas=deltas or None)


def usage_of(wire: Any) -> Usage | None:
    """Usage from a streamed chunk's JSON (reasoning tokens: OpenAI's and DeepSeek's
    ``completion_tokens_details.reasoning_tokens``, part of the completion tokens)."""
    if not isinstance(wire, dict) or wire.get("prompt_tokens") is None:
        return None
    details = wire.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    prompt = wire.get("prompt_tokens_details")
    cached = prompt.get("cached_tokens") if isinstance(prompt, dict) else None
    return Usage(
        int(wire["prompt_tokens"] or 0),
        int(wire.get("completion_tokens") or 0),
        int(reasoning or 0),
        cached_input_tokens=int(cached or 0),
    )
