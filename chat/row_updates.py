"""The updates every run makes, as plain SQL: a conversation's row, an answer's row, and the
questions a run's end settles. Only ``chat.services`` and ``chat.compaction.ledger`` write through
them.

A run makes four updates: the conversation's time as it starts; its answer, the questions
it settled and the conversation's totals as it ends. Through ``QuerySet.update`` each spent
90-190 µs of CPU building and compiling its statement, the database some 20 µs running it
(``bench/run_statements.py``; docs/performance.md). So each is an ``UPDATE``
written here from the model's table and columns (``Model._meta``), run through
``connection.cursor()``; the values are prepared by their fields as the ORM prepares them
(``Field.get_db_prep_save`` for the values set, ``get_db_prep_value`` for the ones matched:
a UUID as the backend stores it, a datetime adapted, a JSON value encoded). An expression
as a value (``F(…)``) goes through the ORM. The same SQL serves SQLite and PostgreSQL
(double-quoted names, ``%s`` parameters); tests/support/compiled_updates.py checks each
against the ORM's update on both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import DatabaseError, connections, router, transaction
from django.db.models import Field, Model, Q

from chat.models import Conversation, Message


def _column(model: type[Model], name: str) -> tuple[Field, str]:
    """The model's field ``name`` and its column; a relation seen from the other side (or a
    field with no column) cannot be set or matched here."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or not field.column:
        raise TypeError(f"{model._meta.label}.{name} is not a column")
    return field, field.column


def _quoted(name: str) -> str:
    return f'"{name}"'


class RowUpdate:
    """``update(values, **where)`` sets ``values`` (field name → value) on the rows of
    ``model`` whose fields named by ``where`` (argument → field) equal the given values (a
    list: any of them), and whose ``fixed`` fields hold one of the fixed values; it returns
    how many rows changed."""

    def __init__(
        self,
        model: type[Model],
        *,
        where: Mapping[str, str],
        fixed: Mapping[str, tuple[Any, ...]] | None = None,
    ) -> None:
        self.model = model
        self.where = dict(where)
        self.fixed = dict(fixed or {})

    def update(self, values: Mapping[str, Any], /, **where: Any) -> int:
        if where.keys() != self.where.keys():
            raise TypeError(f"values for {sorted(self.where)} expected, got {sorted(where)}")
        if not self.plain_sql_for(values):
            return self._queryset(where).update(**values)
        using = router.db_for_write(self.model)
        connection = connections[using]
        meta = self.model._meta
        sets, params = [], []
        for name, value in values.items():
            field, column = _column(self.model, name)
            sets.append(f"{_quoted(column)} = %s")
            params.append(field.get_db_prep_save(value, connection=connection))
        conditions = []
        matches = [(self.where[argument], value) for argument, value in where.items()]
        for name, value in [*matches, *self.fixed.items()]:
            field, column = _column(self.model, name)
            if isinstance(value, list | tuple):
                if not value:
                    return 0
                marks = ", ".join(["%s"] * len(value))
                conditions.append(f"{_quoted(column)} IN ({marks})")
                params.extend(field.get_db_prep_value(v, connection) for v in value)
            else:
                conditions.append(f"{_quoted(column)} = %s")
                params.append(field.get_db_prep_value(value, connection))
        # Names from the model's own _meta; every value is a parameter.
        table = _quoted(meta.db_table)
        sql = f"UPDATE {table} SET {', '.join(sets)} WHERE {' AND '.join(conditions)}"  # noqa: S608
        with connection.cursor() as cursor:
            try:
                cursor.execute(sql, params)
            except DatabaseError:
                # As after the ORM's update: the transaction takes no more queries.
                if connection.in_atomic_block:
                    transaction.set_rollback(True, using=using)
                raise
            return cursor.rowcount

    def plain_sql_for(self, values: Mapping[str, Any]) -> bool:
        """Whether an update of these values runs as this module's SQL (an expression goes
        through the ORM)."""
        return not any(hasattr(value, "resolve_expression") for value in values.values())

    def _queryset(self, where: Mapping[str, Any]):
        match = Q()
        for argument, value in where.items():
            lookup = "__in" if isinstance(value, list | tuple) else ""
            match &= Q(**{f"{self.where[argument]}{lookup}": value})
        for name, fixed in self.fixed.items():
            match &= Q(**{f"{name}__in": fixed})
        return self.model._default_manager.filter(match)


# ``CONVERSATION.update({"updated_at": now}, conversation=id)``
CONVERSATION = RowUpdate(Conversation, where={"conversation": "id"})

# ``MESSAGE.update({...}, message=id)``
MESSAGE = RowUpdate(Message, where={"message": "id"})

# The user messages among ``ids`` that still wait for an answer (``pending``, or
# ``interrupted`` and answered again by a retry): ``WAITING_QUESTIONS.update({"status": …},
# conversation=id, ids=[…])``.
WAITING_QUESTIONS = RowUpdate(
    Message,
    where={"conversation": "conversation", "ids": "id"},
    fixed={
        "role": (Message.Role.USER,),
        "status": (Message.Status.PENDING, Message.Status.INTERRUPTED),
    },
)
