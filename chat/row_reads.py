"""The reads every run makes, as plain SQL: its conversation (locked or not), its newest
summary and the history after it, whether a document was sent, the running answer, the
answer's row at the end and the conversation's totals.

Through the ORM each cost 0.4-7.6 ms of CPU, nearly all of it building and compiling the
query; as plain SQL 0.03-0.2 ms (``bench/run_statements.py``; docs/performance.md). So each
read is a statement written once per database from the models' tables and columns
(``Model._meta``, quoted by ``connection.ops.quote_name``) and run through
``connection.cursor()`` with its values as parameters, each prepared by its field as the
ORM prepares it (``Field.get_db_prep_value``: a UUID as the backend stores it, a datetime
adapted). The values read back are converted as the ORM converts them, explicitly per
vendor (``convert``): on SQLite a UUID comes as hex text, a time as a naive UTC datetime, a
boolean computed in SQL as 0/1; PostgreSQL's driver returns them as Python values already;
a JSON column comes as its text from both and is decoded with its field's decoder.
tests/support/run_reads.py checks every read against the ORM's on SQLite and PostgreSQL,
value for value and type for type.

The statements themselves live with the code that reads them (``chat.history_rows``,
``chat.runs.control``, …); this module holds what they share: ``SqlNames`` to write them,
``PlainRead`` to run one, ``PlainSelect`` for one table's rows filtered by equal values and
``PlainGet`` for a row read by key as a model instance.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.db import connections, router, transaction
from django.db.models import (
    BinaryField,
    BooleanField,
    CharField,
    DateTimeField,
    Field,
    FloatField,
    ForeignKey,
    IntegerField,
    JSONField,
    Model,
    TextField,
    UUIDField,
)
from django.db.transaction import TransactionManagementError
from django.utils.dateparse import parse_datetime

VENDORS = ("sqlite", "postgresql")


class SqlNames:
    """The quoted names of models' tables and columns on one connection, and the few
    expressions whose SQL differs between SQLite and PostgreSQL."""

    def __init__(self, connection: Any) -> None:
        if connection.vendor not in VENDORS:
            raise NotImplementedError(f"plain reads are written for {VENDORS}: {connection.vendor}")
        self.vendor: str = connection.vendor
        self._quote: Callable[[str], str] = connection.ops.quote_name

    def table(self, model: type[Model]) -> str:
        return self._quote(model._meta.db_table)

    def column(self, model: type[Model], name: str) -> str:
        """``"table"."column"`` of the model's field ``name``."""
        column = column_field(model, name).column
        assert column is not None  # column_field refuses a field without one
        return f"{self.table(model)}.{self._quote(column)}"

    def of(self, model: type[Model]) -> Callable[[str], str]:
        """``column`` for one model: ``message = q.of(Message)``; ``message("id")``."""
        return partial(self.column, model)

    def alias(self, name: str) -> str:
        return self._quote(name)

    def json_text(self, model: type[Model], name: str, key: str) -> str:
        """The text of the JSON column's top-level ``key`` (the ORM's ``KT``): a value's JSON
        text (``true``, ``[…]``), a string's own text, NULL when absent."""
        if not key.isidentifier():  # written into the SQL: only a name of the code's own
            raise ValueError(f"not a key name: {key!r}")
        column = self.column(model, name)
        if self.vendor == "postgresql":
            return f"({column} ->> '{key}')"
        path = f"'$.\"{key}\"'"
        return (
            f"(CASE WHEN JSON_TYPE({column}, {path}) IN ('false','null','true') "
            f"THEN JSON_TYPE({column}, {path}) ELSE JSON_EXTRACT({column}, {path}) END)"
        )

    def for_update(self) -> str:
        """The clause that locks the rows read (SQLite locks the whole database on write)."""
        return " FOR UPDATE" if self.vendor == "postgresql" else ""


