"""Agent runs driven from the websocket: what the consumer and the management commands call.

A run, in order (docs/architecture.md draws it):

1. the user message is persisted (``pending``) and an assistant message started
   (``running``) — before any LLM call, so nothing the user typed is ever lost;
2. ``run.started`` goes to every socket of the conversation;
3. models, budgets and the history are read; the history is fitted to the budget (a
   ``compact`` event, scope ``history``, when it was compacted; a new summary is stored for
   the next load);
4. the engine (ReAct or DAG) runs as a task; its events go to the conversation's group;
5. the answer is stored with its usage (compaction included) and the compaction facts,
   then ``done``; a failure gives ``error`` and an answer marked ``error`` with the partial
   text; a cancel gives ``run.cancelled {message_id, run_id}`` and a ``cancelled`` answer
   with the partial text.

One run per conversation, across server processes (``control``). A ``message`` while a
run is active is persisted as ``injected``, announced with ``injected`` and handed
to the run, whose engine takes it at its next iteration; one that arrives too late (while
the final answer streams) is answered by a follow-up run. Runs belong to the server, not
to a socket: a closed tab does not stop them, and a client that reconnects catches up
through ``run.active`` and the HTTP messages API.

The modules, each using only those after it: ``lifecycle`` (launch, control listener,
the finish: store the outcome, then announce it; follow-ups), ``work`` (prepare, fit the
history, run the engine; checkpoints), ``ahead`` (after a ``done``, the images the next
run will show as text, described in the background), ``state`` (the ``Run`` they share),
``preparation`` (what the engine is given: models, budgets, the query, the history),
``storage`` (the run's rows, from open to end), ``control`` (one run per conversation
across processes), ``registry`` (this process's runs), ``events`` (publishing), ``record``
(steps and plan kept for a reload), ``compactions`` (the run's compaction ledger),
``metering`` (usage), ``deps`` (the collaborators a run is built with).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.utils.translation import gettext

from chat import drain
from chat.errors import ChatError
from chat.runs import ahead, control, deps, lifecycle, preparation, storage
from chat.runs.control import SnapshotGate
from chat.runs.events import channel_layer, conversation_group
from chat.runs.registry import registry
from chat.runs.state import Run
from chat.services import messages_mark_interrupted
from fimone.agent.approval import DECISIONS

logger = logging.getLogger(__name__)

MODES = ("react", "dag")
APPROVAL_DECISIONS = DECISIONS
# Sent to a conversation's sockets when it is deleted: each closes with 4404.
CONVERSATION_DELETED = "chat.deleted"

__all__ = [
    "APPROVAL_DECISIONS",
    "CONVERSATION_DELETED",
    "MODES",
    "LocalRun",
    "SnapshotGate",
    "answer_approval",
    "cancel_active_run",
    "conversation_deleted",
    "conversation_group",
    "interrupt_local_runs",
    "local_run",
    "local_run_count",
    "recover_runs",
    "request_remote_snapshot",
    "edit_and_resend",
    "regenerate_answer",
    "retry_answer",
    "submit_message",
]


async def submit_message(
    *,
    user,
    conversation_id,
    content: str,
    file_ids: list | tuple = (),
    mode: str | None = None,
) -> dict:
    """Start a run, or inject into the active one. Returns ``{"run_id", "message_id",
    "injected"}``. Bad input raises ``chat.errors.ChatError`` (nothing is persisted) and
    an unknown or foreign conversation ``Conversation.DoesNotExist``."""
    received = time.perf_counter()  # elapsed_ms counts from here
    layer = get_channel_layer()
    async with registry.lock(conversation_id):
        for attempt in range(3):
            active = registry.get(conversation_id)
            # One process (in-memory layer): the registry is the truth, and a stale
            # ``running`` message is caught by open_run's claim (RunBusy) and reclaimed on
            # the next attempt — no database look-up on the common path. Otherwise the
            # active run may live in another process: control finds it in the database.
            if active is None and (attempt or not control.is_single_process(layer)):
                active = await control.remote_run(layer, conversation_id=conversation_id)
            if active is not None:
                try:
                    message = await database_sync_to_async(storage.persist_injection)(
                        user=user,
                        conversation_id=conversation_id,
                        content=content,
                        file_ids=file_ids,
                        run_id=active.run_id,
                        remote=isinstance(active, control.RemoteRun),
                    )
                except control.RunNotActive:
                    continue  # the other process's run just finished: start one here
                if isinstance(active, Run):
                    active.local_injections += 1
                await control.announce_injection(
                    layer, conversation_id=conversation_id, run_id=active.run_id, message=message
                )
                return {"run_id": active.run_id, "message_id": message.pk, "injected": True}

            _refuse_while_draining()
            run_deps = deps.current()
            try:
                ready = await database_sync_to_async(preparation.open_and_prepare)(
                    deps=run_deps,
                    user=user,
                    conversation_id=conversation_id,
                    content=content,
                    file_ids=file_ids,
                    mode=mode,
                    run_id=uuid.uuid4().hex,
                )
            except control.RunBusy:
                continue  # another process started a run a moment ago: inject into it
            opened = ready.opened
            await lifecycle.launch(
                layer,
                opened,
                conversation_id=conversation_id,
                deps=run_deps,
                received=received,
                prepared=ready.prepared,
            )
            return {"run_id": opened.run_id, "message_id": opened.query.pk, "injected": False}
    raise ChatError(
        "run_busy", gettext("The conversation is busy right now; send the message again.")
    )


async def retry_answer(*, user, conversation_id, message_id: int) -> dict:
    """Answer a failed answer's question again: a new run on the persisted user message (no
    second copy of it); the failed answer is marked ``superseded_by`` the new one.

    Only the owner's newest answer with status error / cancelled / interrupted, and only
    while no run is active. Raises ``ChatError`` (``bad_message_id``, ``not_retryable``,
    ``run_active``) and ``Conversation.DoesNotExist`` for a foreign conversation.
    Returns ``{"run_id", "message_id", "assistant_message_id"}``."""
    return await _answer_again(
        user=user, conversation_id=conversation_id, message_id=message_id, any_status=False
    )


async def regenerate_answer(*, user, conversation_id, message_id: int) -> dict:
    """As ``retry_answer``, for the newest answer whatever its status (a finished one too):
    the replaced answer is kept, marked ``superseded_by`` its successor."""
    return await _answer_again(
        user=user, conversation_id=conversation_id, message_id=message_id, any_status=True
    )


async def _ensure_idle(layer, conversation_id) -> None:
    """No run is active and this process may start one (else ``ChatError``)."""
    active = registry.get(conversation_id)
    if active is None and not control.is_single_process(layer):
        active = await control.remote_run(layer, conversation_id=conversation_id)
    if active is not None:
        raise ChatError("run_active", gettext("An answer is being written: wait or stop it first."))
    _refuse_while_draining()


async def edit_and_resend(*, user, conversation_id, message_id: int, content: str) -> dict:
    """Ask the newest question again with new text: a new question (with the old one's
    images) and a new run; the old question and what followed it are kept as superseded.

    Raises ``ChatError`` (``bad_message_id``, ``not_editable``, ``run_active`` and the
    message errors of ``submit_message``) and ``Conversation.DoesNotExist``. Returns
    ``{"run_id", "message_id", "assistant_message_id"}``."""
    return await _answer_anew(
        conversation_id,
        functools.partial(
            storage.open_edit,
            user=user,
            conversation_id=conversation_id,
            message_id=message_id,
            content=content,
        ),
        edit_of=message_id,
    )


async def _answer_again(*, user, conversation_id, message_id: int, any_status: bool) -> dict:
    return await _answer_anew(
        conversation_id,
        functools.partial(
            storage.open_retry,
            user=user,
            conversation_id=conversation_id,
            message_id=message_id,
            any_status=any_status,
        ),
        retry_of=message_id,
    )


async def _answer_anew(conversation_id, open_run, **launch_extra) -> dict:
    """A new run for a question already asked (retry, regenerate, edit): only while the
    conversation is idle; ``open_run(run_id=…)`` stores what the run needs."""
    received = time.perf_counter()
    layer = get_channel_layer()
    async with registry.lock(conversation_id):
        await _ensure_idle(layer, conversation_id)
        try:
            opened = await database_sync_to_async(open_run)(run_id=uuid.uuid4().hex)
        except control.RunBusy as exc:
            raise ChatError(
                "run_active", gettext("An answer is being written: wait or stop it first.")
            ) from exc
        await lifecycle.launch(
            layer,
            opened,
            conversation_id=conversation_id,
            deps=deps.current(),
            received=received,
            **launch_extra,
        )
    return {
        "run_id": opened.run_id,
        "message_id": opened.query.pk,
        "assistant_message_id": opened.answer_id,
    }


def _refuse_while_draining() -> None:
    """No new run on a server that is shutting down; follow-ups to its running runs are
    still taken. The client sends the message again after reconnecting (docs/operations.md)."""
    if drain.is_draining():
        raise ChatError(
            "server_draining",
            gettext(
                "This server is restarting and takes no new answers; reconnect and send again."
            ),
        )


def local_run_count() -> int:
    """Runs this process owns right now, and the image descriptions finished runs left
    working in the background (``ahead``): the drain waits for both."""
    return len(registry.active()) + ahead.count()


async def interrupt_local_runs(*, wait_seconds: float = 10.0) -> int:
    """Stop every run of this process as ``interrupted`` (their text so far kept, each
    socket told ``error {code: "interrupted"}``) and wait for them to be stored; then
    cancel the descriptions still working in the background (nothing of theirs is stored:
    the next run asks for them). Returns the number of runs interrupted."""
    interrupted = [run for run in registry.active() if run.request_interrupt()]
    tasks = [run.task for run in interrupted if run.task is not None]
    if tasks:
        await asyncio.wait(tasks, timeout=wait_seconds)
    await ahead.stop(wait_seconds=wait_seconds)
    return len(interrupted)


async def announce_deletion(*, conversation_id: Any, running_run_ids: list[str]) -> None:
    """A deleted conversation: its run stops, wherever it runs, and its sockets close."""
    layer = channel_layer()
    for run_id in running_run_ids:
        await control.send_cancel(layer, conversation_id=conversation_id, run_id=run_id)
    await layer.group_send(conversation_group(conversation_id), {"type": CONVERSATION_DELETED})


def conversation_deleted(*, conversation_id: Any, running_run_ids: list[str]) -> None:
    """``announce_deletion`` from sync code (the delete's ``on_commit``); never raises."""
    try:
        async_to_sync(announce_deletion)(
            conversation_id=conversation_id, running_run_ids=running_run_ids
        )
    except Exception:
        logger.exception("could not stop the run of deleted conversation %s", conversation_id)


@dataclass(frozen=True, slots=True)
class LocalRun:
    """This process's run of a conversation as a socket joining it now finds it."""

    # Under way: ids, mode, the answer text streamed so far, the steps and plan so far
    # (the ``run.active`` event); None when no run works here.
    snapshot: dict | None
    # Its work has ended and its ending is stored or being stored, but its sockets have not
    # been told yet: a socket in the group now still gets its done / error / run.cancelled.
    ending: bool


def local_run(*, conversation_id: Any) -> LocalRun:
    """The conversation's run in this process, for a socket that has just joined the
    conversation's group (no await between the two: nothing it is sent is missed)."""
    run = registry.get(conversation_id)
    if run is None:
        return LocalRun(snapshot=None, ending=False)
    snapshot = run.snapshot()
    return LocalRun(snapshot=snapshot, ending=snapshot is None)


async def request_remote_snapshot(layer, *, conversation_id: Any, reply_to: str) -> bool:
    """Ask another process's active run for ``run.active`` (see ``control.request_snapshot``)."""
    return await control.request_snapshot(layer, conversation_id=conversation_id, reply_to=reply_to)


async def answer_approval(*, conversation_id: Any, request_id: str, decision: str) -> bool:
    """The user's answer to a tool approval request of the conversation's active run, in
    this process or another (``chat.runs.approvals``). False when no run of this process
    waits for that request, or no run is active at all; a request of another process's run
    that is no longer waiting is ignored there (its sockets were told how it ended)."""
    active = registry.get(conversation_id)
    if active is not None:
        return active.approvals.resolve(request_id, decision)
    layer = get_channel_layer()
    if control.is_single_process(layer):
        return False
    remote = await database_sync_to_async(control.running_run)(conversation_id=conversation_id)
    if remote is None:
        return False
    await control.send_approval(
        layer,
        conversation_id=conversation_id,
        run_id=remote.run_id,
        request_id=request_id,
        decision=decision,
    )
    return True


async def cancel_active_run(*, conversation_id: Any) -> bool:
    """Ask the conversation's active run to stop; False when none is active."""
    layer = get_channel_layer()
    active = registry.get(conversation_id)
    if active is None:
        # Perhaps a run of another server process. Under the registry lock: a run of this
        # process being launched right now is not mistaken for an orphan.
        async with registry.lock(conversation_id):
            active = registry.get(conversation_id) or await control.remote_run(
                layer, conversation_id=conversation_id
            )
    if active is None:
        return False
    await control.send_cancel(layer, conversation_id=conversation_id, run_id=active.run_id)
    return True


def recover_runs() -> int:
    """Mark interrupted the runs a dead server process left ``running`` (at server start).

    With several processes on a shared channel layer only the runs no live process answers
    for; with one process every unfinished message. Returns the number of messages changed.
    """
    layer = get_channel_layer()
    if layer is not None and not control.is_single_process(layer):
        return async_to_sync(control.reclaim_orphans)(layer)
    return messages_mark_interrupted()
