"""Side by side: each read a run makes as plain SQL (``chat.row_reads``) against the same
query through the ORM, on a conversation with every kind of row those reads tell apart.
Used by ``tests/chat/test_row_reads.py`` (SQLite) and, in a Django subprocess on
PostgreSQL, by ``tests/scale/test_plain_statements_postgres.py``.

``compare()`` returns, per read, whether its rows equalled the ORM's value for value and
type for type (``1`` is not ``True``, a UUID is not its hex text) for three conversations
read one after the other, and whether it found any.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from chat import history_rows as history
from chat import selectors
from chat.compaction import ledger
from chat.documents.context import _SENT_DOCUMENT, _sent_document_query
from chat.models import Attachment, ContextSummary, Conversation, Message, ToolResult
from chat.runs import control


def _conversation(owner, *, with_summary: bool, name: str) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=name)
    start = timezone.now() - timedelta(hours=1)
    messages = []
    for i in range(12):
        role = "user" if i % 2 == 0 else "assistant"
        message = Message.objects.create(
            conversation=conversation,
            role=role,
            content=f"{name} message {i}",
            status="done" if role == "assistant" else "sent",
            pinned=i == 2,
            metadata={"images": [{"id": f"img{i}"}]} if i == 4 else {},
        )
        # Two messages at the same instant: the boundary is (created_at, id).
        at = start + timedelta(seconds=i if i != 7 else 6)
        Message.objects.filter(pk=message.pk).update(created_at=at)
        messages.append(message)
    Message.objects.filter(pk=messages[9].pk).update(superseded_by=messages[11])
    ToolResult.objects.create(
        conversation=conversation,
        message=messages[5],
        call_id="c1",
        name="calculator",
        arguments="{}",
        content="4",
        chars=1,
    )
    Message.objects.create(
        conversation=conversation, role="assistant", status="running", run_id=f"run-{name}"
    )
    Attachment.objects.create(
        conversation=conversation,
        owner=owner,
        kind=Attachment.Kind.DOCUMENT,
        message=messages[4],
        file=f"uploads/{name}.txt",
        original_name=f"{name}.txt",
        mime_type="text/plain",
        size=3,
    )
    if with_summary:
        ContextSummary.objects.create(
            conversation=conversation,
            content=f"{name}: the first seven messages",
            covers_through=messages[6],
            covered_count=7,
            metadata={"covered_tokens": 70},
            # A time and a null among the summary's columns.
            edited_at=start if name == "second" else None,
        )
    return conversation


READS = (
    "latest_summary",
    "history",
    "history_after_summary",
    "sent_document",
    "running_answer",
    "own_conversation",
    "own_conversation_locked",
    "message_by_id",
    "locked_ledger",
)
# Each read returned the ORM's rows for every conversation, and found some.
ALL_EQUAL = {name: {"equal": True, "rows": True} for name in READS}


def typed(value):
    """``value`` with the type of every value in it: equal only when the types are too."""
    if isinstance(value, list | tuple):
        return (type(value).__name__, [typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", {k: typed(v) for k, v in value.items()})
    return (type(value).__name__, value)


def compare() -> dict[str, dict[str, bool]]:
    owner = get_user_model().objects.create_user(f"reads-{timezone.now().timestamp()}")
    first = _conversation(owner, with_summary=True, name="first")
    second = _conversation(owner, with_summary=True, name="second")
    plain = _conversation(owner, with_summary=False, name="plain")
    report: dict[str, dict[str, bool]] = {}

    def check(name, read, orm):
        results = [typed(read(c)) == typed(orm(c)) for c in (first, second, plain)]
        report[name] = {"equal": all(results), "rows": bool(read(first))}

    def by_conversation(name, plain_read, query):
        # A read whose only value is the conversation, against its query through the ORM.
        check(
            name,
            lambda c: plain_read.rows(conversation=c.id),
            lambda c: [tuple(r) for r in query(conversation=c.id)],
        )

    by_conversation("latest_summary", history.LATEST_SUMMARY, history.latest_summary_query)
    by_conversation("history", history.HISTORY, history.history_query)

    def after(c):
        summary = history.latest_summary(c.id)
        if summary is None:
            return dict(through=0, at=timezone.now())
        return dict(through=summary.covers_through_id, at=summary.covers_through_at)

    check(
        "history_after_summary",
        lambda c: history.HISTORY_AFTER.rows(conversation=c.id, **after(c)),
        lambda c: [tuple(r) for r in history.history_query(conversation=c.id, **after(c))],
    )
    by_conversation("sent_document", _SENT_DOCUMENT, _sent_document_query)
    by_conversation("running_answer", control._RUNNING_ANSWER, control._running_answer_query)

    def fields(instance) -> tuple:
        # Every column, and the state the ORM leaves on an instance it read.
        values = tuple(getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields)
        return (type(instance), values, instance._state.adding, instance._state.db)

    def gets(name, get, orm):
        check(name, lambda c: fields(get(c)), lambda c: fields(orm(c)))

    gets(
        "own_conversation",
        lambda c: selectors.conversation_get(user=owner, conversation_id=c.id),
        lambda c: Conversation.objects.get(pk=c.id, owner=owner),
    )
    with transaction.atomic():
        gets(
            "own_conversation_locked",
            lambda c: selectors.conversation_get(user=owner, conversation_id=c.id, for_update=True),
            lambda c: Conversation.objects.select_for_update().get(pk=c.id, owner=owner),
        )

    with transaction.atomic():
        by_conversation("locked_ledger", ledger._LOCKED_LEDGER, ledger._locked_ledger_query)

    def newest_message(c):
        return Message.objects.filter(conversation=c).order_by("id").last()

    gets(
        "message_by_id",
        lambda c: selectors.message_by_id(newest_message(c).id),
        lambda c: Message.objects.get(pk=newest_message(c).id),
    )
    return report
