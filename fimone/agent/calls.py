"""LLM calls as the engines make them: with an optional timeout and usage accounting.

``chat_once`` is the non-streaming call of tool iterations (SPEC RR.2); ``stream_text``
streams an answer, handing each text delta to a callback. A timeout becomes
``LLMTimeout``; every other ``LLMError`` and cancellation propagate unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from contextmgmt.core.llm import LLM, LLMResult, LLMTimeout, Usage
from contextmgmt.core.messages import ChatMessage
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


async def stream_text(
    llm: LLM,
    messages: list[ChatMessage],
    *,
    on_text: Callable[[str], Awaitable[None]],
    time_limit: float | None = None,
) -> tuple[str, Usage]:
    """Stream a tool-free answer; ``time_limit`` bounds the wait for each chunk."""
    stream: AsyncIterator[Any] = aiter(llm.stream_chat(messages))
    parts: list[str] = []
    usage: Usage | None = None
    try:
        while True:
            try:
                async with asyncio.timeout(time_limit):
                    chunk = await anext(stream)
            except StopAsyncIteration:
                break
            except TimeoutError:
                if time_limit is None:
                    raise
                raise LLMTimeout(
                    f"{llm.model_name} stopped streaming for {time_limit:g} seconds"
                ) from None
            if chunk.text:
                parts.append(chunk.text)
                await on_text(chunk.text)
            if chunk.usage is not None:
                usage = chunk.usage
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
    text = "".join(parts)
    if usage is None:  # a server that sends no usage: count it rather than report zero
        usage = Usage(estimate_messages_tokens(messages), estimate_tokens(text))
    return text, usage
