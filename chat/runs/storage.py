"""A run's rows: sync ORM functions the lifecycle calls through ``database_sync_to_async``,
each one thread hop.

Order matters and is kept here: the user message and the running answer are committed
before anything can fail (``open_run``, and the other ways a run opens: a follow-up, a
retry, an edit), and a run's end is stored before it is announced. Then what a run writes
while it works (a summary, its progress), its end (``persist_finish``) and what comes after
(the next history, follow-ups it never took). What the engine reads is
``chat.runs.preparation``'s.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.translation import gettext

from chat import selectors, services
from chat.compaction.summaries import summary_save
from chat.errors import ChatError
from chat.history import load_history
from chat.instructions import conversation_instructions
from chat.models import Conversation, Message
from chat.runs import control
from chat.search import index as search_index
from chat.tools.settings import switched_off
from chat.versions import hidden_q, is_hidden, title_follows, version_add
from contextmgmt.calibration import record_usage
from contextmgmt.core.llm import Usage
from contextmgmt.db_memory import LoadedHistory, NewSummary

logger = logging.getLogger(__name__)

RETRYABLE_STATUSES = ("error", "cancelled", "interrupted")


@dataclass(frozen=True)
class OpenedRun:
    """The committed rows a run starts from."""

    run_id: str
    query: Message  # the user message the run answers
    answer_id: int  # the assistant message, ``running``
    mode: str
    # Follow-ups the engine gets at its first iteration (a retry's: typed while the failed
    # run worked, so part of its question).
    follow_up_ids: tuple[int, ...] = ()
    # Other user messages this run answers (a follow-up run: the earlier leftovers, which
    # it reads as history). Settled with the query at the run's end.
    also_answers: tuple[int, ...] = ()
    # The main model the conversation picked (a ModelConfig id), None for the default.
    model_config_id: int | None = None
    # The conversation picked the built-in offline model (for the main and fast calls).
    builtin_model: bool = False
    # The tool sources switched off in the conversation, read with it (no query of its own).
    disabled_tool_sources: frozenset[str] = frozenset()
    # An edited question's or a regenerated answer's versions, oldest first (chat.versions).
    versions: tuple[int, ...] = ()
    # Whose conversation: the run's share of shared workers (fimone.extract.isolated).
    owner_id: int | None = None
    # The project the conversation is in, read with it (its files: chat.projects.context).
    project_id: int | None = None
    # The project's instructions, then the conversation's, framed (chat.instructions): read
    # with the conversation when the run opens, sent whole with every model call.
    instructions: str = ""


# --- opening a run (the user message is committed first) -------------------------------------


@transaction.atomic
def open_run(*, user, conversation_id, content, file_ids, mode, run_id) -> OpenedRun:
    """Persist the user message and start the answer; raises ``control.RunBusy`` (nothing
    stored) when another process started a run since we looked."""
    # Read and locked in one query: the claim below holds until the commit.
    conversation = selectors.conversation_get(
        user=user, conversation_id=conversation_id, for_update=True
    )
    attachments = selectors.attachments_for_ids(
        user=user, conversation=conversation, file_ids=list(file_ids)
    )
    control.refuse_if_running(conversation_id=conversation.pk)
    mode = mode or conversation.mode
    query = services.user_message_create(
        conversation=conversation, content=content, attachments=attachments, run_id=run_id
    )
    answer = services.assistant_message_start(
        conversation=conversation, run_id=run_id, mode=mode, question=query
    )
    return _opened(conversation, run_id=run_id, query=query, answer=answer, mode=mode)


@transaction.atomic
def persist_injection(*, user, conversation_id, content, file_ids, run_id, remote=False):
    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    attachments = selectors.attachments_for_ids(
        user=user, conversation=conversation, file_ids=list(file_ids)
    )
    if remote:
        # Another process's run: store the follow-up only while it still runs (RunNotActive
        # otherwise); its owner finishes under the same row lock, so it sees this message.
        control.lock_running_run(conversation_id=conversation.pk, run_id=run_id)
    return services.user_message_create(
        conversation=conversation,
        content=content,
        attachments=attachments,
        injected=True,
        run_id=run_id,
    )


@transaction.atomic
def open_follow_up(
    *, conversation_id, run_id, mode, query_id, also_answers: tuple[int, ...] = ()
) -> OpenedRun:
    """A run answering follow-ups the finished run's engine never saw: the newest is its
    question, the others (``also_answers``) come before it in the history."""
    conversation = Conversation.objects.get(pk=conversation_id)
    # Another process may have started a run since this one finished: that run loads the
    # follow-ups as history, so none is left unread; RunBusy skips this one.
    control.claim_conversation(conversation_id=conversation.pk)
    query = Message.objects.get(pk=query_id, conversation=conversation)
    answer = services.assistant_message_start(
        conversation=conversation, run_id=run_id, mode=mode, question=query
    )
    return _opened(
        conversation,
        run_id=run_id,
        query=query,
        answer=answer,
        mode=mode,
        also_answers=tuple(also_answers),
    )


@transaction.atomic
def open_retry(*, user, conversation_id, message_id, run_id, any_status=False) -> OpenedRun:
    """A run answering a failed answer's question again (no second copy of the question);
    the failed answer becomes an earlier version of the new one, hidden until the user
    shows it again (``chat.versions``). ``any_status``: a finished answer too (regenerate),
    not only a failed one."""
    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    failed = Message.objects.filter(
        conversation=conversation, pk=message_id, role=Message.Role.ASSISTANT
    ).first()
    if failed is None:
        raise ChatError("bad_message_id", gettext("No answer with that id in this conversation."))
    metadata = dict(failed.metadata or {})
    statuses = (*RETRYABLE_STATUSES, Message.Status.DONE) if any_status else RETRYABLE_STATUSES
    if failed.status not in statuses or is_hidden(failed):
        raise ChatError(
            "not_retryable",
            gettext("Only a finished answer can be regenerated.")
            if any_status
            else gettext("Only a failed, stopped or interrupted answer can be retried."),
        )
    newest = (
        Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT)
        .exclude(hidden_q())  # an earlier branch's answers may be newer
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)
        .first()
    )
    if newest != failed.pk:
        raise ChatError("not_retryable", gettext("Only the newest answer can be retried."))
    query = _question_of(failed)
    if query is None:
        raise ChatError("not_retryable", gettext("The question of that answer is no longer there."))
    # RunBusy (nothing stored) when a run started since the caller looked.
    control.claim_conversation(conversation_id=conversation.pk)
    mode = metadata.get("mode") or conversation.mode
    answer = services.assistant_message_start(
        conversation=conversation, run_id=run_id, mode=mode, question=query
    )
    # The failed or regenerated answer stays as an earlier version, one switch away.
    versions = version_add(old=failed, new=answer)
    follow_up_ids: tuple[int, ...] = ()
    if failed.run_id:
        follow_up_ids = tuple(
            Message.objects.filter(
                conversation=conversation, run_id=failed.run_id, kind=Message.Kind.INJECTED
            )
            .exclude(pk=query.pk)
            .order_by("created_at", "id")
            .values_list("id", flat=True)
        )
    # Answered anew: waiting again (an interrupted mark from the failed run is stale), and
    # settled with this run's end like any run's.
    services.user_messages_reopen(conversation_id=conversation.pk, ids=[query.pk, *follow_up_ids])
    return _opened(
        conversation,
        run_id=run_id,
        query=query,
        answer=answer,
        mode=mode,
        follow_up_ids=follow_up_ids,
        versions=versions,
    )


@transaction.atomic
def open_edit(*, user, conversation_id, message_id, content, run_id) -> OpenedRun:
    """A run answering an edited copy of the newest question: the new question keeps the
    old one's images; the old question and everything after it (its answers, follow-ups)
    are the earlier version's branch, hidden until the user shows it again (``chat.versions``);
    an automatic title follows an edited first question."""
    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    old = Message.objects.filter(
        conversation=conversation, pk=message_id, role=Message.Role.USER, kind=Message.Kind.QUERY
    ).first()
    if old is None or is_hidden(old):
        raise ChatError("bad_message_id", gettext("No question with that id in this conversation."))
    newest = (
        Message.objects.filter(
            conversation=conversation, role=Message.Role.USER, kind=Message.Kind.QUERY
        )
        .exclude(hidden_q())
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)
        .first()
    )
    if newest != old.pk:
        raise ChatError("not_editable", gettext("Only your last message can be edited."))
    # Images and documents alike: the edited question keeps its attachments.
    sent = [
        *((old.metadata or {}).get("images") or []),
        *((old.metadata or {}).get("documents") or []),
    ]
    file_ids = [i["file_id"] for i in sent if isinstance(i, dict) and i.get("file_id")]
    attachments = selectors.attachments_for_ids(
        user=user, conversation=conversation, file_ids=file_ids
    )
    # RunBusy (nothing stored) when a run started since the caller looked.
    control.claim_conversation(conversation_id=conversation.pk)
    mode = conversation.mode
    query = services.user_message_create(
        conversation=conversation, content=content, attachments=attachments, run_id=run_id
    )
    answer = services.assistant_message_start(
        conversation=conversation, run_id=run_id, mode=mode, question=query
    )
    # The old question and what followed it stay as the earlier version's branch.
    versions = version_add(old=old, new=query, answer=answer)
    title_follows(conversation=conversation, question=query, before=old.content)
    return _opened(
        conversation,
        run_id=run_id,
        query=query,
        answer=answer,
        mode=mode,
        versions=versions,
    )


def _opened(
    conversation: Conversation,
    *,
    run_id: str,
    query: Message,
    answer: Message,
    mode: str,
    follow_up_ids: tuple[int, ...] = (),
    also_answers: tuple[int, ...] = (),
    versions: tuple[int, ...] = (),
) -> OpenedRun:
    """The opened run, with what it reads of its conversation (read with it, no query of
    its own)."""
    return OpenedRun(
        run_id=run_id,
        query=query,
        answer_id=answer.pk,
        mode=mode,
        follow_up_ids=follow_up_ids,
        also_answers=also_answers,
        versions=versions,
        model_config_id=conversation.model_config_id,
        builtin_model=conversation.builtin_model,
        disabled_tool_sources=switched_off(conversation),
        owner_id=conversation.owner_id,
        project_id=conversation.project_id,
        instructions=conversation_instructions(conversation),
    )


def _question_of(failed: Message) -> Message | None:
    """The user message a run answered: stored when it started (``question``), else — an
    answer from before that was stored — the newest user message before the answer (for a
    follow-up run that is its injected question, as ``open_follow_up`` picks it)."""
    users = Message.objects.filter(conversation_id=failed.conversation_id, role=Message.Role.USER)
    if failed.question_id:
        found = users.filter(pk=failed.question_id).first()
        if found is not None:
            return found
    return users.filter(pk__lt=failed.pk).exclude(hidden_q()).order_by("-created_at", "-id").first()


# --- what a started run writes -------------------------------------------------------------


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
