"""A run from launch to its end: the engine's task, its control listener, progress
checkpoints, the final write and announcement, and follow-up runs.

``launch`` registers the run, announces ``run.started`` and starts four tasks:

- ``_work``: prepares (models, budgets, history) and runs the engine (ReAct or DAG); its
  events go to the conversation's sockets through the run's ``EventPublisher``;
- ``_listen``: the run's control messages from any process (inject, cancel, ping,
  snapshot), until ``_close`` stops it;
- ``_checkpoint``: the streamed text saved every ``CHECKPOINT_SECONDS``, so a crash or a
  reload keeps what the user already saw;
- ``_supervise``: waits for the work, then ``_finish`` (persist, then announce ``done`` /
  ``error`` / ``run.cancelled``) and ``_close`` (leave the registry, answer follow-ups
  the engine never saw with a follow-up run).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_lazy

from chat import image_describer
from chat.models import Message
from chat.runs import control, storage
from chat.runs.compactions import RunCompactions
from chat.runs.deps import RunDeps
from chat.runs.events import EventPublisher, control_group, failure_of, take_back
from chat.runs.metering import MeteredLLM, usage_totals
from chat.runs.record import RunRecord
from chat.runs.registry import registry
from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.llm import Usage
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import activate_weights
from fimone.agent import AgentContext, InjectionQueue
from fimone.agent.calls import compact_limit
from fimone.agent.history_room import history_room

logger = logging.getLogger(__name__)

# While an answer streams, its text so far is saved this often (only when it changed), so
# a server crash or a reload keeps what the user already saw. Short runs never wait this
# long: they write nothing extra.
CHECKPOINT_SECONDS = 2.0
# What sockets are told about a run the server's shutdown stopped (chat.drain).
# Lazy: written in the run's language when the run ends.
INTERRUPTED_MESSAGE = gettext_lazy(
    "The server restarted during this answer. Your message is saved; use Retry to ask again."
)


class TrackedInjections(InjectionQueue):
    """Remembers which injected messages the engine took (the rest get a follow-up run)."""

    def __init__(self) -> None:
        super().__init__()
        self.taken_ids: set[int] = set()

    def drain(self) -> list[ChatMessage]:
        drained = super().drain()
        self.taken_ids.update(m.metadata.get("id") for m in drained)
        return drained


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
    prepared: storage.PreparedRun | None = None  # set by the work once it has it
    cancel_requested: bool = False
    conversation_deleted: bool = False
    interrupted: bool = False  # stopped by the server's drain, not by the user
    stopped: bool = False  # the work ended cancelled (by the user, a drain or a shutdown)
    finishing: bool = False
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

    def request_cancel(self) -> bool:
        """Stop the engine; False when the run is already finishing."""
        if self.finishing or self.work is None or self.work.done():
            return False
        self.cancel_requested = True
        self.work.cancel()
        return True

    def request_interrupt(self) -> bool:
        """Stop the engine because this server is shutting down; the run ends
        ``interrupted`` (retryable). False when the run is already finishing."""
        if self.finishing or self.work is None or self.work.done():
            return False
        self.interrupted = True
        self.work.cancel()
        return True

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
) -> Run:
    """Register the run, join its control group, announce it and start its tasks."""
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
    )
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
            **({"retry_of": retry_of} if retry_of is not None else {}),
            # An edited question: the client replaces that question and what followed it.
            **({"edit_of": edit_of} if edit_of is not None else {}),
        },
    )
    # The engine's task exists before the listener can read a cancel for it.
    run.work = asyncio.create_task(_work(run))
    run.checkpoints = asyncio.create_task(_checkpoint(run))
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
        elif kind == control.SNAPSHOT:
            # A socket of another process joined mid-run: its run.active.
            snapshot = run.snapshot()
            if snapshot is not None and isinstance(message.get("reply_to"), str):
                await run.publisher.send_snapshot(message["reply_to"], snapshot)
        elif kind == control.PING:
            # Another process asks whether this run is alive (orphan detection).
            await control.answer_ping(layer, message, run_id=run.run_id)
        elif kind == "run.inject":
            try:
                injected = await database_sync_to_async(storage.load_injection)(
                    message["message_id"], vision=_vision(run)
                )
            except Exception:
                logger.exception("run %s: could not load injected message", run.run_id)
                continue
            run.injections.put_nowait(injected)


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
    run.finishing = True
    try:
        await _finish(run)
    finally:
        await _close(run, layer)


# --- work --------------------------------------------------------------------------------------


async def _work(run: Run):
    prepared = await database_sync_to_async(storage.prepare)(run.opened, run.deps)
    run.prepared = prepared
    # This task estimates tokens as the main model counts them (its calibrated weights).
    activate_weights(prepared.main_weights)
    for message in prepared.follow_ups:
        run.injections.put_nowait(message)
    main = MeteredLLM(prepared.main, run.answer_usage)
    fast = MeteredLLM(prepared.fast, run.answer_usage)
    # Compaction summarises with the fast model: its input is sized in that model's tokens.
    compact = MeteredLLM(
        prepared.fast,
        run.compaction_usage,
        token_weights=prepared.fast_weights,
        input_window=prepared.fast_tokens,
    )
    run.metered = [(main, prepared.main_config_id), (fast, prepared.fast_config_id)]
    prepared = run.prepared = await _describe_old_images(run, prepared, compact)

    tools = run.deps.make_tools(
        run.conversation_id, before_id=run.query_message_id, vision=prepared.vision
    )
    # Counted as the engine will send it (system prompt, tool schemas, the query and the
    # follow-ups it starts with), so a history fitted here is not compacted again on the
    # first call (fimone.agent.history_room).
    room = history_room(
        run.mode,
        prepared.main_tokens,
        query=prepared.query,
        tools=tools,
        follow_ups=prepared.follow_ups,
    )
    memory = run.deps.make_memory(
        conversation_id=run.conversation_id,
        max_tokens=room.load,
        compact_llm=compact,
        vision=prepared.vision,
        loaded=prepared.history,
    )
    history = [
        m
        for m in await memory.get_messages()
        # This run's own messages (a follow-up typed while history loaded) are not history.
        if (m.metadata.get("id") or 0) < run.query_message_id
    ]
    facts = _history_facts(memory) if memory.was_compacted else None
    if room.squeezed:
        # This request's own content leaves less room than usual: its copy is cut, the
        # fitted history (and any summary to store) stays as an ordinary request has it.
        cut = CompactUtils.cut_for_request(history, room.send)
        if [id(m) for m in cut] != [id(m) for m in history]:
            history = cut
            facts = {
                **(facts or _history_facts(memory, strategy="truncate")),
                "compacted_count": len(cut),
                "tokens_after": CompactUtils.estimate_messages_tokens(cut),
                "cut_for_request": True,
            }
    run.compactions = RunCompactions(main_calls=lambda: main.call_count)
    if facts is not None:
        summary = getattr(memory, "new_summary", None)
        stored = prepared.history.summary if prepared.history is not None else None
        if summary is not None:
            summary.metadata.update(
                tokens_before=facts["tokens_before"],
                tokens_after=facts["tokens_after"],
                cost_input_tokens=facts["cost_input_tokens"],
                cost_output_tokens=facts["cost_output_tokens"],
            )
            facts["summary_id"] = await database_sync_to_async(storage.save_summary)(
                run.conversation_id, summary
            )
        elif stored is not None:
            facts.setdefault("summary_id", stored.id)
        run.history_compaction = facts
        await run.emit("compact", {"scope": "history", **run.history_compaction})
    loaded = prepared.history
    if loaded is not None:
        run.compactions.loaded(
            history,
            messages=[
                m for m in loaded.messages if (m.metadata.get("id") or 0) < run.query_message_id
            ],
            stored=loaded.summary,
            new_summary=getattr(memory, "new_summary", None),
        )

    async def on_compaction(scope: str, result) -> int | None:
        # The engine summarised loaded history: stored like a load-time summary, so the
        # next request starts from it instead of summarising the same messages again.
        summary = run.compactions.to_store(scope, result)
        if summary is None:
            return None
        return await database_sync_to_async(storage.save_summary)(run.conversation_id, summary)

    ctx = AgentContext(
        llm=main,
        fast_llm=fast,
        fast_vision=storage.supports_vision(prepared.fast),
        compact_llm=compact,
        main_budget=prepared.main_tokens,
        fast_budget=prepared.fast_tokens,
        history=history,
        query=prepared.query,
        sink=run.emit,
        injections=run.injections,
        tools=tools,
        # Our own bound on every model call: the SDK's timeout counts per attempt and per
        # read, so with retries a hung provider could otherwise hold a user for minutes.
        llm_timeout=settings.LLM_TIMEOUT_SECONDS,
        on_compaction=on_compaction,
        # The socket's language (the run's task inherited it): the engine's own sentences.
        language=translation.get_language() or "en",
    )
    return await run.deps.engine_for(run.mode)(ctx)


async def _describe_old_images(
    run: Run, prepared: storage.PreparedRun, llm: MeteredLLM
) -> storage.PreparedRun:
    """Images the history shows as text get the fast model's description once, when it
    can see images (chat.image_describer); the history is then read again with it."""
    file_ids = image_describer.images_as_text(prepared.history.messages)
    if not file_ids or not image_describer.can_describe(prepared.fast):
        return prepared
    described = await image_describer.describe_images(
        llm, file_ids, time_limit=compact_limit(settings.LLM_TIMEOUT_SECONDS)
    )
    if not described:
        return prepared
    history = await database_sync_to_async(storage.reload_history)(run.opened, prepared)
    return dataclasses.replace(prepared, history=history)


def _history_facts(memory, strategy: str | None = None) -> dict:
    strategy = (
        strategy or getattr(memory, "strategy", None) or getattr(memory.result, "strategy", "llm")
    )
    facts = {
        # A reused stored summary was written by the LLM on an earlier load.
        "strategy": "llm" if strategy == "summary" else strategy,
        "original_count": memory.original_count,
        "compacted_count": memory.compacted_count,
        # What the summary the model got stands for, as the summary itself counts it: the
        # divider shows this figure, so it agrees with the opened summary.
        "summarized_count": getattr(memory, "summarized_count", 0),
        "tokens_before": getattr(memory, "tokens_before", 0),
        "tokens_after": getattr(memory, "tokens_after", 0),
    }
    # What the load-time compaction itself cost (a reused summary costs nothing now).
    result = getattr(memory, "result", None)
    usage = getattr(result, "usage", None) or Usage()
    facts["cost_input_tokens"] = usage.input_tokens
    facts["cost_output_tokens"] = usage.output_tokens
    if strategy == "summary":
        facts["reused_summary"] = True
    stored = getattr(memory, "summary_in_use", None)
    if stored is not None and stored.id is not None:
        facts["summary_id"] = stored.id
    if getattr(memory, "summary_edited", False):
        facts["summary_edited"] = True
    # Pinned messages that had to yield to the cap on pinned history (the UI notes it).
    if yielded := getattr(memory, "pins_yielded", None):
        facts["pins_yielded"] = list(yielded)
    return facts


async def _checkpoint(run: Run) -> None:
    """Save the partial answer every CHECKPOINT_SECONDS while the engine works."""
    saved, recorded = 0, 0
    while not run.work.done():
        # Wakes when the work ends, so the loop ends by itself and is never cancelled: a
        # cancelled task keeps its exception, whose traceback holds this frame and so the
        # run, which holds the task; that cycle would keep every finished run (history,
        # models, answer) alive until a full garbage collection, a pause on the loop.
        await asyncio.wait({run.work}, timeout=CHECKPOINT_SECONDS)
        if run.work.done():
            return  # the final write saves everything: no checkpoint of a finished run
        if run.finishing or (run.answer_version, run.record.version) == (saved, recorded):
            continue
        # Steps and plan only when they moved (a JSON merge costs a read).
        record = run.record.as_metadata() if run.record.version != recorded else None
        saved, recorded = run.answer_version, run.record.version
        try:
            await database_sync_to_async(storage.save_progress)(
                message_id=run.assistant_message_id,
                content="".join(run.answer_parts),
                record=record,
            )
        except Exception:  # a missed checkpoint costs nothing but durability
            logger.warning("run %s: could not save progress", run.run_id, exc_info=True)


# --- the end -----------------------------------------------------------------------------------


async def _finish(run: Run) -> None:
    """Persist the outcome, then tell every socket (``done`` / ``error`` / ``run.cancelled``)."""
    # The final write comes after any checkpoint in flight (one database thread, in order);
    # the checkpoint loop ends as soon as the work is done.
    await run.checkpoints
    await run.publisher.flush()
    # The run lets go of its finished work: a task that failed or was cancelled keeps its
    # exception, whose traceback holds the work's frames and so the run. Held by the run,
    # that cycle would keep the run's whole graph (history, models, answer) alive until a
    # full garbage collection, a pause on the loop (docs/architecture.md).
    work, run.work = run.work, None
    run.stopped = work.cancelled()
    exc = _exception_of(work)
    outcome, failure = None, None
    if run.stopped and run.interrupted:
        status = "interrupted"
        failure = {"code": "interrupted", "message": str(INTERRUPTED_MESSAGE)}
    elif run.stopped:
        status = "cancelled"
    elif exc is not None:
        status = "error"
        failure = failure_of(exc)
        if failure["code"] == "internal_error":
            logger.error("run %s failed", run.run_id, exc_info=exc)
        else:
            # Strings, not the exception: a record a handler keeps holds nothing of the run.
            logger.warning("run %s failed: %s: %s", run.run_id, type(exc).__name__, str(exc))
    else:
        outcome = work.result()
        status = "done"
    if exc is not None:
        _release_frames(exc)
        # Its traceback reaches this frame (where it was raised again): held here, one more
        # cycle.
        del exc
    content = outcome.answer if outcome is not None else "".join(run.answer_parts)
    usage: dict[str, Any] = dict(usage_totals(run.answer_usage, run.compaction_usage))
    if run.compactions is not None and run.compactions.entries:
        usage.update(run.compactions.totals())
    if run.prepared is not None:
        # Which model answered, for the usage card (a conversation may pick its model).
        usage["model"] = str(getattr(run.prepared.main, "model_name", "") or "")
    extra: dict[str, Any] = {
        "elapsed_ms": _elapsed_ms(run),
        "query_id": run.query_message_id,
        **run.record.as_metadata(),
    }
    if run.retry_of is not None:
        extra["retry_of"] = run.retry_of
    if outcome is not None:
        extra.update(iterations=outcome.iterations, outcome=outcome.status)
    calibration = [
        (config_id, llm.input_counts, llm.fixed_input, llm.reported_input)
        for llm, config_id in run.metered
        if config_id is not None and llm.reported_input > 0
    ]
    html = ""
    try:
        html = await database_sync_to_async(storage.persist_finish)(
            message_id=run.assistant_message_id,
            content=content,
            status=status,
            usage=usage,
            compaction=run.history_compaction,
            error=failure,
            extra=extra,
            calibration=calibration,
            answered_ids=run.answered_ids(),
        )
    except Message.DoesNotExist:
        # The conversation was deleted (which cancelled this run, and closed its sockets).
        logger.info("run %s: its conversation was deleted", run.run_id)
        run.conversation_deleted = True
        return
    except Exception:
        logger.exception("run %s: could not persist the answer", run.run_id)
        if failure is None:
            status = "error"
            failure = {
                "code": "persist_failed",
                "message": gettext("The answer could not be saved."),
            }
    ids = {"message_id": run.assistant_message_id, "run_id": run.run_id}
    if status == "done":
        await run.publisher(
            "done", {**ids, "usage": usage, "elapsed_ms": _elapsed_ms(run), "html": html}
        )
    elif status == "cancelled":
        await run.publisher("run.cancelled", ids)
    else:
        await run.publisher("error", {**ids, **failure})


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
    pending = [exc]
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
        if run.conversation_deleted:
            return
        stopped = run.cancel_requested or run.stopped
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
            if stopped:
                # Stopped by the user (or interrupted by a shutdown): its follow-ups were
                # not answered and none will be until the next message or a retry.
                await database_sync_to_async(storage.settle)(
                    conversation_id=run.conversation_id,
                    ids=leftovers,
                    status="interrupted" if run.interrupted else "cancelled",
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
