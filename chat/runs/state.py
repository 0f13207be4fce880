"""The state of one run (``Run``): what its tasks share while it lives.

The listener, the work, the checkpoints and the finish (``lifecycle``, ``work``,
``finish``) each read and write the same ``Run``; it lives apart from all of them so that
each can use it without importing the others. It holds no task's logic: only what the run
keeps (its ids, its partial answer, usage, record, compactions), how it is asked to stop,
and what a socket joining mid-run is shown.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from chat.runs import preparation, storage
from chat.runs.approvals import RunApprovals
from chat.runs.compactions import RunCompactions
from chat.runs.deps import RunDeps
from chat.runs.events import EventPublisher, take_back
from chat.runs.record import RunRecord
from contextmgmt.core.llm import Usage
from contextmgmt.core.messages import ChatMessage
from fimone.agent import InjectionQueue


class TrackedInjections(InjectionQueue):
    """Remembers which injected messages the engine took (the rest get a follow-up run).

    With ``look_up`` (several server processes), an engine about to end also reads the
    follow-ups stored for its run from the database: one stored by another process is
    committed before any socket hears of it, but the message that hands it to this run
    travels the channel layer and may still be on its way. A follow-up taken that way and
    handed over later is not taken twice.
    """

    def __init__(self, look_up: FollowUpLookUp | None = None) -> None:
        super().__init__()
        self.taken_ids: set[int] = set()
        self.look_up = look_up

    def put_nowait(self, message: ChatMessage) -> None:
        if message.metadata.get("id") not in self.taken_ids:
            super().put_nowait(message)

    def drain(self) -> list[ChatMessage]:
        drained = super().drain()
        # Only a stored message has an id; one without could never be told from another.
        self.taken_ids.update(_stored_ids(drained))
        return drained

    async def drain_settled(self, wait: float) -> list[ChatMessage]:
        drained = await super().drain_settled(wait)
        if drained or self.look_up is None:
            return drained
        for message in await self.look_up(frozenset(self.taken_ids)):
            super().put_nowait(message)
        return self.drain()


def _stored_ids(messages: list[ChatMessage]) -> list[int]:
    return [i for m in messages if isinstance(i := m.metadata.get("id"), int)]


# Follow-ups stored for a run other than those with the given ids, oldest first.
FollowUpLookUp = Callable[[frozenset[int]], Awaitable[list[ChatMessage]]]


class RunState(enum.Enum):
    """Where a run is: working, asked to stop, or ended (and how).

    A run works until its work task ends, possibly asked to stop on the way (by the user,
    or by the server's drain); the state it takes when the work has ended is its ending,
    which the finish stores. ``DELETED``: its conversation went while it finished.
    """

    WORKING = "working"
    CANCELLING = "cancelling"  # the user asked to stop
    INTERRUPTING = "interrupting"  # the server's drain asked to stop
    DONE = "done"
    FAILED = "error"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    DELETED = "deleted"

    @property
    def working(self) -> bool:
        return self in _WORKING

    @property
    def stopped(self) -> bool:
        """Stopped before its answer was complete (by the user or a shutdown)."""
        return self in _STOPPED


_WORKING = frozenset({RunState.WORKING, RunState.CANCELLING, RunState.INTERRUPTING})
_STOPPED = frozenset({RunState.CANCELLED, RunState.INTERRUPTED})


@dataclass(eq=False)
class Run:
    opened: storage.OpenedRun
    conversation_id: Any
    deps: RunDeps
    started: float  # perf_counter when the frame arrived: elapsed_ms counts from here
    publisher: EventPublisher
    control_channel: str
    injections: TrackedInjections = field(default_factory=TrackedInjections)
    task: asyncio.Task | None = None
    work: asyncio.Task | None = None
    listener: asyncio.Task | None = None
    checkpoints: asyncio.Task | None = None
    prepared: preparation.PreparedRun | None = None  # set by the work once it has it
    state: RunState = RunState.WORKING
    answer_parts: list[str] = field(default_factory=list)
    answer_version: int = 0  # moves with every change of the answer text
    history_compaction: dict | None = None
    local_injections: int = 0  # follow-ups stored by this process for this run
    answer_usage: Usage = field(default_factory=Usage)
    compaction_usage: Usage = field(default_factory=Usage)
    metered: list = field(default_factory=list)  # (MeteredLLM, model_config_id)
    # Steps and DAG plan as shown live, stored with the answer for a reload.
    record: RunRecord = field(default_factory=RunRecord)
    retry_of: int | None = None  # the failed assistant message this run answers again
    # The run's compaction ledger and the summaries it may store (set when work starts).
    compactions: RunCompactions | None = None
    # The whole results of the run's tool calls (the tools' registry keeps them), stored
    # at the finish for the next runs' records and recall by id.
    tool_results: Any = None
    # Tool calls waiting for the user's approval (chat.runs.approvals).
    approvals: RunApprovals = field(default_factory=RunApprovals)

    @property
    def run_id(self) -> str:
        return self.opened.run_id

    @property
    def mode(self) -> str:
        return self.opened.mode

    @property
    def query_message_id(self) -> int:
        return self.opened.query.pk

    @property
    def assistant_message_id(self) -> int:
        return self.opened.answer_id

    @property
    def finishing(self) -> bool:
        """The work has ended: the finish is storing (or has stored) the ending."""
        return not self.state.working

    def request_cancel(self) -> bool:
        """Stop the engine; False when the run is already finishing."""
        return self._request_stop(RunState.CANCELLING)

    def request_interrupt(self) -> bool:
        """Stop the engine because this server is shutting down; the run ends
        ``interrupted`` (retryable). False when the run is already finishing."""
        return self._request_stop(RunState.INTERRUPTING)

    def _request_stop(self, state: RunState) -> bool:
        if self.finishing or self.work is None or self.work.done():
            return False
        if self.state is RunState.WORKING:  # the first reason to stop is the one kept
            self.state = state
        self.work.cancel()
        return True

    def end(self, work: asyncio.Task) -> RunState:
        """The run's ending, once its work task has ended: taken as its state."""
        if work.cancelled():
            interrupted = self.state is RunState.INTERRUPTING
            self.state = RunState.INTERRUPTED if interrupted else RunState.CANCELLED
        else:
            # A stop asked for too late to stop anything: the run ended as its work did.
            self.state = RunState.DONE if work.exception() is None else RunState.FAILED
        return self.state

    def answered_ids(self) -> list[int]:
        """The user messages this run answers: its question, the follow-ups handed to it
        at the start, and every follow-up its engine took (see ``storage.persist_finish``)."""
        ids = {self.query_message_id, *self.opened.follow_up_ids, *self.opened.also_answers}
        ids.update(i for i in self.injections.taken_ids if isinstance(i, int))
        return sorted(ids)

    async def emit(self, event_type: str, payload: dict) -> None:
        """The engine's events: kept by the run (its partial answer, its compactions), then
        published. The run calls its publisher, never the other way round: a publisher
        holding a method of the run would tie the two in a reference cycle, and every
        finished run would then wait for a full garbage collection, a pause on the loop
        (docs/architecture.md)."""
        self._keep(event_type, payload)
        await self.publisher(event_type, payload)

    def _keep(self, event_type: str, payload: dict) -> None:
        if event_type == "compact" and self.compactions is not None:
            self.compactions.record(payload)
        elif event_type == "answer.delta":
            self.answer_parts.append(payload.get("text") or "")
            self.answer_version += 1
        elif event_type == "answer.retract":
            # The text moved into the step: the answer keeps what is left (docs/protocol.md).
            self.answer_parts[:] = [take_back("".join(self.answer_parts), payload)]
            self.answer_version += 1

    def snapshot(self) -> dict | None:
        """The run as a socket joining now needs it (the ``run.active`` event): ids, mode,
        the answer text streamed so far and the steps and plan so far."""
        if self.finishing:
            return None
        return {
            "run_id": self.run_id,
            "message_id": self.query_message_id,
            "assistant_message_id": self.assistant_message_id,
            "mode": self.mode,
            "text": "".join(self.publisher.published_text),
            # Taken with the text: later ones arrive as events.
            **self.record.as_metadata(),
        }
