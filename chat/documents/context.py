"""Documents in the context: inline or as an outline, and read with ``read_document``.

A user message's documents (``metadata["documents"]``) join its text as notes:

- a document of up to ``FIMONE_DOCUMENT_INLINE_TOKENS`` tokens goes whole, framed with
  its name: ``[document: notes.docx — Word, 1 page, 12 KB]`` … ``[end of document:
  notes.docx]`` (pages marked ``--- page N ---``);
- a larger one goes as its outline (the name, pages and size, then the title, headings
  and first lines stored at upload), which says to call ``read_document``;
- a reference without a readable attachment is ``[document: name unavailable]``.

``read_document_text`` is the tool's backend: the conversation's documents sent up to the
run's query and the files of its project (docs/projects.md), found by their whole file name
(any case, the extension may be left out) or id — never by a part of a name: a name no
file has answers with the close ones, read none (docs/tools.md, "Documents");
the pages asked for, or those best matching a query, within ``FIMONE_DOCUMENT_READ_CHARS``
characters and ``MAX_PAGES_PER_CALL`` pages.

Sync (ORM): the history loader's thread, or ``sync_to_async`` for the tool.
"""

from __future__ import annotations

import difflib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models.fields.json import KT

from chat.documents.extraction import KIND_LABELS, inline_tokens, read_max_chars, size_label
from chat.models import Attachment, Project
from chat.row_reads import PlainSelect
from chat.search.text import index_text, query_terms
from contextmgmt.core.readon import READ_ON, call_text
from fimone.agent.tools.documents import MAX_PAGES_PER_CALL, parse_pages

QUERY_PAGES = 3
_READ_HINT = (
    'too long to include here: call read_document with file "{name}" and pages '
    '(e.g. "7" or "3-5") or a query'
)


@dataclass(frozen=True)
class DocumentView:
    """What the context shows of one document; ``pages`` only when it goes inline."""

    id: str
    name: str
    kind: str
    page_count: int
    size: int
    outline: str
    pages: tuple[str, ...] | None = None

    @property
    def header(self) -> str:
        pages = f"{self.page_count} page" + ("" if self.page_count == 1 else "s")
        kind = KIND_LABELS.get(self.kind, self.kind)
        return f"{self.name} — {kind}, {pages}, {size_label(self.size)}"


def document_refs_of(raw: Any) -> list[dict]:
    """The well-formed entries of ``metadata["documents"]``."""
    if not raw or not isinstance(raw, list):
        return []
    return [r for r in raw if isinstance(r, dict) and r.get("file_id")]


def documents_for(
    conversation_id: Any, refs_per_message: list[list[dict]]
) -> dict[str, DocumentView]:
    """The referenced documents of this conversation by id: two queries, whatever their
    number (the outlines and sizes, then the text of those that go inline)."""
    ids = set()
    for refs in refs_per_message:
        for ref in refs:
            try:
                ids.add(uuid.UUID(str(ref.get("file_id"))))
            except ValueError:
                continue
    if not ids:
        return {}
    # Scoped to the conversation: a forged file_id cannot pull another user's document.
    # The kind as an annotation, not "document__kind" in values_list (docs/architecture.md:
    # that name leaves a reference cycle behind).
    rows = (
        Attachment.objects.filter(
            conversation_id=conversation_id, kind=Attachment.Kind.DOCUMENT, pk__in=ids
        )
        .annotate(doc_kind=KT("document__kind"))
        .values_list(
            "id", "original_name", "page_count", "size", "text_tokens", "outline", "doc_kind"
        )
    )
    limit = inline_tokens()
    found: dict[str, dict] = {}
    small = []
    for pk, name, pages, size, tokens, outline, kind in rows:
        found[str(pk)] = {
            "id": str(pk),
            "name": name or str(pk),
            "kind": kind or "",
            "page_count": pages,
            "size": size,
            "outline": outline,
        }
        if tokens <= limit:
            small.append(pk)
    texts = page_texts(small)
    return {key: DocumentView(pages=texts.get(key), **fields) for key, fields in found.items()}


