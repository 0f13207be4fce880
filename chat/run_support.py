"""The small parts a websocket run is built from (issue 7, DESIGN §5).

- group names: every socket of a conversation joins one channel-layer group, so a second
  tab sees the same events; a run's control messages (inject, cancel) travel through a
  second group, so another process could one day own the run (issue 10);
- ``EventPublisher``: the engine's event sink, coalescing ``answer.delta`` bursts so a fast
  model cannot overflow a slow client's channel (the in-memory layer drops when full);
- ``MeteredLLM``: counts every call's usage (partial runs included: RU.2, RU.3) and keeps
  (estimate, reported) samples for the budget calibration;
- ``failure_of``: an exception as a stable ``error {code, message}`` for the client;
- ``query_message``: a persisted user message as the pinned ``ChatMessage`` the agent sees.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

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
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_messages_tokens, estimate_tokens

logger = logging.getLogger(__name__)

# How long answer deltas may wait to be merged into one event. Short enough to read as
# live streaming, long enough that a zero-latency model sends a handful of events, not
# hundreds.
DELTA_FLUSH_SECONDS = 0.025


def conversation_group(conversation_id: Any) -> str:
    """Every socket open on the conversation: run events go here."""
    return f"chat.{conversation_id}"


def control_group(conversation_id: Any) -> str:
    """The active run of the conversation listens here for ``inject`` / ``cancel``."""
    return f"chatrun.{conversation_id}"


# --- events ----------------------------------------------------------------------------------


class EventPublisher:
    """Publishes run events to a conversation's sockets, in order.

    ``answer.delta`` texts are buffered for at most ``flush_seconds`` and sent as one event;
    any other event flushes the buffer first, so no event overtakes text streamed before it.
    ``on_event`` sees every event as the engine emitted it (the run keeps its partial answer
    and compaction facts from there).
    """

    def __init__(
        self,
        layer,
        conversation_id: Any,
        *,
        flush_seconds: float = DELTA_FLUSH_SECONDS,
        on_event=None,
    ) -> None:
        self._layer = layer
        self._group = conversation_group(conversation_id)
        self._flush_seconds = flush_seconds
        self._on_event = on_event
        self._buffer: list[str] = []
        # Answer text already sent to the group: what a socket joining now has missed.
        self.published_text: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timed_flush: asyncio.Task | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, event_type: str, payload: dict) -> None:
        if self._on_event is not None:
            self._on_event(event_type, payload)
        if event_type == "answer.delta":
            text = payload.get("text") or ""
            if text:
                self._buffer.append(text)
                if self._timer is None:
                    loop = asyncio.get_running_loop()
                    self._timer = loop.call_later(self._flush_seconds, self._flush_soon)
            return
        await self.flush()
        async with self._lock:
            await self._send(event_type, payload)

    def _flush_soon(self) -> None:
        self._timer = None
        self._timed_flush = asyncio.ensure_future(self.flush())

    async def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        async with self._lock:
            if not self._buffer:
                return
            text = "".join(self._buffer)
            self._buffer.clear()
            # Recorded in the same step in which the group's members are read (no await in
            # between), so a socket joining the group gets each piece exactly once: in the
            # snapshot (run.active) or as an event.
            self.published_text.append(text)
            await self._send("answer.delta", {"text": text})

    async def send_snapshot(self, channel: str, snapshot: dict) -> None:
        """``run.active`` to one socket of another process (issue 10): under the send lock,
        with the text published so far, so it sits in order among this run's deltas."""
        async with self._lock:
            event = {"type": "run.active", **snapshot, "text": "".join(self.published_text)}
            await self._layer.send(channel, {"type": "chat.event", "event": event})

    async def _send(self, event_type: str, payload: dict) -> None:
        await self._layer.group_send(
            self._group, {"type": "chat.event", "event": {"type": event_type, **payload}}
        )


# --- usage -----------------------------------------------------------------------------------


