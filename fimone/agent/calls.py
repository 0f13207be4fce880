"""LLM calls as the engines make them: with an optional timeout and usage accounting.

``stream_reply`` is the call of every ReAct iteration (and DAG step): it streams, with
tools, handing each text delta to a callback as it arrives, and returns the whole reply
with its tool calls. ``chat_once`` is the non-streaming call whose text never reaches the
user as such (the DAG's planner and analyser, which answer JSON). A timeout becomes
``LLMTimeout``; every other ``LLMError`` and cancellation propagate unchanged.

Time limits (a hung provider must not keep a user waiting for minutes): ``time_limit``
bounds a whole ``chat()`` call, and for a stream the wait for each next chunk (the first
one included, which is where a provider spends its prompt processing). A stream that keeps
trickling would never trip that, so the whole stream has its own, longer bound:
``stream_limit``, by default ``STREAM_LIMIT_FACTOR`` × ``time_limit``. The SDK's own
``timeout`` is per HTTP attempt and per read, so it bounds neither retries nor a trickle.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from contextmgmt.core.guard import DEFAULT_COMPACT_TIMEOUT
from contextmgmt.core.llm import (
    LLM,
    LLMNotice,
    LLMResult,
    LLMTimeout,
    ToolCallAssembler,
    Usage,
)
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_messages_tokens, estimate_tokens


async def chat_once(
    llm: LLM,
    messages: list[ChatMessage],
    *,
    tools: list[dict[str, Any]] | None = None,
    time_limit: float | None = None,
) -> LLMResult:
    try:
        async with asyncio.timeout(time_limit):
            return await llm.chat(messages, tools=tools)
    except TimeoutError:
        if time_limit is None:
            raise
        raise LLMTimeout(f"{llm.model_name} gave no reply within {time_limit:g} seconds") from None


def compact_limit(time_limit: float | None) -> float | None:
    """The bound on a compaction call: the guard's own default, or the run's per-call
    limit when that is shorter (a compaction that fails falls back to truncation)."""
    if time_limit is None:
        return DEFAULT_COMPACT_TIMEOUT
    return min(DEFAULT_COMPACT_TIMEOUT, time_limit)


# A whole streamed answer may take this many times the per-call limit (a long answer
# legitimately streams for a while; a trickling provider must still end).
STREAM_LIMIT_FACTOR = 5


def stream_limit_for(time_limit: float | None, stream_limit: float | None = None) -> float | None:
    """The bound on a whole stream: ``stream_limit`` if given, else a multiple of the
    per-call limit, else none."""
    if stream_limit is not None:
        return stream_limit
    return None if time_limit is None else time_limit * STREAM_LIMIT_FACTOR


async def stream_reply(
    llm: LLM,
    messages: list[ChatMessage],
    *,
    on_text: Callable[[str], Awaitable[None]],
    on_reasoning: Callable[[str], Awaitable[None]] | None = None,
    on_notice: Callable[[LLMNotice], Awaitable[None]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    time_limit: float | None = None,
    stream_limit: float | None = None,
) -> LLMResult:
    """Stream one reply, handing each text delta to ``on_text`` as it arrives, and return
    the whole reply: its text, the tool calls assembled from the streamed deltas (or sent
    whole on the final chunk) and its usage.

    ``time_limit`` bounds the wait for each chunk and ``stream_limit`` (default:
    ``stream_limit_for(time_limit)``) the whole stream; a wait the endpoint asked for (a
    rate limit's ``LLMNotice.retry_in``) is added to both, as the client sleeps it out.
    Notices go to ``on_notice``. A provider error mid-stream
    propagates after the text before it went to ``on_text``.
    """
    clock = _StreamClock(llm.model_name, time_limit, stream_limit)
    stream: AsyncIterator[Any] = aiter(llm.stream_chat(messages, tools=tools))
    reply = _StreamedReply()
    try:
        while True:
            try:
                chunk = await clock.next_chunk(stream)
            except StopAsyncIteration:
                break
            if chunk.notice is not None:
                clock.wait_asked(chunk.notice.retry_in)
                if on_notice is not None:
                    await on_notice(chunk.notice)
            if chunk.reasoning and on_reasoning is not None:
                await on_reasoning(chunk.reasoning)  # shown apart, never the reply
            if chunk.text:
                await on_text(chunk.text)
            reply.add(chunk)
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
    return reply.result(messages)


class _StreamClock:
    """The bounds of one streamed reply: each chunk's wait and the whole stream's, both
    moved on by a wait the endpoint asked for."""

    def __init__(
        self, model_name: str, time_limit: float | None, stream_limit: float | None
    ) -> None:
        self.model_name = model_name
        self.loop = asyncio.get_running_loop()
        self.time_limit = time_limit
        self.total = stream_limit_for(time_limit, stream_limit)
        self.deadline = None if self.total is None else self.loop.time() + self.total
        self.extra = 0.0  # a wait the endpoint asked for, added to the next chunk's limit

    def wait_asked(self, seconds: float) -> None:
        self.extra = seconds
        if self.deadline is not None:
            self.deadline += seconds

    async def next_chunk(self, stream: AsyncIterator[Any]) -> Any:
        """The next chunk, or LLMTimeout; StopAsyncIteration at the stream's end."""
        wait = None if self.time_limit is None else self.time_limit + self.extra
        self.extra = 0.0
        whole_stream_ends_first = False
        if self.deadline is not None:
            left = max(0.0, self.deadline - self.loop.time())
            if wait is None or left < wait:
                wait, whole_stream_ends_first = left, True
        try:
            async with asyncio.timeout(wait):
                return await anext(stream)
        except TimeoutError:
            if wait is None:
                raise
            if whole_stream_ends_first:
                raise LLMTimeout(
                    f"{self.model_name} was still streaming after {self.total:g} seconds"
                ) from None
            raise LLMTimeout(
                f"{self.model_name} stopped streaming for {self.time_limit:g} seconds"
            ) from None


class _StreamedReply:
    """A reply put together from its chunks: text, reasoning, tool calls, usage."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.thought: list[str] = []
        self.assembler = ToolCallAssembler()
        self.whole_calls: list[ToolCall] | None = None
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    def add(self, chunk: Any) -> None:
        if chunk.reasoning:
            self.thought.append(chunk.reasoning)
        if chunk.text:
            self.parts.append(chunk.text)
        for delta in chunk.tool_call_deltas or ():
            self.assembler.add(delta)
        if chunk.tool_calls:
            self.whole_calls = list(chunk.tool_calls)
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.finish_reason:
            self.finish_reason = chunk.finish_reason

    def result(self, messages: list[ChatMessage]) -> LLMResult:
        text = "".join(self.parts)
        calls = self.whole_calls or self.assembler.calls()
        usage = self.usage
        if usage is None:  # an LLM that sent no usage: count it rather than report zero
            usage = Usage(estimate_messages_tokens(messages), estimate_tokens(text), estimated=True)
        metadata: dict[str, Any] = {"finish_reason": self.finish_reason}
        if self.thought:  # kept apart from the text (a tool-calling step may need it sent back)
            metadata["reasoning"] = "".join(self.thought)
        message = ChatMessage(
            role="assistant",
            content=text if text or not calls else None,
            tool_calls=calls,
            metadata=metadata,
        )
        return LLMResult(message=message, usage=usage)
