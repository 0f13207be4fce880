"""Read-only ORM queries built and compiled once per database connection, then run with
fresh values.

Every run reads the same few shapes of query (its conversation's newest summary, the
messages after it, whether it has documents, its running answer). Building a queryset and
compiling it to SQL costs the ORM 0.3-1.5 ms each time; the database answers in 0.05-0.2 ms
(measured: docs/operations.md, "Throughput"). So a shape is built once with *probe* values
in place of its parameters, compiled, and the probes' positions among the compiled
parameters are remembered; a read fills those positions with the real values, prepared as
the ORM prepares them (a UUID as the backend stores it, a datetime adapted), runs the SQL,
and passes the rows through the compiler's own converters. The rows are those the ORM
would return (tested side by side).

This is an escape hatch from Django's public API: it relies on the compiler's ``as_sql``,
``select``, ``get_converters`` and ``apply_converters`` and on the queryset's ``_fields``.
It is measured (``bench/compiled_reads.py``: 6.8 ms of CPU per run through the ORM, 0.4 ms
compiled; docs/operations.md, "Throughput") and checked row for row against the ORM on
SQLite and PostgreSQL by the tests, where a Django upgrade that changes those internals
shows first.

A shape whose probes cannot be located without doubt — a probe missing from the
parameters, two probes at one position, a ``values_list`` whose selected columns are not in
the asked order — is run through the ORM every time: slower, never wrong.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, router
from django.db.models import Field, Model, QuerySet

# Probe values no real row has: a conversation id, a row id, a time.
PROBE_UUID = uuid.UUID("f1e0f1e0-0000-4000-8000-00000000c0de")
PROBE_ID = -982_451_653
PROBE_TIME = datetime(1901, 2, 3, 4, 5, 6, 789_012, tzinfo=UTC)


@dataclass(frozen=True)
class Probe:
    """A value no real row has, standing in for a parameter, and the model field that
    prepares the real value for the database (as the ORM does for that column's lookups)."""

    field: Field
    value: Any


@dataclass(frozen=True)
class _Compiled:
    sql: str | None  # None: this shape runs through the ORM
    params: tuple = ()
    slots: tuple[tuple[int, str], ...] = ()  # (parameter position, value name)
    compiler: Any = None
    # The compiler's converters of the selected columns (``from_db_value`` and the
    # backend's own), looked up once: ``results_iter`` would look them up on every read.
    converters: dict = field(default_factory=dict)


class CompiledRead:
    """``build(**values)`` makes a ``values_list`` queryset; ``rows(**values)`` returns its
    rows as tuples, compiled once per connection (module docstring)."""

    def __init__(self, build: Callable[..., QuerySet], **probes: Probe) -> None:
        self._build = build
        self._probes = probes
        # The model build() reads, learnt from the first probe query.
        self._model: type[Model] | None = None
        # Per connection object (each thread has its own); gone with the connection.
        self._compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def rows(self, **values: Any) -> list[tuple]:
        if values.keys() != self._probes.keys():
            raise TypeError(f"values for {sorted(self._probes)} expected, got {sorted(values)}")
        model = self._model
        if model is None:
            model = self._model = self._probe_query().model
        connection = connections[router.db_for_read(model)]
        compiled = self._compiled.get(connection)
        if compiled is None:
            compiled = self._compiled[connection] = self._compile(self._probe_query(), connection)
        if compiled.sql is None:
            return [tuple(row) for row in self._build(**values)]
        params = list(compiled.params)
        for position, name in compiled.slots:
            params[position] = self._probes[name].field.get_db_prep_value(
                values[name], connection, prepared=False
            )
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            fetched = cursor.fetchall()
        if not compiled.converters:
            return [tuple(row) for row in fetched]
        return [
            tuple(row) for row in compiled.compiler.apply_converters(fetched, compiled.converters)
        ]

    def compiled_for(self, using: str = DEFAULT_DB_ALIAS) -> bool:
        """Whether this shape runs as compiled SQL on this thread's connection to the
        database ``using`` (known after a first read)."""
        compiled = self._compiled.get(connections[using])
        return compiled is not None and compiled.sql is not None

    def _probe_query(self) -> QuerySet:
        return self._build(**{name: probe.value for name, probe in self._probes.items()})

    def _compile(self, queryset: QuerySet, connection) -> _Compiled:
        compiler = queryset.query.get_compiler(connection=connection)
        sql, params = compiler.as_sql()
        # The rows come back in the select's order: it must be the values_list's.
        # values_list() keeps its names in ``_fields``, which django-stubs does not declare.
        names = list(queryset._fields)  # type: ignore[attr-defined]
        if [alias for _expression, _sql, alias in compiler.select] != names:
            return _Compiled(sql=None)
        slots: list[tuple[int, str]] = []
        for name, probe in self._probes.items():
            prepared = probe.field.get_db_prep_value(probe.value, connection, prepared=False)
            found = [i for i, value in enumerate(params) if same_param(value, prepared)]
            if not found:
                return _Compiled(sql=None)
            slots += [(i, name) for i in found]
        if len(slots) != len({position for position, _ in slots}):
            return _Compiled(sql=None)
        selected = [
            expression for expression, _sql, _alias in compiler.select[: compiler.col_count]
        ]
        if compiler.has_composite_fields(selected):
            return _Compiled(sql=None)  # rows the ORM would regroup into tuples
        return _Compiled(
            sql=sql,
            params=tuple(params),
            slots=tuple(slots),
            compiler=compiler,
            converters=compiler.get_converters(selected),
        )


def same_param(param: Any, prepared: Any) -> bool:
    # Same type too: a probe of -982451653 must not match a boolean or a float parameter.
    return type(param) is type(prepared) and param == prepared


class CompiledGet:
    """``get(**values)``: the one row of ``model`` that ``build(**values)`` (a filtered
    queryset) finds, read by a compiled statement of all its columns and made into an
    instance by ``Model.from_db``, as ``QuerySet.get`` makes it; ``DoesNotExist`` and
    ``MultipleObjectsReturned`` as ``get`` raises them. For the rows every run reads by
    key (its conversation, its answer): the ORM spends ~0.3 ms of CPU building and
    compiling such a query, the database a few microseconds answering it."""

    def __init__(self, model: type[Model], build: Callable[..., QuerySet], **probes: Probe) -> None:
        self.model = model
        self._names = tuple(f.attname for f in model._meta.concrete_fields)
        self._read = CompiledRead(
            lambda **values: build(**values).values_list(*self._names)[:2], **probes
        )

    def get(self, **values: Any):
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
        return self.model.from_db(router.db_for_read(self.model), self._names, rows[0])

    def compiled_for(self, using: str = DEFAULT_DB_ALIAS) -> bool:
        return self._read.compiled_for(using)
