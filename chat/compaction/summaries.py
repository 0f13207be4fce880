"""Persisted load-time summaries: the chat layer owns writing them.

DbMemory returns ``new_summary`` when it summarised; the run persists it here, and the
next load starts from the newest summary plus the messages after it instead of paying for
the same summary again.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from chat.models import ContextSummary, Conversation, Message


def summary_latest(*, conversation_id: Any) -> ContextSummary | None:
    """The newest summary of the conversation a user has not discarded, or None."""
    return (
        ContextSummary.objects.filter(conversation_id=conversation_id, discarded_at__isnull=True)
        # Not one ending on a branch of versions that is not shown (chat.versions).
        .filter(covers_through__superseded_by__isnull=True)
        .select_related("covers_through")
        .order_by("-covers_through__created_at", "-covers_through_id", "-id")
        .first()
    )


@transaction.atomic
def summary_save(
    *,
    conversation_id: Any,
    summary: str,
    covers_through_id: int,
    covered_count: int,
    tokens: int = 0,
    metadata: dict[str, Any] | None = None,
    uncovered_ids: list[int] | None = None,
) -> ContextSummary:
    """Store a summary covering the conversation up to and including ``covers_through_id``.

    Two runs of one conversation may both summarise; the conversation row is locked so
    they serialise, and a summary that covers no more than the newest stored one is not
    stored (the newest is returned instead): summaries only ever move forward.
    ``uncovered_ids``: messages up to ``covers_through_id`` it does not cover.
    """
    if not summary.strip():
        raise ValidationError("A summary must not be empty.")
    if covered_count <= 0:
        raise ValidationError("A summary must cover at least one message.")
    conversation = Conversation.objects.select_for_update().get(pk=conversation_id)
    try:
        covers_through = Message.objects.get(pk=covers_through_id, conversation=conversation)
    except Message.DoesNotExist:
        raise ValidationError(
            f"Message {covers_through_id} is not part of conversation {conversation_id}."
        ) from None
    latest = summary_latest(conversation_id=conversation.pk)
    if latest is not None and (_position(latest.covers_through), latest.covered_count) >= (
        _position(covers_through),
        covered_count,
    ):
        return latest
    return ContextSummary.objects.create(
        conversation=conversation,
        covers_through=covers_through,
        content=summary,
        covered_count=covered_count,
        tokens=max(0, tokens),
        metadata=metadata or {},
        uncovered_ids=[int(i) for i in uncovered_ids or ()],
    )


def _position(message: Message) -> tuple:
    # Messages are ordered by (created_at, id) (chat.models.Message.Meta.ordering).
    return (message.created_at, message.pk)
