"""The small parts a websocket run is built from (issue 7, DESIGN §5).

- group names: every socket of a conversation joins one channel-layer group, so a second
  tab sees the same events; a run's control messages (inject, cancel) travel through a
  second group, so another process could one day own the run (issue 10);
- ``EventPublisher``: the engine's event sink, coalescing ``answer.delta`` bursts so a fast
  model cannot overflow a slow client's channel (the in-memory layer drops when full);
- ``MeteredLLM``: counts every call's usage (partial runs included: RU.2, RU.3) and keeps
  (estimate, reported) samples for the budget calibration;
- ``failure_of``: an exception as a stable ``error {code, message}`` for the client;
- ``query_message``: a persisted user message as the pinned ``ChatMessage`` the agent sees;
- ``RunRecord``: a bounded record of the run's steps and DAG plan, stored on the assistant
  message so that a reload shows them as they were shown live.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections import deque
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
        on_sent=None,
    ) -> None:
        self._layer = layer
        self._group = conversation_group(conversation_id)
        self._flush_seconds = flush_seconds
        self._on_event = on_event
        # Sees every event but the deltas as it goes out (the run's RunRecord), in the same
        # step as the group send: a snapshot taken from it plus later events is exact.
        self._on_sent = on_sent
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
            if self._on_sent is not None:
                self._on_sent(event_type, payload)
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
            # The steps and plan as sent so far, taken under the same lock for the same reason.
            as_metadata = getattr(self._on_sent, "as_metadata", None)
            if as_metadata is not None:
                event.update(as_metadata())
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
_RETRY_HINT = " Your message is saved; use Retry to ask again."


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


# --- the run's record --------------------------------------------------------------------------

# Bounds of what a run stores about its steps and plan (the live events carry the same
# previews; a runaway run must not grow a message row without limit).
RECORD_TEXT_CHARS = 2_000
RECORD_MAX_STEPS = 50  # the first half and the newest half are kept, the middle counted
RECORD_MAX_ROUNDS = 6
RECORD_MAX_PLAN_STEPS = 20
_STEP_FIELDS = ("name", "arguments", "result", "text", "call_id", "step_id")
_COMPACT_FIELDS = (
    "scope",
    "strategy",
    "original_count",
    "compacted_count",
    "tokens_before",
    "tokens_after",
    "step_id",
)


def _clip(value: Any) -> Any:
    """Text cut to RECORD_TEXT_CHARS; numbers, booleans and None as they are."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    if len(text) <= RECORD_TEXT_CHARS:
        return text
    return text[:RECORD_TEXT_CHARS] + f"… [{len(text) - RECORD_TEXT_CHARS:,} more chars]"


