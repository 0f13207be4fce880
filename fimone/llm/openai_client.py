"""An LLM on any OpenAI-compatible endpoint, through the ``openai`` SDK (issue 4, DESIGN §6, §7).

Retries (429, 5xx, connection errors) and timeouts are the SDK's own (``max_retries``,
``timeout``); this module only builds requests from ``ChatMessage.to_openai()`` (so fimone's
own fields — pinned, injected, metadata — never reach the wire), assembles replies and
streamed deltas, accounts usage, and maps SDK errors to the exceptions of
``contextmgmt.core.llm``. No Django here: the registry passes the configuration in.

Tool-call arguments that are not valid JSON are returned as the model wrote them, not
raised: the ToolRegistry answers them with an "arguments are not valid JSON" tool result the
model reads and corrects, exactly as with an in-process model (issue 9). When such a call
goes back to a provider in the conversation, its arguments are wrapped in a JSON object
(``INVALID_ARGUMENTS_KEY``): several servers parse the arguments of earlier calls (vLLM's
chat templates, Anthropic-compatible proxies) and would refuse the whole request.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator
from typing import Any

import openai
from openai import AsyncOpenAI, AsyncStream
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from contextmgmt.core.llm import (
    ContextOverflow,
    LLMAuthError,
    LLMBadResponse,
    LLMError,
    LLMRateLimited,
    LLMResult,
    LLMTimeout,
    LLMUnavailable,
    StreamChunk,
    Usage,
)
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens

from .options import check_opts

# What providers say when a request is longer than the model's window (OpenAI, vLLM,
# llama.cpp, Ollama, Anthropic-compatible proxies word it differently).
_OVERFLOW = re.compile(
    r"maximum context length|context[_ ]length[_ ]exceeded|too many tokens|context window"
    r"|prompt is too long|exceeds? the (?:[\w']+ ){0,3}context|exceed_context_size",
    re.IGNORECASE,
)
# Servers such as llama.cpp and Ollama need no key, but the SDK insists on one.
_NO_KEY = "no-key-configured"
# An earlier tool call whose arguments were not JSON goes back as {KEY: "<raw text>"}.
INVALID_ARGUMENTS_KEY = "unparsed_arguments"
# What ``chat.completions.create`` posts to, and how it authenticates (a bearer key).
_CHAT_PATH = "/chat/completions"
_AUTH = {"bearer_auth": True}
_CHUNKS = AsyncStream[ChatCompletionChunk]


class OpenAIChatLLM:
    """``contextmgmt.core.llm.LLM`` on an OpenAI-compatible chat-completions endpoint."""

    offline = False

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        supports_vision: bool = True,
    ) -> None:
        self.model_name = model
        self.base_url = base_url or None
        self._api_key = api_key or _NO_KEY
        self.timeout = timeout
        self.max_retries = max_retries
        self.supports_vision = supports_vision
        # An httpx client is bound to the event loop that first used it: one SDK client per
        # loop (daphne has one; tests and async_to_sync make more).
        self._clients: dict[asyncio.AbstractEventLoop, AsyncOpenAI] = {}
        self._clients_lock = threading.Lock()

    def __repr__(self) -> str:  # never the key
        return f"OpenAIChatLLM(model={self.model_name!r}, base_url={self.base_url!r})"

    def _client(self) -> AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            with self._clients_lock:
                for old in [lp for lp in self._clients if lp.is_closed()]:
                    del self._clients[old]
                client = AsyncOpenAI(
                    api_key=self._api_key,
                    base_url=self.base_url,
                    timeout=self.timeout,
                    max_retries=self.max_retries,
                )
                self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close this event loop's SDK client (tests, shutdown); a later call makes a new one."""
        loop = asyncio.get_running_loop()
        with self._clients_lock:
            client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()

    def _request(
        self,
        messages: list[ChatMessage],
        tools: list[dict[str, Any]] | None,
        opts: dict[str, Any],
        *,
        stream: bool,
    ) -> dict[str, Any]:
        check_opts(opts)
        kwargs: dict[str, Any] = {
            "model": self.model_name,
            "messages": [_wire_message(m) for m in messages],
        }
        if tools:
            kwargs["tools"] = tools
        for name in ("max_tokens", "temperature", "response_format", "timeout"):
            if opts.get(name) is not None:
                kwargs[name] = opts[name]
        if stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    async def _post(self, kwargs: dict[str, Any]) -> Any:
        """``chat.completions.create(**kwargs)`` without its request transform.

        ``create`` walks the whole request through the SDK's TypedDict transform (aliases,
        dates, base64 files), which is the identity for what ``_request`` builds (plain wire
        dicts from ``to_openai()``; a test pins that) yet cost ~40 % of a server's CPU per run
        with a long history. The same client method ``create`` ends in, with the same
        options, so retries, timeouts, auth, errors and parsing stay the SDK's own.
        """
        body = dict(kwargs)
        options: dict[str, Any] = {"security": _AUTH}
        if "timeout" in body:
            options["timeout"] = body.pop("timeout")
        stream = bool(body.get("stream"))
        return await self._client().post(
            _CHAT_PATH,
            body=body,
            cast_to=ChatCompletion,
            options=options,
            stream=stream,
            stream_cls=_CHUNKS,
        )

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[dict[str, Any]] | None = None,
        **opts: Any,
    ) -> LLMResult:
        kwargs = self._request(messages, tools, opts, stream=False)
        try:
            response = await self._post(kwargs)
        except (openai.OpenAIError, ValueError) as err:
            raise map_error(err) from err
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMBadResponse("the model endpoint returned no choices")
        choice = choices[0]
        wire = choice.message
        calls = _parse_tool_calls(
            [(tc.id, tc.function.name, tc.function.arguments) for tc in wire.tool_calls or []]
        )
        content = wire.content
        message = ChatMessage(
            role="assistant",
            content=content if content is not None or calls else "",
            tool_calls=calls,
            metadata={"finish_reason": choice.finish_reason},
        )
        usage = _usage(getattr(response, "usage", None)) or _estimate(messages, message)
        return LLMResult(message=message, usage=usage)

    async def stream_chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[dict[str, Any]] | None = None,
        **opts: Any,
    ) -> AsyncIterator[StreamChunk]:
        kwargs = self._request(messages, tools, opts, stream=True)
        text: list[str] = []
        partial_calls: dict[int, list[str]] = {}  # index -> [id, name, arguments]
        usage: Usage | None = None
        finish_reason: str | None = None
        saw_choice = False
        try:
            stream = await self._post(kwargs)
            async with stream:
                async for chunk in stream:
                    usage = _usage(getattr(chunk, "usage", None)) or usage
                    for choice in chunk.choices or []:
                        if choice.index != 0:
                            continue
                        saw_choice = True
                        delta = choice.delta
                        for tc in (delta.tool_calls if delta else None) or []:
                            call = partial_calls.setdefault(tc.index, ["", "", ""])
                            call[0] = tc.id or call[0]
                            if tc.function is not None:
                                call[1] = tc.function.name or call[1]
                                call[2] += tc.function.arguments or ""
                        if choice.finish_reason:
                            finish_reason = choice.finish_reason
                        if delta and delta.content:
                            text.append(delta.content)
                            yield StreamChunk(text=delta.content)
        except (openai.OpenAIError, ValueError) as err:
            raise map_error(err) from err
        if not saw_choice:
            raise LLMBadResponse("the model's stream carried no choices")
        if finish_reason is None:
            # The connection closed cleanly but the reply never finished: a cut-off stream.
            raise LLMUnavailable("the model's stream ended before the reply was complete")
        calls = _parse_tool_calls([tuple(partial_calls[i]) for i in sorted(partial_calls)])
        if usage is None:  # a server that ignores stream_options.include_usage
            reply = ChatMessage(role="assistant", content="".join(text), tool_calls=calls)
            usage = _estimate(messages, reply)
        yield StreamChunk(tool_calls=calls, usage=usage, finish_reason=finish_reason)


