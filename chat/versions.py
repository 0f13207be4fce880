"""Versions of a question or an answer, and which branch of them is shown.

An edited question and a regenerated (or retried) answer are new versions of the first one
(``Message.version_of`` names it); the earlier versions are kept. Exactly one version of
each is shown, with the messages that followed it: its branch. What is not shown is hidden
(``superseded_by``), and so left out by the history the model reads, by search and by the
export; ``branch_of`` names the version whose branch holds a hidden message, so showing a
version again brings back its branch as it was left, down to the version of a later answer
that was shown in it. docs/architecture.md, "Versions", has the picture.

Because the shown messages always form one chain in creation order, a version's branch is
the version and every shown message created after it, except, for an answer, the follow-ups
its run was handed: the next version of the answer answers them too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext

from chat import selectors
from chat.errors import Conflict
from chat.models import Conversation, Message
from chat.search import index as search_index
from chat.services import title_from


@dataclass(frozen=True)
class VersionShown:
    message_id: int  # the version now shown
    changed: bool  # False: it was shown already
    versions: tuple[int, ...]  # every version of it, oldest first
    title: str  # the conversation's title afterwards (it follows a first question)


def hidden_q() -> Q:
    """Messages hidden because another version is shown (a Q on ``Message``)."""
    return Q(superseded_by__isnull=False)


def is_hidden(message: Message) -> bool:
    return message.superseded_by_id is not None


def root_of(message: Message) -> int:
    """The first version of ``message`` (the id its versions are grouped by)."""
    return message.version_of_id or message.pk


def versions_of(messages: Iterable[Message]) -> dict[int, tuple[int, ...]]:
    """For each given message that has other versions: all its versions' ids, oldest first
    (one query for the lot)."""
    roots = {root_of(m) for m in messages}
    if not roots:
        return {}
    groups: dict[int, list[int]] = {}
    rows = (
        Message.objects.filter(Q(pk__in=roots) | Q(version_of_id__in=roots))
        .order_by("id")
        .values_list("id", "version_of_id")
    )
    for pk, version_of in rows:
        groups.setdefault(version_of or pk, []).append(pk)
    found = {}
    for message in messages:
        group = groups.get(root_of(message), [])
        if len(group) > 1:
            found[message.pk] = tuple(group)
    return found


def version_add(*, old: Message, new: Message, answer: Message | None = None) -> tuple[int, ...]:
    """``new`` becomes the shown version of ``old`` (an edited question with its new
    ``answer``, or a regenerated answer); ``old``'s branch is hidden, kept for a switch
    back. Called inside the transaction that stores ``new``. Returns the versions' ids."""
    root = root_of(old)
    Message.objects.filter(pk=new.pk).update(version_of_id=root)
    new.version_of_id = root
    successor_of_answers = answer.pk if answer is not None else new.pk
    _hide(
        _branch(old, keep=(new.pk, *((answer.pk,) if answer else ()))),
        branch_of=old.pk,
        by_user=new.pk,
        by_assistant=successor_of_answers,
    )
    return tuple(
        Message.objects.filter(Q(pk=root) | Q(version_of_id=root))
        .order_by("id")
        .values_list("id", flat=True)
    )


@transaction.atomic
def version_show(*, user, conversation_id: Any, message_id: Any) -> VersionShown:
    """Show ``message_id``'s version of its question or answer, with its branch as it was
    left; the version shown until now is hidden with its branch. Owner-only: another
    user's message, or an id that is not a message of this conversation, raises
    ``Message.DoesNotExist`` (404). Refused (409) while an answer is being written, and for
    a version inside a branch that is not shown (show that branch first)."""
    conversation = selectors.conversation_get(user=user, conversation_id=conversation_id)
    # Serialises with a run starting or another switch of this conversation.
    Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
    target = _message_of(conversation, message_id)
    root = root_of(target)
    group = list(Message.objects.filter(Q(pk=root) | Q(version_of_id=root)).order_by("id"))
    ids = tuple(m.pk for m in group)
    if not is_hidden(target):
        return VersionShown(target.pk, False, ids, conversation.title)
    shown = next((m for m in group if not is_hidden(m)), None)
    if shown is None or target.branch_of_id != target.pk:
        raise Conflict(
            "not_switchable",
            gettext("That version is inside a branch that is not shown; show that one first."),
        )
    if Message.objects.filter(
        conversation=conversation, role=Message.Role.ASSISTANT, status=Message.Status.RUNNING
    ).exists():
        raise Conflict("run_active", gettext("An answer is being written: wait or stop it first."))
    _hide(_branch(shown), branch_of=shown.pk, by_user=target.pk, by_assistant=target.pk)
    _show(Message.objects.filter(conversation=conversation, branch_of_id=target.pk))
    title = conversation.title
    if target.role == Message.Role.USER:
        title = title_follows(conversation=conversation, question=target, before=shown.content)
    return VersionShown(target.pk, True, ids, title)


