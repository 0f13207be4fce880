"""The database side of a run after it has started: what it writes while it works (a
summary, its progress), its end (``persist_finish``, stored before it is announced) and
what comes after (the next history, follow-ups it never took). Sync ORM functions the
lifecycle calls through ``database_sync_to_async``, each one thread hop; opening and
preparing a run is ``chat.runs.storage``.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from django.db import transaction

from chat import search_index, selectors, services
from chat.history import load_history
from chat.models import Message
from chat.summaries import summary_save
from contextmgmt.calibration import record_usage
from contextmgmt.core.llm import Usage
from contextmgmt.db_memory import LoadedHistory, NewSummary

logger = logging.getLogger(__name__)


# --- while the run works ---------------------------------------------------------------------


def save_summary(conversation_id: Any, summary: NewSummary) -> int:
    """Store ``summary``; returns the id of the newest stored summary (this one, or one a
    concurrent run stored covering as much or more)."""
    return summary_save(conversation_id=conversation_id, **dataclasses.asdict(summary)).pk


def save_progress(*, message_id: int, content: str, record: dict | None = None) -> None:
    """The streamed text so far, and the run's steps and plan when given (``RunRecord``),
    on the assistant message still ``running`` (a finished message is never touched)."""
    running = Message.objects.filter(pk=message_id, status=Message.Status.RUNNING)
    if record is None:
        running.update(content=content)
        return
    with transaction.atomic():
        metadata = running.values_list("metadata", flat=True).first()
        if metadata is None:
            return  # finished meanwhile: the final write has it all
        running.update(content=content, metadata={**metadata, **record})


# --- the end ---------------------------------------------------------------------------------


def persist_finish(
    *,
    message_id,
    content,
    status,
    usage,
    compaction,
    error,
    extra,
    calibration,
    answered_ids,
    tool_results=(),
) -> str:
    """Store the outcome on the answer and settle the user messages it answered; returns
    the answer rendered as HTML. ``Message.DoesNotExist``: the conversation was deleted."""
    message = selectors.message_by_id(message_id)
    stored = False
    if tool_results:
        # Whole, for the next runs' records, recall and the chat's "show all" (a failure
        # loses only that). Stored before the answer is indexed: its steps' previews of
        # these results are then left out of the index, their whole text goes in instead.
        try:
            stored = services.tool_results_store(message=message, results=tool_results) > 0
        except Exception:
            logger.warning("answer %s: could not keep its tool results", message_id, exc_info=True)
    finished = services.assistant_message_finish(
        answered_ids=answered_ids,
        message=message,
        content=content,
        status=status,
        usage=usage,
        compaction=compaction,
        error=error,
        extra=extra,
    )
    if stored:
        # Each result in a short transaction of its own, after the answer's (a failure
        # leaves the result stored, found by ``manage.py rebuild_search_index``).
        try:
            search_index.index_tool_results(message=message)
        except Exception:
            logger.warning("answer %s: could not index its tool results", message_id, exc_info=True)
    _record_calibration(calibration)
    return finished.html  # rendered once with the message


def _record_calibration(samples: list[tuple[int, list[int], int, int]]) -> None:
    """Teach the estimate how this model's tokenizer counts each class of text."""
    for config_id, counts, fixed, reported in samples:
        try:
            record_usage(
                model_config_id=config_id,
                counts=counts,
                fixed_tokens=fixed,
                reported_tokens=reported,
            )
        except Exception:  # calibration is advisory; it must never fail a run
            logger.warning("calibration sample for ModelConfig %s failed", config_id, exc_info=True)


# --- after the end ---------------------------------------------------------------------------


def next_history(conversation_id: Any, *, vision: bool) -> LoadedHistory:
    """The history the conversation's next run will load (its question aside), to be
    looked at, not sent: image parts hold only the files' leading bytes and nothing is
    stored (``for_count``). A finished run's own question is its newest turn."""
    return load_history(conversation_id, vision=vision, for_count=True)


def add_description_usage(*, message_id: int, usage: Usage, images: int) -> dict | None:
    """The usage of ``images`` described after an answer, added to that answer's; returns
    the answer's new metadata (None: the answer is gone)."""
    return services.assistant_usage_add_descriptions(
        message_id=message_id,
        images=images,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        estimated=usage.estimated,
    )


def settle(*, conversation_id, ids, status) -> int:
    return services.user_messages_settle(conversation_id=conversation_id, ids=ids, status=status)


def leftover_injections(*, conversation_id, run_id, taken_ids) -> list[int]:
    """Follow-ups stored for the run (by any process) that its engine never took."""
    ids = selectors.run_follow_ups(conversation_id=conversation_id, run_id=run_id)
    return sorted(i for i in ids.values_list("id", flat=True) if i not in taken_ids)
