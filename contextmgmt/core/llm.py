"""The LLM protocol the core and the engines call.

The core only ever calls ``chat()``; the engines stream every call whose text can reach the
user with ``stream_chat()``. Every call's usage is accounted to the run, compaction calls
included. ``ToolCallAssembler`` turns streamed tool-call deltas into complete ``ToolCall``s,
whatever shape the provider streams them in (see docs/protocol.md, "Streaming").
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .messages import ChatMessage, ToolCall


@dataclass(slots=True)
class Usage:
    """Token counts of one call or a total.

    ``estimated`` is True when (part of) the figure is fimone's own count because the
    provider reported none (no usage in a stream, a server that rejects ``stream_options``,
    the offline model). It does not take part in equality: two usages are equal when their
    counts are; a sum is estimated when any part of it was. ``reasoning_tokens`` is the part
    of ``output_tokens`` a reasoning model spent thinking (billed as output, never shown as
    answer text).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = field(default=False, compare=False)
    # The part of ``input_tokens`` the provider read from its prompt cache, where it says
    # (OpenAI's ``prompt_tokens_details.cached_tokens``).
    cached_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.estimated or other.estimated,
            self.cached_input_tokens + other.cached_input_tokens,
        )

    def add(self, other: Usage) -> None:
        """Accumulate in place (a run's running total)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.cached_input_tokens += other.cached_input_tokens
        self.estimated = self.estimated or other.estimated

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.reasoning_tokens:
            out["reasoning_tokens"] = self.reasoning_tokens
        if self.cached_input_tokens:
            out["cached_input_tokens"] = self.cached_input_tokens
        if self.estimated:
            out["estimated"] = True
        return out


@dataclass(slots=True)
class LLMResult:
    message: ChatMessage
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True)
class ToolCallDelta:
    """A piece of a streamed tool call, as providers send it.

    ``index`` says which of the reply's calls the piece belongs to; some providers leave it
    out (then ``id`` or the order decides). ``arguments`` is a fragment of the JSON text.
    """

    index: int | None = None
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class LLMNotice:
    """Something the user should know while a streamed call is under way: ``unstreamed``
    (the model may not stream: the reply arrives at once, when complete) or
    ``rate_limited`` (the endpoint said to wait: asked again in ``retry_in`` seconds, the
    ``attempt``-th of at most ``attempts`` retries)."""

    kind: str
    retry_in: float = 0.0
    attempt: int = 0
    attempts: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "rate_limited":
            out |= {
                "retry_in": round(self.retry_in, 1),
                "attempt": self.attempt,
                "attempts": self.attempts,
            }
        return out


@dataclass(slots=True)
class StreamChunk:
    """One piece of a streamed reply.

    ``text`` is a content delta; ``reasoning`` a delta of the model's reasoning text (shown
    apart, never part of the answer or of the history); ``tool_call_deltas`` are tool-call
    pieces as they arrive.
    The final chunk carries ``finish_reason``, ``usage`` and, when the model called tools,
    the complete ``tool_calls`` (an implementation that streams no deltas, like the
    offline model, sends its calls whole there). ``notice`` tells the caller something
    about the call itself (``LLMNotice``), never part of the reply.
    """

    text: str = ""
    reasoning: str = ""
    tool_call_deltas: list[ToolCallDelta] | None = None
    tool_calls: list[ToolCall] | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
    notice: LLMNotice | None = None


class ToolCallAssembler:
    """Complete tool calls from streamed deltas.

    Handles parallel calls, arguments split over many chunks, a whole call in one chunk,
    and providers that send no ``index``: a delta without one continues the call whose
    ``id`` it names, starts a new call when it names a new ``id``, and otherwise continues
    the latest call. A delta whose ``index`` is taken by a complete call with another
    ``id`` starts a new call too (servers that number every parallel call 0).
    """

    def __init__(self) -> None:
        self._calls: list[list[str]] = []  # [id, name, arguments], in arrival order
        self._by_index: dict[int, int] = {}
        self._by_id: dict[str, int] = {}

    def add(self, delta: ToolCallDelta) -> None:
        slot = self._slot(delta)
        call = self._calls[slot]
        if delta.id:
            call[0] = delta.id
            self._by_id[delta.id] = slot
        if delta.name:
            call[1] = delta.name
        if delta.arguments:
            call[2] += delta.arguments

    def _slot(self, delta: ToolCallDelta) -> int:
        if delta.id and delta.id in self._by_id:
            return self._by_id[delta.id]
        if delta.index is not None:
            slot = self._by_index.get(delta.index)
            if slot is not None and not (delta.id and self._calls[slot][0]):
                return slot
            slot = self._new()
            self._by_index[delta.index] = slot
            return slot
        if delta.id or not self._calls:
            return self._new()
        return len(self._calls) - 1

    def _new(self) -> int:
        self._calls.append(["", "", ""])
        return len(self._calls) - 1

    def __bool__(self) -> bool:
        return bool(self._calls)

    def calls(self) -> list[ToolCall] | None:
        """The calls so far; a call without an id gets ``call_<n>``, empty arguments ``{}``.

        Raises ``LLMBadResponse`` for a call that never got a function name.
        """
        out = []
        for n, (call_id, name, arguments) in enumerate(self._calls):
            if not name:
                raise LLMBadResponse("a tool call without a function name")
            out.append(ToolCall(id=call_id or f"call_{n}", name=name, arguments=arguments or "{}"))
        return out or None


@runtime_checkable
class LLM(Protocol):
    """An LLM client. It may also carry ``token_weights``: the class weights its model's
    tokenizer is estimated with (``tokens.weights_of``); summarising sizes its input with
    them. And ``input_window``: the most input tokens its model takes (``input_window_of``);
    summarising never sends one call more. Neither is a protocol member: most clients have
    none and use the caller's weights and budget."""

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


def input_window_of(llm: Any) -> int | None:
    """The input window an LLM object carries for its model (``input_window``), or None."""
    window = getattr(llm, "input_window", None)
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        return None
    return window


class LLMError(Exception):
    """Base of every error an LLM client raises (the client maps SDK errors to these)."""


class LLMTimeout(LLMError):
    pass


class LLMRateLimited(LLMError):
    pass


class LLMUnavailable(LLMError):
    """Connection refused, 5xx after retries, an error reported inside a stream."""


class StreamCutOff(LLMUnavailable):
    """A stream that stopped before the reply finished (no finish reason): the connection
    dropped, or the body ended early. The text received so far is not a complete answer."""


class LLMRefused(LLMError):
    """The endpoint refused the request (a 400/422) and what it refused could not be found
    out; the message quotes the provider."""


class LLMBadResponse(LLMError):
    """Malformed JSON, an empty choice list, tool-call arguments that are not JSON."""


class ContextOverflow(LLMError):
    """The provider refused the request as longer than the model's context window."""


class LLMAuthError(LLMError):
    pass
