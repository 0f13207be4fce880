"""A run's work: prepare, fit the history, drive the engine; and, while it works, save
the streamed text (checkpoints).

``perform`` is the run's work task (``lifecycle.launch`` starts it): it reads models,
budgets and history (``preparation.prepare``), describes old images once, fits the history to
the room the engine's first call leaves (a ``compact`` event, scope ``history``, when it
compacted; a new summary is stored), and runs the engine with metered models and the run
as its sink. Its outcome, or how it failed, is the finish's to store (``finish``).
``checkpoints`` saves the partial answer while the work runs, so a crash or a reload keeps
what the user already saw. Apart from the launch and the finish because this is the only
part that knows the engine and the history.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from dataclasses import dataclass

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import translation

from chat import image_describer
from chat.runs import approvals, preparation, storage
from chat.runs.compactions import RunCompactions
from chat.runs.metering import MeteredLLM
from chat.runs.state import Run
from chat.tools.settings import server_source, unavailable_note
from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.llm import Usage
from contextmgmt.core.masking import masked_facts
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import activate_weights
from contextmgmt.db_memory import HistoryLoad
from fimone.agent import AgentContext
from fimone.agent.calls import compact_limit
from fimone.agent.history_room import check_instructions_room, history_room
from fimone.agent.tools import switched_off_tool

logger = logging.getLogger(__name__)

# While an answer streams, its text so far is saved this often (only when it changed), so
# a server crash or a reload keeps what the user already saw. Short runs never wait this
# long: they write nothing extra.
CHECKPOINT_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class RunModels:
    """The run's models, metered: the answer's (main, fast) and the compaction's."""

    main: MeteredLLM
    fast: MeteredLLM
    compact: MeteredLLM


async def perform(run: Run):
    """The run's work task: prepare, fit the history, run the engine; its result is the
    engine's outcome, its exception (or cancellation) how the run failed."""
    # A new message's run was prepared when it was opened (``preparation.open_and_prepare``).
    prepared = run.prepared or await database_sync_to_async(preparation.prepare_work)(
        run.opened, run.deps
    )
    run.prepared = prepared
    # This task estimates tokens as the main model counts them (its calibrated weights).
    activate_weights(prepared.main_weights)
    # Instructions too large for the model's window fail the run before any call, with a
    # message saying so (chat.runs.events); the user's message stays.
    check_instructions_room(
        run.mode,
        prepared.main_tokens,
        prepared.fast_tokens,
        query=prepared.query,
        instructions=prepared.instructions,
    )
    for message in prepared.follow_ups:
        run.injections.put_nowait(message)
    models = _metered_models(run, prepared)
    prepared = run.prepared = await _describe_old_images(run, prepared, models.compact)
    tools = await _run_tools(run, prepared)
    history = await _fitted_history(run, prepared, tools, models)
    ctx = _engine_context(run, prepared, tools, models, history)
    return await run.deps.engine_for(run.mode)(ctx)


def _metered_models(run: Run, prepared: preparation.PreparedRun) -> RunModels:
    models = RunModels(
        main=MeteredLLM(prepared.main, run.answer_usage),
        fast=MeteredLLM(prepared.fast, run.answer_usage),
        # Compaction summarises with the fast model: its input is sized in that model's
        # tokens.
        compact=MeteredLLM(
            prepared.fast,
            run.compaction_usage,
            token_weights=prepared.fast_weights,
            input_window=prepared.fast_tokens,
        ),
    )
    run.metered = [
        (models.main, prepared.main_config_id),
        (models.fast, prepared.fast_config_id),
    ]
    return models


async def _run_tools(run: Run, prepared: preparation.PreparedRun):
    """The run's tool registry: the built-in tools, then the tool servers'."""
    tools = run.deps.make_tools(
        run.conversation_id,
        before_id=run.query_message_id,
        vision=prepared.vision,
        documents=prepared.has_documents,
        disabled_sources=prepared.disabled_tool_sources,
        owner_key=str(run.opened.owner_id or ""),
        project_id=prepared.project_files.project_id,
    )
    await _add_server_tools(
        run, tools, vision=prepared.vision, switched_off=prepared.disabled_tool_sources
    )
    run.tool_results = tools.results
    return tools