class RunRecord:
    """What a run showed besides its answer, kept for a reload (issue 8, DESIGN §5).

    Built from the events as they go out (``EventPublisher(on_sent=…)``) and stored in the
    assistant message's metadata by ``as_metadata()``:

    - ``steps``: tool calls, tool results and thoughts (``kind``, ``iteration``, ``name``,
      ``arguments`` / ``result`` / ``text``, ``step_id`` inside a DAG step), and compaction
      notes (``kind: "compact"`` with the event's counts); ``steps_omitted`` counts the
      entries left out in the middle of a long run;
    - ``dag``: ``rounds`` (``round``, ``fallback``, ``steps`` with ``id``, ``task``,
      ``depends_on`` and the latest ``status`` with its ``result`` / ``error`` preview,
      ``analysis`` — the verdict) and ``replans`` (``round``).

    Every entry has ``seq``, its place among the run's events, so a client replays steps and
    plan interleaved exactly as they arrived live. Texts are cut at RECORD_TEXT_CHARS.
    """

    def __init__(self) -> None:
        self.version = 0  # moves on every change: a checkpoint writes only when it moved
        self._seq = 0
        self._head: list[dict] = []
        self._tail: deque[dict] = deque(maxlen=RECORD_MAX_STEPS - RECORD_MAX_STEPS // 2)
        self._omitted = 0
        self._rounds: list[dict] = []
        self._replans: list[dict] = []

    def __call__(self, event_type: str, payload: dict) -> None:
        try:
            self._add(event_type, payload)
        except Exception:  # the record is a courtesy: it must never fail the run
            logger.warning("could not record a %s event", event_type, exc_info=True)

    def _add(self, event_type: str, payload: dict) -> None:
        if event_type == "step":
            entry = {
                "kind": str(payload.get("kind") or "step"),
                "iteration": payload.get("iteration"),
            }
            entry.update({k: _clip(payload[k]) for k in _STEP_FIELDS if k in payload})
            self._step(entry)
        elif event_type == "compact" and payload.get("scope") != "history":
            entry = {"kind": "compact"}
            entry.update({k: _clip(payload[k]) for k in _COMPACT_FIELDS if k in payload})
            self._step(entry)
        elif event_type == "dag.plan":
            self._plan(payload)
        elif event_type == "dag.step":
            self._plan_step(payload)
        elif event_type == "dag.analysis":
            if self._rounds:
                self._rounds[-1]["analysis"] = {
                    "seq": self._next(),
                    "achieved": payload.get("achieved"),
                    "confidence": payload.get("confidence"),
                    "reason": _clip(payload.get("reason")),
                }
        elif event_type == "dag.replan":
            self._replans.append({"seq": self._next(), "round": payload.get("round")})
            del self._replans[:-RECORD_MAX_ROUNDS]
        else:
            return
        self.version += 1

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _step(self, entry: dict) -> None:
        entry["seq"] = self._next()
        if len(self._head) < RECORD_MAX_STEPS // 2:
            self._head.append(entry)
            return
        if len(self._tail) == self._tail.maxlen:
            self._omitted += 1
        self._tail.append(entry)

    def _plan(self, payload: dict) -> None:
        steps = [s for s in payload.get("steps") or [] if isinstance(s, dict)]
        self._rounds.append(
            {
                "seq": self._next(),
                "round": payload.get("round", len(self._rounds)),
                "fallback": bool(payload.get("fallback")),
                "steps": [
                    {
                        "id": _clip(str(s.get("id"))),
                        "task": _clip(s.get("task") or ""),
                        "depends_on": [str(d) for d in (s.get("depends_on") or [])][:20],
                        "status": "pending",
                    }
                    for s in steps[:RECORD_MAX_PLAN_STEPS]
                ],
                "analysis": None,
            }
        )
        del self._rounds[:-RECORD_MAX_ROUNDS]

    def _plan_step(self, payload: dict) -> None:
        if not self._rounds:
            return
        wanted = str(payload.get("id"))
        for step in self._rounds[-1]["steps"]:
            if step["id"] == wanted:
                step["seq"] = self._next()
                step["status"] = str(payload.get("status") or "pending")
                for key in ("result", "error"):
                    step.pop(key, None)
                    if payload.get(key) is not None:
                        step[key] = _clip(payload[key])
                return

    def as_metadata(self) -> dict[str, Any]:
        """The record as assistant-message metadata; empty keys are left out."""
        steps = list(self._head)
        if self._omitted:
            # Where the gap is: between the kept first half and the newest entries.
            steps.append({"kind": "omitted", "count": self._omitted, "seq": steps[-1]["seq"] + 0.5})
        steps.extend(self._tail)
        metadata: dict[str, Any] = {}
        if steps:
            metadata["steps"] = steps
        if self._omitted:
            metadata["steps_omitted"] = self._omitted
        if self._rounds:
            metadata["dag"] = {
                "rounds": [
                    {
                        **r,
                        "steps": [dict(s) for s in r["steps"]],
                        "analysis": dict(r["analysis"]) if r["analysis"] else None,
                    }
                    for r in self._rounds
                ],
                "replans": [dict(r) for r in self._replans],
            }
        return metadata