def title_follows(*, conversation: Conversation, question: Message, before: str) -> str:
    """An automatic title (made from the first question, never renamed) follows that
    question when another version of it is shown; returns the title afterwards."""
    first = (
        Message.objects.filter(conversation=conversation, role=Message.Role.USER)
        .exclude(hidden_q())
        .exclude(pk=question.pk)
        .filter(pk__lt=question.pk)
        .exists()
    )
    automatic = conversation.title == title_from(before)
    if first or not automatic:
        return conversation.title
    title = title_from(question.content)
    if title and title != conversation.title:
        conversation.title = title
        conversation.save(update_fields=["title"])
        search_index.index_title(conversation=conversation)
    return conversation.title


# --- helpers ---------------------------------------------------------------------------------

_ROW_ID = re.compile(r"[1-9][0-9]{0,17}")


def _message_of(conversation: Conversation, message_id: Any) -> Message:
    # A row id is an int, or plain ASCII digits without sign, space or leading zero: int()
    # also reads " 359", "+359", "0359" and "٣٥٩" as 359 (a malformed id is a 404,
    # docs/protocol.md); at most 18 digits, so it fits the database's integer.
    if isinstance(message_id, int) and not isinstance(message_id, bool):
        pk = message_id
    elif isinstance(message_id, str) and _ROW_ID.fullmatch(message_id):
        pk = int(message_id)
    else:
        raise Message.DoesNotExist
    return Message.objects.get(
        conversation=conversation, pk=pk, role__in=(Message.Role.USER, Message.Role.ASSISTANT)
    )


def _branch(version: Message, *, keep: tuple[int, ...] = ()) -> list[Message]:
    """``version`` and the shown messages after it: what hiding it hides (``keep``: rows
    just stored for the next version)."""
    after = (
        Message.objects.filter(conversation_id=version.conversation_id, pk__gt=version.pk)
        .exclude(hidden_q())
        .exclude(pk__in=keep)
        .only("id", "role", "superseded_by")  # nothing else is needed to hide them
        .order_by("id")
    )
    if version.role == Message.Role.ASSISTANT and version.run_id:
        # Follow-ups handed to this answer's run: its next version answers them as well.
        after = after.exclude(run_id=version.run_id, kind=Message.Kind.INJECTED)
    return [version, *after]


def _hide(messages: list[Message], *, branch_of: int, by_user: int, by_assistant: int) -> None:
    """Two updates, whatever the branch's length: its user messages, then the others."""
    for is_user, by in ((True, by_user), (False, by_assistant)):
        ids = [
            m.pk for m in messages if not is_hidden(m) and (m.role == Message.Role.USER) == is_user
        ]
        if ids:
            Message.objects.filter(pk__in=ids).update(superseded_by_id=by, branch_of_id=branch_of)


def _show(messages) -> None:
    messages.update(superseded_by=None, branch_of=None)


# --- rows stored before versions existed ---------------------------------------------------


@dataclass(frozen=True)
class OldRow:
    """What a migration reads of one message stored before versions existed."""

    pk: int
    role: str
    kind: str
    superseded_by: int | None
    retry_of: int | None  # an answer's ``metadata["retry_of"]``


def links_of_old_rows(rows: list[OldRow]) -> dict[int, tuple[int | None, int | None]]:
    """``{pk: (version_of, branch_of)}`` for one conversation's rows (oldest first) whose
    replacements were stored without versions: a retried or regenerated answer and its
    successor (which says ``retry_of``), an edited question and its new copy, become
    versions; what an edit hid after its question joins that question's branch. Plain data
    in and out, so that the migration that links old rows uses it too."""
    by_pk = {row.pk: row for row in rows}
    version_of: dict[int, int] = {}
    links: dict[int, tuple[int | None, int | None]] = {}
    edited: list[int] = []
    later: list[OldRow] = []
    for row in rows:
        successor = by_pk.get(row.superseded_by) if row.superseded_by else None
        if successor is None:
            continue
        retried = row.role == "assistant" and successor.retry_of == row.pk
        questions = {row.role, successor.role} == {"user"} and row.kind == successor.kind
        if not (retried or (questions and row.kind == "query")):
            later.append(row)
            continue
        root = version_of.get(row.pk, row.pk)
        version_of[successor.pk] = root
        links[successor.pk] = (root, links.get(successor.pk, (None, None))[1])
        links[row.pk] = (links.get(row.pk, (None, None))[0], row.pk)
        if questions:
            edited.append(row.pk)
    for row in later:
        owner = max((pk for pk in edited if pk < row.pk), default=None)
        if owner is not None:
            links[row.pk] = (links.get(row.pk, (None, None))[0], owner)
    return links