async def _fitted_history(
    run: Run, prepared: preparation.PreparedRun, tools, models: RunModels
) -> list[ChatMessage]:
    """The history fitted to the room the engine's first call leaves; a compaction is
    announced (``compact``, scope ``history``) and its new summary stored."""
    # Counted as the engine will send it (system prompt, tool schemas, the query and the
    # follow-ups it starts with), so a history fitted here is not compacted again on the
    # first call (fimone.agent.history_room).
    room = history_room(
        run.mode,
        prepared.main_tokens,
        query=prepared.query,
        tools=tools,
        follow_ups=prepared.follow_ups,
        used_tools=prepared.used_tools,
        instructions=prepared.instructions,
    )
    memory = run.deps.make_memory(
        conversation_id=run.conversation_id,
        max_tokens=room.load,
        compact_llm=models.compact,
        vision=prepared.history_vision,
        loaded=prepared.history,
        # A summary is told the instructions are kept apart (they are never history).
        instructions=bool(prepared.instructions),
    )
    fitted = await memory.load()
    history = [
        m
        for m in fitted.messages
        # This run's own messages (a follow-up typed while history loaded) are not history.
        if (m.metadata.get("id") or 0) < run.query_message_id
    ]
    facts = _history_facts(fitted) if fitted.was_compacted else None
    if room.squeezed:
        # This request's own content leaves less room than usual: its copy is cut, the
        # fitted history (and any summary to store) stays as an ordinary request has it.
        cut = CompactUtils.cut_for_request(history, room.send)
        if [id(m) for m in cut] != [id(m) for m in history]:
            history = cut
            facts = {
                **(facts or _history_facts(fitted, strategy="truncate")),
                "compacted_count": len(cut),
                "tokens_after": CompactUtils.estimate_messages_tokens(cut),
                "cut_for_request": True,
            }
    run.compactions = RunCompactions(main_calls=lambda: models.main.call_count)
    if facts is not None:
        await _announce_history_compaction(run, prepared, fitted, facts)
    loaded = prepared.history
    if loaded is not None:
        run.compactions.loaded(
            history,
            messages=[
                m for m in loaded.messages if (m.metadata.get("id") or 0) < run.query_message_id
            ],
            stored=loaded.summary,
            new_summary=fitted.new_summary,
        )
    return history


async def _announce_history_compaction(
    run: Run, prepared: preparation.PreparedRun, fitted: HistoryLoad, facts: dict
) -> None:
    """Store the load's new summary (with what it cost), then tell the sockets."""
    summary = fitted.new_summary
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


def _engine_context(
    run: Run,
    prepared: preparation.PreparedRun,
    tools,
    models: RunModels,
    history: list[ChatMessage],
) -> AgentContext:
    async def on_compaction(scope: str, result) -> int | None:
        # The engine summarised loaded history: stored like a load-time summary, so the
        # next request starts from it instead of summarising the same messages again.
        # Set while the history was fitted, before the engine could compact anything.
        compactions = run.compactions
        summary = compactions.to_store(scope, result) if compactions is not None else None
        if summary is None:
            return None
        return await database_sync_to_async(storage.save_summary)(run.conversation_id, summary)

    return AgentContext(
        llm=models.main,
        fast_llm=models.fast,
        fast_vision=preparation.supports_vision(prepared.fast),
        compact_llm=models.compact,
        main_budget=prepared.main_tokens,
        fast_budget=prepared.fast_tokens,
        history=history,
        query=prepared.query,
        instructions=prepared.instructions,
        sink=run.emit,
        injections=run.injections,
        tools=tools,
        # Our own bound on every model call: the SDK's timeout counts per attempt and per
        # read, so with retries a hung provider could otherwise hold a user for minutes.
        llm_timeout=settings.LLM_TIMEOUT_SECONDS,
        on_compaction=on_compaction,
        # The socket's language (the run's task inherited it): the engine's own sentences.
        language=translation.get_language() or "en",
        # A tool that needs approval pauses the run until the user answers.
        approve=functools.partial(approvals.ask, run),
        used_tools=prepared.used_tools,
    )


