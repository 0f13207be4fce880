"""The LLM protocol the core and the engines call (DESIGN §2).

The core only ever calls ``chat()``; the engines also stream answers with ``stream_chat()``.
Every call's usage is accounted to the run, compaction calls included (SPEC RU.2).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .messages import ChatMessage, ToolCall


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )

    def add(self, other: Usage) -> None:
        """Accumulate in place (a run's running total)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(slots=True)
class LLMResult:
    message: ChatMessage
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True)
class StreamChunk:
    """One piece of a streamed reply.

    ``text`` is a content delta; ``tool_calls`` is set on the final chunk when the model
    called tools (assembled from the deltas); ``usage`` is set on the final chunk.
    """

    text: str = ""
    tool_calls: list[ToolCall] | None = None
    usage: Usage | None = None
    finish_reason: str | None = None


@runtime_checkable
class LLM(Protocol):
    model_name: str

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[dict[str, Any]] | None = None,
        **opts: Any,
    ) -> LLMResult: ...

    def stream_chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[dict[str, Any]] | None = None,
        **opts: Any,
    ) -> AsyncIterator[StreamChunk]: ...


class LLMError(Exception):
    """Base of every error an LLM client raises (the client maps SDK errors to these)."""


class LLMTimeout(LLMError):
    pass


class LLMRateLimited(LLMError):
    pass


class LLMUnavailable(LLMError):
    """Connection refused, 5xx after retries, a cut-off stream."""


class LLMBadResponse(LLMError):
    """Malformed JSON, an empty choice list, tool-call arguments that are not JSON."""


class ContextOverflow(LLMError):
    """The provider refused the request as longer than the model's context window."""


class LLMAuthError(LLMError):
    pass
