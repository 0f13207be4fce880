"""Run events: the groups they travel through, the publisher that sends them in order, and
how a failure is told to the client.

Every socket of a conversation joins one channel-layer group, so a second tab sees the same
events; a run's control messages (inject, cancel, ping, snapshot) travel through a second
group, so they reach the run in whichever server process owns it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer
from django.utils.translation import gettext, gettext_lazy

from contextmgmt.core.instructions import NoRoomForQuery
from contextmgmt.core.llm import (
    ContextOverflow,
    LLMAuthError,
    LLMBadResponse,
    LLMError,
    LLMRateLimited,
    LLMTimeout,
    LLMUnavailable,
)

from .record import dag_with_html, step_result_html_async

logger = logging.getLogger(__name__)

# How long streamed deltas may wait to be merged into one event. Short enough to read as
# live streaming, long enough that a zero-latency model sends a handful of events, not
# hundreds. The first delta after a quiet spell goes out at the event loop's next turn (time
# to first token), with the pieces that arrived in the same read of the model's stream.
DELTA_FLUSH_SECONDS = 0.025
# Streamed text events, merged while they wait: the answer, and a DAG step's progress.
DELTA_EVENTS = ("answer.delta", "dag.step.delta")
# Streamed-text events per second that all the runs of one process send together. Each
# event costs the process its trip through the channel layer, the socket's consumer and the
# websocket frame; under load the model's pieces arrive further apart than the flush time,
# so without a shared budget every piece became an event of its own and the busier the
# process, the more work each run made (docs/operations.md, "Throughput"). Up to ten
# streams keep the flush time; with more, each stream's wait grows with their number.
DELTA_EVENTS_PER_SECOND = 400

# A publisher whose last piece of text is older than this no longer counts as streaming,
# even if its run never sent the event that ends the stream (a run that died mid-answer
# must not slow every other stream of the process for good).
STREAM_IDLE_SECONDS = 1.0
# How often publishers idle for longer are dropped from the count: it is read at every
# flush, and dropping them walks all the process's publishers.
_PRUNE_EVERY_SECONDS = 0.05

# The publishers of this process that streamed text, with the monotonic time of their last
# piece; a publisher leaves when its stream pauses (a step, a tool call, the end).
_streaming: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class _Pruning:
    last_at: float = -1.0


_pruning = _Pruning()


def _drop_idle_streams() -> None:
    now = time.monotonic()
    _pruning.last_at = now
    since = now - STREAM_IDLE_SECONDS
    for publisher, last in list(_streaming.items()):
        if last < since:
            _streaming.pop(publisher, None)


def streams_now() -> int:
    """How many runs of this process are streaming text at the moment."""
    _drop_idle_streams()
    return len(_streaming)


def _streams_lately() -> int:
    """``streams_now()``, but the idle are dropped at most every ``_PRUNE_EVERY_SECONDS``:
    a stream that starts counts at once, one gone idle a moment late."""
    if time.monotonic() - _pruning.last_at >= _PRUNE_EVERY_SECONDS:
        _drop_idle_streams()
    return len(_streaming)


def channel_layer() -> BaseChannelLayer:
    """The configured channel layer (settings always configure one)."""
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("no channel layer configured")
    return layer


def conversation_group(conversation_id: Any) -> str:
    """Every socket open on the conversation: run events go here."""
    return f"chat.{conversation_id}"


def control_group(conversation_id: Any) -> str:
    """The active run of the conversation listens here for ``inject`` / ``cancel``."""
    return f"chatrun.{conversation_id}"


def take_back(text: str, retract: dict) -> str:
    """``text`` without the characters an ``answer.retract`` moved into a step."""
    chars = max(0, int(retract.get("chars") or 0))
    return text[: max(0, len(text) - chars)]


class EventPublisher:
    """Publishes run events to a conversation's sockets, in order.

    Streamed text (``answer.delta``, ``dag.step.delta``) is throttled: a delta after a quiet
    spell goes out at the loop's next turn, merged with the pieces the stream yields before
    it waits for the network again (a fast model's whole answer often arrives in one read:
    one event, not two); later ones are buffered for at most ``flush_seconds`` and sent
    merged (consecutive deltas of the same stream become one event). Any other event flushes
    the buffer first, so no event overtakes text streamed before it.
    """

    def __init__(
        self,
        layer,
        conversation_id: Any,
        *,
        flush_seconds: float = DELTA_FLUSH_SECONDS,
        on_sent: Callable[[str, dict], None] | None = None,
        snapshot: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self._layer = layer
        self._group = conversation_group(conversation_id)
        self._flush_seconds = flush_seconds
        # Sees every event but the answer's deltas as it goes out (the run's RunRecord), in
        # the same step as the group send: a snapshot taken from it plus later events is
        # exact. A DAG step's merged progress text comes here too (a socket joining mid-step
        # shows it).
        self._on_sent = on_sent
        # What a socket joining mid-run gets of the record besides the text (its steps and
        # plan): taken under the send lock, as the text is.
        self._snapshot = snapshot
        # Waiting deltas, in order: [event type, payload without text, text parts].
        self._buffer: list[tuple[str, dict, list[str]]] = []
        # Answer text already sent to the group: what a socket joining now has missed.
        self.published_text: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._timed_flush: asyncio.Task | None = None
        self._quiet_after = 0.0  # loop time before which a delta waits to be merged
        self._lock = asyncio.Lock()

    def _wait(self) -> float:
        """How long streamed text may wait: the flush time, longer while many runs of this
        process stream at once (their events share ``DELTA_EVENTS_PER_SECOND``)."""
        return max(self._flush_seconds, _streams_lately() / DELTA_EVENTS_PER_SECOND)

    async def __call__(self, event_type: str, payload: dict) -> None:
        if event_type in DELTA_EVENTS:
            text = payload.get("text") or ""
            if text:
                _streaming[self] = time.monotonic()
                self._buffer_delta(event_type, payload, text)
                loop = asyncio.get_running_loop()
                if self._timer is None:
                    # After a quiet spell: no delay, the next turn of the loop.
                    delay = max(self._quiet_after - loop.time(), 0.0)
                    self._timer = loop.call_later(delay, self._flush_soon)
            return
        _streaming.pop(self, None)  # the stream pauses: a step, a tool call, the end
        await self.flush()
        async with self._lock:
            if self._on_sent is not None:
                self._on_sent(event_type, payload)
            if event_type == "answer.retract":
                self.published_text[:] = [take_back("".join(self.published_text), payload)]
            await self._send(event_type, payload)

    def _buffer_delta(self, event_type: str, payload: dict, text: str) -> None:
        key = {k: v for k, v in payload.items() if k != "text"}
        if self._buffer and self._buffer[-1][:2] == (event_type, key):
            self._buffer[-1][2].append(text)
        else:
            self._buffer.append((event_type, key, [text]))

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
            pending, self._buffer = self._buffer, []
            self._quiet_after = asyncio.get_running_loop().time() + self._wait()
            for event_type, key, parts in pending:
                text = "".join(parts)
                if event_type == "answer.delta":
                    # Recorded in the same step in which the group's members are read (no
                    # await in between), so a socket joining the group gets each piece
                    # exactly once: in the snapshot (run.active) or as an event.
                    self.published_text.append(text)
                elif self._on_sent is not None:
                    self._on_sent(event_type, {**key, "text": text})
                await self._send(event_type, {**key, "text": text})

    async def send_snapshot(self, channel: str, snapshot: dict) -> None:
        """``run.active`` to one socket of another process: under the send lock,
        with the text published so far, so it sits in order among this run's deltas."""
        async with self._lock:
            event = {"type": "run.active", **snapshot, "text": "".join(self.published_text)}
            # The steps and plan as sent so far, taken under the same lock for the same reason.
            if self._snapshot is not None:
                event.update(self._snapshot())
                if event.get("dag"):
                    event["dag"] = dag_with_html(event["dag"])
            await self._layer.send(channel, {"type": "chat.event", "event": event})

    async def _send(self, event_type: str, payload: dict) -> None:
        if event_type == "dag.step":
            payload = await step_result_html_async(payload)
        await self._layer.group_send(
            self._group, {"type": "chat.event", "event": {"type": event_type, **payload}}
        )


