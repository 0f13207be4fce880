"""Writes of the full-text index: which texts of a conversation are searchable.

The services call ``index_message`` whenever a message's text or its stored run record
changes and ``index_title`` when a title does; a deleted conversation or message takes its
documents along (foreign keys). ``rebuild`` recomputes everything from the messages
(``manage.py rebuild_search_index``). The database's own index over the documents is kept
by the database: FTS5 triggers on SQLite, a GIN expression index on PostgreSQL.

What is searchable: the text of every user and assistant message, the whole results of
the tools an answer's run called (``ToolResult``, ``index_tool_results``; ``recall``'s own
results are left out, they only repeat other messages), the previews in
``metadata["steps"]`` of results that were never stored whole (runs from before they were)
and the DAG step results of its plan, titles, and every page of a document sent with a
user message (labelled with its file name and page, ``index_documents``). An answer the
user retried stays indexed; the selector leaves it out (``superseded_by``).
A long text is indexed as passages (``chat.search.passages``), one document each; a tool
result's passages each carry its call and the run's question as context (indexed, not
quoted), so a passage in the middle of a long page is found by what was asked for too.

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

import dataclasses
import logging
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from django.db import connections, router, transaction

from chat.models import (
    Attachment,
    Conversation,
    Message,
    Project,
    SearchDocument,
    ToolResult,
)
from chat.search.passages import Passage, passages
from chat.search.text import index_text

logger = logging.getLogger(__name__)

SEARCHABLE_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)
# Tools whose results quote the conversation itself: indexing them would only echo it.
UNINDEXED_TOOLS = frozenset({"recall"})
# An answer is indexed when its run finishes; one whose run never did (still running, or
# the server died) is not — as the services keep it, so the rebuild does.
UNFINISHED_ANSWER = (Message.Status.RUNNING, Message.Status.INTERRUPTED)
# A CharField's declared length (Django's field type leaves it optional for other fields).
LABEL_CHARS = SearchDocument._meta.get_field("label").max_length or 0
# The question a tool result is indexed with: its start.
QUESTION_CHARS = 300
# A stored tool result's arguments, as its passages' context, up to this many characters
# (a tool that takes a whole text as an argument must not repeat it with every passage).
ARGUMENTS_CHARS = 1_000
# The rebuild writes a conversation's documents in batches of this many.
REBUILD_BATCH = 2_000
# A stored tool result's passages are written this many to a transaction: the longest
# result (``chat.services.TOOL_RESULT_MAX_CHARS``) holds the database's write lock for a
# few short moments rather than one long one (docs/architecture.md, "Search").
INDEX_BATCH = 200


def message_texts(
    *,
    role: str,
    content: str,
    metadata: dict[str, Any] | None,
    question: str = "",
    stored_calls: Collection[str] = (),
) -> Iterator[tuple[str, str, str]]:
    """``(kind, label, text)`` of every searchable text of one message (plain data in, so
    that the migration that fills the index for existing messages uses it too). A tool
    result is indexed with its call — the tool's name and arguments — and the ``question``
    its run answered, so "the VAT calculation" finds ``calculator(…)``'s bare number; the
    results of ``stored_calls`` (call ids) are left out: their whole text is indexed from
    where it is stored (``tool_result_passages``), not their previews."""
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
        if step.get("call_id") in stored_calls:
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


def tool_result_passages(
    *, name: str, arguments: str, question: str, content: str
) -> list[Passage]:
    """The passages a stored whole tool result is indexed as (plain data in, for the
    migration that indexes the results stored before too): verbatim slices of ``content``,
    each with the call (the tool's name and arguments) and the run's ``question`` as its
    context, after a table header's; none for a tool whose results are not indexed."""
    if name in UNINDEXED_TOOLS or not content.strip():
        return []
    asked = f"Question: {' '.join(question.split())[:QUESTION_CHARS]}\n" if question else ""
    call = f"{asked}{name}({(arguments or '')[:ARGUMENTS_CHARS]})"
    return [
        dataclasses.replace(p, context=f"{call}\n{p.context}" if p.context else call)
        for p in passages(content)
    ]


def _documents(message: Message) -> list[SearchDocument]:
    question, stored = _question_of(message), _stored_calls(message)
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
            question=question,
            stored_calls=stored,
        )
        for passage in passages(text)
    ]


