"""The reads every run makes, compiled once per connection (``chat.compiled_reads``), return
the ORM's rows; a shape whose parameters cannot be located runs through the ORM.
(The same comparison on PostgreSQL: tests/scale/test_compiled_statements_postgres.py.)"""

from __future__ import annotations

import pytest

from chat.compiled_reads import PROBE_UUID, CompiledRead, Probe
from chat.models import Conversation, Message
from tests.support import compiled_reads

pytestmark = pytest.mark.django_db


def test_each_read_of_a_run_runs_compiled_and_returns_the_orms_rows():
    report = compiled_reads.compare()
    assert report == compiled_reads.ALL_COMPILED_AND_EQUAL


def _titles(*, conversation):
    return Conversation.objects.filter(pk=conversation).values_list("title")


def test_a_compiled_read_fills_in_the_values_of_each_call(user):
    read = CompiledRead(_titles, conversation=Probe(Conversation._meta.get_field("id"), PROBE_UUID))
    first = Conversation.objects.create(owner=user, title="first")
    second = Conversation.objects.create(owner=user, title="second")
    assert read.rows(conversation=first.pk) == [("first",)]
    assert read.compiled_for()
    assert read.rows(conversation=second.pk) == [("second",)]
    assert read.rows(conversation=PROBE_UUID) == []


def test_a_shape_without_its_probe_among_the_parameters_runs_through_the_orm(user):
    # The probe names a conversation the query never filters on: not found, so no slot.
    def newest(*, conversation):
        return Conversation.objects.order_by("-created_at").values_list("title")[:1]

    read = CompiledRead(newest, conversation=Probe(Message._meta.get_field("id"), -5))
    Conversation.objects.create(owner=user, title="only")
    assert read.rows(conversation=1) == [("only",)]
    assert not read.compiled_for()


def test_wrong_value_names_are_refused():
    read = CompiledRead(_titles, conversation=Probe(Conversation._meta.get_field("id"), PROBE_UUID))
    with pytest.raises(TypeError):
        read.rows(conversation_id=PROBE_UUID)
