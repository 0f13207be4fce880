"""Document text extraction: a file's bytes in, its text by page out, within limits.

Plain Python (no Django), used by the chat layer for uploads and by tools for files they
fetch. The content decides what a file is (``sniff``), never its name. See
``docs/tools.md`` ("Documents") for the libraries and the limits.

    doc = extract_document(data, filename="report.pdf", mime_type=None, limits=ExtractLimits())
    doc.pages[6].text    # page 7

Every failure is an ``ExtractionError`` with a stable ``code`` and a plain message; a
library's own fault on a malformed file is a ``DamagedDocument``.
"""

from __future__ import annotations

import logging

from .office import check_zip, read_docx, read_pptx, read_xlsx
from .pdf import read_pdf
from .sniff import EXTENSIONS, MIME_TYPES, decode_text, sniff
from .text import read_csv, read_html, read_json, read_markdown, read_plain
from .types import (
    Budget,
    DamagedDocument,
    DocumentTooLarge,
    ExtractedDocument,
    ExtractionError,
    ExtractionTimeout,
    ExtractLimits,
    Heading,
    Page,
    UnsupportedDocument,
)

__all__ = [
    "EXTENSIONS",
    "MIME_TYPES",
    "DamagedDocument",
    "DocumentTooLarge",
    "ExtractLimits",
    "ExtractedDocument",
    "ExtractionError",
    "ExtractionTimeout",
    "Heading",
    "Page",
    "UnsupportedDocument",
    "extract_document",
    "sniff",
]

logger = logging.getLogger(__name__)

NO_TEXT_LAYER = (
    "The PDF has no text layer: its pages are images (a scan?), and no text could be "
    "read from them."
)


def extract_document(
    data: bytes,
    *,
    filename: str | None = None,
    mime_type: str | None = None,
    limits: ExtractLimits | None = None,
) -> ExtractedDocument:
    """The text of ``data`` by page. ``filename`` and ``mime_type`` are only hints for the
    messages (the bytes decide the kind). Sync and CPU-bound: call it from a thread."""
    limits = limits or ExtractLimits()
    if not data:
        raise UnsupportedDocument("The file is empty.", code="empty_file")
    kind = sniff(data)
    budget = Budget(limits)
    title = ""
    headings: list[Heading] = []
    try:
        if kind == "pdf":
            pages, count, title, headings = read_pdf(data, budget)
        elif kind in ("docx", "pptx", "xlsx"):
            check_zip(data, limits)
            reader = {"docx": read_docx, "pptx": read_pptx, "xlsx": read_xlsx}[kind]
            pages, count, title, headings = reader(data, budget)
        else:
            text = decode_text(data) or ""
            if kind == "json":
                pages, count = read_json(text, budget)
            elif kind == "csv":
                pages, count = read_csv(text, budget)
            elif kind == "markdown":
                pages, count, headings = read_markdown(text, budget)
            elif kind == "html":
                pages, count, headings, title = read_html(text, budget)
            else:
                pages, count = read_plain(text, budget)
    except ExtractionError:
        raise
    except (MemoryError, RecursionError) as exc:
        raise DocumentTooLarge(
            f"The document is too large to read ({type(exc).__name__})."
        ) from exc
    except Exception as exc:  # a library's fault on a malformed file: a damaged document
        if _out_of_memory(exc):  # e.g. an import under a worker's memory limit
            raise DocumentTooLarge("The document needs more memory than allowed.") from exc
        logger.info("extracting a %s failed: %r", kind, exc)
        raise DamagedDocument(f"The {_label(kind)} cannot be read ({type(exc).__name__}).") from exc
    budget.check_time()
    pages, title, headings = _without_nul(pages, title, headings)
    warnings: list[str] = []
    has_text = any(page.text.strip() for page in pages)
    if kind == "pdf" and not has_text:
        warnings.append(NO_TEXT_LAYER)
    elif not has_text:
        # Only a scan is worth keeping without text (it is still the user's PDF to see).
        raise UnsupportedDocument("The document holds no text.", code="no_text")
    if budget.cut or count > len(pages):
        warnings.append(
            f"Only the first {len(pages)} of {count} pages were read "
            f"(limits: {limits.max_pages} pages, {limits.max_chars:,} characters)."
        )
    return ExtractedDocument(
        kind=kind,
        mime_type=MIME_TYPES[kind],
        pages=tuple(pages),
        page_count=count,
        title=title,
        headings=tuple(headings),
        warnings=tuple(warnings),
        has_text_layer=has_text,
        truncated=budget.cut or count > len(pages),
    )


def _without_nul(
    pages: list[Page], title: str, headings: list[Heading]
) -> tuple[list[Page], str, list[Heading]]:
    """The texts without U+0000: binary data is told by a NUL in a file's first 64 KiB
    (``decode_text``), so one further on (or a UTF-16 file's) gets here, and PostgreSQL's
    text and jsonb cannot store it. It carries no meaning in a text: dropped, as a PDF's
    are (``read_pdf``)."""
    pages = [
        Page(number=p.number, text=p.text.replace("\x00", "")) if "\x00" in p.text else p
        for p in pages
    ]
    headings = [
        Heading(text=h.text.replace("\x00", ""), page=h.page, level=h.level)
        if "\x00" in h.text
        else h
        for h in headings
    ]
    return pages, title.replace("\x00", ""), headings


def _out_of_memory(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, MemoryError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _label(kind: str) -> str:
    return {
        "pdf": "PDF",
        "docx": "Word document",
        "pptx": "presentation",
        "xlsx": "spreadsheet",
    }.get(kind, f"{kind} file")
