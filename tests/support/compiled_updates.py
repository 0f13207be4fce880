"""Side by side: each update a run makes through ``chat.row_updates`` (plain SQL) against
the same update through the ORM, on twin conversations. Used by
``tests/chat/test_row_updates.py`` (SQLite) and, in a Django subprocess on PostgreSQL, by
``tests/scale/test_plain_statements_postgres.py``.

``compare()`` returns, per update, whether it ran as its plain SQL (``compiled``), whether
it changed as many rows as the ORM's and left the twins' rows equal, and whether it changed
any. Each update runs twice with other values.
"""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from chat import row_updates
from chat.models import Conversation, Message

_MESSAGE_COLUMNS = ("role", "kind", "status", "content", "metadata", "html", "html_version")


def _twin(owner, name: str) -> tuple[Conversation, list[Message]]:
    conversation = Conversation.objects.create(owner=owner, title="twins")
    rows = []
    for i, (role, status) in enumerate(
        [("user", "pending"), ("user", "interrupted"), ("user", "done"), ("assistant", "running")]
    ):
        rows.append(
            Message.objects.create(
                conversation=conversation,
                role=role,
                status=status,
                content=f"{name} {i}",
                metadata={"n": i},
            )
        )
    rows[1].superseded_by = rows[2]
    rows[1].save(update_fields=["superseded_by"])
    return conversation, rows


def _state(conversation: Conversation) -> tuple:
    row = Conversation.objects.get(pk=conversation.pk)
    messages = Message.objects.filter(conversation=conversation).order_by("id")
    return (
        row.updated_at,
        row.ledger,
        [
            (*(getattr(m, c) for c in _MESSAGE_COLUMNS), m.superseded_by_id is None)
            for m in messages
        ],
    )


UPDATES = (
    "conversation_time",
    "conversation_totals_and_time",
    "conversation_totals",
    "answer",
    "answer_with_a_null",
    "one_waiting_question",
    "three_waiting_questions",
)
# Each update ran as plain SQL, matched the ORM's, and changed a row.
ALL_COMPILED_AND_EQUAL = {
    name: {"compiled": True, "equal": True, "changed": True} for name in UPDATES
}


def compare() -> dict[str, dict[str, bool]]:
    owner = get_user_model().objects.create_user(f"updates-{timezone.now().timestamp()}")
    at = timezone.now() - timedelta(days=3)
    report: dict[str, dict[str, bool]] = {}

    def check(name, compiled, values, where, orm):
        # ``where(conversation, rows)`` -> the update's filter values;
        # ``orm(conversation, rows, values)`` -> the ORM's update.
        equal, changed = True, True
        for round_ in range(2):
            a, a_rows = _twin(owner, f"{name} {round_}")
            b, b_rows = _twin(owner, f"{name} {round_}")
            # Other values each round.
            these = values(round_)
            got = compiled.update(these, **where(a, a_rows))
            want = orm(b, b_rows, these)
            equal = equal and got == want and _state(a)[1:] == _state(b)[1:]
            if "updated_at" in these:
                equal = equal and _state(a)[0] == _state(b)[0] == these["updated_at"]
            changed = changed and got > 0
        report[name] = {
            "compiled": compiled.plain_sql_for(these),
            "equal": equal,
            "changed": changed,
        }

    conversation = row_updates.CONVERSATION

    def by_conversation(c, rows):
        return {"conversation": c.pk}

    def conversation_orm(c, rows, values):
        return Conversation.objects.filter(pk=c.pk).update(**values)

    check(
        "conversation_time",
        conversation,
        lambda r: {"updated_at": at + timedelta(minutes=r)},
        by_conversation,
        conversation_orm,
    )
    check(
        "conversation_totals_and_time",
        conversation,
        lambda r: {"updated_at": at + timedelta(hours=r), "ledger": {"saved": r, "über": "ü"}},
        by_conversation,
        conversation_orm,
    )
    check(
        "conversation_totals",
        conversation,
        lambda r: {"ledger": {"summaries": {"7": [r, 2 * r]}}},
        by_conversation,
        conversation_orm,
    )

    def answer(c, rows):
        return {"message": rows[3].pk}

    def message_orm(c, rows, values):
        return Message.objects.filter(pk=rows[3].pk).update(**values)

    check(
        "answer",
        row_updates.MESSAGE,
        lambda r: {
            "content": f"answer {r} 答案",
            "status": "done",
            "kind": "answer",
            "metadata": {"usage": {"input_tokens": 100 + r}, "mode": "react"},
            "html": f"<p>answer {r}</p>",
            "html_version": 3 + r,
        },
        answer,
        message_orm,
    )
    check(
        "answer_with_a_null",
        row_updates.MESSAGE,
        lambda r: {"superseded_by": None, "status": "error" if r else "cancelled"},
        lambda c, rows: {"message": rows[1].pk},
        lambda c, rows, values: Message.objects.filter(pk=rows[1].pk).update(**values),
    )

    def waiting(count):
        def where(c, rows):
            return {"conversation": c.pk, "ids": [m.pk for m in rows[:count]]}

        def orm(c, rows, values):
            return Message.objects.filter(
                conversation_id=c.pk,
                role="user",
                pk__in=[m.pk for m in rows[:count]],
                status__in=["pending", "interrupted"],
            ).update(**values)

        return where, orm

    for name, count in (("one_waiting_question", 1), ("three_waiting_questions", 3)):
        where, orm = waiting(count)
        check(name, row_updates.WAITING_QUESTIONS, lambda r: {"status": "done"}, where, orm)
    return report