def page_texts(ids: list) -> dict[str, tuple[str, ...]]:
    """The page texts of the documents ``ids`` (already scoped by the caller), by id as
    text: what goes inline of a document small enough."""
    texts: dict[str, tuple[str, ...]] = {}
    if not ids:
        return texts
    for pk, document in Attachment.objects.filter(pk__in=ids).values_list("id", "document"):
        pages = (document or {}).get("pages") if isinstance(document, dict) else None
        if isinstance(pages, list):
            texts[str(pk)] = tuple(p for p in pages if isinstance(p, str))
    return texts


def document_notes(refs: list[dict], documents: dict[str, DocumentView]) -> list[str]:
    notes = []
    for ref in refs:
        view = documents.get(_normalised(str(ref.get("file_id"))))
        if view is None:
            name = str(ref.get("name") or ref.get("file_id"))
            notes.append(f"[document: {name} unavailable]")
        else:
            notes.append(document_note(view))
    return notes


def document_note(view: DocumentView) -> str:
    if view.pages is not None:
        if len(view.pages) == 1:
            body = view.pages[0]
        else:
            body = "\n\n".join(f"--- page {n} ---\n{text}" for n, text in enumerate(view.pages, 1))
        return f"[document: {view.header}]\n{body}\n[end of document: {view.name}]"
    hint = _READ_HINT.format(name=view.name)
    outline = f"\n{view.outline}" if view.outline else ""
    return f"[document: {view.header}; {hint}]{outline}\n[end of outline: {view.name}]"


def with_documents(text: str, notes: list[str]) -> str:
    return "\n\n".join(t for t in (text, *notes) if t)


def _normalised(file_id: str) -> str:
    try:
        return str(uuid.UUID(file_id))
    except ValueError:
        return file_id


# --- read_document ---------------------------------------------------------------------------


def has_documents(conversation_id: Any) -> bool:
    """Whether the conversation has a document sent with a message (``read_document`` is
    offered only then). Asked by every run: plain SQL (chat.row_reads)."""
    return bool(_SENT_DOCUMENT.rows(conversation=conversation_id))


def _sent_document_query(*, conversation: Any):
    return Attachment.objects.filter(
        conversation_id=conversation, kind=Attachment.Kind.DOCUMENT, message__isnull=False
    ).values_list("id")[:1]


# _sent_document_query's rows, as plain SQL.
_SENT_DOCUMENT = PlainSelect(
    Attachment,
    columns=("id",),
    where={"conversation": "conversation"},
    fixed={"kind": Attachment.Kind.DOCUMENT.value},
    present=("message",),
    order_by=("created_at",),
    limit=1,
)


