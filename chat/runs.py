"""Agent runs driven from the websocket (issue 7; DESIGN §3, §5; SPEC R4.4, RU.2, RU.3, RP.1).

A run, in order:
1. the user message is persisted (``pending``, pinned) and an assistant message started
   (``running``) — before any LLM call, so nothing the user typed is ever lost;
2. ``run.started`` goes to every socket of the conversation;
3. budgets and LLMs are resolved, DbMemory loads the history (a ``compact`` event, scope
   ``history``, when it compacted; a new summary is persisted for the next load);
4. the engine (ReAct or DAG) runs as a task; its events go to the conversation's group;
5. the assistant message is finished with usage (compaction included, RU.2) and the
   compaction facts, then ``done``; a failure gives an ``error`` event and an assistant
   message marked ``error`` with the partial text (RU.3); a cancel gives
   ``run.cancelled {message_id, run_id}`` and a ``cancelled`` message with the partial text.

One run per conversation. A ``message`` while a run is active is persisted as ``injected``
(pinned), announced with ``injected`` and handed to the run, which gives it to the engine
at its next iteration (RP.1). A follow-up that arrives too late for the engine (while the
final answer streams) is answered by a follow-up run, so none is left without an answer.
Runs belong to the server, not to a socket: a closed tab does not stop them, and a client
that reconnects catches up through the HTTP messages API.

The LLM registry, budgets, memory and engines are looked up through the module-level
functions below (``get_llm``, ``resolve_budget``, ``make_memory``, ``engine_for``), so tests
can substitute a scripted LLM. The database side lives in ``chat.run_persistence``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from chat import run_control, run_persistence
from chat.errors import ChatError
from chat.recall import recall_search_for
from chat.run_registry import registry
from chat.run_support import (
    EventPublisher,
    MeteredLLM,
    RunRecord,
    control_group,
    conversation_group,
    failure_of,
    usage_totals,
)
from contextmgmt.core.llm import Usage
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_message_tokens

logger = logging.getLogger(__name__)

MODES = ("react", "dag")
# A query that leaves less than this for history still gets this much (the guard
# compacts per iteration anyway).
MIN_HISTORY_TOKENS = 2_000
# While an answer streams, its text so far is saved this often (only when it changed), so
# a server crash or a reload keeps what the user already saw. Short runs never wait this
# long: they write nothing extra.
CHECKPOINT_SECONDS = 2.0


# --- seams (tests replace these) ----------------------------------------------------------


def get_llm(role: str):
    from fimone.llm import get_llm as registry_get_llm

    return registry_get_llm(role)


def resolve_budget(role: str):
    from contextmgmt.budget import resolve_budget as budget_for

    return budget_for(role)


def make_memory(**kwargs):
    from contextmgmt.db_memory import DbMemory

    return DbMemory(**kwargs)


def engine_for(mode: str):
    from fimone.agent import run_dag, run_react

    return run_dag if mode == "dag" else run_react


def make_tools(conversation_id, *, before_id: int):
    from fimone.agent.tools import default_tools

    return default_tools(recall_search=recall_search_for(conversation_id, before_id=before_id))


@functools.cache
def _injection_queue_class():
    from fimone.agent.context import InjectionQueue

    class TrackedInjections(InjectionQueue):
        """Remembers which injected messages the engine took (the rest get a follow-up)."""

        def __init__(self) -> None:
            super().__init__()
            self.taken_ids: set[int] = set()

        def drain(self) -> list[ChatMessage]:
            drained = super().drain()
            self.taken_ids.update(m.metadata.get("id") for m in drained)
            return drained

    return TrackedInjections


# --- the run ----------------------------------------------------------------------------------


@dataclass(eq=False)
class Run:
    run_id: str
    conversation_id: Any
    mode: str
    query_message_id: int
    assistant_message_id: int
    started: float
    injections: Any
    publisher: EventPublisher
    control_channel: str = ""
    task: asyncio.Task | None = None
    work: asyncio.Task | None = None
    listener: asyncio.Task | None = None
    checkpoints: asyncio.Task | None = None
    cancel_requested: bool = False
    finishing: bool = False
    answer_parts: list[str] = field(default_factory=list)
    history_compaction: dict | None = None
    prepared: Any = None  # run_persistence.prepare()'s result, or why it failed
    local_injections: int = 0  # follow-ups stored by this process for this run
    answer_usage: Usage = field(default_factory=Usage)
    compaction_usage: Usage = field(default_factory=Usage)
    metered: list = field(default_factory=list)  # (MeteredLLM, model_config_id)
    # Steps and DAG plan as shown live, stored with the answer for a reload.
    record: RunRecord = field(default_factory=RunRecord)
    retry_of: int | None = None  # the failed assistant message this run answers again

    def request_cancel(self) -> bool:
        """Stop the engine; False when the run is already finishing."""
        if self.finishing or self.work is None or self.work.done():
            return False
        self.cancel_requested = True
        self.work.cancel()
        return True

    def on_event(self, event_type: str, payload: dict) -> None:
        if event_type == "answer.delta":
            self.answer_parts.append(payload.get("text") or "")


# --- entry points (the consumer calls these) --------------------------------------------------


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
        # The active run may live in another server process (issue 10): chat.run_control
        # finds it in the database, and its row lock settles two processes starting at once.
        for attempt in range(3):
            active = registry.get(conversation_id)
            # One process (in-memory layer): the registry is the truth, and a stale
            # ``running`` message is caught by open_run's claim (RunBusy) and reclaimed on
            # the next attempt — no database look-up on the common path.
            if active is None and (attempt or not run_control.is_single_process(layer)):
                active = await run_control.remote_run(layer, conversation_id=conversation_id)
            if active is not None:
                try:
                    message = await database_sync_to_async(run_persistence.persist_injection)(
                        user=user,
                        conversation_id=conversation_id,
                        content=content,
                        file_ids=file_ids,
                        run_id=active.run_id,
                        remote=isinstance(active, run_control.RemoteRun),
                    )
                except run_control.RunNotActive:
                    continue  # the other process's run just finished: start one here
                if isinstance(active, Run):
                    active.local_injections += 1
                await _publish(
                    layer,
                    conversation_id,
                    "injected",
                    {
                        "message_id": message.pk,
                        "content": message.content,
                        "images": message.metadata.get("images", []),
                        "run_id": active.run_id,
                    },
                )
                await layer.group_send(
                    control_group(conversation_id),
                    {"type": "run.inject", "run_id": active.run_id, "message_id": message.pk},
                )
                return {"run_id": active.run_id, "message_id": message.pk, "injected": True}

            run_id = uuid.uuid4().hex
            try:
                query, answer, mode, prepared = await database_sync_to_async(
                    run_persistence.open_run
                )(
                    user=user,
                    conversation_id=conversation_id,
                    content=content,
                    file_ids=file_ids,
                    mode=mode,
                    run_id=run_id,
                )
            except run_control.RunBusy:
                continue  # another process started a run a moment ago: inject into it
            await _launch(
                layer, run_id, conversation_id, mode, query, answer.pk, received, prepared
            )
            return {"run_id": run_id, "message_id": query.pk, "injected": False}
    raise ChatError("run_busy", "The conversation is busy right now; send the message again.")


async def retry_answer(*, user, conversation_id, message_id: int) -> dict:
    """Answer a failed answer's question again: a new run on the persisted user message (no
    second copy of it); the failed answer is marked ``superseded_by`` the new one.

    Only the owner's newest answer with status error / cancelled / interrupted, and only
    while no run is active. Raises ``ChatError`` (``bad_message_id``, ``not_retryable``,
    ``run_active``) and ``Conversation.DoesNotExist`` for a foreign conversation.
    Returns ``{"run_id", "message_id", "assistant_message_id"}``."""
    received = time.perf_counter()
    layer = get_channel_layer()
    async with registry.lock(conversation_id):
        active = registry.get(conversation_id)
        if active is None and not run_control.is_single_process(layer):
            active = await run_control.remote_run(layer, conversation_id=conversation_id)
        if active is not None:
            raise ChatError("run_active", "An answer is being written: wait or stop it first.")
        run_id = uuid.uuid4().hex
        try:
            query, answer, mode, prepared, follow_ups = await database_sync_to_async(
                run_persistence.open_retry
            )(user=user, conversation_id=conversation_id, message_id=message_id, run_id=run_id)
        except run_control.RunBusy as exc:
            raise ChatError(
                "run_active", "An answer is being written: wait or stop it first."
            ) from exc
        await _launch(
            layer,
            run_id,
            conversation_id,
            mode,
            query,
            answer.pk,
            received,
            prepared,
            retry_of=message_id,
            injections=follow_ups,
        )
    return {"run_id": run_id, "message_id": query.pk, "assistant_message_id": answer.pk}


def active_snapshot(*, conversation_id) -> dict | None:
    """This process's active run of the conversation as a socket joining now needs it:
    ids, mode and the answer text streamed so far (the ``run.active`` event)."""
    run = registry.get(conversation_id)
    if run is None or run.finishing:
        return None
    return {
        "run_id": run.run_id,
        "message_id": run.query_message_id,
        "assistant_message_id": run.assistant_message_id,
        "mode": run.mode,
        "text": "".join(run.publisher.published_text),
        # The steps and plan so far (taken with the text: later ones arrive as events).
        **run.record.as_metadata(),
    }


async def cancel_active_run(*, conversation_id) -> bool:
    """Ask the conversation's active run to stop; False when none is active."""
    active = registry.get(conversation_id)
    if active is None:
        # Perhaps a run of another server process (issue 10). Under the registry lock: a
        # run of this process being launched right now is not mistaken for an orphan.
        async with registry.lock(conversation_id):
            active = registry.get(conversation_id) or await run_control.remote_run(
                get_channel_layer(), conversation_id=conversation_id
            )
    if active is None:
        return False
    await get_channel_layer().group_send(
        control_group(conversation_id), {"type": "run.cancel", "run_id": active.run_id}
    )
    return True


