"""Reads of the chat layer, always scoped to the requesting user (owner-only).

Foreign, unknown and malformed ids are indistinguishable to the caller: each raises the
model's ``DoesNotExist`` (views answer 404), so ids of other users' objects leak nothing.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from django.db import router, transaction
from django.db.models import Q, QuerySet
from django.db.transaction import TransactionManagementError
from django.utils.translation import gettext

from chat.compaction.summaries import summary_latest
from chat.errors import AttachmentNotFound, InvalidInput
from chat.history_rows import context_rows
from chat.models import (
    Attachment,
    ContextSummary,
    Conversation,
    Message,
    Project,
    ToolResult,
)
from chat.row_reads import PlainGet
from contextmgmt.models import ModelConfig

MAX_PAGE_SIZE = 200
MAX_ATTACHMENTS_PER_MESSAGE = 16


@dataclass(frozen=True)
class MessagePage:
    messages: list[Message]  # oldest first
    has_more: bool  # more messages exist beyond this page, in the direction paged


def conversation_list(*, user) -> QuerySet[Conversation]:
    """The user's conversations, most recently active first."""
    return Conversation.objects.filter(owner=user).order_by("-updated_at", "-created_at", "-pk")


@dataclass(frozen=True)
class ConversationPage:
    conversations: list[Conversation]  # most recently active first
    next_cursor: str | None  # pass as ``before`` for the page after this one; None: no more


def conversation_page(
    *,
    user,
    before: str | None = None,
    limit: int = 50,
    project: Project | Literal["any", "none"] = "any",
) -> ConversationPage:
    """A page of :func:`conversation_list`, by an opaque cursor; only the conversations of
    ``project`` (the user's), or of none (``"none"``), when asked.

    The cursor carries the last row's sort key itself (not its id), so a conversation that
    becomes active while the user scrolls moves to the top without shifting later pages.
    """
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidInput("invalid_limit", f"limit must be between 1 and {MAX_PAGE_SIZE}.")
    qs = conversation_list(user=user)
    if project == "none":
        qs = qs.filter(project__isnull=True)
    elif isinstance(project, Project):
        qs = qs.filter(project=project)
    if before:
        updated_at, created_at, pk = _conversation_cursor_read(before)
        qs = qs.filter(
            Q(updated_at__lt=updated_at)
            | Q(updated_at=updated_at, created_at__lt=created_at)
            | Q(updated_at=updated_at, created_at=created_at, pk__lt=pk)
        )
    rows = list(qs[: limit + 1])
    page = rows[:limit]
    more = len(rows) > limit
    return ConversationPage(
        conversations=page, next_cursor=_conversation_cursor(page[-1]) if more else None
    )


def _conversation_cursor(conversation: Conversation) -> str:
    key = "|".join(
        (
            conversation.updated_at.isoformat(),
            conversation.created_at.isoformat(),
            str(conversation.pk),
        )
    )
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _conversation_cursor_read(cursor: str) -> tuple[datetime, datetime, uuid.UUID]:
    invalid = InvalidInput("invalid_cursor", gettext("The cursor is not one this API gave out."))
    if len(cursor) > 200:
        raise invalid
    try:
        key = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        updated, created, pk = key.split("|")
        updated_at, created_at = datetime.fromisoformat(updated), datetime.fromisoformat(created)
        if updated_at.tzinfo is None or created_at.tzinfo is None:
            raise ValueError("a naive time")
        # In UTC here, not in the database driver: a forged time at the calendar's edge
        # (year 1 at +14:00) has no UTC and would otherwise fail as a server error.
        updated_at, created_at = updated_at.astimezone(UTC), created_at.astimezone(UTC)
        return updated_at, created_at, uuid.UUID(pk)
    except (ValueError, OverflowError, UnicodeDecodeError, binascii.Error):
        raise invalid from None


def conversation_get(*, user, conversation_id, for_update: bool = False) -> Conversation:
    """The user's conversation (``Conversation.DoesNotExist`` for anyone else's).
    ``for_update``: its row locked until the transaction ends (inside ``atomic``).
    Every request and run reads one: plain SQL (``chat.row_reads``)."""
    pk = as_uuid(conversation_id)
    if pk is None or not getattr(user, "is_authenticated", False):
        raise Conversation.DoesNotExist
    if not for_update:
        return _OWN_CONVERSATION.get(conversation=pk, owner=user.pk)
    if transaction.get_autocommit(router.db_for_write(Conversation)):
        # As the ORM refuses it: outside a transaction the lock would end at once.
        raise TransactionManagementError(
            "select_for_update cannot be used outside of a transaction."
        )
    return _OWN_CONVERSATION_LOCKED.get(conversation=pk, owner=user.pk)


def _own_conversation(*, conversation, owner) -> QuerySet:
    return Conversation.objects.filter(pk=conversation, owner_id=owner)


def _own_conversation_locked(*, conversation, owner) -> QuerySet:
    return Conversation.objects.select_for_update().filter(pk=conversation, owner_id=owner)


