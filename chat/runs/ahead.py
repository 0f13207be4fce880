"""Describe ahead: once a run's answer is stored and announced, the images the conversation's
next run will show as text that have no fast-model description yet are described in the
background, so that run finds them described and asks no model before its first call.

Which images: those of the next run's history (loaded as that run would, with this run's
question as its newest turn) that go as text — normally the turn that has just left the
pixel turns (``chat.history.image_pixel_turns``) — and still have only the offline
description (``chat.image_describer``). Only after a run that ended ``done``: a run that
failed, was stopped or interrupted is usually followed by a retry, whose preparation
describes what it needs; a process that drains (``chat.drain``) starts none.

The task holds no part of the run (only ids and the fast model), so a finished run is still
freed at once (docs/architecture.md). It is tracked here: the drain waits for it like for a
run and cancels it with the runs it interrupts (``stop``); a cancelled description stores
nothing. Its calls are bounded like the run's own description calls; a failure is logged
and marks nothing, so the next run's preparation asks once more (and marks the image when
that fails too). The calls' usage is added to the finished answer's stored usage as
context upkeep (the compaction split, entry ``described_after``), the way the same calls
made before a run's first call count as that run's: the answer's own line is unchanged.
The ``done`` event, sent before, does not include it; the stored usage does, and once images
were described the conversation's sockets get ``images.described {message_id, usage,
elapsed_ms}``: the page redraws that answer's usage card and reads the context gauge again.
A failure sends nothing.

If the next run starts while a description is still under way, its preparation waits for
that call instead of making it again (``image_describer.describe_images``), bounded by the
same time limit.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from chat import drain, image_describer
from chat.runs import preparation, storage
from chat.runs.events import channel_layer, conversation_group
from chat.runs.metering import MeteredLLM
from chat.runs.state import Run
from contextmgmt.core.messages import IMAGE_NOTES
from fimone.agent.calls import compact_limit

logger = logging.getLogger(__name__)

_tasks: set[asyncio.Task] = set()


def describe_after(run: Run) -> asyncio.Task | None:
    """Start describing ahead for ``run``, which has just finished ``done`` (never waits).
    Returns the task, or None when there is nothing that could need it."""
    prepared = run.prepared
    if prepared is None or drain.is_draining():
        return None
    if not image_describer.can_describe(prepared.fast) or not _may_show_images(prepared, run):
        return None
    # Read now, not from the run's start: an endpoint that refused images during the run
    # has turned its client's ``supports_vision`` off, and the next run sends text only.
    vision = preparation.history_has_pixels(run.mode, preparation.supports_vision(prepared.main))
    task = asyncio.create_task(
        _describe(
            conversation_id=run.conversation_id,
            answer_id=run.assistant_message_id,
            fast=prepared.fast,
            vision=vision,
            run_id=run.run_id,
        )
    )
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


def count() -> int:
    """Descriptions ahead still working in this process."""
    return sum(1 for task in _tasks if not task.done())


async def stop(*, wait_seconds: float = 5.0) -> int:
    """Cancel every description ahead of this process and wait for them to end (the
    drain's last step; the images keep their offline words for the next run to ask)."""
    tasks = [task for task in _tasks if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=wait_seconds)
    return len(tasks)


async def wait_idle() -> None:
    """Wait until no description ahead works (tests; wrap it in ``asyncio.timeout``)."""
    while tasks := [task for task in _tasks if not task.done()]:
        await asyncio.wait(tasks)


async def _announce(conversation_id: Any, answer_id: int, metadata: dict | None) -> None:
    """``images.described``: the answer's usage card shows the new usage, and the context
    gauge, read again, counts the new words."""
    event: dict[str, Any] = {"type": "images.described", "message_id": answer_id}
    if metadata is not None:
        event.update(usage=metadata.get("usage"), elapsed_ms=metadata.get("elapsed_ms"))
    await channel_layer().group_send(
        conversation_group(conversation_id), {"type": "chat.event", "event": event}
    )


def _may_show_images(prepared: preparation.PreparedRun, run: Run) -> bool:
    """Whether the next run's history can hold an image at all, from what this run loaded
    (no database): its history, its question and follow-ups. A follow-up its engine took
    is not kept here, so then the history is looked at."""
    messages = [prepared.query, *prepared.follow_ups]
    if prepared.history is not None:
        messages += prepared.history.messages
    return bool(run.injections.taken_ids) or any(m.metadata.get(IMAGE_NOTES) for m in messages)


async def _describe(*, conversation_id: Any, answer_id: int, fast, vision: bool, run_id) -> None:
    try:
        history = await database_sync_to_async(storage.next_history)(conversation_id, vision=vision)
        file_ids = image_describer.images_as_text(history.messages)
        if not file_ids:
            return
        llm = MeteredLLM(fast)
        described = await image_describer.describe_images(
            llm,
            file_ids,
            time_limit=compact_limit(settings.LLM_TIMEOUT_SECONDS),
            mark_failures=False,
        )
        metadata = None
        if llm.usage.input_tokens or llm.usage.output_tokens:
            metadata = await database_sync_to_async(storage.add_description_usage)(
                message_id=answer_id, usage=llm.usage, images=described
            )
        logger.info("run %s: %d image(s) described ahead", run_id, described)
        if described:
            await _announce(conversation_id, answer_id, metadata)
    except Exception as exc:  # the next run's preparation asks instead
        logger.warning(
            "run %s: describing images ahead failed: %s: %s", run_id, type(exc).__name__, exc
        )
