"""A run from launch to its end: its tasks started, its control listener, and what
follows its finish (leaving the registry, follow-up runs).

``launch`` registers the run, announces ``run.started`` and starts four tasks:

- the work (``work.perform``): prepares (models, budgets, history) and runs the engine
  (ReAct or DAG); its events go to the conversation's sockets through the run's
  ``EventPublisher``;
- ``_listen``: the run's control messages from any process (inject, cancel, ping,
  snapshot), until ``_close`` stops it;
- the checkpoints (``work.checkpoints``): the streamed text saved every
  ``work.CHECKPOINT_SECONDS``, so a crash or a reload keeps what the user already saw;
- ``_supervise``: waits for the work, then ``finish.finish_run`` (persist, then announce
  ``done`` / ``error`` / ``run.cancelled``) and ``_close`` (leave the registry, answer
  follow-ups the engine never saw with a follow-up run).

The run's state is ``state.Run``; the work and the finish are modules of their own.
``_close`` stays here because a follow-up run is launched like any other.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import weakref
from typing import Any

from channels.db import database_sync_to_async

from chat.runs import control, finish, storage, work, writes
from chat.runs.deps import RunDeps
from chat.runs.events import EventPublisher, control_group
from chat.runs.record import RunRecord
from chat.runs.registry import registry
from chat.runs.state import FollowUpLookUp, Run, RunState
from contextmgmt.core.messages import ChatMessage

logger = logging.getLogger(__name__)


# --- launch ------------------------------------------------------------------------------------


async def launch(
    layer,
    opened: storage.OpenedRun,
    *,
    conversation_id: Any,
    deps: RunDeps,
    received: float,
    retry_of: int | None = None,
    edit_of: int | None = None,
    prepared: storage.PreparedRun | None = None,
) -> Run:
    """Register the run, join its control group, announce it and start its tasks;
    ``prepared``: what its work needs, already read (else the work reads it)."""
    record = RunRecord()
    # Join before registering: an inject/cancel sent the moment the run is visible arrives.
    # The default prefix matters: channels-redis multiplexes all of a process's channels
    # over one Redis list per prefix; another prefix would wait behind the consumers'.
    control_channel = await layer.new_channel()
    run = Run(
        opened=opened,
        conversation_id=conversation_id,
        deps=deps,
        started=received,
        publisher=EventPublisher(layer, conversation_id, on_sent=record),
        control_channel=control_channel,
        record=record,
        retry_of=retry_of,
        prepared=prepared,
    )
    if not control.is_single_process(layer):
        run.injections.look_up = _stored_follow_ups_of(run)
    await layer.group_add(control_group(conversation_id), control_channel)
    registry.add(run)
    query = opened.query
    await run.publisher(
        "run.started",
        {
            "run_id": run.run_id,
            "message_id": query.pk,
            "assistant_message_id": opened.answer_id,
            "mode": opened.mode,
            # What was asked, so a second tab can show it too.
            "content": query.content,
            "images": (query.metadata or {}).get("images", []),
            "documents": (query.metadata or {}).get("documents", []),
            **({"retry_of": retry_of} if retry_of is not None else {}),
            # An edited question: the client replaces that question and what followed it.
            **({"edit_of": edit_of} if edit_of is not None else {}),
            # The edited question's or the regenerated answer's versions (chat.versions).
            **({"versions": list(opened.versions)} if opened.versions else {}),
        },
    )
    # The engine's task exists before the listener can read a cancel for it.
    run.work = asyncio.create_task(work.perform(run))
    run.checkpoints = asyncio.create_task(work.checkpoints(run))
    run.listener = asyncio.create_task(_listen(run, layer))
    run.task = asyncio.create_task(_supervise(run, layer))
    return run


async def _listen(run: Run, layer) -> None:
    """Control messages for this run (from any process's consumers)."""
    while True:
        message = await layer.receive(run.control_channel)
        if message.get("run_id") != run.run_id:
            continue
        kind = message.get("type")
        if kind == "run.cancel":
            run.request_cancel()
        elif kind == control.STOP:
            return  # the run has finished (control.stop_listener)
        elif kind == control.APPROVAL:
            # The user's answer to a tool approval request, from a socket of any process.
            run.approvals.resolve(message.get("request_id"), message.get("decision"))
        elif kind == control.SNAPSHOT:
            # A socket of another process joined mid-run: its run.active.
            snapshot = run.snapshot()
            if snapshot is not None and isinstance(message.get("reply_to"), str):
                await run.publisher.send_snapshot(message["reply_to"], snapshot)
        elif kind == control.PING:
            # Another process asks whether this run is alive (orphan detection).
            await control.answer_ping(layer, message, run_id=run.run_id)
        elif kind == "run.inject":
            # Expected from now on: an engine about to end waits for it (InjectionQueue).
            run.injections.expect()
            try:
                injected = await database_sync_to_async(storage.load_injection)(
                    message["message_id"], vision=_vision(run)
                )
            except Exception:
                logger.exception("run %s: could not load injected message", run.run_id)
                continue
            else:
                run.injections.put_nowait(injected)
            finally:
                run.injections.expected_done()


def _stored_follow_ups_of(run: Run) -> FollowUpLookUp:
    """The run's look-up of its stored follow-ups (TrackedInjections). It holds the run
    weakly: the run holds it, and a cycle would keep every finished run until a full
    garbage collection (docs/architecture.md)."""
    run_ref = weakref.ref(run)

    async def look_up(taken_ids: frozenset[int]) -> list[ChatMessage]:
        run = run_ref()
        if run is None:
            return []
        try:
            return await database_sync_to_async(storage.stored_follow_ups)(
                conversation_id=run.conversation_id,
                run_id=run.run_id,
                taken_ids=taken_ids,
                vision=_vision(run),
            )
        except Exception:
            # The run's finish looks again and answers them with a follow-up run.
            logger.exception("run %s: could not read its stored follow-ups", run.run_id)
            return []

    return look_up


def _vision(run: Run) -> bool:
    if run.prepared is not None:
        return run.prepared.vision
    return storage.supports_vision(run.deps.get_llm("main"))


async def _supervise(run: Run, layer) -> None:
    try:
        await asyncio.wait({run.work})
    except asyncio.CancelledError:
        # The server is going down: stop the engine; recover_runs marks the messages
        # interrupted at the next start.
        run.work.cancel()
        run.listener.cancel()
        run.checkpoints.cancel()
        registry.remove(run)
        raise
    run.end(run.work)
    try:
        await finish.finish_run(run)
    finally:
        await _close(run, layer)


# --- after the finish --------------------------------------------------------------------------


async def _close(run: Run, layer) -> None:
    """Leave the registry; answer follow-ups the engine never saw with a follow-up run."""
    await layer.group_discard(control_group(run.conversation_id), run.control_channel)
    # Not listener.cancel(): cancelling a channels-redis receive can lose a message meant
    # for another socket of this process (this very run's ``done``).
    await control.stop_listener(
        layer, channel=run.control_channel, task=run.listener, run_id=run.run_id
    )
    async with registry.lock(run.conversation_id):
        registry.remove(run)
        if run.state is RunState.DELETED:
            return
        if run.local_injections == 0 and control.is_single_process(layer):
            return  # no follow-up was stored for this run: nothing to look up
        try:
            # The database, not this process's memory: a follow-up may have been stored by
            # another server process.
            leftovers = await database_sync_to_async(writes.leftover_injections)(
                conversation_id=run.conversation_id,
                run_id=run.run_id,
                taken_ids=run.injections.taken_ids,
            )
            if not leftovers:
                return
            if run.state.stopped:
                # Stopped by the user (or interrupted by a shutdown): its follow-ups were
                # not answered and none will be until the next message or a retry.
                await database_sync_to_async(writes.settle)(
                    conversation_id=run.conversation_id,
                    ids=leftovers,
                    status=run.state.value,
                )
                return
            opened = await database_sync_to_async(storage.open_follow_up)(
                conversation_id=run.conversation_id,
                run_id=uuid.uuid4().hex,
                mode=run.mode,
                query_id=leftovers[-1],
                also_answers=tuple(leftovers[:-1]),
            )
            await launch(
                layer,
                opened,
                conversation_id=run.conversation_id,
                deps=run.deps,
                received=time.perf_counter(),
            )
        except control.RunBusy:
            # Another process started a run meanwhile; it reads these follow-ups as history
            # and answers them.
            logger.info("run %s: follow-ups go to the run another process started", run.run_id)
            await database_sync_to_async(writes.settle)(
                conversation_id=run.conversation_id, ids=leftovers, status="done"
            )
        except Exception:
            logger.exception("run %s: could not start the follow-up run", run.run_id)