async def _add_server_tools(
    run: Run, tools, *, vision: bool, switched_off: frozenset[str] = frozenset()
) -> None:
    """The tool servers' (MCP) tools join the run's. A server that could not be started or
    listed is left out: the run goes on, and the answer carries a note saying so. A server
    the user switched off for this conversation (``switched_off``, its tools' ``source``)
    adds nothing and no note."""
    served = await run.deps.server_tools(vision=vision)
    for tool in served.tools:
        if switched_off_tool(tool, switched_off):
            continue
        if tool.name in tools:
            logger.warning(
                "run %s: tool %s is already defined; the server's is left out",
                run.run_id,
                tool.name,
            )
            continue
        tools.register(tool)
    for problem in served.problems:
        if server_source(problem.server) in switched_off:
            continue
        # What failed is for staff (the admin's tool-server page and the log, where the
        # pool wrote it): the user reads that the server is out, in their language.
        await run.emit(
            "step",
            {
                "kind": "note",
                "code": "tool_server_unavailable",
                "server": problem.server,
                "text": unavailable_note(problem.server),
            },
        )


async def _describe_old_images(
    run: Run, prepared: preparation.PreparedRun, llm: MeteredLLM
) -> preparation.PreparedRun:
    """Images the history shows as text get the fast model's description once, when it
    can see images (chat.image_describer); the history is then read again with it.
    Normally the previous answer had them described already (``ahead``), and this asks
    nothing; it catches the rest (that description failed or was cut short, the mode or
    model changed) and waits for one still under way rather than asking again."""
    file_ids = image_describer.images_as_text(prepared.history.messages)
    if not file_ids or not image_describer.can_describe(prepared.fast):
        return prepared
    described = await image_describer.describe_images(
        llm, file_ids, time_limit=compact_limit(settings.LLM_TIMEOUT_SECONDS)
    )
    if not described:
        return prepared
    history = await database_sync_to_async(preparation.reload_history)(run.opened, prepared)
    return dataclasses.replace(prepared, history=history)


def _history_facts(fitted: HistoryLoad, strategy: str | None = None) -> dict:
    """What the ``compact`` event (scope ``history``) and the stored facts say of a load."""
    strategy = strategy or fitted.strategy
    facts = {
        # A reused stored summary was written by the LLM on an earlier load.
        "strategy": "llm" if strategy == "summary" else strategy,
        "original_count": fitted.original_count,
        "compacted_count": fitted.compacted_count,
        # What the summary the model got stands for, as the summary itself counts it: the
        # divider shows this figure, so it agrees with the opened summary.
        "summarized_count": fitted.summarized_count,
        "tokens_before": fitted.tokens_before,
        "tokens_after": fitted.tokens_after,
    }
    # What the load-time compaction itself cost (a reused summary costs nothing now).
    usage = fitted.result.usage if fitted.result is not None else Usage()
    facts["cost_input_tokens"] = usage.input_tokens
    facts["cost_output_tokens"] = usage.output_tokens
    if strategy == "summary":
        facts["reused_summary"] = True
    stored = fitted.summary_in_use
    if stored is not None and stored.id is not None:
        facts["summary_id"] = stored.id
    if fitted.summary_edited:
        facts["summary_edited"] = True
    # Tool results masked before any summary: listed apart in the divider.
    if fitted.masked:
        facts.update(masked_facts(list(fitted.masked)))
    # Pinned messages that had to yield to the cap on pinned history (the UI notes it).
    if fitted.pins_yielded:
        facts["pins_yielded"] = list(fitted.pins_yielded)
    return facts


async def checkpoints(run: Run) -> None:
    """Save the partial answer every CHECKPOINT_SECONDS while the engine works."""
    saved, recorded = 0, 0
    # The run's work task is started before this one and kept until this one has ended.
    work = run.work
    if work is None:
        raise RuntimeError(f"run {run.run_id}: checkpoints before its work started")
    while not work.done():
        # Wakes when the work ends, so the loop ends by itself and is never cancelled: a
        # cancelled task keeps its exception, whose traceback holds this frame and so the
        # run, which holds the task; that cycle would keep every finished run (history,
        # models, answer) alive until a full garbage collection, a pause on the loop.
        await asyncio.wait({work}, timeout=CHECKPOINT_SECONDS)
        if work.done():
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