def message_by_id(message_id: int) -> Message:
    """A message by its id, whoever owns it (a run's own answer): plain SQL."""
    return _MESSAGE_BY_ID.get(message=message_id)


def _message_by_id(*, message) -> QuerySet:
    return Message.objects.filter(pk=message)


# The rows of _message_by_id, _own_conversation and _own_conversation_locked, as plain SQL.
_MESSAGE_BY_ID = PlainGet(Message, where={"message": "id"})
_OWN_CONVERSATION = PlainGet(Conversation, where={"conversation": "id", "owner": "owner"})
_OWN_CONVERSATION_LOCKED = PlainGet(
    Conversation, where={"conversation": "id", "owner": "owner"}, for_update=True
)


def message_page(
    *,
    conversation: Conversation,
    before_id: int | None = None,
    after_id: int | None = None,
    limit: int = 50,
) -> MessagePage:
    """A page of messages in creation order, by cursor.

    No cursor: the newest ``limit`` messages (``has_more``: older ones exist). ``before_id``:
    the ``limit`` messages just before that message (``has_more``: still older ones exist).
    ``after_id``: the ``limit`` messages just after it (``has_more``: newer ones exist).
    """
    if before_id is not None and after_id is not None:
        raise InvalidInput("invalid_cursor", "Use either before or after, not both.")
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidInput("invalid_limit", f"limit must be between 1 and {MAX_PAGE_SIZE}.")
    qs = Message.objects.filter(conversation=conversation)
    if after_id is not None:
        cursor = _cursor(conversation, after_id)
        qs = qs.filter(
            Q(created_at__gt=cursor.created_at) | Q(created_at=cursor.created_at, id__gt=cursor.id)
        )
        rows = list(qs.order_by("created_at", "id")[: limit + 1])
        return MessagePage(messages=rows[:limit], has_more=len(rows) > limit)
    if before_id is not None:
        cursor = _cursor(conversation, before_id)
        qs = qs.filter(
            Q(created_at__lt=cursor.created_at) | Q(created_at=cursor.created_at, id__lt=cursor.id)
        )
    rows = list(qs.order_by("-created_at", "-id")[: limit + 1])
    return MessagePage(messages=rows[:limit][::-1], has_more=len(rows) > limit)


def run_follow_ups(*, conversation_id, run_id: str) -> QuerySet[Message]:
    """The follow-ups stored for a run, by any server process, oldest first."""
    return Message.objects.filter(
        conversation_id=conversation_id, run_id=run_id, kind=Message.Kind.INJECTED
    ).order_by("created_at", "id")


def message_get(*, conversation: Conversation, message_id) -> Message:
    """A message of the (already owner-checked) conversation; DoesNotExist otherwise."""
    if not isinstance(message_id, int) or isinstance(message_id, bool):
        try:
            message_id = int(str(message_id))
        except ValueError:
            raise Message.DoesNotExist from None
    return Message.objects.get(pk=message_id, conversation=conversation)


def tool_result_get(*, conversation: Conversation, result_id) -> ToolResult:
    """A stored whole tool result of the (already owner-checked) conversation, by its id
    (``12`` or ``r12``, as a stub names it); DoesNotExist otherwise."""
    text = str(result_id)
    try:
        pk = int(text[1:] if text.startswith("r") else text)
    except ValueError:
        raise ToolResult.DoesNotExist from None
    return ToolResult.objects.get(pk=pk, conversation=conversation)


def tool_result_ids(*, messages: Iterable[Message]) -> dict[int, dict[str, int]]:
    """The stored whole results of ``messages`` (answers) by message id, then call id (the
    newest of a call id repeated in one run): one query for a page, none for a page
    without tool results."""
    ids = [m.pk for m in messages if _has_tool_result_steps(m)]
    out: dict[int, dict[str, int]] = {}
    if not ids:
        return out
    rows = ToolResult.objects.filter(message_id__in=ids).order_by("id")
    for pk, message_id, call_id in rows.values_list("id", "message_id", "call_id"):
        out.setdefault(message_id, {})[call_id] = pk
    return out


def _has_tool_result_steps(message: Message) -> bool:
    if message.role != Message.Role.ASSISTANT or not isinstance(message.metadata, dict):
        return False
    steps = message.metadata.get("steps")
    return isinstance(steps, list) and any(
        isinstance(s, dict) and s.get("kind") == "tool_result" for s in steps
    )


def summary_get(*, conversation: Conversation, summary_id) -> ContextSummary:
    """A summary of the conversation by id, or ``"current"`` for the one in force (the one
    the next request starts from); DoesNotExist otherwise. Discarded and replaced
    summaries stay readable by id (an old divider still opens)."""
    if summary_id == "current":
        found = summary_latest(conversation_id=conversation.pk)
        if found is None:
            raise ContextSummary.DoesNotExist
        return found
    try:
        pk = int(str(summary_id))
    except ValueError:
        raise ContextSummary.DoesNotExist from None
    return ContextSummary.objects.select_related("covers_through").get(
        pk=pk, conversation=conversation
    )


