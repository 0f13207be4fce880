"""A scripted in-process LLM for tests: ``enqueue()`` replies or faults, inspect ``calls``.

Every reply is consumed in order by ``chat()`` or ``stream_chat()``. A reply can be a
string, a ``ChatMessage`` (e.g. with tool calls), an exception instance to raise, or a
``Hang`` to sleep past a caller's timeout. ``default`` answers when the queue is empty.
"""

from __future__ import annotations

import asyncio
import copy
import json
from dataclasses import dataclass
from typing import Any

from contextmgmt.core.llm import LLMResult, StreamChunk, Usage
from contextmgmt.core.messages import ChatMessage, ToolCall


@dataclass
class Hang:
    seconds: float = 3600.0


@dataclass
class Call:
    method: str
    messages: list[ChatMessage]
    tools: list[dict[str, Any]] | None
    opts: dict[str, Any]


def _estimate(messages: list[ChatMessage]) -> int:
    return sum(4 + len(m.text()) // 4 for m in messages)


def _input_tokens(messages: list[ChatMessage], tools: list | None, with_tools: bool) -> int:
    """What the fake reports as input: the messages and, when ``with_tools`` (as real
    providers count them), the tool definitions sent with them."""
    extra = len(json.dumps(tools)) // 4 if tools and with_tools else 0
    return _estimate(messages) + extra


class FakeLLM:
    def __init__(self, *, model_name: str = "fake", default: Any = None) -> None:
        self.model_name = model_name
        self.default = default
        # Count the tool definitions in the reported input, as a provider does (off: the
        # tests that add up usage by hand count the messages only).
        self.reports_tools = False
        self.queue: list[Any] = []
        self.calls: list[Call] = []

    def enqueue(self, *replies: Any) -> FakeLLM:
        self.queue.extend(replies)
        return self

    def tool_call(self, name: str, arguments: str, call_id: str | None = None) -> ChatMessage:
        """A reply that calls one tool (helper for scripts)."""
        call_id = call_id or f"call_{len(self.calls)}_{name}"
        return ChatMessage(
            role="assistant",
            content=None,
            tool_calls=[ToolCall(id=call_id, name=name, arguments=arguments)],
        )

    async def _next(self, method: str, messages, tools, opts) -> ChatMessage:
        # Deep copies, so that a test sees what was sent even if the caller mutates later.
        self.calls.append(Call(method, copy.deepcopy(list(messages)), tools, dict(opts)))
        reply = self.queue.pop(0) if self.queue else self.default
        if reply is None:
            raise AssertionError(f"FakeLLM: no reply scripted for {method} call")
        if isinstance(reply, Hang):
            await asyncio.sleep(reply.seconds)
            raise AssertionError("FakeLLM: hang finished without being cancelled")
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(messages)
        if isinstance(reply, str):
            return ChatMessage(role="assistant", content=reply)
        return reply

    async def chat(self, messages, *, tools=None, **opts) -> LLMResult:
        msg = await self._next("chat", messages, tools, opts)
        usage = Usage(_input_tokens(messages, tools, self.reports_tools), _estimate([msg]))
        return LLMResult(message=msg, usage=usage)

    async def stream_chat(self, messages, *, tools=None, **opts):
        msg = await self._next("stream_chat", messages, tools, opts)
        text = msg.text()
        words = text.split(" ") if text else []
        for i, word in enumerate(words):
            yield StreamChunk(text=word if i == len(words) - 1 else word + " ")
        yield StreamChunk(
            tool_calls=msg.tool_calls,
            usage=Usage(_input_tokens(messages, tools, self.reports_tools), _estimate([msg])),
            finish_reason="tool_calls" if msg.tool_calls else "stop",
        )