def column_field(model: type[Model], name: str) -> Field:
    """The model's field ``name``, which must have a column (not a relation seen from the
    other side)."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or not field.column:
        raise TypeError(f"{model._meta.label}.{name} is not a column")
    return field


# --- values read back --------------------------------------------------------------------


def _sqlite_datetime(value: Any) -> Any:
    # Stored as UTC text ("YYYY-MM-DD HH:MM:SS.ffffff"); the driver parses it for a column
    # declared datetime, not for every expression. As the ORM, aware in UTC (USE_TZ).
    if value is None:
        return None
    if not isinstance(value, datetime):
        value = parse_datetime(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _sqlite_uuid(value: Any) -> Any:
    return None if value is None else uuid.UUID(value)


def _sqlite_bool(value: Any) -> Any:
    return bool(value) if value in (0, 1) else value


def _json(decoder: type[json.JSONDecoder] | None, value: Any) -> Any:
    # As JSONField.from_db_value: both drivers return the column's JSON text (Django has
    # psycopg load jsonb as text), and a text that is not JSON is returned as it is.
    if value is None:
        return None
    try:
        return json.loads(value, cls=decoder)
    except json.JSONDecodeError:
        return value


# Types whose values both drivers return as the ORM does (a binary column: bytes, or a
# memoryview from psycopg2, as the ORM returns it too).
_AS_READ = (CharField, TextField, IntegerField, FloatField, BinaryField)


def convert(field: Field, vendor: str) -> Callable[[Any], Any] | None:
    """What turns a value of ``field``'s column, as ``vendor``'s driver returns it, into
    the ORM's value (None: nothing to do). A type not listed here is refused, so a new
    column cannot be read wrongly on one database and rightly on the other."""
    while isinstance(field, ForeignKey):  # its column holds its target's values
        field = field.target_field
    if isinstance(field, JSONField):
        return partial(_json, field.decoder)
    if isinstance(field, DateTimeField):
        return _sqlite_datetime if vendor == "sqlite" else None
    if isinstance(field, UUIDField):
        return _sqlite_uuid if vendor == "sqlite" else None
    if isinstance(field, BooleanField):
        return _sqlite_bool if vendor == "sqlite" else None
    if isinstance(field, _AS_READ):
        return None
    raise TypeError(f"no conversion written for {type(field).__name__} ({field})")


def converted(rows: list[tuple], converters: list[tuple[int, Callable[[Any], Any]]]) -> list:
    if not converters:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for position, conversion in converters:
            values[position] = conversion(values[position])
        out.append(tuple(values))
    return out


# --- reads -------------------------------------------------------------------------------


class PlainRead:
    """``rows(**values)``: the rows of the statement ``write(names)`` returns (written once
    per database), its ``%(name)s`` parameters filled with ``values`` prepared by the fields
    named in ``values``; its columns converted by the fields in ``columns`` (one per
    selected column, in order; ``BooleanField()`` for a truth value computed in SQL). A
    field given by its name is ``model``'s (``column_field``).
    ``fixed``: parameters of constant values (a status, a role), passed as they are.
    ``locks``: the statement locks the rows it reads (``SqlNames.for_update``), so it reads
    the database rows are written to and is refused outside a transaction where the lock
    would end at once, as the ORM's ``select_for_update`` is."""

    def __init__(
        self,
        model: type[Model],
        write: Callable[[SqlNames], str],
        *,
        columns: tuple[Field | str, ...],
        values: Mapping[str, Field | str],
        fixed: Mapping[str, str] | None = None,
        locks: bool = False,
    ) -> None:
        self.model = model
        self._fixed = dict(fixed or {})
        self.locks = locks
        self._write = write
        self._columns = tuple(self._field(column) for column in columns)
        self._values = {name: self._field(field) for name, field in values.items()}
        # Per database alias: the statement and the converters of its columns.
        self._written: dict[str, tuple[str, list[tuple[int, Callable[[Any], Any]]]]] = {}

    def _field(self, field: Field | str) -> Field:
        return column_field(self.model, field) if isinstance(field, str) else field

    def rows(self, **values: Any) -> list[tuple]:
        if values.keys() != self._values.keys():
            raise TypeError(f"values for {sorted(self._values)} expected, got {sorted(values)}")
        using = (router.db_for_write if self.locks else router.db_for_read)(self.model)
        connection = connections[using]
        if self.locks and connection.vendor == "postgresql" and transaction.get_autocommit(using):
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        written = self._written.get(using)
        if written is None:
            written = self._written[using] = self._statement(connection)
        sql, converters = written
        params = {
            name: self._values[name].get_db_prep_value(value, connection)
            for name, value in values.items()
        }
        params.update(self._fixed)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return converted(cursor.fetchall(), converters)

    def _statement(self, connection: Any) -> tuple[str, list[tuple[int, Callable[[Any], Any]]]]:
        names = SqlNames(connection)
        converters = [
            (position, conversion)
            for position, field in enumerate(self._columns)
            if (conversion := convert(field, names.vendor)) is not None
        ]
        return self._write(names), converters