def summary_is_current(*, summary: ContextSummary) -> bool:
    current = summary_latest(conversation_id=summary.conversation_id)
    return current is not None and current.pk == summary.pk


def summary_covered_page(
    *, summary: ContextSummary, after_id: int | None = None, limit: int = 50
) -> MessagePage:
    """The messages the summary stands for, oldest first, ``limit`` at a time after the
    message ``after_id``. They are still stored: only the model's view of them changed."""
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidInput("invalid_limit", f"limit must be between 1 and {MAX_PAGE_SIZE}.")
    through = summary.covers_through
    qs = (
        context_rows(summary.conversation_id)
        .filter(
            Q(created_at__lt=through.created_at)
            | Q(created_at=through.created_at, id__lte=through.id)
        )
        .exclude(id__in=list(summary.uncovered_ids or []))
        # Never context: failed and empty answers.
        .exclude(role="assistant", kind=Message.Kind.ERROR)
        .exclude(role="assistant", content="")
    )
    if after_id is not None:
        cursor = _cursor(summary.conversation, after_id)
        qs = qs.filter(
            Q(created_at__gt=cursor.created_at) | Q(created_at=cursor.created_at, id__gt=cursor.id)
        )
    rows = list(qs.order_by("created_at", "id")[: limit + 1])
    return MessagePage(messages=rows[:limit], has_more=len(rows) > limit)


def attachments_for_ids(
    *, user, conversation: Conversation, file_ids: Iterable
) -> list[Attachment]:
    """The user's attachments of this conversation, in the order given, duplicates dropped.

    Raises ``AttachmentNotFound`` naming the first id that is malformed, unknown, foreign
    or from another conversation; ``InvalidInput`` when too many are given.
    """
    if isinstance(file_ids, str | bytes) or not isinstance(file_ids, Iterable):
        raise InvalidInput("invalid_attachments", "attachments must be a list of file ids.")
    wanted: list[uuid.UUID] = []
    for raw in file_ids:
        pk = as_uuid(raw)
        if pk is None:
            raise AttachmentNotFound(
                "attachment_not_found",
                gettext("Unknown attachment %(id)s.") % {"id": repr(raw)},
            )
        if pk not in wanted:
            wanted.append(pk)
    if len(wanted) > MAX_ATTACHMENTS_PER_MESSAGE:
        raise InvalidInput(
            "too_many_attachments",
            gettext("At most %(count)d attachments per message.")
            % {"count": MAX_ATTACHMENTS_PER_MESSAGE},
        )
    if not wanted:
        return []
    found = {
        a.pk: a
        for a in Attachment.objects.filter(owner=user, conversation=conversation, pk__in=wanted)
    }
    for pk in wanted:
        if pk not in found:
            raise AttachmentNotFound(
                "attachment_not_found", gettext("Unknown attachment %(id)s.") % {"id": f"'{pk}'"}
            )
    return [found[pk] for pk in wanted]


def image_descriptions(
    *, conversation: Conversation, messages: Iterable[Message]
) -> dict[str, str]:
    """What each image of these messages shows, by file id (one query): the stored
    description, for alt text. Only this conversation's attachments are looked at."""
    wanted = {
        pk
        for message in messages
        for image in (message.metadata or {}).get("images") or []
        if isinstance(image, dict) and (pk := as_uuid(image.get("file_id"))) is not None
    }
    if not wanted:
        return {}
    rows = (
        Attachment.objects.filter(conversation=conversation, pk__in=wanted)
        .exclude(description="")
        .values_list("pk", "description")
    )
    return {str(pk): description for pk, description in rows}


def attachment_get(*, user, file_id) -> Attachment:
    pk = as_uuid(file_id)
    if pk is None or not getattr(user, "is_authenticated", False):
        raise Attachment.DoesNotExist
    return Attachment.objects.get(pk=pk, owner=user)


def _cursor(conversation: Conversation, message_id: int) -> Message:
    try:
        return Message.objects.only("id", "created_at").get(
            pk=message_id, conversation=conversation
        )
    except (Message.DoesNotExist, ValueError, TypeError) as exc:
        raise InvalidInput(
            "invalid_cursor", "The cursor is not a message of this conversation."
        ) from exc


def as_uuid(value) -> uuid.UUID | None:
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str):
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def model_choices() -> list[dict]:
    """The main models a conversation may pick: every main-role ModelConfig, the active one
    (the default for conversations that pick none) first."""
    rows = ModelConfig.objects.filter(role=ModelConfig.Role.MAIN).order_by("-is_active", "name")
    return [
        {"id": row.pk, "name": row.name, "model": row.model, "active": row.is_active}
        for row in rows
    ]


def model_choice(model_config_id: int) -> dict | None:
    """One pickable main model (as ``model_choices`` lists it), or None when gone."""
    return next((m for m in model_choices() if m["id"] == model_config_id), None)