def read_document_text(
    conversation_id: Any,
    *,
    file: str,
    pages: str | None = None,
    query: str | None = None,
    before_id: int | None = None,
    max_chars: int | None = None,
    start: int = 0,
    project_id: int | None = None,
) -> str:
    """The tool's text for ``read_document(file, pages|query, start)`` (module docstring);
    ``start``: where to read on within one page larger than a call; ``project_id``: the
    conversation's project (checked by the caller), whose files it reads too."""
    max_chars = max_chars or read_max_chars()
    sent = Attachment.objects.filter(
        conversation_id=conversation_id, kind=Attachment.Kind.DOCUMENT, message__isnull=False
    )
    if before_id is not None:
        sent = sent.filter(message_id__lte=before_id)
    known = list(sent.order_by("-created_at").values_list("id", "original_name", "page_count"))
    pictures: dict[Any, str] = {}
    if project_id is not None:
        # The project's files as they are now: one added since the run began is read, one
        # removed is not.
        # Newest first, as a message's documents: of two files of one name, the newest is
        # read, every time.
        project_files = (
            Attachment.objects.filter(
                project_id=project_id,
                kind__in=(Attachment.Kind.DOCUMENT, Attachment.Kind.IMAGE),
            )
            .order_by("-created_at", "-id")
            .values_list("id", "original_name", "page_count", "kind", "description")
        )
        for pk, name, count, kind, description in project_files:
            known.append((pk, name, count))
            if kind == Attachment.Kind.IMAGE:
                # A picture is knowledge as text: its stored description (docs/projects.md).
                pictures[pk] = description
    chosen = _find(file, known)
    if chosen is None:
        removed = removed_project_file(project_id, file) if project_id is not None else None
        if removed is not None:
            return (
                f"Error: the file {removed!r} was removed from the project; it can no longer "
                "be read. Say so rather than answer from memory of it."
            )

        def listed(rows: list[tuple]) -> str:
            return "; ".join(
                f"{name} (picture)" if pk in pictures else f"{name} ({_pages(count)})"
                for pk, name, count in rows
            )

        where = (
            "this conversation or its project" if project_id is not None else "this conversation"
        )
        close = close_names(file, known)
        offered = (
            f" Close names: {listed(close)}. Ask again with the exact name (or the id) of the "
            "one meant; none of them was read."
            if close
            else ""
        )
        return (
            f"Error: no document named {file!r} in {where}.{offered} "
            f"Documents: {listed(known) or 'none'}."
        )
    pk, name, _count = chosen
    if pk in pictures:
        return (
            f"{name} is a picture of the project; its description (words about the picture, "
            f"not the picture itself):\n\n{pictures[pk] or '(none stored)'}"
        )
    document = Attachment.objects.filter(pk=pk).values_list("document", flat=True).first() or {}
    texts = [p if isinstance(p, str) else "" for p in document.get("pages") or []]
    if not any(text.strip() for text in texts):
        return f"{name} holds no text" + (
            ": it is a PDF without a text layer (scanned pages)."
            if document.get("text_layer") is False
            else "."
        )
    if pages:
        try:
            numbers = parse_pages(pages, len(texts))
        except ValueError as exc:
            return f"Error: {exc}."
        intro = f"{name}, pages {pages} of {len(texts)}:"
    elif query:
        numbers = _best_pages(texts, query)
        if not numbers:
            return (
                f"No page of {name} matches {query!r}. It has {_pages(len(texts))}; "
                'read pages by number (e.g. pages "1-3").'
            )
        shown = ", ".join(str(n) for n in numbers)
        intro = f"{name}, the pages matching {query!r} best ({shown} of {len(texts)}):"
    else:
        numbers = list(range(1, len(texts) + 1))
        intro = f"{name}, from the start ({_pages(len(texts))}):"
    if start and len(numbers) != 1:
        return 'Error: start reads on within one page: give that page alone (pages="7").'
    if start and not 0 < start < len((texts[numbers[0] - 1]).strip()):
        return f"Error: start is past the end of page {numbers[0]}."
    namesakes = [
        str(other) for other, other_name, _n in known if other != pk and other_name == name
    ]
    if namesakes:
        intro += (
            f" (the newest file of this name, id {pk}; the others are read by their ids: "
            f"{', '.join(namesakes)})"
        )
    return intro + "\n\n" + _page_blocks(texts, numbers, max_chars, name=name, start=start)


def removed_project_file(project_id: int, file: str) -> str | None:
    """The name of the project's removed file that ``file`` names (by name or id), if any
    (``Project.removed_files``)."""
    removed = Project.objects.filter(pk=project_id).values_list("removed_files", flat=True).first()
    rows = [
        (entry.get("id"), str(entry.get("name") or ""))
        for entry in reversed(removed or [])
        if isinstance(entry, dict)
    ]
    chosen = _find(file, rows)
    return chosen[1] or str(chosen[0]) if chosen is not None else None


def _pages(count: int) -> str:
    return "1 page" if count == 1 else f"{count} pages"


def _find(file: str, known: list[tuple]) -> tuple | None:
    """The row ``file`` names exactly, of ``known`` (``(id, name, …)``, newest first): by
    its id, else its whole name, else its name without the extension when one name has
    that stem (any case). A part of a name never picks a file: "report" must not read
    "report-old.pdf" (``close_names`` offers those instead)."""
    wanted = " ".join(file.split()).casefold()
    if not wanted:
        return None
    as_id = _normalised(wanted)
    for row in known:
        if str(row[0]).casefold() == as_id:
            return row
    for row in known:
        if (row[1] or "").casefold() == wanted:
            return row  # the newest of that name
    stems = [row for row in known if _stem(row[1] or "") == wanted]
    if len({row[1].casefold() for row in stems}) == 1:
        return stems[0]
    return None


