"""A run's end: store the outcome, then announce it (``done`` / ``error`` /
``run.cancelled``).

``finish_run`` runs once the work task has ended, whatever its end: it waits for a
checkpoint in flight, works out the status (done, error, cancelled, interrupted) and the
text to keep (the answer, or what was streamed), the usage (compaction included) and the
record, stores them in one write (``writes.persist_finish``) and only then tells the
sockets. It also lets go of what would keep a finished run alive in a reference cycle (the
work task, the frames of its exception: docs/architecture.md). Apart from the work because
it never touches the engine, only what the run kept; leaving the registry and starting
follow-up runs is ``lifecycle._close``'s.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import traceback
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.utils.translation import gettext, gettext_lazy

from chat.models import Message
from chat.runs import ahead, writes
from chat.runs.events import failure_of
from chat.runs.metering import usage_totals
from chat.runs.state import Run, RunState

logger = logging.getLogger(__name__)

# What sockets are told about a run the server's shutdown stopped (chat.drain).
# Lazy: written in the run's language when the run ends.
INTERRUPTED_MESSAGE = gettext_lazy(
    "The server restarted during this answer. Your message is saved; use Retry to ask again."
)


async def finish_run(run: Run) -> None:
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
    ending = _ending(run, work)
    usage = _usage(run)
    try:
        html = await database_sync_to_async(writes.persist_finish)(
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
        return
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
    await _announce(run, ending, usage=usage, html=html)


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
        usage["model"] = str(getattr(run.prepared.main, "model_name", "") or "")
    return usage


def _extra(run: Run, ending: Ending) -> dict[str, Any]:
    """What the answer's metadata keeps besides usage: time, steps and plan, and why."""
    extra: dict[str, Any] = {
        "elapsed_ms": _elapsed_ms(run),
        **run.record.as_metadata(),
    }
    if run.retry_of is not None:
        extra["retry_of"] = run.retry_of
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


async def _announce(run: Run, ending: Ending, *, usage: dict[str, Any], html: str) -> None:
    ids = {"message_id": run.assistant_message_id, "run_id": run.run_id}
    if run.state is RunState.DONE:
        await run.publisher(
            "done", {**ids, "usage": usage, "elapsed_ms": _elapsed_ms(run), "html": html}
        )
        # Stored and announced: the images this answer pushed out of the pixel turns are
        # described now, in the background, rather than before the next answer's first call.
        ahead.describe_after(run)
    elif run.state is RunState.CANCELLED:
        note = ending.note
        await run.publisher("run.cancelled", {**ids, **({"note": note} if note else {})})
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
