"""The updates every run makes, compiled once per connection and shape
(``chat.compiled_updates``), change the rows the ORM's updates change; a shape that cannot
be placed without doubt runs through the ORM. (The same comparison on PostgreSQL:
tests/scale/test_compiled_statements_postgres.py.)"""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.transaction import TransactionManagementError

from chat import row_updates
from chat.compiled_reads import PROBE_ID, PROBE_UUID, Probe
from chat.compiled_updates import MAX_LISTED, CompiledUpdate
from chat.models import Conversation, Message
from tests.support import compiled_updates

pytestmark = pytest.mark.django_db


def test_each_update_of_a_run_runs_compiled_and_changes_what_the_orm_changes():
    assert compiled_updates.compare() == compiled_updates.ALL_COMPILED_AND_EQUAL


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
    assert row_updates.MESSAGE.compiled_for({"status": "done"}, message=gone.pk)
    assert row_updates.CONVERSATION.update({"title": "x"}, conversation=PROBE_UUID) == 0


def test_an_expression_runs_through_the_orm(three_user_messages):
    first = three_user_messages[0]
    values = {"html_version": F("html_version") + 2}
    assert row_updates.MESSAGE.update(values, message=first.pk) == 1
    assert not row_updates.MESSAGE.compiled_for(values, message=first.pk)
    first.refresh_from_db()
    assert first.html_version == 2


def test_an_empty_or_long_id_list_runs_through_the_orm(user, three_user_messages):
    conversation = three_user_messages[0].conversation_id
    waiting = row_updates.WAITING_QUESTIONS
    assert waiting.update({"status": "done"}, conversation=conversation, ids=[]) == 0
    many = [m.pk for m in three_user_messages] + [-i for i in range(1, MAX_LISTED)]
    assert len(many) > MAX_LISTED
    assert waiting.update({"status": "done"}, conversation=conversation, ids=many) == 3
    assert not waiting.compiled_for({"status": "done"}, conversation=conversation, ids=many)


def test_each_length_of_an_id_list_is_a_shape_of_its_own(three_user_messages):
    conversation = three_user_messages[0].conversation_id
    ids = [m.pk for m in three_user_messages]
    waiting = row_updates.WAITING_QUESTIONS
    assert waiting.update({"status": "done"}, conversation=conversation, ids=ids[:1]) == 1
    assert waiting.update({"status": "done"}, conversation=conversation, ids=ids) == 2
    assert waiting.compiled_for({"status": "x"}, conversation=conversation, ids=ids)
    statuses = set(Message.objects.filter(pk__in=ids).values_list("status", flat=True))
    assert statuses == {"done"}


def test_a_filter_over_a_join_runs_through_the_orm(user, three_user_messages):
    update = CompiledUpdate(
        lambda *, owner: Message.objects.filter(conversation__owner_id=owner),
        owner=Probe(type(user)._meta.get_field("id"), PROBE_ID),
    )
    assert update.update({"status": "done"}, owner=user.pk) == 3
    assert not update.compiled_for({"status": "done"}, owner=user.pk)
    assert set(Message.objects.values_list("status", flat=True)) == {"done"}


def test_wrong_value_names_are_refused():
    with pytest.raises(TypeError):
        row_updates.MESSAGE.update({"status": "done"}, pk=1)


def test_a_failed_update_spoils_its_transaction_as_the_orms_does(three_user_messages):
    # A NOT NULL column set to NULL: the database refuses it, and (as after the ORM's
    # update) the transaction takes no more queries until its atomic block ends.
    first = three_user_messages[0]
    row_updates.MESSAGE.update({"status": "done"}, message=first.pk)  # compiled from here on
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            row_updates.MESSAGE.update({"role": None}, message=first.pk)
        assert row_updates.MESSAGE.compiled_for({"role": None}, message=first.pk)
        with pytest.raises(TransactionManagementError):
            Message.objects.count()
    first.refresh_from_db()
    assert first.role == "user"


def test_a_list_for_a_probe_that_is_not_an_int_runs_through_the_orm(user):
    kept = Conversation.objects.create(owner=user, title="kept")
    renamed = Conversation.objects.create(owner=user, title="old")
    update = CompiledUpdate(
        lambda *, conversations: Conversation.objects.filter(pk__in=conversations),
        conversations=Probe(Conversation._meta.get_field("id"), PROBE_UUID),
    )
    assert update.update({"title": "new"}, conversations=[renamed.pk]) == 1
    assert not update.compiled_for({"title": "new"}, conversations=[renamed.pk])
    titles = set(Conversation.objects.values_list("title", flat=True))
    assert titles == {"kept", "new"} and kept.pk != renamed.pk