def _stem(name: str) -> str:
    """A name without its extension, case-folded (``""`` when it has none)."""
    stem, dot, _extension = name.casefold().rpartition(".")
    return stem if dot and stem else ""


CLOSE_NAMES_MAX = 5
CLOSE_STEM_MIN = 3  # a shorter name held in the one asked for is chance, not closeness


def close_names(file: str, known: list[tuple]) -> list[tuple]:
    """The rows of ``known`` whose names come close to ``file`` (one holds the other,
    or they differ by a few letters), newest first, at most ``CLOSE_NAMES_MAX``: what a
    ``read_document`` asking for a name no file has is offered, never read."""
    wanted = " ".join(file.split()).casefold()
    if not wanted:
        return []
    names = [(row[1] or "").casefold() for row in known]
    alike = set(difflib.get_close_matches(wanted, names, n=CLOSE_NAMES_MAX, cutoff=0.6))
    close: list[tuple] = []
    seen: set[str] = set()
    for row, name in zip(known, names, strict=True):
        stem = _stem(name) or name
        holds = wanted in name or (len(stem) >= CLOSE_STEM_MIN and stem in wanted)
        if name in seen or not (holds or name in alike):
            continue
        seen.add(name)
        close.append(row)
        if len(close) == CLOSE_NAMES_MAX:
            break
    return close


def _best_pages(texts: list[str], query: str) -> list[int]:
    terms = query_terms(query)
    scored = []
    for number, text in enumerate(texts, 1):
        indexed = index_text(text)
        score = sum(1 for term in terms if term.found_in(indexed))
        if score:
            scored.append((-score, number))
    scored.sort()
    return [number for _score, number in scored[:QUERY_PAGES]]


def _page_blocks(
    texts: list[str], numbers: list[int], max_chars: int, *, name: str, start: int = 0
) -> str:
    """The pages ``numbers`` within ``max_chars``; a page larger than a call is shown from
    ``start`` as far as it fits, ending with the call that reads on within it."""
    blocks: list[str] = []
    room = max_chars
    shown = 0
    for number in numbers[:MAX_PAGES_PER_CALL]:
        page = texts[number - 1].strip() or "(this page has no text)"
        text = page[start:] if start else page
        block = f"--- page {number} ---\n{text}"
        if len(block) > room:
            if not blocks:  # one page larger than a call: as much of it as fits
                head = block[:room].rstrip()
                end = start + max(0, len(head) - (len(block) - len(text)))
                next_call = call_text(
                    "read_document", {"file": name, "pages": str(number), "start": end}
                )
                blocks.append(
                    f"{head}\n[Page {number}: characters {start:,}–{end:,} of {len(page):,} "
                    f"of this page shown; {READ_ON}{next_call}]"
                )
                shown = 1
            break
        blocks.append(block)
        room -= len(block)
        shown += 1
    rest = numbers[shown:]
    if rest:
        # A read-on line (contextmgmt.core.readon): it outlives this result in the stub
        # that replaces it and in a summary of the run.
        next_call = call_text("read_document", {"file": name, "pages": _spans(rest)})
        blocks.append(
            f"[Pages {_spans(numbers[:shown])} of {len(texts)} shown; {len(rest)} more "
            f"page(s) asked for were not shown (at most {MAX_PAGES_PER_CALL} pages and "
            f"{max_chars:,} characters a call); {READ_ON}{next_call}]"
        )
    return "\n\n".join(blocks)


def _spans(numbers: list[int]) -> str:
    spans: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
        if len(spans) >= 5:
            break
    return ",".join(spans)


def document_reader_for(
    conversation_id: Any, *, before_id: int | None = None, project_id: int | None = None
) -> Callable[[str, str | None, str | None, int], Awaitable[str]]:
    """The ``async reader(file, pages, query, start)`` the ``read_document`` tool calls;
    ``project_id``: the conversation's project (read once with the run)."""

    async def reader(file: str, pages: str | None, query: str | None, start: int = 0) -> str:
        return await sync_to_async(read_document_text)(
            conversation_id,
            file=file,
            pages=pages,
            query=query,
            before_id=before_id,
            start=start,
            project_id=project_id,
        )

    return reader
