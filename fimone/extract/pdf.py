"""PDF text with pypdf (pure Python; its own limits on every decompressed stream)."""

from __future__ import annotations

import io
import logging
import warnings

from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError, LimitReachedError, PyPdfError

from .types import Budget, DamagedDocument, DocumentTooLarge, Heading, Page, UnsupportedDocument

logger = logging.getLogger(__name__)
# pypdf logs every recoverable fault of a damaged file as a warning; one line per file is
# enough for us (the extraction's own warnings say what was lost).
logging.getLogger("pypdf").setLevel(logging.ERROR)


def read_pdf(data: bytes, budget: Budget) -> tuple[list[Page], int, str, list[Heading]]:
    """Pages (text per PDF page), the page count, the title and the outline's headings."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(data), strict=False)
            if reader.is_encrypted and not _opens_without_password(reader):
                raise UnsupportedDocument(
                    "The PDF is protected by a password.", code="encrypted_document"
                )
            count = len(reader.pages)
            pages: list[Page] = []
            for index in range(min(count, budget.limits.max_pages)):
                budget.check_time()
                if budget.full:
                    budget.cut = True
                    break
                try:
                    text = reader.pages[index].extract_text() or ""
                except LimitReachedError:
                    raise
                except Exception as exc:  # one unreadable page is a gap, not a failure
                    logger.info("pdf page %d unreadable: %s", index + 1, exc)
                    text = ""
                pages.append(Page(index + 1, budget.take(_clean(text))))
            if count > budget.limits.max_pages:
                budget.cut = True
            title = _title(reader)
            headings = _outline(reader)
    except LimitReachedError as exc:
        raise DocumentTooLarge(f"The PDF unpacks to more than allowed: {exc}.") from exc
    except FileNotDecryptedError as exc:
        raise UnsupportedDocument(
            "The PDF is protected by a password.", code="encrypted_document"
        ) from exc
    except PyPdfError as exc:
        raise DamagedDocument(f"The PDF is damaged: {exc}.") from exc
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        # pypdf lets some faults of a malformed file through as plain Python errors.
        raise DamagedDocument(f"The PDF is damaged ({type(exc).__name__}).") from exc
    if count == 0:
        raise DamagedDocument("The PDF has no pages.")
    return pages, count, title, headings


def _opens_without_password(reader: PdfReader) -> bool:
    try:
        return bool(reader.decrypt(""))
    except Exception:
        return False


def _clean(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\x00", "").splitlines()]
    return "\n".join(lines).strip()


def _title(reader: PdfReader) -> str:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:
        return ""
    return " ".join(str(title).split())[:300] if title else ""


def _outline(reader: PdfReader, limit: int = 200) -> list[Heading]:
    """The bookmarks' titles with their pages (a PDF's table of contents), when it has one."""
    found: list[Heading] = []

    def walk(items, level: int) -> None:
        for item in items:
            if len(found) >= limit:
                return
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                number = reader.get_destination_page_number(item)
                title = " ".join(str(item.title).split())
            except Exception as exc:  # a bookmark pointing nowhere: left out
                logger.debug("pdf bookmark unreadable: %s", exc)
                continue
            if title and number is not None:
                found.append(Heading(title[:200], number + 1, level))

    try:
        walk(reader.outline, 1)
    except Exception:
        return found
    return found
