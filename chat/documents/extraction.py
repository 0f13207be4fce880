"""Documents as attachments: the text extracted once at upload, stored with the attachment.

``fimone.extract`` reads the bytes (kind by content, pages, limits); this module gives it
the configured limits, turns its failures into translated upload errors, and keeps what
the context needs without reading the whole text again: the page count, the size in
tokens (a small document goes inline with its message, a larger one as its outline:
``chat.documents.context``) and the outline itself (title, headings, first lines).

Sync: the upload view runs in its own thread, never on the event loop. The extraction
itself runs in worker processes (``fimone.extract.isolated``: a hard time limit,
``FIMONE_DOCUMENT_EXTRACT_SECONDS``, and a memory limit, and no competition with the
server's threads for one interpreter); ``FIMONE_DOCUMENT_WORKERS=0`` extracts in the
upload's thread instead.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from chat.errors import UploadRejected
from contextmgmt.core.tokens import estimate_tokens
from fimone.extract import ExtractedDocument, ExtractionError, ExtractLimits, extract_document
from fimone.extract.isolated import ExtractionPool

# The magic bytes of the image formats the image path takes; anything else is read as a
# document (chat.services.attachment_create).
_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")

OUTLINE_HEADINGS = 30
OUTLINE_BEGINNING_CHARS = 400

KIND_LABELS = {
    "pdf": "PDF",
    "docx": "Word",
    "pptx": "PowerPoint",
    "xlsx": "Excel",
    "text": "text",
    "markdown": "Markdown",
    "csv": "CSV",
    "json": "JSON",
    "html": "HTML",
}


def looks_like_image(data: bytes) -> bool:
    """Whether ``data`` claims to be one of the image formats (Pillow then decides)."""
    return data.startswith(_IMAGE_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


def document_limits() -> ExtractLimits:
    """The extraction limits from the settings (read per call)."""
    return ExtractLimits(
        max_pages=int(settings.FIMONE_DOCUMENT_MAX_PAGES),
        max_chars=int(settings.FIMONE_DOCUMENT_MAX_CHARS),
        seconds=float(settings.FIMONE_DOCUMENT_EXTRACT_SECONDS),
    )


def inline_tokens() -> int:
    """Up to this many tokens a document goes inline with its message (read per call)."""
    return max(0, int(settings.FIMONE_DOCUMENT_INLINE_TOKENS))


def read_max_chars() -> int:
    """The most characters one ``read_document`` call returns (read per call)."""
    return max(1_000, int(settings.FIMONE_DOCUMENT_READ_CHARS))


_pool: ExtractionPool | None = None
_pool_lock = threading.Lock()


def extraction_pool() -> ExtractionPool | None:
    """This process's extraction workers (made on first use), or None when the settings
    say to extract in the caller's thread."""
    global _pool
    workers = int(settings.FIMONE_DOCUMENT_WORKERS)
    if workers <= 0:
        return None
    with _pool_lock:
        if _pool is None:
            memory = int(settings.FIMONE_DOCUMENT_WORKER_MEMORY_MB) * 1024 * 1024
            _pool = ExtractionPool(workers=workers, memory_bytes=memory)
        return _pool


@dataclass(frozen=True)
class StoredDocument:
    """What an attachment row keeps of an extracted document."""

    mime_type: str
    page_count: int
    text_tokens: int
    outline: str
    document: dict[str, Any]


def extract_upload(data: bytes, *, name: str, owner_key: str) -> StoredDocument:
    """The uploaded ``data`` read as a document, as ``owner_key``'s share of the workers
    (a user's id: one user's slow files do not hold up another's); ``UploadRejected``
    (translated) when it cannot be: nothing is stored then."""
    try:
        pool = extraction_pool()
        if pool is None:
            doc = extract_document(data, filename=name, limits=document_limits())
        else:
            doc = pool.extract(data, filename=name, limits=document_limits(), owner=owner_key)
    except ExtractionError as exc:
        raise UploadRejected(exc.code, rejection_message(exc), status=_status(exc)) from exc
    return StoredDocument(
        mime_type=doc.mime_type,
        page_count=doc.page_count,
        text_tokens=estimate_tokens(doc.text),
        outline=outline_of(doc),
        document={
            "kind": doc.kind,
            "title": doc.title,
            "pages": [page.text for page in doc.pages],
            "headings": [[h.text, h.page, h.level] for h in doc.headings],
            "warnings": list(doc.warnings),
            "text_layer": doc.has_text_layer,
            "truncated": doc.truncated,
        },
    )


def outline_of(doc: ExtractedDocument) -> str:
    """Title, headings with their pages, the first lines and the warnings: what the model
    sees of a document too large to go inline."""
    lines = []
    if doc.title:
        lines.append(f"Title: {doc.title}")
    if doc.headings:
        shown = "; ".join(f"{h.text} (p. {h.page})" for h in doc.headings[:OUTLINE_HEADINGS])
        more = len(doc.headings) - OUTLINE_HEADINGS
        lines.append(f"Headings: {shown}" + (f"; … {more} more" if more > 0 else ""))
    first = next((page for page in doc.pages if page.text.strip()), None)
    if first is not None:
        begins = " ".join(first.text.split())
        if len(begins) > OUTLINE_BEGINNING_CHARS:
            begins = begins[:OUTLINE_BEGINNING_CHARS].rsplit(" ", 1)[0] + " …"
        lines.append(f"Begins (p. {first.number}): {begins}")
    lines.extend(f"Note: {warning}" for warning in doc.warnings)
    return "\n".join(lines)


def rejection_message(exc: ExtractionError) -> str:
    code = exc.code
    if code == "empty_file":
        return gettext("The file is empty.")
    if code == "legacy_office":
        return gettext(
            "This is an old binary Office file (.doc, .xls or .ppt); save it as .docx, .xlsx "
            "or .pptx and attach it again."
        )
    if code == "macro_enabled":
        return gettext(
            "Macro-enabled Office files (.docm, .xlsm, .pptm) are not accepted; save the file "
            "without macros."
        )
    if code == "no_text":
        return gettext("The document holds no text.")
    if code == "encrypted_document":
        return gettext("The document is protected by a password.")
    if code == "damaged_document":
        return gettext("The document is damaged or incomplete and cannot be read.")
    if code in ("document_too_large", "zip_bomb"):
        return gettext("The document unpacks to more than is allowed.")
    if code == "extraction_timeout":
        return gettext("Reading the document took longer than %(seconds)s seconds.") % {
            "seconds": f"{document_limits().seconds:g}"
        }
    return gettext(
        "The file is not a supported image or document (PNG, JPEG, WebP, GIF, PDF, DOCX, "
        "PPTX, XLSX, TXT, MD, CSV, JSON or HTML)."
    )


def _status(exc: ExtractionError) -> int:
    return 413 if exc.code in ("document_too_large", "zip_bomb") else 400


def size_label(size: int) -> str:
    """``48 KB``, ``1.2 MB``: a file size as a person reads it."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def document_refs(attachments) -> dict[str, list[dict[str, Any]]]:
    """``{"documents": [...]}`` for a user message's metadata (nothing without documents):
    what a chip shows (name, pages, size) without reading the attachment rows again."""
    refs = [
        {
            "file_id": str(a.id),
            "name": a.original_name,
            "mime_type": a.mime_type,
            "kind": (a.document or {}).get("kind", ""),
            "pages": a.page_count,
            "size": a.size,
        }
        for a in attachments
        if a.kind == "document"
    ]
    return {"documents": refs} if refs else {}
