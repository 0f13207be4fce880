"""The rows a run reads of its conversation: the newest summary and the messages it does not
cover (``chat.history`` turns them into ``ChatMessage``s).

Which messages, and why, is in ``chat.history``'s docstring. Read on every run, so the
common shapes (the newest summary; the history with no summary, or after a summary read
with its boundary's time) are plain SQL (``chat.row_reads``); a summary that left messages
out goes through the ORM (``history_query``, which the plain statements match row for row:
tests/support/run_reads.py). Each part of a load reads an index, never the whole
conversation (bench/scale.py, tests/chat/test_query_plans.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import (
    BooleanField,
    Exists,
    Field,
    OuterRef,
    QuerySet,
    Subquery,
    TextField,
    Value,
)
from django.db.models.fields.json import KT

from chat.models import ContextSummary, Message, ToolResult
from chat.row_reads import PlainRead, SqlNames, column_field
from contextmgmt.core.messages import Role
from contextmgmt.db_memory import StoredSummary


def latest_summary(conversation_id: Any) -> StoredSummary | None:
    """The newest summary of the conversation a user has not discarded, or None."""
    found = LATEST_SUMMARY.rows(conversation=conversation_id)
    if not found:
        return None
    (
        pk,
        content,
        through_id,
        covered_count,
        metadata,
        uncovered_ids,
        edited_at,
        covers_through_at,
    ) = found[0]
    return StoredSummary.from_row(
        pk,
        content,
        through_id,
        covered_count,
        metadata,
        uncovered_ids=uncovered_ids,
        edited=edited_at is not None,
        covers_through_at=covers_through_at,
    )


def latest_summary_query(*, conversation: Any) -> QuerySet:
    return (
        ContextSummary.objects.filter(conversation_id=conversation, discarded_at__isnull=True)
        # Not one ending on a branch of versions that is not shown (chat.versions).
        .filter(covers_through__superseded_by__isnull=True)
        .order_by("-covers_through__created_at", "-covers_through_id", "-id")
        .values_list(
            "id",
            "content",
            "covers_through_id",
            "covered_count",
            "metadata",
            "uncovered_ids",
            "edited_at",
            "covers_through__created_at",
        )[:1]
    )


def context_rows(conversation_id: Any) -> Any:
    """The conversation's messages that can be context, as a queryset (no order)."""
    return (
        Message.objects.filter(conversation_id=conversation_id, role__in=("user", "assistant"))
        .exclude(role="assistant", status="running")
        # Retried answers, and questions edited and sent again with what followed them.
        .filter(superseded_by__isnull=True)
    )


class HistoryRow(NamedTuple):
    """One message of the history as the load reads it (the columns of ``_with_columns``,
    in that order, so a database row becomes one without renaming)."""

    id: int
    role: Role  # the load reads only user and assistant messages
    content: str
    kind: str
    status: str
    created_at: datetime
    images: Any  # the metadata's image references (decoded JSON), or None
    pinned: bool
    covered: bool  # loaded only for its pin: the summary covers it
    documents: Any  # the metadata's document references (decoded JSON), or None
    has_tools: bool  # its run stored tool results
    facts: Any  # the facts found when its content was stored ({} for older rows)
    token_counts: Any  # its class counts, counted when stored (bytes; empty if never)


def history_rows(conversation_id: Any, *, summary: StoredSummary | None) -> list[HistoryRow]:
    """The history's messages, in (created_at, id) order."""
    rows: Iterable[tuple[Any, ...]]
    if summary is None:
        rows = HISTORY.rows(conversation=conversation_id)
    elif summary.covers_through_at is not None and not summary.uncovered_ids:
        rows = HISTORY_AFTER.rows(
            conversation=conversation_id,
            at=summary.covers_through_at,
            through=summary.covers_through_id,
        )
    else:  # rarer shapes (messages the summary left out, a boundary not read with it)
        rows = history_query(
            conversation=conversation_id,
            through=summary.covers_through_id,
            at=summary.covers_through_at,
            uncovered=summary.uncovered_ids,
        )
    return [
        HistoryRow(
            msg_id,
            role,
            content,
            kind,
            status,
            created_at,
            json_or_none(images),
            pinned,
            covered,
            json_or_none(documents),
            has_tools,
            facts,
            token_counts,
        )
        for (
            msg_id,
            role,
            content,
            kind,
            status,
            created_at,
            images,
            pinned,
            covered,
            documents,
            has_tools,
            facts,
            token_counts,
        ) in rows
    ]