# --- running ----------------------------------------------------------------------------------


async def _publish(layer, conversation_id, event_type: str, payload: dict) -> None:
    await layer.group_send(
        conversation_group(conversation_id),
        {"type": "chat.event", "event": {"type": event_type, **payload}},
    )


async def _launch(
    layer,
    run_id,
    conversation_id,
    mode,
    query,
    answer_id,
    received,
    prepared,
    *,
    retry_of: int | None = None,
    injections: list | tuple = (),
) -> Run:
    """Register the run, join its control group, announce it and start its task.

    ``injections``: follow-ups the engine gets at its first iteration (a retry's)."""
    run = Run(
        run_id=run_id,
        conversation_id=conversation_id,
        mode=mode,
        query_message_id=query.pk,
        assistant_message_id=answer_id,
        started=received,
        injections=_injection_queue_class()(),
        publisher=None,  # set below: it reports back to the run
        prepared=prepared,
        retry_of=retry_of,
    )
    for message in injections:
        run.injections.put_nowait(message)
    run.publisher = EventPublisher(
        layer, conversation_id, on_event=run.on_event, on_sent=run.record
    )
    # Join before registering: an inject/cancel sent the moment the run is visible arrives.
    # The default prefix matters: channels-redis multiplexes all of a process's channels
    # over one Redis list per prefix; another prefix would wait behind the consumers'.
    run.control_channel = await layer.new_channel()
    await layer.group_add(control_group(conversation_id), run.control_channel)
    registry.add(run)
    await run.publisher(
        "run.started",
        {
            "run_id": run_id,
            "message_id": query.pk,
            "assistant_message_id": answer_id,
            "mode": mode,
            # What was asked, so a second tab can show it too.
            "content": query.content,
            "images": (query.metadata or {}).get("images", []),
            **({"retry_of": retry_of} if retry_of is not None else {}),
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
        if message.get("type") == "run.cancel":
            run.request_cancel()
        elif message.get("type") == run_control.STOP:
            return  # the run has finished (run_control.stop_listener)
        elif message.get("type") == run_control.SNAPSHOT:
            # A socket of another process joined mid-run (issue 10): its run.active.
            snapshot = active_snapshot(conversation_id=run.conversation_id)
            if snapshot is not None and isinstance(message.get("reply_to"), str):
                await run.publisher.send_snapshot(message["reply_to"], snapshot)
        elif message.get("type") == run_control.PING:
            # Another process asks whether this run is alive (issue 10, orphan detection).
            await run_control.answer_ping(layer, message, run_id=run.run_id)
        elif message.get("type") == "run.inject":
            try:
                injected = await database_sync_to_async(run_persistence.load_injection)(
                    message["message_id"]
                )
            except Exception:
                logger.exception("run %s: could not load injected message", run.run_id)
                continue
            run.injections.put_nowait(injected)


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


async def _work(run: Run):
    prepared = run.prepared
    if isinstance(prepared, Exception):
        raise prepared
    main_budget = _tokens(prepared["main_budget"])
    fast_budget = _tokens(prepared["fast_budget"])
    main = MeteredLLM(prepared["main"], run.answer_usage)
    fast = MeteredLLM(prepared["fast"], run.answer_usage)
    compact = MeteredLLM(prepared["fast"], run.compaction_usage)
    run.metered = [
        (main, getattr(prepared["main_budget"], "model_config_id", None)),
        (fast, getattr(prepared["fast_budget"], "model_config_id", None)),
    ]
    query: ChatMessage = prepared["query"]

    memory = make_memory(
        conversation_id=run.conversation_id,
        max_tokens=max(MIN_HISTORY_TOKENS, main_budget - estimate_message_tokens(query)),
        compact_llm=compact,
        vision=prepared["vision"],
        loaded=prepared.get("history"),
    )
    history = [
        m
        for m in await memory.get_messages()
        # This run's own messages (a follow-up typed while history loaded) are not history.
        if (m.metadata.get("id") or 0) < run.query_message_id
    ]
    if memory.was_compacted:
        run.history_compaction = _history_facts(memory)
        await run.publisher("compact", {"scope": "history", **run.history_compaction})
        summary = getattr(memory, "new_summary", None)
        if summary is not None:
            await database_sync_to_async(run_persistence.save_summary)(run.conversation_id, summary)

    from fimone.agent.context import AgentContext

    ctx = AgentContext(
        llm=main,
        fast_llm=fast,
        compact_llm=compact,
        main_budget=main_budget,
        fast_budget=fast_budget,
        history=history,
        query=query,
        sink=run.publisher,
        injections=run.injections,
        tools=make_tools(run.conversation_id, before_id=run.query_message_id),
        # Our own bound on every model call: the SDK's timeout counts per attempt and per
        # read, so with retries a hung provider could otherwise hold a user for minutes.
        llm_timeout=settings.LLM_TIMEOUT_SECONDS,
    )
    return await engine_for(run.mode)(ctx)


def _tokens(budget) -> int:
    return int(getattr(budget, "effective_input_tokens", budget.usable_input_tokens))


def _history_facts(memory) -> dict:
    strategy = getattr(memory, "strategy", None) or getattr(memory.result, "strategy", "llm")
    facts = {
        # A reused stored summary was written by the LLM on an earlier load.
        "strategy": "llm" if strategy == "summary" else strategy,
        "original_count": memory.original_count,
        "compacted_count": memory.compacted_count,
        "tokens_before": getattr(memory, "tokens_before", 0),
        "tokens_after": getattr(memory, "tokens_after", 0),
    }
    if strategy == "summary":
        facts["reused_summary"] = True
    return facts


async def _checkpoint(run: Run) -> None:
    """Save the partial answer every CHECKPOINT_SECONDS while the engine works."""
    saved, recorded = 0, 0
    while not run.work.done():
        await asyncio.sleep(CHECKPOINT_SECONDS)
        if run.finishing or (len(run.answer_parts), run.record.version) == (saved, recorded):
            continue
        # Steps and plan only when they moved (a JSON merge costs a read).
        record = run.record.as_metadata() if run.record.version != recorded else None
        saved, recorded = len(run.answer_parts), run.record.version
        try:
            await database_sync_to_async(run_persistence.save_progress)(
                message_id=run.assistant_message_id,
                content="".join(run.answer_parts),
                record=record,
            )
        except Exception:  # a missed checkpoint costs nothing but durability
            logger.warning("run %s: could not save progress", run.run_id, exc_info=True)


async def _finish(run: Run) -> None:
    """Persist the outcome, then tell every socket (``done`` / ``error`` / ``run.cancelled``)."""
    # The final write comes after any checkpoint in flight (one database thread, in order).
    run.checkpoints.cancel()
    await run.publisher.flush()
    outcome, failure = None, None
    if run.work.cancelled():
        status = "cancelled"
    elif run.work.exception() is not None:
        status = "error"
        exc = run.work.exception()
        failure = failure_of(exc)
        if failure["code"] == "internal_error":
            logger.error("run %s failed", run.run_id, exc_info=exc)
        else:
            logger.warning("run %s failed: %s: %s", run.run_id, type(exc).__name__, exc)
    else:
        outcome = run.work.result()
        status = "done"
    content = outcome.answer if outcome is not None else "".join(run.answer_parts)
    usage = usage_totals(run.answer_usage, run.compaction_usage)
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
        (config_id, llm.estimated_input, llm.reported_input)
        for llm, config_id in run.metered
        if config_id is not None and llm.reported_input > 0
    ]
    html = ""
    try:
        html = await database_sync_to_async(run_persistence.persist_finish)(
            message_id=run.assistant_message_id,
            content=content,
            status=status,
            usage=usage,
            compaction=run.history_compaction,
            error=failure,
            extra=extra,
            calibration=calibration,
        )
    except Exception:
        logger.exception("run %s: could not persist the answer", run.run_id)
        if failure is None:
            status = "error"
            failure = {"code": "persist_failed", "message": "The answer could not be saved."}
    ids = {"message_id": run.assistant_message_id, "run_id": run.run_id}
    if status == "done":
        await run.publisher(
            "done", {**ids, "usage": usage, "elapsed_ms": _elapsed_ms(run), "html": html}
        )
    elif status == "cancelled":
        await run.publisher("run.cancelled", ids)
    else:
        await run.publisher("error", {**ids, **failure})


def _elapsed_ms(run: Run) -> int:
    return int((time.perf_counter() - run.started) * 1000)


async def _close(run: Run, layer) -> None:
    """Leave the registry; answer follow-ups the engine never saw with a follow-up run."""
    await layer.group_discard(control_group(run.conversation_id), run.control_channel)
    # Not listener.cancel(): cancelling a channels-redis receive can lose a message meant
    # for another socket of this process (the `done` of this very run, seen in issue 10).
    await run_control.stop_listener(
        layer, channel=run.control_channel, task=run.listener, run_id=run.run_id
    )
    async with registry.lock(run.conversation_id):
        registry.remove(run)
        if run.cancel_requested or run.work.cancelled():
            return  # the user said stop: later follow-ups wait for the next message
        if run.local_injections == 0 and run_control.is_single_process(layer):
            return  # no follow-up was stored for this run: nothing to look up
        try:
            # The database, not this process's memory: a follow-up may have been stored by
            # another server process (issue 10).
            leftovers = await database_sync_to_async(run_persistence.leftover_injections)(
                conversation_id=run.conversation_id,
                run_id=run.run_id,
                taken_ids=run.injections.taken_ids,
            )
            if not leftovers:
                return
            run_id = uuid.uuid4().hex
            query, answer, prepared = await database_sync_to_async(run_persistence.open_follow_up)(
                conversation_id=run.conversation_id,
                run_id=run_id,
                mode=run.mode,
                query_id=leftovers[-1],
            )
            await _launch(
                layer,
                run_id,
                run.conversation_id,
                run.mode,
                query,
                answer.pk,
                time.perf_counter(),
                prepared,
            )
        except run_control.RunBusy:
            logger.info("run %s: follow-ups go to the run another process started", run.run_id)
        except Exception:
            logger.exception("run %s: could not start the follow-up run", run.run_id)