def _has_tool_steps(message: Message) -> bool:
    steps = (message.metadata or {}).get("steps") if isinstance(message.metadata, dict) else None
    return message.role == Message.Role.ASSISTANT and bool(steps)


def _stored_calls(message: Message) -> frozenset[str]:
    """The call ids of the answer's tool results stored whole (none for other messages)."""
    if not _has_tool_steps(message):
        return frozenset()
    return frozenset(
        ToolResult.objects.filter(message_id=message.pk).values_list("call_id", flat=True)
    )


def passage_terms(passage: Passage) -> str:
    """What the index stores for one passage: its words, after its table's header's."""
    if passage.context:
        return index_text(f"{passage.context}\n{passage.text}")
    return index_text(passage.text)


def _question_of(message: Message) -> str:
    """The question an answer whose run called tools answered: the newest user message
    before it ("" for anything else)."""
    if not _has_tool_steps(message):
        return ""
    return _question_before(message)


def _question_before(message: Message) -> str:
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
        # A document's pages stay: they change only with the document; so do the passages
        # of the whole tool results, which change only with them.
        SearchDocument.objects.filter(message_id=message.pk, tool_result__isnull=True).exclude(
            kind=SearchDocument.Kind.DOCUMENT
        ).delete()
    _insert(_documents(message))


def _tool_result_documents(result: ToolResult, question: str, created_at) -> list[SearchDocument]:
    return [
        SearchDocument(
            conversation_id=result.conversation_id,
            message_id=result.message_id,
            kind=SearchDocument.Kind.TOOL,
            label=result.name[:LABEL_CHARS],
            body=passage.text,
            terms=passage_terms(passage),
            offset=passage.offset,
            created_at=created_at,
            tool_result_id=result.pk,
        )
        for passage in tool_result_passages(
            name=result.name,
            arguments=result.arguments,
            question=question,
            content=result.content,
        )
    ]


def index_tool_results(*, message: Message) -> int:
    """Index the whole stored tool results of ``message`` (an answer), replacing what was
    indexed of them; returns how many passages. One result at a time: its passages are
    computed outside any transaction and written ``INDEX_BATCH`` to a short transaction,
    so a megabyte-long result holds neither the answer's transaction nor the database's
    write lock for long (docs/architecture.md, "Search")."""
    question = _question_before(message)
    ids = list(
        ToolResult.objects.filter(message_id=message.pk)
        .exclude(name__in=UNINDEXED_TOOLS)
        .order_by("id")
        .values_list("id", flat=True)
    )
    count = 0
    for pk in ids:
        result = ToolResult.objects.filter(pk=pk).first()
        if result is None:
            continue  # deleted meanwhile, with its conversation
        documents = _tool_result_documents(result, question, message.created_at)
        for start in range(0, max(len(documents), 1), INDEX_BATCH):
            with transaction.atomic():
                if start == 0:
                    SearchDocument.objects.filter(tool_result_id=pk).delete()
                _insert(documents[start : start + INDEX_BATCH])
        count += len(documents)
    return count


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