def history_query(
    *, conversation: Any, through: int | None = None, at: Any = None, uncovered: Any = ()
) -> QuerySet:
    """The history's rows: all of them, or those after a summary covering through the
    message ``through`` (written at ``at``), with the pinned ones it covers and those it
    left out (``uncovered``)."""
    rows = context_rows(conversation)
    if through is None:
        parts = [rows.annotate(covered=Value(False))]
    else:
        parts = _parts_after(rows, through=through, at=at, uncovered=uncovered)
    parts = [_with_columns(part) for part in parts]
    combined = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    return combined.order_by("created_at", "id")


def _parts_after(rows: QuerySet, *, through: int, at: Any, uncovered: Any) -> list[QuerySet]:
    """What the summary does not cover, and what the user pinned, as disjoint parts that
    each read an index: the messages after the summary's end (a range of the
    conversation's (created_at, id) index), the pinned ones it covers (the partial index of
    pinned messages) and those it left out (by id). A message loaded only for its pin is
    marked ``covered``. One OR of the three made SQLite and PostgreSQL read the whole
    conversation (bench/scale.py)."""
    # The boundary's time as a value when the summary was read with it: the database then
    # plans the range with its statistics (PostgreSQL chose another index for a subquery).
    at = at or Subquery(Message.objects.filter(pk=through).values("created_at")[:1])
    after = rows.filter(created_at__gte=at).exclude(created_at=at, id__lte=through)
    upto = rows.filter(created_at__lte=at).exclude(created_at=at, id__gt=through)
    uncovered = [int(i) for i in uncovered]
    parts = [
        after.annotate(covered=Value(False)),
        upto.filter(pinned=True).exclude(id__in=uncovered).annotate(covered=Value(True)),
    ]
    if uncovered:
        parts.append(upto.filter(id__in=uncovered).annotate(covered=Value(False)))
    return parts


def _with_columns(rows: QuerySet) -> QuerySet:
    # Only the images key of the metadata: decoding every row's whole JSON (usage, run
    # facts, …) was a third of the load time at 2,000 messages. Named as an annotation, not
    # as "metadata__images" in values_list: Django resolves that name by first failing on
    # it as a field, and the exception it keeps ties this load (and through its frames the
    # run's whole history) in a reference cycle that only a full collection frees.
    # No order of its own (the model's default): the parts are ordered once combined.
    return (
        rows.order_by()
        .annotate(
            images_json=KT("metadata__images"),
            documents_json=KT("metadata__documents"),
            # Whether its run stored tool results: their records are read only when some did.
            has_tools=Exists(ToolResult.objects.filter(message_id=OuterRef("pk"))),
        )
        .values_list(
            "id",
            "role",
            "content",
            "kind",
            "status",
            "created_at",
            "images_json",
            "pinned",
            "covered",
            "documents_json",
            "has_tools",
            "facts",
            "token_counts",
        )
    )


# The shapes every run reads, as plain SQL (chat.row_reads): the same rows as
# latest_summary_query and history_query.


def _latest_summary_sql(q: SqlNames) -> str:
    summary = q.of(ContextSummary)
    through_at = q.column(Message, "created_at")
    return (
        f"SELECT {summary('id')}, {summary('content')}, {summary('covers_through')}, "  # noqa: S608 - names from _meta, values as parameters
        f"{summary('covered_count')}, {summary('metadata')}, {summary('uncovered_ids')}, "
        f"{summary('edited_at')}, {through_at} "
        f"FROM {q.table(ContextSummary)} INNER JOIN {q.table(Message)} "
        f"ON {summary('covers_through')} = {q.column(Message, 'id')} "
        f"WHERE {summary('conversation')} = %(conversation)s AND {summary('discarded_at')} IS NULL "
        f"AND {q.column(Message, 'superseded_by')} IS NULL "
        f"ORDER BY {through_at} DESC, {summary('covers_through')} DESC, {summary('id')} DESC "
        "LIMIT 1"
    )