# --- failures --------------------------------------------------------------------------------

# Lazy: the message is written in the language of the run (the socket that started it).
_FAILURES: list[tuple[type[BaseException], str, Any]] = [
    (
        ContextOverflow,
        "context_overflow",
        gettext_lazy("The conversation is too long for the model."),
    ),
    (
        NoRoomForQuery,
        "instructions_leave_no_room",
        gettext_lazy(
            "The instructions leave the model no room for your message: shorten the "
            "project's or the conversation's instructions, or pick a model with a larger "
            "context window."
        ),
    ),
    (LLMTimeout, "llm_timeout", gettext_lazy("The model did not answer in time.")),
    (LLMRateLimited, "llm_rate_limited", gettext_lazy("The model is rate limited right now.")),
    (LLMUnavailable, "llm_unavailable", gettext_lazy("The model could not be reached.")),
    (LLMBadResponse, "llm_bad_response", gettext_lazy("The model sent a malformed response.")),
    (LLMAuthError, "llm_auth", gettext_lazy("The model refused fimone's credentials.")),
    (LLMError, "llm_error", gettext_lazy("The model call failed.")),
]
_WITH_RETRY_HINT = gettext_lazy("%(problem)s Your message is saved; use Retry to ask again.")


def failure_of(exc: BaseException) -> dict[str, str]:
    """``{code, message}`` for the client; internal errors say nothing about internals."""
    for kind, code, text in _FAILURES:
        if isinstance(exc, kind):
            detail = str(exc).strip()
            message = f"{text} ({detail[:300]})" if detail else str(text)
            return {"code": code, "message": str(_WITH_RETRY_HINT) % {"problem": message}}
    problem = gettext("Something went wrong.")
    return {"code": "internal_error", "message": str(_WITH_RETRY_HINT) % {"problem": problem}}
