"""Steering compaction: the user pins a message (kept verbatim) or edits or discards the
summary in force. Writes, as in ``chat.services`` (which re-exports them)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from chat.compaction.summaries import summary_latest
from chat.errors import Conflict, InvalidInput, check_storable
from chat.models import ContextSummary, Conversation, Message
from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.messages import SUMMARY_PREFIX

# An edited summary is sent as it is: it must stay a summary, not a second conversation.
SUMMARY_MAX_CHARS = 20_000


@transaction.atomic
def message_pin_set(*, message: Message, pinned: bool) -> Message:
    """Pin a message ("keep verbatim": load-time compaction leaves it out of the summary
    while pinned history fits in half the budget) or unpin it."""
    if not isinstance(pinned, bool):
        raise InvalidInput("invalid_pinned", gettext("pinned must be true or false."))
    if message.role not in (Message.Role.USER, Message.Role.ASSISTANT) or (
        message.kind == Message.Kind.ERROR
    ):
        raise InvalidInput("not_pinnable", gettext("Only questions and answers can be pinned."))
    if message.pinned != pinned:
        message.pinned = pinned
        message.save(update_fields=["pinned"])
    return message


@transaction.atomic
def summary_edit(*, summary: ContextSummary, content: Any) -> ContextSummary:
    """Replace the summary in force with the user's text, used as it is from the next
    request on (nothing rewrites it); the model's own text is kept in ``metadata``."""
    if not isinstance(content, str):
        raise InvalidInput("invalid_content", gettext("The summary must be text."))
    check_storable(content, "summary")
    text = content.strip()
    if text.startswith(SUMMARY_PREFIX):
        text = text[len(SUMMARY_PREFIX) :].strip()
    if not text:
        raise InvalidInput("empty_summary", gettext("The summary is empty: discard it instead."))
    if len(text) > SUMMARY_MAX_CHARS:
        raise InvalidInput(
            "summary_too_long",
            gettext("A summary may have at most %(count)s characters.")
            % {"count": f"{SUMMARY_MAX_CHARS:,}"},
        )
    summary = _summary_in_force(summary)
    metadata = dict(summary.metadata or {})
    metadata.setdefault("original", summary.content)
    summary.content = f"{SUMMARY_PREFIX}\n{text}"
    summary.tokens = CompactUtils.estimate_tokens(summary.content)
    summary.metadata = metadata
    summary.edited_at = timezone.now()
    summary.save(update_fields=["content", "tokens", "metadata", "edited_at"])
    return summary


@transaction.atomic
def summary_discard(*, summary: ContextSummary) -> int:
    """Discard the summary in force and the earlier ones folded into it: the next request
    summarises the original messages afresh. Returns how many summaries were discarded."""
    summary = _summary_in_force(summary)
    return ContextSummary.objects.filter(
        conversation_id=summary.conversation_id, discarded_at__isnull=True
    ).update(discarded_at=timezone.now())


def _summary_in_force(summary: ContextSummary) -> ContextSummary:
    """``summary``, locked, if it is the one the next request starts from; else Conflict."""
    Conversation.objects.select_for_update().filter(pk=summary.conversation_id).first()
    current = summary_latest(conversation_id=summary.conversation_id)
    if current is None or current.pk != summary.pk:
        raise Conflict(
            "summary_not_current",
            gettext(
                "This summary is no longer the one in use: a newer one replaced it, or it "
                "was discarded."
            ),
        )
    return current
