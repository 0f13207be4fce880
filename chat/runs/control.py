"""One active run per conversation across server processes.

A run lives in the process that started it (``lifecycle``); its control channel is in the
conversation's control group (``events.control_group``), so ``inject`` / ``cancel`` sent
by any process's consumer reach it through the channel layer. What is process-local is
the question "is a run active?" (``registry``). This module answers it for
runs of *other* processes, from the database:

- the active run of a conversation is its assistant message with status ``running``;
- starting a run locks the conversation row (``SELECT … FOR UPDATE``) and checks that no
  such message exists (:func:`claim_conversation`), so two processes that receive a
  ``message`` at the same moment cannot both start one — the loser injects instead;
- an injection into another process's run is stored only while that run is still
  ``running`` (:func:`lock_running_run`, same row lock): the owner finishes its answer under
  that lock too (``assistant_message_finish`` updates the conversation row), so a follow-up
  is either seen by the owner's leftover check or starts a run of its own — never lost;
- a ``running`` message whose process died is an orphan: two ``run.ping`` on the control
  group get no ``run.pong`` within :func:`probe_seconds` each (:func:`owner_alive`), and
  the run is marked ``interrupted`` (:func:`reclaim_run`) so the conversation can go on;
  ``manage.py recover_runs`` does that for every running run (:func:`reclaim_orphans`);
- a socket joining mid-run on another process gets ``run.active`` from the run's owner
  (:func:`request_snapshot`, :class:`SnapshotGate`).

A pending channel-layer ``receive()`` is never cancelled here: with channels-redis the
cancelled one may be holding a message for another socket of the process, which is then
lost (https://github.com/django/channels_redis/issues/366). Timeouts and stops are
messages instead.

With the in-memory channel layer there is only one process: a ``running`` message that
the local registry does not know is an orphan without asking.

SQLite ignores ``FOR UPDATE``; there its IMMEDIATE transactions (settings) serialise the
writers, which gives the same guarantee for the one process SQLite is meant for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import InMemoryChannelLayer
from django.conf import settings
from django.db import transaction

from chat.models import Conversation, Message
from chat.row_reads import PlainSelect
from chat.runs.events import control_group, conversation_group
from fimone.memory_layer import InMemoryChannelLayer as ProcessLocalLayer

logger = logging.getLogger(__name__)

PING = "run.ping"
PONG = "run.pong"
STOP = "run.stop"  # a run's listener, told by its own run to end (see stop_listener)
SNAPSHOT = "run.snapshot"  # a socket of another process asks for run.active
APPROVAL = "run.approval"  # the user's answer to a tool approval request (chat.runs.approvals)
_PROBE_EXPIRED = "run.probe.expired"
DEFAULT_PROBE_SECONDS = 2.0
LISTENER_STOP_SECONDS = 5.0


class RunBusy(Exception):
    """The conversation already has a running run (possibly in another process)."""

    def __init__(self, run: RemoteRun) -> None:
        super().__init__(f"conversation already runs {run.run_id}")
        self.run = run


class RunNotActive(Exception):
    """The run an injection was meant for has finished meanwhile."""


@dataclass(frozen=True)
class RemoteRun:
    """The active run of a conversation as the database knows it (any process)."""

    run_id: str
    conversation_id: Any
    assistant_message_id: int
    mode: str


def probe_seconds() -> float:
    """How long an owner has to answer a ping before its run counts as orphaned."""
    return float(getattr(settings, "FIMONE_RUN_PROBE_SECONDS", DEFAULT_PROBE_SECONDS))


# --- database (sync: call through database_sync_to_async) ----------------------------------


def running_run(*, conversation_id: Any) -> RemoteRun | None:
    """The conversation's ``running`` assistant message as a run, or None (asked before
    every run: plain SQL, chat.row_reads)."""
    found = _RUNNING_ANSWER.rows(conversation=conversation_id)
    if not found:
        return None
    pk, run_id, metadata = found[0]
    return RemoteRun(
        run_id=run_id,
        conversation_id=conversation_id,
        assistant_message_id=pk,
        mode=str((metadata or {}).get("mode") or "react"),
    )


def _running_answer_query(*, conversation: Any):
    return (
        Message.objects.filter(
            conversation_id=conversation,
            role=Message.Role.ASSISTANT,
            status=Message.Status.RUNNING,
        )
        .order_by("-created_at", "-id")
        .values_list("id", "run_id", "metadata")[:1]
    )


# _running_answer_query's rows, as plain SQL.
_RUNNING_ANSWER = PlainSelect(
    Message,
    columns=("id", "run_id", "metadata"),
    where={"conversation": "conversation"},
    fixed={"role": Message.Role.ASSISTANT.value, "status": Message.Status.RUNNING.value},
    order_by=("-created_at", "-id"),
    limit=1,
)


def claim_conversation(*, conversation_id: Any) -> None:
    """Lock the conversation row; raise :class:`RunBusy` when a run is already running.

    Call inside the transaction that creates the run's messages: the lock is held until
    it commits, so a second process checking at the same moment waits and then sees the
    new ``running`` message.
    """
    _lock(conversation_id)
    refuse_if_running(conversation_id=conversation_id)


def refuse_if_running(*, conversation_id: Any) -> None:
    """Raise :class:`RunBusy` when the conversation has a run; its row must be locked
    already (``claim_conversation``, or read with ``select_for_update``)."""
    active = running_run(conversation_id=conversation_id)
    if active is not None:
        raise RunBusy(active)


def lock_running_run(*, conversation_id: Any, run_id: str) -> None:
    """Lock the conversation row; raise :class:`RunNotActive` unless ``run_id`` still runs.

    Call inside the transaction that stores an injection for another process's run.
    """
    _lock(conversation_id)
    active = running_run(conversation_id=conversation_id)
    if active is None or active.run_id != run_id:
        raise RunNotActive(run_id)


def _lock(conversation_id: Any) -> None:
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("lock the conversation inside transaction.atomic()")
    # Raises Conversation.DoesNotExist for a deleted conversation, as the selectors do.
    Conversation.objects.select_for_update().only("pk").get(pk=conversation_id)


@transaction.atomic
def reclaim_run(*, conversation_id: Any, run_id: str) -> int:
    """Mark an orphaned run ``interrupted``: its answer and the user messages it left pending.

    Conditional on the run still being ``running`` (an owner that finishes meanwhile
    wins). Returns the number of messages changed.
    """
    _lock(conversation_id)
    answer = Message.objects.filter(
        conversation_id=conversation_id,
        role=Message.Role.ASSISTANT,
        status=Message.Status.RUNNING,
        run_id=run_id,
    )
    changed = answer.update(status=Message.Status.INTERRUPTED)
    if changed:
        changed += Message.objects.filter(
            conversation_id=conversation_id,
            role=Message.Role.USER,
            status=Message.Status.PENDING,
            run_id=run_id,
        ).update(status=Message.Status.INTERRUPTED)
        logger.warning("run %s of conversation %s was orphaned", run_id, conversation_id)
    return changed


# --- channel layer ------------------------------------------------------------------------


def is_single_process(layer) -> bool:
    """An in-memory layer (channels' own or the one settings name by default) reaches no
    other process: the local registry is the truth."""
    return isinstance(layer, (InMemoryChannelLayer, ProcessLocalLayer))


async def probe(
    layer, *, conversation_id: Any, run_id: str, wait_seconds: float | None = None
) -> bool:
    """Whether some process still owns ``run_id`` (it answers a ping on the control group)."""
    if is_single_process(layer):
        return False
    # Default prefix: channels-redis serves all of a process's channels from one Redis list
    # per prefix, and a second prefix would wait behind the consumers' receive loop.
    reply_to = await layer.new_channel()
    await layer.group_send(
        control_group(conversation_id), {"type": PING, "run_id": run_id, "reply_to": reply_to}
    )
    # Never cancel a channels-redis receive(): the cancelled one may hold the process's
    # receive lock with a message for another socket in flight, which is then lost
    # (see the module docstring). The deadline is a message to ourselves instead.
    loop = asyncio.get_running_loop()
    expired = asyncio.Event()
    timer = loop.call_later(wait_seconds or probe_seconds(), expired.set)
    expiry = asyncio.create_task(_send_when_set(layer, reply_to, expired))
    try:
        while True:
            reply = await layer.receive(reply_to)
            if reply.get("type") == _PROBE_EXPIRED:
                return False
            if reply.get("type") == PONG and reply.get("run_id") == run_id:
                return True
    finally:
        timer.cancel()
        if not expired.is_set():
            expiry.cancel()  # only waiting on the event: safe to cancel


async def _send_when_set(layer, channel: str, event: asyncio.Event) -> None:
    await event.wait()
    await layer.send(channel, {"type": _PROBE_EXPIRED})


async def owner_alive(layer, *, conversation_id: Any, run_id: str) -> bool:
    """Whether the run's process is alive: a second chance before calling it orphaned.

    A run's ``running`` message is committed a moment before its listener joins the
    control group, so a ping in that moment goes unheard; the second ping, a probe time
    later, reaches a run that was only starting.
    """
    for _attempt in range(2):
        if await probe(layer, conversation_id=conversation_id, run_id=run_id):
            return True
        if is_single_process(layer):
            return False
    return False


async def answer_ping(layer, message: dict, *, run_id: str) -> None:
    """The owner's side of :func:`probe` (called by the run's control listener)."""
    reply_to = message.get("reply_to")
    if message.get("run_id") != run_id or not isinstance(reply_to, str):
        return
    with contextlib.suppress(Exception):  # a vanished prober must not hurt the run
        await layer.send(reply_to, {"type": PONG, "run_id": run_id})


async def stop_listener(layer, *, channel: str, task: asyncio.Task, run_id: str) -> None:
    """End a run's control listener without cancelling its receive() (see :func:`probe`).

    The listener must return on a :data:`STOP` message for its run. Cancels only as a
    last resort, when the listener did not end within ``LISTENER_STOP_SECONDS``.
    """
    if task.done():
        return
    await layer.send(channel, {"type": STOP, "run_id": run_id})
    try:
        await asyncio.wait_for(asyncio.shield(task), LISTENER_STOP_SECONDS)
    except TimeoutError:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    except asyncio.CancelledError:
        if not task.done():
            raise
    except Exception:  # the listener's own failure was its business; it has ended
        logger.debug("run %s: listener ended with an error", run_id, exc_info=True)


async def remote_run(layer, *, conversation_id: Any) -> RemoteRun | None:
    """The conversation's live run in another process, or None.

    Call it only when the local registry has no run for the conversation (under the
    registry's lock). A ``running`` message nobody owns any more is reclaimed on the way.
    """
    for _attempt in range(3):
        active = await database_sync_to_async(running_run)(conversation_id=conversation_id)
        if active is None:
            return None
        if await owner_alive(layer, conversation_id=conversation_id, run_id=active.run_id):
            return active
        await database_sync_to_async(reclaim_run)(
            conversation_id=conversation_id, run_id=active.run_id
        )
    return None


# --- messages to a run, wherever it lives --------------------------------------------------


async def announce_injection(layer, *, conversation_id: Any, run_id: str, message) -> None:
    """Hand a stored follow-up to the run, then show it on every socket (``injected``): in
    that order, a socket that sees it knows the run has been told."""
    await layer.group_send(
        control_group(conversation_id),
        {"type": "run.inject", "run_id": run_id, "message_id": message.pk},
    )
    await layer.group_send(
        conversation_group(conversation_id),
        {
            "type": "chat.event",
            "event": {
                "type": "injected",
                "message_id": message.pk,
                "content": message.content,
                "images": (message.metadata or {}).get("images", []),
                "documents": (message.metadata or {}).get("documents", []),
                "run_id": run_id,
            },
        },
    )


async def send_cancel(layer, *, conversation_id: Any, run_id: str) -> None:
    await layer.group_send(control_group(conversation_id), {"type": "run.cancel", "run_id": run_id})


async def send_approval(
    layer, *, conversation_id: Any, run_id: str, request_id: str, decision: str
) -> None:
    """The user's answer to a tool approval request, to the run wherever it lives."""
    await layer.group_send(
        control_group(conversation_id),
        {"type": APPROVAL, "run_id": run_id, "request_id": request_id, "decision": decision},
    )


# --- start-up recovery ------------------------------------------------------------------


def running_runs() -> list[RemoteRun]:
    """Every ``running`` run in the database (sync)."""
    rows = Message.objects.filter(
        role=Message.Role.ASSISTANT, status=Message.Status.RUNNING
    ).values_list("conversation_id", "id", "run_id", "metadata")
    return [
        RemoteRun(
            run_id=run_id,
            conversation_id=conversation_id,
            assistant_message_id=pk,
            mode=str((metadata or {}).get("mode") or "react"),
        )
        for conversation_id, pk, run_id, metadata in rows
    ]


async def reclaim_orphans(layer) -> int:
    """Mark interrupted the runs no live process owns; runs of live processes go on.

    What ``manage.py recover_runs`` does when several processes share a channel layer: a
    process (re)starting next to others must not interrupt their runs. Returns the number
    of messages changed.
    """
    runs = await database_sync_to_async(running_runs)()
    alive = await asyncio.gather(
        *(owner_alive(layer, conversation_id=r.conversation_id, run_id=r.run_id) for r in runs)
    )
    changed = 0
    for run, owned in zip(runs, alive, strict=True):
        if not owned:
            changed += await database_sync_to_async(reclaim_run)(
                conversation_id=run.conversation_id, run_id=run.run_id
            )
    return changed


# --- run.active for a socket of another process ----------------------------------------


async def request_snapshot(layer, *, conversation_id: Any, reply_to: str) -> bool:
    """Ask another process's active run for ``run.active``, sent to ``reply_to``.

    For a socket that joined the conversation's group with no run in its own process.
    Returns whether a run was asked (then gate the socket's events with SnapshotGate).
    """
    if is_single_process(layer):
        return False
    active = await database_sync_to_async(running_run)(conversation_id=conversation_id)
    if active is None:
        return False
    await layer.group_send(
        control_group(conversation_id),
        {"type": SNAPSHOT, "run_id": active.run_id, "reply_to": reply_to},
    )
    return True


class SnapshotGate:
    """Exactly-once answer text for a socket that asked another process for ``run.active``.

    The owner sends the snapshot on the same ordered path as its deltas, under its publish
    lock: deltas that reach the socket before the snapshot are in it, later ones are not.
    So deltas are dropped while the snapshot is awaited; the snapshot, the end of the run
    (or a new one), or ``probe_seconds`` without an answer open the gate again.
    """

    _OPENING = {"run.active", "run.started", "done", "error", "run.cancelled"}

    def __init__(self) -> None:
        self.waiting = False
        self._timer: asyncio.TimerHandle | None = None

    def wait(self, seconds: float | None = None) -> None:
        self.waiting = True
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(seconds or probe_seconds(), self.open)

    def open(self) -> None:
        self.waiting = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def forward(self, event: dict) -> bool:
        """Whether the socket should get ``event`` now."""
        if not self.waiting:
            return True
        kind = event.get("type")
        if kind in ("answer.delta", "answer.retract"):
            return False  # the snapshot's text already holds (or lacks) it
        if kind in self._OPENING:
            self.open()
        return True
