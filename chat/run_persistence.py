"""The database side of a websocket run (issue 7, DESIGN §3): sync ORM functions that
``chat.runs`` calls through ``database_sync_to_async``, each a single thread hop.

Order matters and is kept here: the user message is committed before anything can fail
(``open_run`` persists, then prepares), and a run's end is stored before it is announced.
The LLM registry and budgets are looked up through ``chat.runs.get_llm`` /
``chat.runs.resolve_budget`` (the seams tests replace).
"""

from __future__ import annotations

import dataclasses
import logging
import time

from django.db import transaction

from chat import run_control
from chat.run_support import query_message
from contextmgmt.core.messages import ChatMessage

logger = logging.getLogger(__name__)


@transaction.atomic
def _persist_query(*, user, conversation_id, content, file_ids, mode, run_id):
    from chat import selectors, services

    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    attachments = selectors.attachments_for_ids(
        user=user, conversation=conversation, file_ids=list(file_ids)
    )
    # One run per conversation across processes: raises RunBusy (nothing stored) when
    # another process started one since we looked.
    run_control.claim_conversation(conversation_id=conversation.pk)
    mode = mode or conversation.mode
    query = services.user_message_create(
        conversation=conversation, content=content, attachments=attachments, run_id=run_id
    )
    answer = services.assistant_message_start(conversation=conversation, run_id=run_id, mode=mode)
    return query, answer, mode


@transaction.atomic
def persist_injection(*, user, conversation_id, content, file_ids, run_id, remote=False):
    from chat import selectors, services

    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    attachments = selectors.attachments_for_ids(
        user=user, conversation=conversation, file_ids=list(file_ids)
    )
    if remote:
        # Another process's run: store the follow-up only while it still runs (RunNotActive
        # otherwise); its owner finishes under the same row lock, so it sees this message.
        run_control.lock_running_run(conversation_id=conversation.pk, run_id=run_id)
    return services.user_message_create(
        conversation=conversation,
        content=content,
        attachments=attachments,
        injected=True,
        run_id=run_id,
    )


@transaction.atomic
def _start_follow_up(*, conversation_id, run_id, mode, query_id):
    from chat import services
    from chat.models import Conversation, Message

    conversation = Conversation.objects.get(pk=conversation_id)
    # Another process may have started a run since this one finished (issue 10): that run
    # loads the follow-ups as history, so none is left unread; RunBusy skips this one.
    run_control.claim_conversation(conversation_id=conversation.pk)
    answer = services.assistant_message_start(conversation=conversation, run_id=run_id, mode=mode)
    return Message.objects.get(pk=query_id), answer


def open_run(**kwargs):
    """Persist the query (committed first), then prepare the run, in one thread hop."""
    query, answer, mode = _persist_query(**kwargs)
    return query, answer, mode, _prepare_or_failure(query)


def open_follow_up(**kwargs):
    query, answer = _start_follow_up(**kwargs)
    return query, answer, _prepare_or_failure(query)


def _prepare_or_failure(query) -> dict | Exception:
    """The run's preparation, or why it failed: the run reports that as its own failure."""
    try:
        return prepare(query)
    except Exception as exc:
        return exc


# Which models and budgets to use changes only when an admin edits a ModelConfig row; four
# lookups per run were a third of a run's database time. Reused for CONFIG_TTL_SECONDS.
CONFIG_TTL_SECONDS = 2.0
_config_cache: dict = {}


def _models_and_budgets() -> tuple:
    # The seams are part of the key: a test that substitutes one gets a fresh lookup.
    from chat import runs

    key = (runs.get_llm, runs.resolve_budget)
    now = time.monotonic()
    cached = _config_cache.get("config")
    if cached is not None and cached[0] == key and now - cached[1] < CONFIG_TTL_SECONDS:
        return cached[2]
    config = (
        runs.get_llm("main"),
        runs.get_llm("fast"),
        runs.resolve_budget("main"),
        runs.resolve_budget("fast"),
    )
    _config_cache["config"] = (key, now, config)
    return config


def prepare(query_row) -> dict:
    """Everything the run needs from the registry and the database (sync)."""
    main, fast, main_budget, fast_budget = _models_and_budgets()
    vision = bool(getattr(main, "supports_vision", True))
    query = query_message(query_row, vision=vision)
    return {
        "main": main,
        "fast": fast,
        "main_budget": main_budget,
        "fast_budget": fast_budget,
        "vision": vision,
        "query": dataclasses.replace(query, injected=False),  # the run's current query
    }


def save_summary(conversation_id, summary) -> None:
    from chat.summaries import summary_save

    summary_save(conversation_id=conversation_id, **dataclasses.asdict(summary))


def persist_finish(
    *, message_id, content, status, usage, compaction, error, extra, calibration
) -> str:
    from chat import services
    from chat.markdown import render_markdown
    from chat.models import Message

    message = Message.objects.get(pk=message_id)
    services.assistant_message_finish(
        message=message,
        content=content,
        status=status,
        usage=usage,
        compaction=compaction,
        error=error,
        extra=extra,
    )
    _record_calibration(calibration)
    return render_markdown(content) if content else ""


def _record_calibration(samples: list[tuple[int, int, int]]) -> None:
    """Teach the budget how this model's tokenizer compares with the estimate (issue 5)."""
    if not samples:
        return
    from contextmgmt.calibration import record_usage

    for config_id, estimated, reported in samples:
        try:
            record_usage(
                model_config_id=config_id, estimated_tokens=estimated, reported_tokens=reported
            )
        except Exception:  # calibration is advisory; it must never fail a run
            logger.warning("calibration sample for ModelConfig %s failed", config_id, exc_info=True)


def save_progress(*, message_id: int, content: str) -> None:
    """The streamed text so far, on the assistant message still ``running`` (a finished
    message is never touched)."""
    from chat.models import Message

    Message.objects.filter(pk=message_id, status=Message.Status.RUNNING).update(content=content)


def leftover_injections(*, conversation_id, run_id, taken_ids) -> list[int]:
    from chat.models import Message

    ids = Message.objects.filter(
        conversation_id=conversation_id,
        kind=Message.Kind.INJECTED,
        metadata__run_id=run_id,
    ).values_list("id", flat=True)
    return sorted(i for i in ids if i not in taken_ids)


def load_injection(message_id: int) -> ChatMessage:
    from chat import runs
    from chat.models import Message

    vision = bool(getattr(runs.get_llm("main"), "supports_vision", True))
    return query_message(Message.objects.get(pk=message_id), vision=vision)