class PlainSelect(PlainRead):
    """``rows(**values)``: the fields ``columns`` of ``model``'s rows whose fields named by
    ``where`` (argument → field) equal the values, whose fields in ``fixed`` (field →
    constant) hold their constants and whose fields in ``present`` are not null; ordered
    by ``order_by`` (field names, ``-`` first for descending), at most ``limit`` of them;
    ``locks`` as ``PlainRead``'s. The one statement shape of several reads, written once."""

    def __init__(
        self,
        model: type[Model],
        *,
        columns: tuple[str, ...],
        where: Mapping[str, str],
        fixed: Mapping[str, str] | None = None,
        present: tuple[str, ...] = (),
        order_by: tuple[str, ...] = (),
        limit: int | None = None,
        locks: bool = False,
    ) -> None:
        self._selected = columns
        self._where = dict(where)
        self._fixed_fields = tuple(fixed or {})
        self._present = present
        self._order_by = order_by
        self._limit = limit
        super().__init__(
            model,
            self._sql,
            columns=columns,
            values=self._where,
            fixed={f"fixed_{name}": value for name, value in (fixed or {}).items()},
            locks=locks,
        )

    def _sql(self, names: SqlNames) -> str:
        column = names.of(self.model)
        conditions = [
            f"{column(field)} = %({argument})s" for argument, field in self._where.items()
        ]
        conditions += [f"{column(field)} = %(fixed_{field})s" for field in self._fixed_fields]
        conditions += [f"{column(field)} IS NOT NULL" for field in self._present]
        # Names from the model's _meta; every value is a parameter.
        sql = (
            f"SELECT {', '.join(column(name) for name in self._selected)} "  # noqa: S608
            f"FROM {names.table(self.model)} WHERE {' AND '.join(conditions)}"
        )
        if self._order_by:
            sql += " ORDER BY " + ", ".join(
                f"{column(name[1:])} DESC" if name.startswith("-") else column(name)
                for name in self._order_by
            )
        if self._limit is not None:
            sql += f" LIMIT {int(self._limit)}"
        return sql + (names.for_update() if self.locks else "")


class PlainGet:
    """``get(**values)``: the one row of ``model`` whose fields named by ``where`` (argument →
    field) equal the values, every column read and made an instance by ``Model.from_db`` as
    ``QuerySet.get`` makes it; ``DoesNotExist`` and ``MultipleObjectsReturned`` as ``get``
    raises them. ``for_update``: the row locked until the transaction ends (``PlainRead``'s
    ``locks``)."""

    def __init__(
        self, model: type[Model], *, where: Mapping[str, str], for_update: bool = False
    ) -> None:
        self.model = model
        self.for_update = for_update
        fields = model._meta.concrete_fields
        self._names = tuple(f.attname for f in fields)
        # Two rows at most: enough to tell one from several.
        self._read = PlainSelect(
            model,
            columns=tuple(f.name for f in fields),
            where=where,
            limit=2,
            locks=for_update,
        )

    def get(self, **values: Any) -> Any:
        rows = self._read.rows(**values)
        name = self.model._meta.object_name
        # Every concrete model has both exception classes; django-stubs declares them only
        # on each model class, not on ``Model`` itself.
        if not rows:
            raise self.model.DoesNotExist(  # type: ignore[attr-defined]
                f"{name} matching query does not exist."
            )
        if len(rows) > 1:
            raise self.model.MultipleObjectsReturned(  # type: ignore[attr-defined]
                f"get() returned more than one {name}."
            )
        using = (router.db_for_write if self.for_update else router.db_for_read)(self.model)
        return self.model.from_db(using, self._names, rows[0])