def _history_part(q: SqlNames, *, covered: bool, where: str = "") -> str:
    """One part of the history (``_with_columns`` of ``context_rows``), ``where`` added."""
    message = q.of(Message)
    has_tools = (
        f"EXISTS(SELECT 1 FROM {q.table(ToolResult)} "  # noqa: S608 - names from _meta
        f"WHERE {q.column(ToolResult, 'message')} = {message('id')})"
    )
    return (
        f"SELECT {message('id')} AS {q.alias('id')}, {message('role')}, {message('content')}, "  # noqa: S608 - names from _meta, values as parameters
        f"{message('kind')}, {message('status')}, "
        f"{message('created_at')} AS {q.alias('created_at')}, "
        f"{q.json_text(Message, 'metadata', 'images')}, {message('pinned')}, "
        f"{'TRUE' if covered else 'FALSE'}, {q.json_text(Message, 'metadata', 'documents')}, "
        f"{has_tools}, {message('facts')}, {message('token_counts')} "
        f"FROM {q.table(Message)} WHERE {message('conversation')} = %(conversation)s "
        f"AND {message('role')} IN (%(user)s, %(assistant)s) "
        f"AND NOT ({message('role')} = %(assistant)s AND {message('status')} = %(running)s) "
        f"AND {message('superseded_by')} IS NULL{where}"
    )


def _ordered(q: SqlNames, *parts: str) -> str:
    return f"{' UNION ALL '.join(parts)} ORDER BY {q.alias('created_at')}, {q.alias('id')}"


def _history_sql(q: SqlNames) -> str:
    return _ordered(q, _history_part(q, covered=False))


def _history_after_sql(q: SqlNames) -> str:
    """After the summary covering through the message ``through`` (written at ``at``),
    with the pinned ones it covers (``_parts_after``: each part reads an index)."""
    at, message_id = q.column(Message, "created_at"), q.column(Message, "id")
    after = f" AND {at} >= %(at)s AND NOT ({at} = %(at)s AND {message_id} <= %(through)s)"
    pinned_upto = (
        f" AND {at} <= %(at)s AND NOT ({at} = %(at)s AND {message_id} > %(through)s)"
        f" AND {q.column(Message, 'pinned')}"
    )
    return _ordered(
        q,
        _history_part(q, covered=False, where=after),
        _history_part(q, covered=True, where=pinned_upto),
    )


def _message(name: str) -> Field:
    return column_field(Message, name)


def _summary(name: str) -> Field:
    return column_field(ContextSummary, name)


# The history's columns, as HistoryRow reads them: the JSON extractions come as text
# (json_or_none decodes them), the covered and has-tools marks as truth values.
_HISTORY_COLUMNS = (
    *(_message(name) for name in ("id", "role", "content", "kind", "status", "created_at")),
    TextField(),
    _message("pinned"),
    BooleanField(),
    TextField(),
    BooleanField(),
    _message("facts"),
    _message("token_counts"),
)
# The roles and the status the history's filter names.
_HISTORY_FIXED = {
    "user": Message.Role.USER.value,
    "assistant": Message.Role.ASSISTANT.value,
    "running": Message.Status.RUNNING.value,
}

LATEST_SUMMARY = PlainRead(
    ContextSummary,
    _latest_summary_sql,
    columns=(
        *(
            _summary(name)
            for name in (
                "id",
                "content",
                "covers_through",
                "covered_count",
                "metadata",
                "uncovered_ids",
                "edited_at",
            )
        ),
        _message("created_at"),
    ),
    values={"conversation": _summary("conversation")},
)
HISTORY = PlainRead(
    Message,
    _history_sql,
    columns=_HISTORY_COLUMNS,
    values={"conversation": _message("conversation")},
    fixed=_HISTORY_FIXED,
)
HISTORY_AFTER = PlainRead(
    Message,
    _history_after_sql,
    columns=_HISTORY_COLUMNS,
    values={
        "conversation": _message("conversation"),
        "at": _message("created_at"),
        "through": _message("id"),
    },
    fixed=_HISTORY_FIXED,
)


def json_or_none(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:  # not JSON: not a list of images either
        return None
