"""A conversation's stored messages as the agent reads them.

``load_history`` is the loader ``contextmgmt.db_memory.DbMemory`` calls (registered in
``ChatConfig.ready``): the newest stored summary a user has not discarded, then the
messages it does not cover, as ``ChatMessage``s. ``query_message`` is one user message as
the run's pinned query. Both turn attached images into message parts with the one helper,
``message_content``.

What is loaded, and why:

- user messages of every kind and status: what the user typed is context, even when the
  run that answered it failed;
- assistant messages with text, except failed ones (``kind``/``status`` ``error``: an error
  text is not an answer and would teach the model to apologise) and the in-flight one
  (``running``); a cancelled or interrupted answer keeps its partial text, which the user
  saw and may refer to ("go on"); an answer the user retried or regenerated
  (``superseded_by``) is skipped: its successor answers the same question; so
  is a question the user edited and sent again (websocket ``edit``), with what followed it;
- a message the user pinned ("keep verbatim") comes with ``pinned=True``, even when the
  summary covers it (then also ``metadata["covered"]``: DbMemory leaves it out rather than
  summarising it again when pins exceed their share of the budget);
- the trailing user message is dropped: it is the current query, which the agent appends
  itself, pinned;
- an answer whose run called tools comes after its calls as compact records (an assistant
  message calling them and each result as a masked stub naming its stored id, which
  ``recall`` brings back whole; ``metadata["tool_record"]``), so the next run sees what the
  answer relied on; ``recall``'s own calls are left out;
- images (``metadata["images"]``) follow the image lifecycle (docs/architecture.md,
  "Images"): the current query's images and those of the newest ``pixel_turns`` user
  messages of the history (setting ``FIMONE_IMAGE_PIXEL_TURNS``, default 2) become base64
  data-URL parts for a vision model; every other image, and every image for a model
  without vision, becomes its stored description ``[image: name, WxH — description]``
  (``chat.images.descriptions``); an attachment row or file that is missing or unreadable
  becomes ``[image: name unavailable]``, never an exception. A history message whose images
  went as text lists their ids in ``metadata["images_as_text"]`` (a model may describe
  them better, once: ``chat.image_describer``);
- documents (``metadata["documents"]``) join their message's text: whole when small, as
  an outline the agent reads further with ``read_document`` when larger
  (``chat.documents.context``);
- a message's facts, found when its content was stored (its ``facts`` column), go in
  ``metadata["facts"]`` for the compaction's fact check, which then scans only the texts
  they are not the facts of (rows stored before the column, texts with documents or image
  notes joined);
- a message's class counts, counted when its content was stored (its ``token_counts``
  column), are given to it (``tokens.with_stored_counts``): its estimate weighs them with
  the current model's weights instead of counting the text again (not when documents or
  image notes joined to it make another text);
- ``for_count``: the history only to be counted (the context gauge), never sent — each
  image part carries only the file's leading bytes, which its token estimate reads its size
  from (``header_url``), and an image never described is described in memory, not stored:
  counting must not write.

Queries are constant: one for the newest summary, one for the messages, one for all their
image attachments, and, when documents are referenced, two for them (their outlines, then
the text of those that go inline). Sync (ORM, file reads): call it from a thread.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings

from chat.documents.context import (
    DocumentView,
    document_notes,
    document_refs_of,
    documents_for,
    with_documents,
)
from chat.history_rows import HistoryRow, history_rows, latest_summary
from chat.images.descriptions import describe_missing, describe_offline
from chat.models import Attachment, Message, ToolResult
from contextmgmt.core.image_tokens import HEADER_BYTES
from contextmgmt.core.masking import MASKED_KEY, record_stub
from contextmgmt.core.messages import (
    DOCUMENT_NOTES,
    IMAGE_NOTES,
    STORED_FACTS,
    ChatMessage,
    ToolCall,
)
from contextmgmt.core.tokens import with_stored_counts
from contextmgmt.db_memory import LoadedHistory, StoredSummary

logger = logging.getLogger(__name__)

UrlOf = Callable[[Attachment], str | None]

_SKIPPED_ASSISTANT_STATUSES = ("error", "running")
_NO_BRACKETS = str.maketrans("[]", "()")


# --- the history -----------------------------------------------------------------------------


def load_history(
    conversation_id: Any,
    *,
    vision: bool = True,
    summary: StoredSummary | None = None,
    use_summaries: bool = True,
    pixel_turns: int | None = None,
    for_count: bool = False,
) -> LoadedHistory:
    """The newest stored summary (unless given or switched off) and the messages after it.

    ``pixel_turns``: how many of the newest user messages keep their images as pixels
    (None: the ``FIMONE_IMAGE_PIXEL_TURNS`` setting). ``for_count``: to be estimated, not
    sent (module docstring): counted as the same history would be, nothing stored.
    """
    if pixel_turns is None:
        pixel_turns = image_pixel_turns()
    if not use_summaries:
        summary = None
    elif summary is None:
        summary = latest_summary(conversation_id)
    rows = history_rows(conversation_id, summary=summary)
    if rows and rows[-1].role == "user":
        rows.pop()  # the current query: the agent re-appends it, pinned
    kept = [row for row in rows if _is_context(row)]
    attachments = _attachments_for(conversation_id, [_image_refs(row.images) for row in kept])
    documents = documents_for(conversation_id, [document_refs_of(row.documents) for row in kept])
    describe_missing(attachments.values(), store=not for_count)
    users = [i for i, row in enumerate(kept) if row.role == "user"]
    as_pixels = set(users[-pixel_turns:]) if vision and pixel_turns > 0 else set()
    url_of = header_url if for_count else data_url
    records = _tool_records([row.id for row in kept if row.has_tools and not row.covered])
    messages: list[ChatMessage] = []
    for i, row in enumerate(kept):
        message = _history_message(row, attachments, documents, i in as_pixels, url_of)
        messages.extend(records.get(row.id, ()))
        messages.append(message)
    return LoadedHistory(messages=messages, summary=summary)


# An answer's history carries at most this many of its run's tool calls (the newest).
MAX_RECORDS_PER_ANSWER = 20
# Tools whose results only quote the conversation: no record.
_UNRECORDED_TOOLS = ("recall",)


def _tool_records(answer_ids: list[int]) -> dict[int, list[ChatMessage]]:
    """Each answer's tool calls as compact records, keyed by the answer's id: one assistant
    message calling them and one result each, already masked (a stub naming the stored
    result's id, which ``recall`` brings back whole). They go before the answer, so the
    next run sees what the answer relied on; ``metadata["tool_record"]`` marks them."""
    if not answer_ids:
        return {}
    rows = (
        ToolResult.objects.filter(message_id__in=answer_ids)
        .exclude(name__in=_UNRECORDED_TOOLS)
        .order_by("message_id", "id")
        .values_list("id", "message_id", "name", "arguments", "chars", "first_line", named=True)
    )
    by_answer: dict[int, list[Any]] = {}
    for row in rows:
        by_answer.setdefault(row.message_id, []).append(row)
    out: dict[int, list[ChatMessage]] = {}
    for answer_id, found in by_answer.items():
        found = found[-MAX_RECORDS_PER_ANSWER:]
        meta = {"id": answer_id, "tool_record": True}
        calls = [ToolCall(f"h{r.id}", r.name, r.arguments or "{}") for r in found]
        records = [ChatMessage(role="assistant", content=None, tool_calls=calls, metadata=meta)]
        for call, r in zip(calls, found, strict=True):
            records.append(
                ChatMessage(
                    role="tool",
                    content=record_stub(call, r.chars, r.first_line, f"r{r.id}"),
                    tool_call_id=call.id,
                    metadata={
                        **meta,
                        MASKED_KEY: {"tool": r.name, "chars": r.chars},
                        "result_id": f"r{r.id}",
                    },
                )
            )
        out[answer_id] = records
    return out


def image_pixel_turns() -> int:
    """How many of the newest earlier turns send their images as pixels (read per call)."""
    return max(0, int(getattr(settings, "FIMONE_IMAGE_PIXEL_TURNS", 2)))


def _is_context(row: HistoryRow) -> bool:
    if row.role == "user":
        return (
            bool(row.content)
            or bool(_image_refs(row.images))
            or bool(document_refs_of(row.documents))
        )
    return (
        bool(row.content) and row.kind != "error" and row.status not in _SKIPPED_ASSISTANT_STATUSES
    )


def _history_message(
    row: HistoryRow,
    attachments: dict[str, Attachment],
    documents: dict[str, DocumentView],
    pixels: bool,
    url_of: UrlOf,
) -> ChatMessage:
    notes = document_notes(document_refs_of(row.documents), documents)
    content = with_documents(row.content, notes)
    refs = _image_refs(row.images)
    metadata: dict[str, Any] = {"id": row.id, "created_at": row.created_at.isoformat()}
    if row.covered:
        metadata["covered"] = True
    if row.facts:
        # Found when its content was stored: the compaction does not scan it again (it
        # checks they are the facts of this text: documents or image notes joined to it
        # make another, which is scanned).
        metadata[STORED_FACTS] = row.facts
    if refs and not pixels:
        metadata["images_as_text"] = [str(a.pk) for a in _referenced(refs, attachments)]
    sent, described = message_content(content, refs, attachments, vision=pixels, url_of=url_of)
    if described:
        metadata[IMAGE_NOTES] = described
    message = ChatMessage(role=row.role, content=sent, pinned=row.pinned, metadata=metadata)
    if row.token_counts:
        # Counted when its content was stored: not counted again (they are not taken when
        # documents or image notes joined to it make another text).
        with_stored_counts(message, row.token_counts)
    return message


# --- the run's query -------------------------------------------------------------------------


def query_message(message: Message, *, vision: bool = True) -> ChatMessage:
    """A stored user message as the agent sees its query: pinned, its images as pixels
    (as descriptions for a model without vision)."""
    refs = _image_refs((message.metadata or {}).get("images"))
    attachments = _attachments_for(message.conversation_id, [refs]) if refs else {}
    docs = document_refs_of((message.metadata or {}).get("documents"))
    text = message.content
    metadata: dict[str, Any] = {"id": message.pk, "created_at": message.created_at.isoformat()}
    if message.facts:
        metadata[STORED_FACTS] = message.facts
    if docs:
        notes = document_notes(docs, documents_for(message.conversation_id, [docs]))
        text = with_documents(text, notes)
        metadata[DOCUMENT_NOTES] = notes
    # Whatever goes as pixels, the images as text too: for a part of the run whose model
    # cannot see (a DAG step on a text-only fast model).
    sent, described = message_content(text, refs, attachments, vision=vision)
    if described:
        metadata[IMAGE_NOTES] = described
    query = ChatMessage(
        role="user",
        content=sent,
        pinned=True,
        injected=message.kind == Message.Kind.INJECTED,
        metadata=metadata,
    )
    if message.token_counts:
        with_stored_counts(query, message.token_counts)
    return query


# --- images ----------------------------------------------------------------------------------


def message_content(
    text: str,
    refs: list[dict],
    attachments: dict[str, Attachment],
    *,
    vision: bool,
    url_of: UrlOf | None = None,
) -> tuple[str | list[dict], list[str]]:
    """A message's text with its images: a plain string when no image is sent inline, else
    a text part (the text and any notes) followed by the image parts. ``vision`` False: every
    image is its description.

    Also returns the description of each image it could read, in order: with ``vision``
    exactly one per image part, what an endpoint that turns out to refuse images is sent
    instead (``fimone.llm.providers.vision``); without, the same notes the text already holds.

    ``attachments``: the referenced attachments of the message's conversation by id (see
    ``_attachments_for``); a reference without one is a note, never an error. ``url_of``:
    an image part's URL (``data_url``, the default, or ``header_url`` to count it).
    """
    url_of = url_of or data_url
    notes: list[str] = []
    images: list[dict] = []
    described: list[str] = []
    for ref in refs:
        file_id = str(ref.get("file_id"))
        attachment = attachments.get(_normalised(file_id))
        if attachment is None:
            notes.append(f"[image: {file_id} unavailable]")
            continue
        name = attachment.original_name or file_id
        if not vision:
            notes.append(image_note(attachment))
            described.append(notes[-1])
            continue
        url = url_of(attachment)
        if url is None:
            notes.append(f"[image: {name} unavailable]")
        else:
            images.append({"type": "image_url", "image_url": {"url": url}})
            described.append(image_note(attachment))
    joined = "\n".join([t for t in (text, *notes) if t])
    if not images:
        return joined, described
    return ([{"type": "text", "text": joined}] if joined else []) + images, described


def image_note(attachment: Attachment) -> str:
    """``[image: name, WxH — description]``: the image as text (described once, stored)."""
    name = attachment.original_name or str(attachment.pk)
    # Brackets inside (a text layer, a model's words) would end the note early for anyone
    # reading it back (the offline model, the summariser).
    description = describe_offline(attachment).translate(_NO_BRACKETS)
    return f"[image: {name}, {attachment.width}x{attachment.height} — {description}]"


def _referenced(refs: list[dict], attachments: dict[str, Attachment]) -> list[Attachment]:
    """The attachments the references name that exist, in the references' order."""
    found = (attachments.get(_normalised(str(ref.get("file_id")))) for ref in refs)
    return [attachment for attachment in found if attachment is not None]


