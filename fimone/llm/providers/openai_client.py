"""An LLM on any OpenAI-compatible endpoint, through the ``openai`` SDK's public API.

Retries (429, 5xx, timeouts, connection errors) are fimone's own (``retries``: a rate
limit's wait is announced to a streaming caller as an ``LLMNotice``; the SDK's are off);
timeouts are the SDK's (``timeout``). This module only builds requests from
``ChatMessage.to_openai()`` (``wire``: fimone's own fields — pinned, injected, metadata —
never reach the wire), turns replies and streamed deltas into fimone's types, accounts
usage, and maps SDK errors to the exceptions of ``contextmgmt.core.llm`` (``errors``).
No Django here: the registry passes the configuration in.

Every request is built in one place, ``_request``; ``_create`` sends it through
``client.chat.completions.create``.

Streaming asks for usage in the last chunk (``stream_options.include_usage``). Several
OpenAI-compatible servers refuse that field with a 400 naming it: the call is then made once
more without it, the endpoint is remembered (per base URL, for the life of the process) so
later calls leave it out from the start, and the usage of such calls is fimone's estimate,
marked ``estimated``. A stream that stops before its finish reason is ``StreamCutOff``, never
a silently short answer.

Tool-call arguments that are not valid JSON are returned as the model wrote them, not
raised: the ToolRegistry answers them with an "arguments are not valid JSON" tool result the
model reads and corrects, exactly as with an in-process model. When such a call goes back to
a provider in the conversation, its arguments are wrapped in a JSON object
(``INVALID_ARGUMENTS_KEY``): several servers parse the arguments of earlier calls (vLLM's
chat templates, Anthropic-compatible proxies) and would refuse the whole request.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx2
import openai
from openai import AsyncOpenAI

from contextmgmt.core.llm import (
    LLMBadResponse,
    LLMNotice,
    LLMResult,
    LLMTimeout,
    StreamChunk,
    StreamCutOff,
)
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.providers import ProviderProfile
from fimone.llm.options import check_opts
from fimone.llm.providers.endpoint import Endpoint, Learner, StreamRefused
from fimone.llm.providers.errors import map_error
from fimone.llm.providers.retries import (
    MAX_WAIT_SECONDS,
    RATE_LIMIT_RETRIES,
    Retry,
    RetryPolicy,
    retry_or_raise,
    retrying,
)
from fimone.llm.providers.sse import sse_batches
from fimone.llm.providers.streaming import StreamReader, coalesced, whole_reply_chunks
from fimone.llm.providers.think_tags import opens_in_prompt, split_whole
from fimone.llm.providers.vision import (
    ImagesRefused,
    has_pixels,
    refuses_images,
    remember_refusal,
    says_no_images,
    without_pixels,
)
from fimone.llm.providers.wire import (
    estimate,
    parse_tool_calls,
    usage_of_reply,
    wire_message,
)

log = logging.getLogger(__name__)

# Servers such as llama.cpp and Ollama need no key, but the SDK insists on one.
_NO_KEY = "no-key-configured"
# Endpoints (base URLs) that refused ``stream_options``: asked without it from then on.
_NO_STREAM_OPTIONS: set[str] = set()
_NO_STREAM_OPTIONS_LOCK = threading.Lock()


def refuses_stream_options(base_url: str | None) -> bool:
    return (base_url or "") in _NO_STREAM_OPTIONS


def _remember_no_stream_options(base_url: str | None) -> None:
    with _NO_STREAM_OPTIONS_LOCK:
        _NO_STREAM_OPTIONS.add(base_url or "")


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
        rate_limit_retries: int = RATE_LIMIT_RETRIES,
        rate_limit_max_wait: float = MAX_WAIT_SECONDS,
        supports_vision: bool = True,
        profile: ProviderProfile | None = None,
        on_learn: Learner | None = None,
        on_images_refused: ImagesRefused | None = None,
    ) -> None:
        self.model_name = model
        # What this endpoint accepts (a provider profile): every request is adapted to it, a
        # parameter the endpoint refuses is retried without and remembered (``Endpoint``).
        self.endpoint = Endpoint(profile, on_learn)
        self.base_url = base_url or None
        self._api_key = api_key or _NO_KEY
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_policy = RetryPolicy(
            max_retries=max_retries,
            rate_limit_retries=rate_limit_retries,
            max_wait=rate_limit_max_wait,
        )
        self._vision = supports_vision
        # Where a refusal of images is kept: given (a model configuration row, through the
        # registry), it is reported there and this object stops sending pixels; else the
        # endpoint is remembered for the process (``vision``).
        self._on_images_refused = on_images_refused
        self._images_refused = False
        # The endpoint sent a closing think tag without an opening one (``think_tags``).
        self._think_opened = False
        # An httpx client is bound to the event loop that first used it: one SDK client per
        # loop (daphne has one; tests and async_to_sync make more).
        self._clients: dict[asyncio.AbstractEventLoop, AsyncOpenAI] = {}
        self._clients_lock = threading.Lock()

    def __repr__(self) -> str:  # never the key
        return f"OpenAIChatLLM(model={self.model_name!r}, base_url={self.base_url!r})"

    @property
    def supports_vision(self) -> bool:
        """Configured to see images, and its endpoint has not refused them (``vision``)."""
        return self._vision and not self._refuses_images()

    def _refuses_images(self) -> bool:
        if self._images_refused:
            return True
        return self._on_images_refused is None and refuses_images(self.base_url, self.model_name)

    def _shown(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """The messages as this model takes them: images as text when it does not see (as
        configured, or its endpoint refused them). Callers that read ``supports_vision`` send
        none; this keeps a caller that did not from costing a refused call."""
        if not self.supports_vision:
            return without_pixels(messages)
        return messages

    async def _refused_images(self, err: Exception, messages: list[ChatMessage]) -> bool:
        """Whether ``err`` refuses the images ``messages`` hold (then remembered)."""
        if not has_pixels(messages) or not says_no_images(err):
            return False
        reason = getattr(err, "message", str(err))
        if self._on_images_refused is None:
            remember_refusal(self.base_url, self.model_name, reason)
            return True
        self._images_refused = True
        try:
            await self._on_images_refused(reason)
        except Exception:  # remembering is a convenience; the answer must not fail for it
            log.exception("could not store that %s refused images", self.model_name)
        return True

    def _think_opens(self) -> bool:
        """Whether replies start inside a think block the prompt opened: by the model's
        name or what the endpoint showed, unless its reasoning arrives in a field of its
        own (a reasoning parser takes the tags out)."""
        if self.endpoint.profile.reasoning_field:
            return False
        return self._think_opened or opens_in_prompt(self.model_name)

    def _next_retry(self, err: Exception, done: int) -> Retry:
        return retry_or_raise(err, done, self.retry_policy, str(self))

    async def _retrying(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """``await call()``, retried as ``retries`` says (no notice: the caller is not
        streaming; ``stream_chat`` announces its waits)."""
        return await retrying(call, self.retry_policy, str(self))

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
                    max_retries=0,  # fimone retries itself (``retries``)
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
            "messages": [wire_message(m) for m in messages],
        }
        if tools:
            kwargs["tools"] = tools
        for name in ("max_tokens", "temperature", "response_format", "timeout"):
            if opts.get(name) is not None:
                kwargs[name] = opts[name]
        if stream:
            kwargs["stream"] = True
            if not refuses_stream_options(self.base_url):
                kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    async def _create(self, kwargs: dict[str, Any], *, raw: bool = False) -> Any:
        """``chat.completions.create`` with the bulky, already-wire-shaped parts (messages,
        tools) in its documented ``extra_body``, which goes into the JSON body as it is.

        ``create`` walks its typed parameters through the SDK's TypedDict transform; for the
        plain wire dicts ``_request`` builds (``to_openai()``) that transform is the identity,
        yet it cost ~4 ms of CPU per call with a 20-message history and the tool schemas —
        more than the rest of a run together. Everything else (model, stream,
        stream_options, max_tokens, …) goes through ``create`` as usual. ``raw``: the
        SDK's ``with_streaming_response`` context manager (see ``fimone.llm.providers.sse``).
        """
        params = dict(kwargs)
        body = {"messages": params.pop("messages")}
        if "tools" in params:
            body["tools"] = params.pop("tools")
        completions = self._client().chat.completions
        if raw:
            return completions.with_streaming_response.create(
                messages=[], extra_body=body, **params
            )
        return await completions.create(messages=[], extra_body=body, **params)

    async def _open_stream(self, kwargs: dict[str, Any], stack: AsyncExitStack) -> Any:
        """The raw streaming response, the request adapted to the endpoint's profile; a
        refused ``stream_options`` is dropped once and remembered for the endpoint."""

        async def open_raw(sent: dict[str, Any]) -> Any:
            return await stack.enter_async_context(await self._create(sent, raw=True))

        try:
            return await self.endpoint.send(open_raw, kwargs)
        except openai.APIStatusError as err:
            if "stream_options" not in kwargs or not _names_stream_options(err):
                raise
        _remember_no_stream_options(self.base_url)
        retry = {k: v for k, v in kwargs.items() if k != "stream_options"}
        return await self.endpoint.send(open_raw, retry)

    async def chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[dict[str, Any]] | None = None,
        **opts: Any,
    ) -> LLMResult:
        messages = self._shown(messages)
        kwargs = self._request(messages, tools, opts, stream=False)
        try:
            try:
                response = await self._retrying(lambda: self.endpoint.send(self._create, kwargs))
            except openai.APIStatusError as err:
                if not await self._refused_images(err, messages):
                    raise
                messages = without_pixels(messages)
                kwargs = self._request(messages, tools, opts, stream=False)
                response = await self._retrying(lambda: self.endpoint.send(self._create, kwargs))
        except (openai.OpenAIError, ValueError) as err:
            raise map_error(err) from err
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMBadResponse("the model endpoint returned no choices")
        choice = choices[0]
        wire = choice.message
        calls = parse_tool_calls(
            [(tc.id, tc.function.name, tc.function.arguments) for tc in wire.tool_calls or []]
        )
        content = wire.content
        metadata: dict[str, Any] = {"finish_reason": choice.finish_reason}
        reasoning = self.endpoint.reasoning_text(wire)
        if content:  # reasoning written inline as <think>…</think> (``think_tags``)
            split = split_whole(content)
            content, reasoning = split.text, reasoning + split.reasoning
        if reasoning:  # shown apart; never sent back (to_openai leaves metadata out)
            metadata["reasoning"] = reasoning
        message = ChatMessage(
            role="assistant",
            content=content if content is not None or calls else "",
            tool_calls=calls,
            metadata=metadata,
        )
        usage = usage_of_reply(getattr(response, "usage", None)) or estimate(messages, message)
        await self.endpoint.report()
        return LLMResult(message=message, usage=usage)

    async def stream_chat(
        self,
        messages: list[ChatMessage],
        *,
        tools: list[dict[str, Any]] | None = None,
        **opts: Any,
    ) -> AsyncIterator[StreamChunk]:
        """The reply as it streams; for a model that may not stream (its profile, or a
        refusal learnt now) the reply asked whole, announced first (``LLMNotice``)."""
        if self.endpoint.profile.stream:
            try:
                async for chunk in self._streamed(messages, tools, opts):
                    yield chunk
                return
            except StreamRefused:
                pass  # learnt before anything was yielded: ask it whole
        yield StreamChunk(notice=LLMNotice("unstreamed"))
        for chunk in whole_reply_chunks(await self.chat(messages, tools=tools, **opts)):
            yield chunk

    async def _streamed(
        self,
        messages: list[ChatMessage],
        tools: list[dict[str, Any]] | None,
        opts: dict[str, Any],
    ) -> AsyncIterator[StreamChunk]:
        messages = self._shown(messages)
        kwargs = self._request(messages, tools, opts, stream=True)
        asked_usage = "stream_options" in self.endpoint.profile.adapt(kwargs)
        reader = StreamReader(self.endpoint, inside=self._think_opens())
        started = False  # the provider answered: a broken connection now is a cut-off
        try:
            async with AsyncExitStack() as stack:
                done = 0  # retries so far (``retries``); a rate limit's wait is announced
                while True:
                    try:
                        try:
                            response = await self._open_stream(kwargs, stack)
                        except openai.APIStatusError as err:
                            if not await self._refused_images(err, messages):
                                raise
                            messages = without_pixels(messages)
                            kwargs = self._request(messages, tools, opts, stream=True)
                            response = await self._open_stream(kwargs, stack)
                        break
                    except (openai.APIStatusError, openai.APIConnectionError) as err:
                        retry = self._next_retry(err, done)
                    done += 1
                    if retry.rate_limited:
                        notice = LLMNotice(
                            "rate_limited", retry.wait, retry.attempt, retry.attempts
                        )
                        yield StreamChunk(notice=notice)
                    await asyncio.sleep(retry.wait)
                started = True
                async for batch in sse_batches(response):
                    for out in coalesced(out for chunk in batch for out in reader.read(chunk)):
                        yield out
        except (httpx2.TimeoutException, openai.APITimeoutError) as err:
            raise LLMTimeout("the model did not answer in time") from err
        except (httpx2.TransportError, openai.APIConnectionError) as err:
            if started:
                raise StreamCutOff(
                    "the model's stream was cut off before the reply was complete"
                ) from err
            raise map_error(err) from err
        except (openai.OpenAIError, ValueError) as err:
            raise map_error(err) from err
        if not reader.saw_choice:
            raise LLMBadResponse("the model's stream carried no choices")
        if reader.finish_reason is None:
            # The body ended cleanly but the reply never finished: a cut-off stream.
            raise StreamCutOff("the model's stream ended before the reply was complete")
        for out in reader.flush():
            yield out
        if reader.saw_orphan_close:
            log.info("%s opens its think block in the prompt; read so from now on", self)
            self._think_opened = True
        tool_calls = reader.calls.calls()
        usage = reader.usage
        if usage is None:  # no usage sent, or stream_options refused by this endpoint
            if asked_usage and self.endpoint.profile.stream_usage:
                self.endpoint.saw_no_stream_usage()  # asked, and it sent none: ask no more
            text = "".join(reader.text)
            reply = ChatMessage(role="assistant", content=text, tool_calls=tool_calls)
            usage = estimate(messages, reply)
        await self.endpoint.report()
        yield StreamChunk(tool_calls=tool_calls, usage=usage, finish_reason=reader.finish_reason)


def _names_stream_options(err: openai.APIStatusError) -> bool:
    """A 400/422 whose message or body names ``stream_options``: the field is refused."""
    if err.status_code not in (400, 422):
        return False
    return any("stream_options" in s for s in (err.message, str(err.body or "")) if s)
