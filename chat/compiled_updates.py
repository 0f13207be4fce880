"""Updates every run makes, compiled once per database connection and shape, then run with
fresh values: the same idea as ``chat.compiled_reads``, for ``QuerySet.update``.

A run makes four updates: the conversation's time as it starts; its answer, the questions
it settled and the conversation's totals as it ends. Through the ORM each spent 90-190 µs
of CPU building and compiling its statement (in-process medians; more on a busy server),
the database some 20 µs running it (``bench/compiled_reads.py``; docs/operations.md,
"Throughput"). So the statement of a *shape* — which columns are set, which of them to
NULL, how many ids an ``in`` lookup names — is compiled once: the filter is built with
probe values (``compiled_reads.Probe``) whose positions among the parameters are
remembered, and the values set are those of the first update, which the compiler puts
first, in the order given. An update fills the set values as the compiler prepares them
(``Field.get_db_prep_save``) and the probes' positions as the compiled reads do.

The same escape hatch as the reads (the compiler's ``as_sql``, ``UpdateQuery`` through
``Query.chain``), tested against the ORM on SQLite and PostgreSQL. A shape this module
cannot place without doubt — an expression or a model instance as a value, a field with
its own placeholder, a filter over a join, a probe not found exactly once, an empty or
long ``in`` list — goes through the ORM: slower, never wrong.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, router, transaction
from django.db.models import Field, QuerySet
from django.db.models.sql import UpdateQuery

from .compiled_reads import Probe, same_param

# An ``in`` list longer than this runs through the ORM (each length is a shape of its own).
MAX_LISTED = 16


@dataclass(frozen=True)
class _Compiled:
    sql: str | None  # None: this shape runs through the ORM
    params: tuple = ()
    set_fields: tuple[Field, ...] = ()  # the fields set to a value, their params first
    slots: tuple[tuple[int, str, int | None], ...] = ()  # (position, probe, index in list)


class CompiledUpdate:
    """``build(**where)`` makes the queryset of the rows to change; ``update(values,
    **where)`` runs ``build(**where).update(**values)`` compiled (module docstring) and
    returns the number of rows it changed. A ``where`` value may be a list (for an ``in``
    lookup) when its probe's value is an int."""

    def __init__(self, build: Callable[..., QuerySet], **probes: Probe) -> None:
        self._build = build
        self._probes = probes
        self._model = None
        # Per connection object (each thread has its own): {shape: _Compiled}.
        self._compiled: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def update(self, values: Mapping[str, Any], /, **where: Any) -> int:
        if where.keys() != self._probes.keys():
            raise TypeError(f"values for {sorted(self._probes)} expected, got {sorted(where)}")
        shape = _shape(values, where)
        if self._model is None:
            self._model = self._build(**self._probe_values(where)).model
        using = router.db_for_write(self._model)
        connection = connections[using]
        compiled = None
        if shape is not None:
            shapes = self._compiled.setdefault(connection, {})
            compiled = shapes.get(shape)
            if compiled is None:
                compiled = shapes[shape] = self._compile(values, where, connection)
        if compiled is None or compiled.sql is None:
            return self._build(**where).update(**values)
        params = list(compiled.params)
        set_values = [value for value in values.values() if value is not None]
        pairs = zip(compiled.set_fields, set_values, strict=True)
        for position, (field, value) in enumerate(pairs):
            params[position] = field.get_db_prep_save(value, connection=connection)
        for position, name, index in compiled.slots:
            value = where[name] if index is None else where[name][index]
            params[position] = self._probes[name].field.get_db_prep_value(
                value, connection, prepared=False
            )
        with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            return cursor.rowcount

    def compiled_for(
        self, values: Mapping[str, Any], using: str = DEFAULT_DB_ALIAS, **where: Any
    ) -> bool:
        """Whether updates of this shape run compiled on this thread's connection to the
        database ``using`` (known after a first update)."""
        compiled = self._compiled.get(connections[using], {}).get(_shape(values, where))
        return compiled is not None and compiled.sql is not None

    def _probe_values(self, where: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for name, probe in self._probes.items():
            given = where[name]
            if isinstance(given, list | tuple) and isinstance(probe.value, int):
                out[name] = [probe.value - i for i in range(len(given))]
            elif isinstance(given, list | tuple):  # not compiled (``_compile``)
                out[name] = [probe.value] * len(given)
            else:
                out[name] = probe.value
        return out

    def _compile(self, values: Mapping[str, Any], where: Mapping[str, Any], connection):
        listed = [n for n, v in where.items() if isinstance(v, list | tuple)]
        if any(not isinstance(self._probes[n].value, int) for n in listed):
            return _Compiled(sql=None)
        probed = self._probe_values(where)
        query = self._build(**probed).query.chain(UpdateQuery)
        query.add_update_values(dict(values))
        if query.related_updates:
            return _Compiled(sql=None)  # the ORM would select the ids first
        set_fields, prepared_sets = [], []
        for field, _model, value in query.values:
            if hasattr(value, "resolve_expression") or hasattr(value, "prepare_database_save"):
                return _Compiled(sql=None)
            if hasattr(field, "get_placeholder"):
                return _Compiled(sql=None)
            if value is not None:
                prepared = field.get_db_prep_save(value, connection=connection)
                if hasattr(prepared, "as_sql"):
                    return _Compiled(sql=None)
                set_fields.append(field)
                prepared_sets.append(prepared)
        sql, params = query.get_compiler(connection=connection).as_sql()
        if query.count_active_tables() != 1:
            return _Compiled(sql=None)  # a filter over a join: rewritten as a subquery
        # The compiler puts the set values first, in the order given.
        leading = params[: len(prepared_sets)]
        if len(leading) != len(prepared_sets):
            return _Compiled(sql=None)
        if any(type(p) is not type(q) for p, q in zip(leading, prepared_sets, strict=True)):
            return _Compiled(sql=None)
        if sql.count("%s") != len(params):
            return _Compiled(sql=None)
        slots: list[tuple[int, str, int | None]] = []
        for name, probe in self._probes.items():
            wanted = probed[name] if name in listed else [probe.value]
            for index, value in enumerate(wanted):
                prepared = probe.field.get_db_prep_value(value, connection, prepared=False)
                found = [i for i, p in enumerate(params) if same_param(p, prepared)]
                if len(found) != 1 or found[0] < len(set_fields):
                    return _Compiled(sql=None)
                slots.append((found[0], name, index if name in listed else None))
        if len({position for position, _n, _i in slots}) != len(slots):
            return _Compiled(sql=None)
        return _Compiled(
            sql=sql, params=tuple(params), set_fields=tuple(set_fields), slots=tuple(slots)
        )


def _shape(values: Mapping[str, Any], where: Mapping[str, Any]) -> tuple | None:
    """What the statement depends on besides the values; None: run through the ORM."""
    lengths = []
    for value in where.values():
        if isinstance(value, list | tuple):
            if not value or len(value) > MAX_LISTED:
                return None
            lengths.append(len(value))
        else:
            lengths.append(None)
    return tuple(values), tuple(value is None for value in values.values()), tuple(lengths)