def _wire_message(message: ChatMessage) -> dict[str, Any]:
    """``message.to_openai()``, with the arguments of earlier tool calls made valid JSON."""
    wire = message.to_openai()
    for call in wire.get("tool_calls") or []:
        function = call["function"]
        if not _is_json(function["arguments"]):
            function["arguments"] = json.dumps(
                {INVALID_ARGUMENTS_KEY: function["arguments"]}, ensure_ascii=False
            )
    return wire


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _parse_tool_calls(raw: list[tuple[str, str, str]]) -> list[ToolCall] | None:
    """Tool calls as the model sent them; arguments kept verbatim even when not JSON."""
    calls = []
    for call_id, name, arguments in raw:
        arguments = arguments or "{}"  # some servers send "" for a call without arguments
        if not name:
            raise LLMBadResponse("a tool call without a function name")
        calls.append(ToolCall(id=call_id or f"call_{len(calls)}", name=name, arguments=arguments))
    return calls or None


def _usage(wire: Any) -> Usage | None:
    if wire is None or getattr(wire, "prompt_tokens", None) is None:
        return None
    return Usage(int(wire.prompt_tokens or 0), int(wire.completion_tokens or 0))


def _estimate(messages: list[ChatMessage], reply: ChatMessage) -> Usage:
    return Usage(estimate_messages_tokens(messages), estimate_message_tokens(reply))


def _says_overflow(err: openai.APIError) -> bool:
    return any(_OVERFLOW.search(s) for s in (err.message, err.code or "", str(err.body or "")) if s)


def map_error(err: BaseException) -> LLMError:
    """The fimone exception for an SDK (or parsing) error; callers catch only these."""
    if isinstance(err, LLMError):
        return err
    if isinstance(err, openai.APITimeoutError):
        return LLMTimeout("the model did not answer in time")
    if isinstance(err, openai.APIConnectionError):
        return LLMUnavailable(f"cannot reach the model endpoint: {err}")
    if isinstance(err, openai.RateLimitError):
        return LLMRateLimited(f"the model endpoint is rate limiting us: {err.message}")
    if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
        return LLMAuthError(f"the model endpoint refused our credentials: {err.message}")
    if isinstance(err, openai.APIStatusError):
        if err.status_code in (400, 413) and _says_overflow(err):
            return ContextOverflow(err.message)
        if err.status_code >= 500:
            return LLMUnavailable(f"the model endpoint failed ({err.status_code}): {err.message}")
        return LLMError(
            f"the model endpoint refused the request ({err.status_code}): {err.message}"
        )
    if isinstance(err, openai.APIResponseValidationError):
        return LLMBadResponse(f"the model endpoint sent an unexpected response: {err.message}")
    if isinstance(err, openai.APIError):  # an error event inside a stream
        if _says_overflow(err):
            return ContextOverflow(err.message)
        return LLMUnavailable(f"the model's stream reported an error: {err.message}")
    if isinstance(err, ValueError):
        return LLMBadResponse(f"the model endpoint sent malformed JSON: {err}")
    return LLMError(str(err))