class MeteredLLM:
    """An LLM that adds the usage of every call to ``usage`` (and forwards everything else).

    Counting at the call, not from the engine's outcome, keeps the usage of a run that
    failed or was cancelled half way (RU.2 totals, RU.3 partial answers).
    """

    def __init__(self, inner, usage: Usage | None = None) -> None:
        self._inner = inner
        self.model_name = getattr(inner, "model_name", "unknown")
        self.usage = usage if usage is not None else Usage()
        # (estimated, reported) input tokens of chat() calls, for calibration (issue 5).
        self.estimated_input = 0
        self.reported_input = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def chat(self, messages, *, tools=None, **opts) -> LLMResult:
        result = await self._inner.chat(messages, tools=tools, **opts)
        self.usage.add(result.usage)
        if result.usage.input_tokens > 0:
            self.estimated_input += estimate_messages_tokens(messages) + _tools_tokens(tools)
            self.reported_input += result.usage.input_tokens
        return result

    async def stream_chat(self, messages, *, tools=None, **opts) -> AsyncIterator[StreamChunk]:
        async for chunk in self._inner.stream_chat(messages, tools=tools, **opts):
            if chunk.usage is not None:
                self.usage.add(chunk.usage)
            yield chunk


def _tools_tokens(tools: list[dict] | None) -> int:
    return estimate_tokens(json.dumps(tools)) if tools else 0


def usage_totals(answer: Usage, compaction: Usage) -> dict[str, int]:
    """The ``done`` usage: totals include compaction calls (RU.2), which are also split out."""
    return {
        "input_tokens": answer.input_tokens + compaction.input_tokens,
        "output_tokens": answer.output_tokens + compaction.output_tokens,
        "compaction_input_tokens": compaction.input_tokens,
        "compaction_output_tokens": compaction.output_tokens,
    }


# --- failures --------------------------------------------------------------------------------

_FAILURES: list[tuple[type[BaseException], str, str]] = [
    (ContextOverflow, "context_overflow", "The conversation is too long for the model."),
    (LLMTimeout, "llm_timeout", "The model did not answer in time."),
    (LLMRateLimited, "llm_rate_limited", "The model is rate limited right now."),
    (LLMUnavailable, "llm_unavailable", "The model could not be reached."),
    (LLMBadResponse, "llm_bad_response", "The model sent a malformed response."),
    (LLMAuthError, "llm_auth", "The model refused fimone's credentials."),
    (LLMError, "llm_error", "The model call failed."),
]
_RETRY_HINT = " Your message is saved; send it again to retry."


def failure_of(exc: BaseException) -> dict[str, str]:
    """``{code, message}`` for the client; internal errors say nothing about internals."""
    for kind, code, text in _FAILURES:
        if isinstance(exc, kind):
            detail = str(exc).strip()
            message = f"{text} ({detail[:300]})" if detail else text
            return {"code": code, "message": message + _RETRY_HINT}
    return {"code": "internal_error", "message": "Something went wrong." + _RETRY_HINT}


# --- messages ----------------------------------------------------------------------------------


def query_message(message, *, vision: bool = True) -> ChatMessage:
    """The persisted user message as the agent sees it: pinned, images inline (R4.3, RP.1).

    Sync (reads attachment files): call it from a thread. An unreadable file becomes a
    short text note rather than failing the run.
    """
    injected = message.kind == "injected"
    images = (message.metadata or {}).get("images") or []
    metadata = {"id": message.pk, "created_at": message.created_at.isoformat()}
    if not images:
        return ChatMessage(
            role="user", content=message.content, pinned=True, injected=injected, metadata=metadata
        )
    from chat.models import Attachment

    found = {
        str(a.pk): a
        for a in Attachment.objects.filter(
            conversation_id=message.conversation_id, pk__in=[i["file_id"] for i in images]
        )
    }
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "text": message.content})
    for image in images:
        attachment = found.get(str(image["file_id"]))
        parts.append(_image_part(attachment, image, vision=vision))
    return ChatMessage(
        role="user", content=parts, pinned=True, injected=injected, metadata=metadata
    )


def _image_part(attachment, image: dict, *, vision: bool) -> dict[str, Any]:
    if attachment is None:
        return {"type": "text", "text": "[image: no longer available]"}
    label = (
        f"[image: {attachment.original_name or 'image'}, {attachment.width}x{attachment.height}]"
    )
    if not vision:
        return {"type": "text", "text": label}
    try:
        with attachment.file.open("rb") as fh:
            data = fh.read()
    except OSError:
        logger.warning("attachment %s unreadable", attachment.pk, exc_info=True)
        return {"type": "text", "text": label + " (file unreadable)"}
    url = f"data:{attachment.mime_type};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}
