"""Writes of the full-text index: which texts of a conversation are searchable.

The services call ``index_message`` whenever a message's text or its stored run record
changes and ``index_title`` when a title does; a deleted conversation or message takes its
documents along (foreign keys). ``rebuild`` recomputes everything from the messages
(``manage.py rebuild_search_index``). The database's own index over the documents is kept
by the database: FTS5 triggers on SQLite, a GIN expression index on PostgreSQL.

What is searchable: the text of every user and assistant message, the results of the
tools an answer's run called (``metadata["steps"]``; ``recall``'s own results are left out,
they only repeat other messages) and the DAG step results of its plan, titles, and every
page of a document sent with a user message (labelled with its file name and page,
``index_documents``). An answer the user retried stays indexed; the selector leaves it
out (``superseded_by``).
A long text is indexed as passages (``chat.search_passages``), one document each.

The writes join their caller's transaction without a savepoint of their own (two
statements less per indexed message on every run): no caller goes on after one of them
failed, so the caller's whole transaction rolls back, as it would with a savepoint.

Every run indexes its question and its answer, so the rows go in by one plain ``INSERT``
run with ``executemany`` (``_insert``), each value prepared by its model field as the ORM
prepares it: ``bulk_create`` spends more CPU building and compiling its query (and asking
the new ids back, which nobody reads) than the database spends storing the rows
(docs/operations.md, "Throughput").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.db import connections, router, transaction

from chat.models import Attachment, Conversation, Message, SearchDocument
from chat.search_passages import Passage, passages
from chat.search_text import index_text

SEARCHABLE_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)
# Tools whose results quote the conversation itself: indexing them would only echo it.
UNINDEXED_TOOLS = frozenset({"recall"})
# An answer is indexed when its run finishes; one whose run never did (still running, or
# the server died) is not — as the services keep it, so the rebuild does.
UNFINISHED_ANSWER = (Message.Status.RUNNING, Message.Status.INTERRUPTED)
LABEL_CHARS = SearchDocument._meta.get_field("label").max_length
# The question a tool result is indexed with: its start.
QUESTION_CHARS = 300


def message_texts(
    *, role: str, content: str, metadata: dict[str, Any] | None, question: str = ""
) -> Iterator[tuple[str, str, str]]:
    """``(kind, label, text)`` of every searchable text of one message (plain data in, so
    that the migration that fills the index for existing messages uses it too). A tool
    result is indexed with its call — the tool's name and arguments — and the ``question``
    its run answered, so "the VAT calculation" finds ``calculator(…)``'s bare number."""
    if role not in SEARCHABLE_ROLES:
        return
    if content and content.strip():
        yield SearchDocument.Kind.MESSAGE, "", content
    if role != Message.Role.ASSISTANT or not isinstance(metadata, dict):
        return
    steps = [s for s in metadata.get("steps") or [] if isinstance(s, dict)]
    arguments = {
        s.get("call_id"): s.get("arguments") for s in steps if s.get("kind") == "tool_call"
    }
    asked = f"Question: {' '.join(question.split())[:QUESTION_CHARS]}\n" if question else ""
    for step in steps:
        if step.get("kind") != "tool_result":
            continue
        name = str(step.get("name") or "tool")
        result = step.get("result")
        if name in UNINDEXED_TOOLS or not isinstance(result, str) or not result.strip():
            continue
        call = f"{name}({arguments.get(step.get('call_id')) or ''})"
        yield SearchDocument.Kind.TOOL, name[:LABEL_CHARS], f"{asked}{call} = {result}"
    dag = metadata.get("dag")
    for round_ in (dag.get("rounds") or []) if isinstance(dag, dict) else []:
        for step in (round_.get("steps") or []) if isinstance(round_, dict) else []:
            result = step.get("result") if isinstance(step, dict) else None
            if isinstance(result, str) and result.strip():
                label = f"DAG step {step.get('id') or '?'}"
                yield SearchDocument.Kind.TOOL, label[:LABEL_CHARS], result


def _documents(message: Message) -> list[SearchDocument]:
    return [
        SearchDocument(
            conversation_id=message.conversation_id,
            message_id=message.pk,
            kind=kind,
            label=label,
            body=passage.text,
            terms=passage_terms(passage),
            offset=passage.offset,
            created_at=message.created_at,
        )
        for kind, label, text in message_texts(
            role=message.role,
            content=message.content,
            metadata=message.metadata,
            question=_question_of(message),
        )
        for passage in passages(text)
    ]


def passage_terms(passage: Passage) -> str:
    """What the index stores for one passage: its words, after its table's header's."""
    if passage.context:
        return index_text(f"{passage.context}\n{passage.text}")
    return index_text(passage.text)


def _question_of(message: Message) -> str:
    """The question an answer whose run called tools answered: the newest user message
    before it ("" for anything else)."""
    steps = (message.metadata or {}).get("steps") if isinstance(message.metadata, dict) else None
    if message.role != Message.Role.ASSISTANT or not steps:
        return ""
    found = (
        Message.objects.filter(
            conversation_id=message.conversation_id,
            role=Message.Role.USER,
            created_at__lte=message.created_at,
            id__lt=message.pk,
        )
        .order_by("-created_at", "-id")
        .values_list("content", flat=True)
        .first()
    )
    return found or ""


