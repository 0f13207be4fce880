"""The reads every run makes, as plain SQL through ``connection.cursor()``
(``chat.row_reads``), return the ORM's rows, value for value and type for type. (The same
comparison on PostgreSQL: tests/scale/test_plain_statements_postgres.py.)"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import DecimalField

from chat.models import Conversation
from chat.row_reads import PlainGet, PlainRead, SqlNames, convert
from tests.support import run_reads

pytestmark = pytest.mark.django_db

CHAT = Path(__file__).resolve().parents[2] / "chat"


def test_each_read_of_a_run_returns_the_orms_rows_rd_2():
    assert run_reads.compare() == run_reads.ALL_EQUAL


def test_no_product_code_uses_the_orms_compiler_rd_2():
    internals = ("get_compiler", "as_sql(", "apply_converters", "get_converters", "._fields")
    found = [
        f"{path.relative_to(CHAT.parent)}: {internal}"
        for path in CHAT.rglob("*.py")
        for internal in internals
        if internal in path.read_text(encoding="utf-8")
    ]
    assert found == []


def _titles_sql(q: SqlNames) -> str:
    return (
        f"SELECT {q.column(Conversation, 'title')}, {q.column(Conversation, 'created_at')} "
        f"FROM {q.table(Conversation)} WHERE {q.column(Conversation, 'id')} = %(conversation)s"
    )


TITLES = PlainRead(
    Conversation,
    _titles_sql,
    columns=(Conversation._meta.get_field("title"), Conversation._meta.get_field("created_at")),
    values={"conversation": Conversation._meta.get_field("id")},
)


def test_a_read_fills_in_the_values_of_each_call_rd_2(user):
    first = Conversation.objects.create(owner=user, title="first")
    second = Conversation.objects.create(owner=user, title="second")
    assert TITLES.rows(conversation=first.pk) == [("first", first.created_at)]
    assert TITLES.rows(conversation=second.pk) == [("second", second.created_at)]
    assert TITLES.rows(conversation=uuid.uuid4()) == []


def test_wrong_value_names_are_refused_rd_2():
    with pytest.raises(TypeError):
        TITLES.rows(conversation_id=uuid.uuid4())


def test_a_get_raises_as_the_orms_get_rd_2(user):
    get = PlainGet(Conversation, where={"conversation": "id"})
    with pytest.raises(Conversation.DoesNotExist):
        get.get(conversation=uuid.uuid4())
    same_title = PlainGet(Conversation, where={"title": "title"})
    Conversation.objects.create(owner=user, title="twice")
    Conversation.objects.create(owner=user, title="twice")
    with pytest.raises(Conversation.MultipleObjectsReturned):
        same_title.get(title="twice")


def test_a_column_type_without_a_written_conversion_is_refused_rd_2():
    """A new column of a type the module converts nowhere fails loudly, on SQLite and
    PostgreSQL alike, rather than reading rightly on one and wrongly on the other."""
    with pytest.raises(TypeError, match="DecimalField"):
        convert(DecimalField(max_digits=5, decimal_places=2), connection.vendor)