def _image_refs(images: Any) -> list[dict]:
    """The well-formed entries of ``metadata["images"]`` (anything else is ignored)."""
    if not images or not isinstance(images, list):
        return []
    return [i for i in images if isinstance(i, dict)]


def _attachments_for(conversation_id: Any, refs_per_message: list[list[dict]]) -> dict:
    """All referenced attachments of this conversation, in one query, keyed by str(id)."""
    ids = set()
    for refs in refs_per_message:
        for ref in refs:
            try:
                ids.add(uuid.UUID(str(ref.get("file_id"))))
            except ValueError:
                continue  # a malformed reference degrades to a note
    if not ids:
        return {}
    # Scoped to the conversation: a forged file_id cannot pull another user's image.
    found = Attachment.objects.filter(conversation_id=conversation_id, pk__in=ids).only(
        "id",
        "file",
        "mime_type",
        "original_name",
        "width",
        "height",
        "description",
        "description_source",
    )
    return {str(a.pk): a for a in found}


def _normalised(file_id: str) -> str:
    try:
        return str(uuid.UUID(file_id))
    except ValueError:
        return file_id


def data_url(attachment: Attachment) -> str | None:
    """The image file as a base64 data URL; None when it is missing, unreadable or empty."""
    return _data_url(attachment, -1)


def header_url(attachment: Attachment) -> str | None:
    """A data URL of only the file's leading bytes, for counting: an image part's tokens
    come from the size in its header (``contextmgmt.core.image_tokens``), so this part is
    estimated exactly as ``data_url``'s would be, without reading or encoding the pixels;
    None exactly where ``data_url`` gives None."""
    return _data_url(attachment, HEADER_BYTES)


def _data_url(attachment: Attachment, size: int) -> str | None:
    try:
        with attachment.file.open("rb") as fh:
            data = fh.read(size)
    except (OSError, ValueError) as exc:  # missing file, unreadable, no file at all
        logger.warning("attachment %s unreadable: %s", attachment.pk, exc)
        return None
    if not data:
        return None
    return f"data:{attachment.mime_type};base64,{base64.b64encode(data).decode('ascii')}"
