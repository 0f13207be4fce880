"""DbMemory (SPEC R4): a conversation's persisted history, fitted to a budget at load time.

Read-only (R4.2): the chat layer owns every write, including the summaries this class
produces — ``new_summary`` says what to persist (``chat.summaries.summary_save``), and the
next load starts from the newest persisted summary plus the messages after it, so a long
conversation is not re-summarised from scratch on every request (issue 5).

What is loaded, and why:
- user messages of every kind and status: what the user typed is context, even when the
  run that answered it failed;
- assistant messages with text, except failed ones (``kind``/``status`` ``error``: an error
  text is not an answer and would teach the model to apologise) and the in-flight one
  (``running``); a cancelled or interrupted answer keeps its partial text, which the user
  saw and may refer to ("go on"); an answer the user retried (``metadata["superseded_by"]``,
  websocket ``retry``) is skipped: its successor answers the same question;
- the trailing user message is dropped (R4.3): it is the current query, which the agent
  appends itself, pinned;
- images (``metadata["images"]``) become base64 data-URL parts for vision models, a text
  note ``[image: name, WxH]`` otherwise; an attachment row or file that is missing or
  unreadable becomes ``[image: name unavailable]``, never an exception.

Queries are constant: one for the newest summary, one for the messages, one for all their
attachments. The ORM work runs in a sync function through ``sync_to_async``; the
compaction LLM call runs on the event loop.
"""

from __future__ import annotations

import base64
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import Q

from contextmgmt.core.compact import CompactResult, CompactUtils, clip_to_tokens
from contextmgmt.core.guard import DEFAULT_COMPACT_TIMEOUT
from contextmgmt.core.llm import LLM
from contextmgmt.core.memory import BaseMemory
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage

logger = logging.getLogger(__name__)

# A stored summary is written to a quarter of the budget of its day; if the budget has
# shrunk since (another model, an admin edit) and the summary takes more than half of the
# new one, it is clipped to a quarter so that the recent messages keep room.
_SUMMARY_MAX_SHARE = 2
_SUMMARY_CLIP_SHARE = 4

_SKIPPED_ASSISTANT_STATUSES = ("error", "running")


@dataclass(frozen=True, slots=True)
class StoredSummary:
    """A persisted summary as DbMemory needs it (built from a ``chat.ContextSummary``)."""

    content: str
    covers_through_id: int
    covered_count: int
    covered_tokens: int = 0
    id: int | None = None

    @classmethod
    def from_model(cls, row: Any) -> StoredSummary:
        return cls.from_row(
            row.pk, row.content, row.covers_through_id, row.covered_count, row.metadata
        )

    @classmethod
    def from_row(
        cls, pk: int, content: str, covers_through_id: int, covered_count: int, metadata: Any
    ) -> StoredSummary:
        return cls(
            content=content,
            covers_through_id=covers_through_id,
            covered_count=covered_count,
            covered_tokens=int((metadata or {}).get("covered_tokens", 0)),
            id=pk,
        )


@dataclass(frozen=True, slots=True)
class NewSummary:
    """What the chat layer should persist: ``summary_save(conversation_id=…, **asdict(s))``."""

    summary: str
    covers_through_id: int
    covered_count: int
    tokens: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class LoadedHistory:
    messages: list[ChatMessage]  # after the stored summary, trailing user message dropped
    summary: StoredSummary | None


