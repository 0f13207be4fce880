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


# --- retry (a failed answer asked again, without a second copy of the question) -------------

RETRYABLE_STATUSES = ("error", "cancelled", "interrupted")


@transaction.atomic
def _start_retry(*, user, conversation_id, message_id, run_id):
    """Start a run answering a failed answer's question again; mark the failed one
    ``superseded_by`` the new answer (the UI hides it, DbMemory skips it)."""
    from chat import selectors, services
    from chat.errors import ChatError
    from chat.models import Message

    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    failed = Message.objects.filter(
        conversation=conversation, pk=message_id, role=Message.Role.ASSISTANT
    ).first()
    if failed is None:
        raise ChatError("bad_message_id", "No answer with that id in this conversation.")
    metadata = dict(failed.metadata or {})
    if failed.status not in RETRYABLE_STATUSES or metadata.get("superseded_by"):
        raise ChatError(
            "not_retryable", "Only a failed, stopped or interrupted answer can be retried."
        )
    newest = (
        Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT)
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)
        .first()
    )
    if newest != failed.pk:
        raise ChatError("not_retryable", "Only the newest answer can be retried.")
    query = _question_of(failed)
    if query is None:
        raise ChatError("not_retryable", "The question of that answer is no longer there.")
    # RunBusy (nothing stored) when a run started since the caller looked.
    run_control.claim_conversation(conversation_id=conversation.pk)
    mode = metadata.get("mode") or conversation.mode
    answer = services.assistant_message_start(conversation=conversation, run_id=run_id, mode=mode)
    metadata["superseded_by"] = answer.pk
    Message.objects.filter(pk=failed.pk).update(metadata=metadata)
    # Follow-ups typed while the failed run worked were part of its question.
    if not metadata.get("run_id"):
        return query, answer, mode, []
    follow_ups = list(
        Message.objects.filter(
            conversation=conversation,
            kind=Message.Kind.INJECTED,
            metadata__run_id=metadata.get("run_id"),
        )
        .exclude(pk=query.pk)
        .order_by("created_at", "id")
    )
    return query, answer, mode, follow_ups


def _question_of(failed):
    """The user message a run answered: stored at its end (``query_id``), else — for a run
    the server died in — the newest user message before the answer (for a follow-up run
    that is its injected question, as ``open_follow_up`` picks it)."""
    from chat.models import Message

    users = Message.objects.filter(conversation_id=failed.conversation_id, role=Message.Role.USER)
    query_id = (failed.metadata or {}).get("query_id")
    if query_id:
        found = users.filter(pk=query_id).first()
        if found is not None:
            return found
    return users.filter(pk__lt=failed.pk).order_by("-created_at", "-id").first()


def open_retry(**kwargs):
    """Like ``open_run`` for a retry: ``(query, answer, mode, prepared, follow_ups)`` with
    the follow-ups as the ChatMessages the engine is handed at its first iteration."""
    query, answer, mode, follow_ups = _start_retry(**kwargs)
    prepared = _prepare_or_failure(query)
    vision = prepared["vision"] if isinstance(prepared, dict) else True
    return query, answer, mode, prepared, [query_message(m, vision=vision) for m in follow_ups]


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
    from contextmgmt.db_memory import load_history

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
        # The history as DbMemory reads it, in this same thread hop (one hop less per run);
        # the run's memory fits it to the budget.
        "history": load_history(query_row.conversation_id, vision=vision),
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
    if extra.get("retry_of") and extra.get("query_id"):
        # The question is answered again: an ``interrupted`` mark from the failed run is stale.
        Message.objects.filter(
            pk=extra["query_id"], status__in=[Message.Status.INTERRUPTED, Message.Status.PENDING]
        ).update(status=Message.Status.DONE)
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


def save_progress(*, message_id: int, content: str, record: dict | None = None) -> None:
    """The streamed text so far, and the run's steps and plan when given (``RunRecord``),
    on the assistant message still ``running`` (a finished message is never touched)."""
    from chat.models import Message

    running = Message.objects.filter(pk=message_id, status=Message.Status.RUNNING)
    if record is None:
        running.update(content=content)
        return
    with transaction.atomic():
        metadata = running.values_list("metadata", flat=True).first()
        if metadata is None:
            return  # finished meanwhile: the final write has it all
        running.update(content=content, metadata={**metadata, **record})


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