def _page_documents(
    attachment: Attachment, message_id: int | None, created_at
) -> list[SearchDocument]:
    pages = (attachment.document or {}).get("pages") or []
    name = attachment.original_name or str(attachment.pk)
    # A project's file is the project's (searched from each of its conversations) and
    # names itself, so that deleting it removes its passages at once.
    of_project = attachment.project_id is not None
    return [
        SearchDocument(
            conversation_id=attachment.conversation_id,
            project_id=attachment.project_id,
            attachment_id=attachment.pk if of_project else None,
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


def index_documents(*, message_id: int, created_at) -> int:
    """Index every page of the documents that message ``message_id`` sent; returns how many
    passages. Called after the message's transaction: one document at a time, its passages
    computed outside any transaction and written ``INDEX_BATCH`` to a short transaction, so
    sixteen documents of millions of characters hold neither the message's transaction nor
    the database's write lock for seconds (docs/operations.md, "Round 4")."""
    ids = list(
        Attachment.objects.filter(message_id=message_id, kind=Attachment.Kind.DOCUMENT)
        .order_by("id")
        .values_list("id", flat=True)
    )
    count = 0
    for pk in ids:
        attachment = Attachment.objects.filter(pk=pk).first()
        if attachment is None:
            continue  # deleted meanwhile, with its conversation
        documents = _page_documents(attachment, message_id, created_at)
        for start in range(0, len(documents), INDEX_BATCH):
            with transaction.atomic():
                _insert(documents[start : start + INDEX_BATCH])
        count += len(documents)
    return count


def index_project_file(*, attachment_id) -> int:
    """Index every page of a project's file; returns how many passages. Called after the
    upload's transaction, in short transactions as ``index_documents`` does."""
    attachment = Attachment.objects.filter(
        pk=attachment_id, project__isnull=False, kind=Attachment.Kind.DOCUMENT
    ).first()
    if attachment is None:
        return 0  # an image, or deleted meanwhile
    documents = _page_documents(attachment, None, attachment.created_at)
    for start in range(0, len(documents), INDEX_BATCH):
        with transaction.atomic():
            _insert(documents[start : start + INDEX_BATCH])
    return len(documents)


def rebuild_project_files(*, projects: Iterable[Project] | None = None) -> int:
    """Recompute the passages of the files of ``projects`` (all when None), one project a
    transaction; returns how many."""
    if projects is None:
        projects = Project.objects.only("id")
    return sum(_rebuild_project(project) for project in projects)


@transaction.atomic
def _rebuild_project(project: Project) -> int:
    SearchDocument.objects.filter(project_id=project.pk, conversation__isnull=True).delete()
    files = Attachment.objects.filter(project_id=project.pk, kind=Attachment.Kind.DOCUMENT)
    count = 0
    for attachment in files.iterator(chunk_size=50):
        documents = _page_documents(attachment, None, attachment.created_at)
        _insert(documents)
        count += len(documents)
    return count


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
    count = 0

    def flush(done: bool = False) -> None:
        nonlocal documents, count
        if done or len(documents) >= REBUILD_BATCH:
            _insert(documents)
            count += len(documents)
            documents = []

    for message in messages.iterator(chunk_size=batch):
        documents.extend(_documents(message))
        flush()
    sent = Attachment.objects.filter(
        conversation_id=conversation.pk, kind=Attachment.Kind.DOCUMENT, message__isnull=False
    ).select_related("message")
    for attachment in sent.iterator(chunk_size=50):
        sent_with = attachment.message
        if sent_with is None:  # not when the query asks for a message; the field allows it
            continue
        documents.extend(_page_documents(attachment, sent_with.pk, sent_with.created_at))
        flush()
    # The whole tool results of finished answers, each with its run's question.
    answers = messages.filter(role=Message.Role.ASSISTANT, tool_results__isnull=False).distinct()
    for answer in answers.iterator(chunk_size=batch):
        question = _question_before(answer)
        results = ToolResult.objects.filter(message_id=answer.pk).exclude(name__in=UNINDEXED_TOOLS)
        for result in results.order_by("id").iterator(chunk_size=10):
            documents.extend(_tool_result_documents(result, question, answer.created_at))
            flush()
    flush(done=True)
    return count + (1 if conversation.title.strip() else 0)