def summary_message(summary: StoredSummary, max_tokens: int | None = None) -> ChatMessage:
    text = summary.content
    if not text.startswith(SUMMARY_PREFIX):
        text = f"{SUMMARY_PREFIX}\n{text}"
    if max_tokens is not None and CompactUtils.estimate_tokens(text) > max_tokens // (
        _SUMMARY_MAX_SHARE
    ):
        text = clip_to_tokens(text, max(1, max_tokens // _SUMMARY_CLIP_SHARE))
    return ChatMessage(
        role="system",
        content=text,
        metadata={
            "summary_id": summary.id,
            "covers_through": summary.covers_through_id,
            # What llm_compact folds into the next summary's count.
            "summarized_count": summary.covered_count,
        },
    )


# --- loading (sync, ORM) -------------------------------------------------------------------


class CompiledRead:
    """A read-only ORM query built and compiled once per database connection, then run with
    fresh parameter values.

    Building and compiling a queryset costs the ORM 0.2-0.4 ms; SQLite answers the query
    in ~15 µs. DbMemory's queries run on every message of every user, so each shape is
    compiled once with probe values in place of the parameters; the probes' positions in
    the compiled parameters are filled per call, and the rows go through the converters
    the ORM itself would apply (dates, JSON). A shape whose probes cannot be located
    unambiguously is simply run through the ORM every time.
    """

    def __init__(self, model_label: str, build, **probes: Any) -> None:
        self._model_label = model_label  # where the rows come from: the database to read
        self._build = build  # (**values) -> a values_list() queryset
        self._probes = probes
        self._compiled: dict[str, tuple] = {}  # alias -> (connection, sql, params, slots, …)

    def rows(self, **values: Any) -> list[tuple]:
        from django.apps import apps
        from django.db import connections, router

        alias = router.db_for_read(apps.get_model(self._model_label))
        connection = connections[alias]
        entry = self._compiled.get(alias)
        if entry is None or entry[0] is not connection:  # each thread has its connection
            entry = self._compile(self._build(**self._probes), connection)
            self._compiled[alias] = entry
        _, sql, params, slots, compiler, converters = entry
        if sql is None:
            return list(self._build(**values))
        params = list(params)
        for index, name in slots:
            params[index] = _prepped(compiler, name, values[name], connection)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if converters:
            rows = compiler.apply_converters(rows, converters)
        return [tuple(row) for row in rows]

    def _compile(self, queryset, connection) -> tuple:
        compiler = queryset.query.get_compiler(connection=connection)
        sql, params = compiler.as_sql()
        # values_list() of plain fields and annotations in select order (no reordering).
        columns = [expression for expression, _sql, _alias in compiler.select]
        names = list(queryset._fields)
        slots, ok = [], len(columns) == len(names)
        for name, probe in self._probes.items():
            prepped = _prepped(compiler, name, probe, connection)
            found = [i for i, value in enumerate(params) if value == prepped]
            ok = ok and bool(found)
            slots += [(i, name) for i in found]
        if not ok or len(slots) != len({i for i, _ in slots}):
            return (connection, None, (), [], None, None)
        converters = compiler.get_converters(columns)
        return (connection, sql, tuple(params), slots, compiler, converters)


def _prepped(compiler, name: str, value: Any, connection) -> Any:
    """A probe or value as the compiled SQL's parameter: UUIDs as the backend stores them."""
    if name == "conversation":
        from chat.models import Message

        return Message._meta.get_field("conversation").get_db_prep_value(value, connection)
    return value


# Probes: values no real row has (a conversation id, a message id) so they are found among
# the compiled parameters exactly where the real values go.
_PROBE_CONVERSATION = uuid.UUID("f1e0f1e0-0000-4000-8000-00000000c0de")
_PROBE_MESSAGE = -982_451_653


def _latest_summary_query(*, conversation):
    from chat.models import ContextSummary

    return (
        ContextSummary.objects.filter(conversation_id=conversation)
        .order_by("-covers_through__created_at", "-covers_through_id", "-id")
        .values_list("id", "content", "covers_through_id", "covered_count", "metadata")[:1]
    )


def _history_query(*, conversation, through=None):
    from chat.models import Message

    rows = (
        Message.objects.filter(conversation_id=conversation, role__in=("user", "assistant"))
        .exclude(role="assistant", status="running")
        .exclude(role="assistant", metadata__has_key="superseded_by")
    )
    if through is not None:
        # Only what the summary does not cover, in (created_at, id) order.
        covered = Message.objects.filter(pk=through).values("created_at")
        rows = rows.filter(
            Q(created_at__gt=covered[:1]) | Q(created_at=covered[:1], id__gt=through)
        )
    # Only the images key of the metadata: decoding every row's whole JSON (usage, run
    # facts, …) was a third of the load time at 2,000 messages. The annotation comes last
    # (values_list puts annotations after fields): rows are in select order.
    return rows.order_by("created_at", "id").values_list(
        "id", "role", "content", "kind", "status", "created_at", "metadata__images"
    )


_LATEST_SUMMARY = CompiledRead(
    "chat.ContextSummary", _latest_summary_query, conversation=_PROBE_CONVERSATION
)
_HISTORY = CompiledRead("chat.Message", _history_query, conversation=_PROBE_CONVERSATION)
_HISTORY_AFTER = CompiledRead(
    "chat.Message", _history_query, conversation=_PROBE_CONVERSATION, through=_PROBE_MESSAGE
)


def load_history(
    conversation_id: Any,
    *,
    vision: bool = True,
    summary: StoredSummary | None = None,
    use_summaries: bool = True,
) -> LoadedHistory:
    """The conversation's history as ChatMessages (R4.3 steps 1–3). Sync: 3 queries at most."""
    if use_summaries and summary is None:
        found = _LATEST_SUMMARY.rows(conversation=conversation_id)
        summary = StoredSummary.from_row(*found[0]) if found else None
    if not use_summaries:
        summary = None

    if summary is None:
        rows = _HISTORY.rows(conversation=conversation_id)
    else:
        rows = _HISTORY_AFTER.rows(conversation=conversation_id, through=summary.covers_through_id)
    rows = [(*row[:5], _image_refs(row[6]), row[5]) for row in rows]
    if rows and rows[-1][1] == "user":
        rows.pop()  # the current query: the agent re-appends it, pinned (R4.3 step 2)

    kept = [r for r in rows if _is_context(r)]
    attachments = _attachments_for(conversation_id, kept)
    return LoadedHistory(
        messages=[_to_chat_message(r, attachments, vision) for r in kept], summary=summary
    )


def _is_context(row: tuple) -> bool:
    _id, role, content, kind, status, refs, _created = row
    if role == "user":
        return bool(content) or bool(refs)
    return bool(content) and kind != "error" and status not in _SKIPPED_ASSISTANT_STATUSES


def _image_refs(images: Any) -> list[dict]:
    """The well-formed entries of ``metadata["images"]`` (anything else is ignored)."""
    if not images or not isinstance(images, list):
        return []
    return [i for i in images if isinstance(i, dict)]


def _attachments_for(conversation_id: Any, rows: list[tuple]) -> dict[str, Any]:
    """All referenced attachments of this conversation, in one query, keyed by str(id)."""
    from chat.models import Attachment

    ids = set()
    for row in rows:
        for ref in row[5]:
            try:
                ids.add(uuid.UUID(str(ref.get("file_id"))))
            except ValueError:
                continue  # a malformed reference degrades to a note below
    if not ids:
        return {}
    # Scoped to the conversation: a forged file_id cannot pull another user's image.
    found = Attachment.objects.filter(conversation_id=conversation_id, pk__in=ids).only(
        "id", "file", "mime_type", "original_name", "width", "height"
    )
    return {str(a.pk): a for a in found}


def _to_chat_message(row: tuple, attachments: dict[str, Any], vision: bool) -> ChatMessage:
    msg_id, role, content, _kind, _status, refs, created_at = row
    body: Any = content
    if refs:
        body = _with_images(content, refs, attachments, vision)
    return ChatMessage(
        role=role,
        content=body,
        metadata={"id": msg_id, "created_at": created_at.isoformat()},
    )


def _with_images(text: str, refs: list[dict], attachments: dict[str, Any], vision: bool) -> Any:
    notes: list[str] = []
    images: list[dict] = []
    for ref in refs:
        file_id = str(ref.get("file_id"))
        attachment = attachments.get(_normalised(file_id))
        if attachment is None:
            notes.append(f"[image: {file_id} unavailable]")
            continue
        name = attachment.original_name or file_id
        if not vision:
            notes.append(f"[image: {name}, {attachment.width}x{attachment.height}]")
            continue
        url = _data_url(attachment)
        if url is None:
            notes.append(f"[image: {name} unavailable]")
        else:
            images.append({"type": "image_url", "image_url": {"url": url}})
    if not images:
        return "\n".join([t for t in (text, *notes) if t])
    parts: list[dict] = []
    joined = "\n".join([t for t in (text, *notes) if t])
    if joined:
        parts.append({"type": "text", "text": joined})
    return parts + images


def _normalised(file_id: str) -> str:
    try:
        return str(uuid.UUID(file_id))
    except ValueError:
        return file_id


def _data_url(attachment: Any) -> str | None:
    try:
        with attachment.file.open("rb") as fh:
            data = fh.read()
    except (OSError, ValueError) as exc:  # missing file, unreadable, no file at all
        logger.warning("attachment %s unreadable: %s", attachment.pk, exc)
        return None
    if not data:
        return None
    return f"data:{attachment.mime_type};base64,{base64.b64encode(data).decode('ascii')}"


# --- the memory -----------------------------------------------------------------------------


class DbMemory(BaseMemory):
    """Read-only memory over a conversation's persisted messages (R4, DESIGN §2).

    After ``get_messages()``: ``was_compacted``, ``original_count``, ``compacted_count``
    (R4.4); ``strategy`` ("none", "summary" — a stored summary was reused, "llm",
    "truncate"); ``tokens_before`` / ``tokens_after``; ``result`` (the CompactResult of a
    compaction run during this load, else None); ``new_summary`` (a NewSummary to persist,
    or None when nothing new was summarised).
    """

    def __init__(
        self,
        conversation_id: Any,
        max_tokens: int,
        compact_llm: LLM | None = None,
        vision: bool = True,
        summary: StoredSummary | None = None,
        *,
        use_summaries: bool = True,
        keep_recent: int = 4,
        hint: str = "general",
        compact_timeout: float | None = DEFAULT_COMPACT_TIMEOUT,
        loaded: LoadedHistory | None = None,
    ) -> None:
        self.conversation_id = conversation_id
        # What ``load_history`` already read for this memory (same conversation, vision and
        # summary options), e.g. in the caller's own database thread hop: the next
        # get_messages() starts from it instead of reading again; later ones read afresh.
        self._loaded = loaded
        # Bounds the summary call like the guard's (R3.7): a hung compaction LLM falls back
        # to truncation instead of holding the run at load time.
        self.compact_timeout = compact_timeout
        self.max_tokens = max_tokens
        self.compact_llm = compact_llm
        self.vision = vision
        self.summary = summary
        self.use_summaries = use_summaries
        self.keep_recent = keep_recent
        self.hint = hint
        self._reset_flags()

    def _reset_flags(self) -> None:
        self.was_compacted = False
        self.original_count = 0
        self.compacted_count = 0
        self.strategy = "none"
        self.tokens_before = 0
        self.tokens_after = 0
        self.result: CompactResult | None = None
        self.new_summary: NewSummary | None = None

    async def add_message(self, message: ChatMessage) -> None:
        """No-op (R4.2): the chat layer persists messages."""

    async def clear(self) -> None:
        """No-op (R4.2): deleting history is the chat layer's business."""

    async def get_messages(self) -> list[ChatMessage]:
        self._reset_flags()
        loaded, self._loaded = self._loaded, None
        if loaded is None:
            loaded = await sync_to_async(load_history)(
                self.conversation_id,
                vision=self.vision,
                summary=self.summary,
                use_summaries=self.use_summaries,
            )
        stored = loaded.summary
        history = loaded.messages
        base = ([summary_message(stored, self.max_tokens)] if stored else []) + history
        tokens = CompactUtils.estimate_messages_tokens(base)
        self.original_count = (stored.covered_count if stored else 0) + len(history)
        self.tokens_before = (stored.covered_tokens if stored else 0) + (
            CompactUtils.estimate_messages_tokens(history) if stored else tokens
        )
        if tokens <= self.max_tokens:
            self.was_compacted = stored is not None
            self.strategy = "summary" if stored else "none"
            self.compacted_count = len(base)
            self.tokens_after = tokens
            return base

        if self.compact_llm is not None:
            result = await CompactUtils.llm_compact(
                base,
                self.compact_llm,
                self.max_tokens,
                keep_recent=self.keep_recent,
                hint=self.hint,
                timeout=self.compact_timeout,
            )
        else:
            kept = CompactUtils.smart_truncate(base, self.max_tokens)
            result = CompactResult(
                messages=kept,
                strategy="truncate",
                original_count=len(base),
                compacted_count=len(kept),
                tokens_before=tokens,
                tokens_after=CompactUtils.estimate_messages_tokens(kept),
            )
        self.result = result
        self.strategy = result.strategy
        self.was_compacted = result.strategy != "none" or stored is not None
        self.compacted_count = len(result.messages)
        self.tokens_after = result.tokens_after
        if result.strategy == "llm":
            self.new_summary = _new_summary(stored, history, result)
        return result.messages


def _new_summary(
    stored: StoredSummary | None, history: list[ChatMessage], result: CompactResult
) -> NewSummary | None:
    """The summary in ``result`` and the history prefix it stands for, or None.

    llm_compact summarises the oldest compactable messages and keeps a suffix verbatim;
    ``summarized_count`` counts the summarised messages, folded summaries included (ours
    carries its ``covered_count`` as ``summarized_count``), so the newly covered messages
    are the first ``summarized_count - covered_count`` of the history.
    """
    summaries = [m for m in result.messages if m.is_summary]
    if not summaries:
        return None
    already = stored.covered_count if stored else 0
    newly = result.summarized_count - already
    if result.summarized_count <= 0:
        # A core without the count: everything before the first message kept verbatim.
        kept_ids = {m.metadata.get("id") for m in result.messages if not m.is_summary}
        newly = next(
            (i for i, m in enumerate(history) if m.metadata.get("id") in kept_ids), len(history)
        )
    covered = history[: max(0, newly)]
    if not covered:
        return None
    text = summaries[-1].text()
    covered_tokens = (stored.covered_tokens if stored else 0) + (
        CompactUtils.estimate_messages_tokens(covered)
    )
    return NewSummary(
        summary=text,
        covers_through_id=covered[-1].metadata["id"],
        covered_count=already + len(covered),
        tokens=CompactUtils.estimate_tokens(text),
        metadata={"covered_tokens": covered_tokens},
    )