@transaction.atomic(savepoint=False)
def index_message(*, message: Message, fresh: bool = False) -> None:
    """Make the index say what ``message`` says now, replacing what it said before;
    ``fresh``: the message was never indexed (a new one, or an answer finishing its run),
    so there is nothing to replace — one query less on every message."""
    if not fresh:
        # A document's pages stay: they change only with the document.
        SearchDocument.objects.filter(message_id=message.pk).exclude(
            kind=SearchDocument.Kind.DOCUMENT
        ).delete()
    _insert(_documents(message))


def _insert(documents: list[SearchDocument]) -> None:
    """Store ``documents`` (unsaved, their ids are not set)."""
    if not documents:
        return
    connection = connections[router.db_for_write(SearchDocument)]
    fields = _insert_fields()
    rows = [
        [f.get_db_prep_save(getattr(d, f.attname), connection) for f in fields] for d in documents
    ]
    with connection.cursor() as cursor:
        cursor.executemany(_insert_sql(connection.vendor, connection.ops.quote_name), rows)


def _insert_fields() -> list:
    return [f for f in SearchDocument._meta.concrete_fields if not f.primary_key]


_INSERT_SQL: dict[str, str] = {}


def _insert_sql(vendor: str, quote) -> str:
    sql = _INSERT_SQL.get(vendor)
    if sql is None:
        fields = _insert_fields()
        table = quote(SearchDocument._meta.db_table)
        columns = ", ".join(quote(f.column) for f in fields)
        values = ", ".join(["%s"] * len(fields))
        # Names from the model's own metadata, quoted by the backend; values are parameters.
        sql = _INSERT_SQL[vendor] = f"INSERT INTO {table} ({columns}) VALUES ({values})"  # noqa: S608
    return sql


def document_label(name: str, page: int) -> str:
    """``report.pdf, page 7``, the name shortened to fit the label column."""
    suffix = f", page {page}"
    return f"{name[: LABEL_CHARS - len(suffix)]}{suffix}"


def _page_documents(attachment: Attachment, message_id: int, created_at) -> list[SearchDocument]:
    pages = (attachment.document or {}).get("pages") or []
    name = attachment.original_name or str(attachment.pk)
    return [
        SearchDocument(
            conversation_id=attachment.conversation_id,
            message_id=message_id,
            kind=SearchDocument.Kind.DOCUMENT,
            label=document_label(name, number),
            body=passage.text,
            terms=passage_terms(passage),
            offset=passage.offset,
            created_at=created_at,
        )
        for number, text in enumerate(pages, 1)
        if isinstance(text, str) and text.strip()
        for passage in passages(text)
    ]


@transaction.atomic(savepoint=False)
def index_documents(*, message: Message) -> None:
    """Index every page of the documents linked to ``message`` (the one that sent them)."""
    documents = []
    for attachment in Attachment.objects.filter(message=message, kind=Attachment.Kind.DOCUMENT):
        documents.extend(_page_documents(attachment, message.pk, message.created_at))
    _insert(documents)


@transaction.atomic(savepoint=False)
def index_title(*, conversation: Conversation, fresh: bool = False) -> None:
    if not fresh:
        SearchDocument.objects.filter(
            conversation_id=conversation.pk, kind=SearchDocument.Kind.TITLE
        ).delete()
    if conversation.title.strip():
        title = SearchDocument(
            conversation_id=conversation.pk,
            kind=SearchDocument.Kind.TITLE,
            body=conversation.title,
            terms=index_text(conversation.title),
            created_at=conversation.created_at,
        )
        _insert([title])


def rebuild(*, conversations: Iterable[Conversation] | None = None, batch: int = 500) -> int:
    """Recompute the documents of ``conversations`` (all when None); returns how many."""
    if conversations is None:
        conversations = Conversation.objects.only("id", "title", "created_at")
    return sum(_rebuild_one(conversation, batch) for conversation in conversations)


@transaction.atomic
def _rebuild_one(conversation: Conversation, batch: int) -> int:
    SearchDocument.objects.filter(conversation_id=conversation.pk).delete()
    index_title(conversation=conversation, fresh=True)
    documents: list[SearchDocument] = []
    messages = Message.objects.filter(
        conversation_id=conversation.pk, role__in=SEARCHABLE_ROLES
    ).exclude(role=Message.Role.ASSISTANT, status__in=UNFINISHED_ANSWER)
    for message in messages.iterator(chunk_size=batch):
        documents.extend(_documents(message))
    sent = Attachment.objects.filter(
        conversation_id=conversation.pk, kind=Attachment.Kind.DOCUMENT, message__isnull=False
    ).select_related("message")
    for attachment in sent.iterator(chunk_size=50):
        message = attachment.message
        documents.extend(_page_documents(attachment, message.pk, message.created_at))
    _insert(documents)
    return len(documents) + (1 if conversation.title.strip() else 0)
