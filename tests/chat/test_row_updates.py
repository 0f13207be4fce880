"""The updates every run makes, as plain SQL through ``connection.cursor()``
(``chat.row_updates``), change the rows the ORM's updates change; an expression as a value
goes through the ORM. (The same comparison on PostgreSQL:
tests/scale/test_plain_statements_postgres.py.)"""

from __future__ import annotations

import uuid

import pytest
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.transaction import TransactionManagementError

from chat import row_updates
from chat.models import Conversation, Message
from tests.support import compiled_updates

pytestmark = pytest.mark.django_db


def test_each_update_of_a_run_runs_as_plain_sql_and_changes_what_the_orm_changes_rd_2():
    assert compiled_updates.compare() == compiled_updates.ALL_COMPILED_AND_EQUAL


def test_no_update_uses_the_orms_compiler_rd_2():
    import chat.row_updates as module

    source = open(module.__file__, encoding="utf-8").read()
    for internal in ("get_compiler", "UpdateQuery", "as_sql", "_fields", "chat.compiled"):
        assert internal not in source


@pytest.fixture
def three_user_messages(user):
    conversation = Conversation.objects.create(owner=user, title="t")
    return [
        Message.objects.create(conversation=conversation, role="user", status="pending")
        for _ in range(3)
    ]


def test_an_update_of_a_row_that_is_gone_changes_nothing(three_user_messages):
    gone = three_user_messages[0]
    gone.delete()
    assert row_updates.MESSAGE.update({"status": "done"}, message=gone.pk) == 0
    assert row_updates.CONVERSATION.update({"title": "x"}, conversation=uuid.uuid4()) == 0


def test_an_expression_runs_through_the_orm(three_user_messages):
    first = three_user_messages[0]
    values = {"html_version": F("html_version") + 2}
    assert row_updates.MESSAGE.update(values, message=first.pk) == 1
    assert not row_updates.MESSAGE.plain_sql_for(values)
    first.refresh_from_db()
    assert first.html_version == 2


def test_an_empty_or_long_id_list(user, three_user_messages):
    conversation = three_user_messages[0].conversation_id
    waiting = row_updates.WAITING_QUESTIONS
    assert waiting.update({"status": "done"}, conversation=conversation, ids=[]) == 0
    many = [m.pk for m in three_user_messages] + [-i for i in range(1, 40)]
    assert waiting.update({"status": "done"}, conversation=conversation, ids=many) == 3
    statuses = set(Message.objects.values_list("status", flat=True))
    assert statuses == {"done"}


def test_only_waiting_user_messages_of_the_conversation_are_settled(user, three_user_messages):
    first, second, third = three_user_messages
    Message.objects.filter(pk=second.pk).update(status="done")
    other = Conversation.objects.create(owner=user, title="other")
    elsewhere = Message.objects.create(conversation=other, role="user", status="pending")
    ids = [first.pk, second.pk, elsewhere.pk]
    settled = row_updates.WAITING_QUESTIONS.update(
        {"status": "cancelled"}, conversation=first.conversation_id, ids=ids
    )
    assert settled == 1
    rows = dict(Message.objects.values_list("pk", "status"))
    assert rows == {
        first.pk: "cancelled",
        second.pk: "done",
        third.pk: "pending",
        elsewhere.pk: "pending",
    }


def test_wrong_value_names_are_refused():
    with pytest.raises(TypeError):
        row_updates.MESSAGE.update({"status": "done"}, pk=1)


def test_a_failed_update_spoils_its_transaction_as_the_orms_does(three_user_messages):
    # A NOT NULL column set to NULL: the database refuses it, and (as after the ORM's
    # update) the transaction takes no more queries until its atomic block ends.
    first = three_user_messages[0]
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            row_updates.MESSAGE.update({"role": None}, message=first.pk)
        with pytest.raises(TransactionManagementError):
            Message.objects.count()
    first.refresh_from_db()
    assert first.role == "user"
