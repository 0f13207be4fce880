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
- ``_supervise``: waits for the work, then ``finish_run`` (persist) and ``_close`` (leave
  the registry, then announce ``done`` / ``error`` / ``run.cancelled``, then answer
  follow-ups the engine never saw with a follow-up run).

The run's state is ``state.Run``; the work is a module of its own (the only part that
knows the engine). The finish (``finish_run``) runs once the work task has ended, whatever
its end: it waits for a checkpoint in flight, takes the ending (done, error, cancelled,
interrupted), the text to keep, the usage (compaction included) and the record, stores
them in one write (``storage.persist_finish``); the sockets are told once the run has left
the registry. It also lets go of what would keep a finished run alive in a reference cycle
(the work task, the frames of its exception: docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import traceback
import uuid
import weakref
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.utils.translation import gettext, gettext_lazy

from chat.models import Message
from chat.runs import ahead, control, preparation, storage, work
from chat.runs.deps import RunDeps
from chat.runs.events import EventPublisher, control_group, failure_of
from chat.runs.metering import usage_totals
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
    prepared: preparation.PreparedRun | None = None,
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
        publisher=EventPublisher(
            layer, conversation_id, on_sent=record, snapshot=record.as_metadata
        ),
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
                injected = await database_sync_to_async(preparation.load_injection)(
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
            return await database_sync_to_async(preparation.stored_follow_ups)(
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
    return preparation.supports_vision(run.deps.get_llm("main"))


async def _supervise(run: Run, layer) -> None:
    # Started together with this task (``start``), before it.
    work, listener, checkpoints = run.work, run.listener, run.checkpoints
    if work is None or listener is None or checkpoints is None:
        raise RuntimeError(f"run {run.run_id}: supervised before its tasks started")
    try:
        await asyncio.wait({work})
    except asyncio.CancelledError:
        # The server is going down: stop the engine; recover_runs marks the messages
        # interrupted at the next start.
        work.cancel()
        listener.cancel()
        checkpoints.cancel()
        registry.remove(run)
        raise
    run.end(work)
    finished = None
    try:
        finished = await finish_run(run)
    finally:
        await _close(run, layer, finished)


# --- after the finish --------------------------------------------------------------------------


async def _close(run: Run, layer, finished: Finished | None) -> None:
    """Leave the registry, then tell the sockets how the run ended (``finished``; None: its
    conversation was deleted, or the finish failed), then answer follow-ups the engine
    never saw with a follow-up run. Told only once the run has left, a message sent the
    moment ``done`` arrives starts a run of its own rather than joining the finished one
    (stored as its follow-up, answered by a follow-up run)."""
    await layer.group_discard(control_group(run.conversation_id), run.control_channel)
    # Not listener.cancel(): cancelling a channels-redis receive can lose a message meant
    # for another socket of this process (this very run's ``done``).
    if run.listener is not None:  # started with the run, never let go
        await control.stop_listener(
            layer, channel=run.control_channel, task=run.listener, run_id=run.run_id
        )
    async with registry.lock(run.conversation_id):
        registry.remove(run)
        if finished is not None:
            await _announce(run, finished.ending, usage=finished.usage, html=finished.html)
        if run.state is RunState.DELETED:
            return
        if run.local_injections == 0 and control.is_single_process(layer):
            return  # no follow-up was stored for this run: nothing to look up
        try:
            # The database, not this process's memory: a follow-up may have been stored by
            # another server process.
            leftovers = await database_sync_to_async(storage.leftover_injections)(
                conversation_id=run.conversation_id,
                run_id=run.run_id,
                taken_ids=run.injections.taken_ids,
            )
            if not leftovers:
                return
            if run.state.stopped:
                # Stopped by the user (or interrupted by a shutdown): its follow-ups were
                # not answered and none will be until the next message or a retry.
                await database_sync_to_async(storage.settle)(
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
            await database_sync_to_async(storage.settle)(
                conversation_id=run.conversation_id, ids=leftovers, status="done"
            )
        except Exception:
            logger.exception("run %s: could not start the follow-up run", run.run_id)


# --- the finish ------------------------------------------------------------------------------

# What sockets are told about a run the server's shutdown stopped (chat.drain).
# Lazy: written in the run's language when the run ends.
INTERRUPTED_MESSAGE = gettext_lazy(
    "The server restarted during this answer. Your message is saved; use Retry to ask again."
)


@dataclass(frozen=True, slots=True)
class Finished:
    """A run's stored ending, for its sockets (``done`` / ``error`` / ``run.cancelled``)."""

    ending: Ending
    usage: dict[str, Any]
    html: str


async def finish_run(run: Run) -> Finished | None:
    """Persist the outcome; returns what to tell the sockets once the run has left the
    registry (``_close``), None when its conversation was deleted."""
    # The final write comes after any checkpoint in flight (one database thread, in order);
    # the checkpoint loop ends as soon as the work is done.
    if run.checkpoints is not None:  # started with the run
        await run.checkpoints
    await run.publisher.flush()
    # The run lets go of its finished work: a task that failed or was cancelled keeps its
    # exception, whose traceback holds the work's frames and so the run. Held by the run,
    # that cycle would keep the run's whole graph (history, models, answer) alive until a
    # full garbage collection, a pause on the loop (docs/architecture.md).
    work, run.work = run.work, None
    if work is None:
        raise RuntimeError(f"run {run.run_id}: finished twice, or before its work started")
    ending = _ending(run, work)
    usage = _usage(run)
    try:
        html = await database_sync_to_async(storage.persist_finish)(
            message_id=run.assistant_message_id,
            content=ending.outcome.answer if ending.outcome else "".join(run.answer_parts),
            status=run.state.value,
            usage=usage,
            compaction=run.history_compaction,
            error=ending.failure,
            extra=_extra(run, ending),
            calibration=_calibration(run),
            answered_ids=run.answered_ids(),
            tool_results=run.tool_results.all() if run.tool_results is not None else (),
        )
    except Message.DoesNotExist:
        # The conversation was deleted (which cancelled this run, and closed its sockets).
        logger.info("run %s: its conversation was deleted", run.run_id)
        run.state = RunState.DELETED
        return None
    except Exception:
        logger.exception("run %s: could not persist the answer", run.run_id)
        html = ""
        if ending.failure is None:
            run.state = RunState.FAILED
            failure = {
                "code": "persist_failed",
                "message": gettext("The answer could not be saved."),
            }
            ending = dataclasses.replace(ending, failure=failure)
    return Finished(ending=ending, usage=usage, html=html)


@dataclass(frozen=True, slots=True)
class Ending:
    """What a finished work left to store: the engine's outcome (a run done), why it
    failed (``error`` / ``interrupted``), or a note on why it stopped (``cancelled``)."""

    outcome: Any = None
    failure: dict[str, str] | None = None
    note: dict[str, str] | None = None


def _ending(run: Run, work: asyncio.Task) -> Ending:
    exc = _exception_of(work)
    if run.state is RunState.INTERRUPTED:
        ending = Ending(failure={"code": "interrupted", "message": str(INTERRUPTED_MESSAGE)})
    elif run.state is RunState.CANCELLED:
        ending = Ending(note=_approval_note(run))
    elif exc is None:
        ending = Ending(outcome=work.result())
    else:
        ending = Ending(failure=_logged_failure(run, exc))
    if exc is not None:
        # A cancellation too: its traceback holds the work's frames.
        _release_frames(exc)
        # Its traceback reaches this frame (where it was raised again): held here, one more
        # cycle.
        del exc
    return ending


def _logged_failure(run: Run, exc: BaseException) -> dict[str, str]:
    failure = failure_of(exc)
    if failure["code"] == "internal_error":
        logger.error("run %s failed", run.run_id, exc_info=exc)
    else:
        # Strings, not the exception: a record a handler keeps holds nothing of the run.
        logger.warning("run %s failed: %s: %s", run.run_id, type(exc).__name__, str(exc))
    return failure


def _usage(run: Run) -> dict[str, Any]:
    """The run's usage as the usage card shows it, compaction and tool definitions apart."""
    usage: dict[str, Any] = dict(usage_totals(run.answer_usage, run.compaction_usage))
    if run.compactions is not None and run.compactions.entries:
        usage.update(run.compactions.totals())
    definitions = sum(llm.tool_definition_tokens for llm, _ in run.metered)
    if definitions:
        # Of the input tokens: the tool definitions the calls carried (the usage card).
        usage["tool_definition_tokens"] = definitions
    if run.prepared is not None:
        # Which model answered, for the usage card (a conversation may pick its model).
        usage["model"] = run.prepared.main.model_name or ""
    return usage


def _extra(run: Run, ending: Ending) -> dict[str, Any]:
    """What the answer's metadata keeps besides usage: time, steps and plan, and why."""
    extra: dict[str, Any] = {
        "elapsed_ms": _elapsed_ms(run),
        **run.record.as_metadata(),
    }
    if run.retry_of is not None:
        extra["retry_of"] = run.retry_of
    follow_ups = _follow_ups(run)
    if follow_ups:
        extra["follow_ups"] = follow_ups
    if ending.note is not None:
        extra["note"] = ending.note
    if ending.outcome is not None:
        extra.update(iterations=ending.outcome.iterations, outcome=ending.outcome.status)
    return extra


def _calibration(run: Run) -> list[tuple]:
    """Per configured model: the counts its calls were sent with and what it reported."""
    return [
        (config_id, llm.input_counts, llm.fixed_input, llm.reported_input)
        for llm, config_id in run.metered
        if config_id is not None and llm.reported_input > 0
    ]


def _follow_ups(run: Run) -> list[int]:
    """The follow-ups the answer replies to besides its question (sent while it was being
    written): the page and the export mark the reply and show them above it."""
    return [i for i in run.answered_ids() if i != run.query_message_id]


async def _announce(run: Run, ending: Ending, *, usage: dict[str, Any], html: str) -> None:
    ids = {"message_id": run.assistant_message_id, "run_id": run.run_id}
    follow_ups = _follow_ups(run)
    if run.state is RunState.DONE:
        await run.publisher(
            "done",
            {
                **ids,
                "usage": usage,
                "elapsed_ms": _elapsed_ms(run),
                "html": html,
                "follow_ups": follow_ups,
            },
        )
        # Stored and announced: the images this answer pushed out of the pixel turns are
        # described now, in the background, rather than before the next answer's first call.
        ahead.describe_after(run)
    elif run.state is RunState.CANCELLED:
        note = ending.note
        # What was written before the stop is kept, with what it cost (the usage card).
        stopped = {"usage": usage, "elapsed_ms": _elapsed_ms(run), "follow_ups": follow_ups}
        await run.publisher("run.cancelled", {**ids, **stopped, **({"note": note} if note else {})})
    else:
        await run.publisher("error", {**ids, **(ending.failure or {})})


def _approval_note(run: Run) -> dict[str, str] | None:
    """Why a run stopped by itself: a tool call waited too long for the user's approval."""
    timed_out = run.approvals.timed_out
    if timed_out is None:
        return None
    message = gettext(
        "Stopped: the call of %(tool)s waited for your approval for more than %(seconds)s "
        "seconds. Your message is saved; use Retry to ask again."
    ) % {"tool": timed_out["tool"], "seconds": f"{timed_out['seconds']:g}"}
    return {"code": "approval_timeout", "message": message}


def _exception_of(work: asyncio.Task) -> BaseException | None:
    """How the work failed: its exception, the cancellation for a cancelled task."""
    try:
        return work.exception()
    except asyncio.CancelledError as cancelled:  # the one the task was cancelled with
        return cancelled


def _release_frames(exc: BaseException) -> None:
    """Drop the variables of the finished frames an exception's tracebacks hold (after it was
    logged): an exception kept in a variable of one of its own frames is a reference cycle
    through that frame, and the frames hold the run. Python 3.11's TaskGroup leaves a
    cancelled DAG run exactly so (its exit keeps the cancellation and the run's task)."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        pending += [current.__cause__, current.__context__]
        pending += getattr(current, "exceptions", ())


def _elapsed_ms(run: Run) -> int:
    return int((time.perf_counter() - run.started) * 1000)
