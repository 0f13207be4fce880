"""What an extraction gives back, its limits, and how it fails (plain data, no I/O)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExtractLimits:
    """Bounds on one extraction. A document past ``max_pages`` or ``max_chars`` is cut
    there (with a warning); one that takes longer than ``seconds`` is refused. The zip
    bounds are checked on an Office file's directory before anything is unpacked."""

    max_pages: int = 500
    max_chars: int = 2_000_000
    seconds: float = 30.0
    max_unzipped_bytes: int = 200_000_000
    max_zip_members: int = 5_000
    # A member this much larger than its compressed size is a zip bomb, not a document
    # (XML compresses well, but ~20x is typical and 100x is already extreme).
    max_zip_ratio: int = 200


@dataclass(frozen=True)
class Page:
    """One page of text: a PDF page, a slide, a sheet, or a stretch of a flowing text
    (a Word document or a text file has no pages of its own; see ``docs/tools.md``)."""

    number: int  # from 1
    text: str


@dataclass(frozen=True)
class Heading:
    text: str
    page: int
    level: int = 1


@dataclass(frozen=True)
class ExtractedDocument:
    kind: str  # pdf, docx, pptx, xlsx, text, markdown, csv, json, html
    mime_type: str
    pages: tuple[Page, ...]
    # Pages the file has; more than ``len(pages)`` when the page limit cut it.
    page_count: int
    title: str = ""
    headings: tuple[Heading, ...] = ()
    # Plain English sentences about what was left out or could not be read.
    warnings: tuple[str, ...] = ()
    # False for a PDF whose pages are pictures only (a scan with no text layer).
    has_text_layer: bool = True
    truncated: bool = False

    @property
    def text(self) -> str:
        return "\n\n".join(page.text for page in self.pages)

    @property
    def chars(self) -> int:
        return sum(len(page.text) for page in self.pages)


class ExtractionError(Exception):
    """The file cannot be read as a document. ``code`` is stable (callers translate by it);
    ``message`` is plain English; ``params`` fill a translated message."""

    code = "invalid_document"

    def __init__(self, message: str, *, code: str | None = None, **params: object) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.params = params


class UnsupportedDocument(ExtractionError):
    code = "unsupported_type"


class DamagedDocument(ExtractionError):
    code = "damaged_document"


class DocumentTooLarge(ExtractionError):
    code = "document_too_large"


class ExtractionTimeout(ExtractionError):
    code = "extraction_timeout"


@dataclass
class Budget:
    """What an extraction may still spend: time (checked between pages), pages, characters."""

    limits: ExtractLimits
    started: float = field(default_factory=time.monotonic)
    chars: int = 0
    cut: bool = False

    def check_time(self) -> None:
        if time.monotonic() - self.started > self.limits.seconds:
            raise ExtractionTimeout(
                f"Reading the document took longer than {self.limits.seconds:g} seconds.",
                seconds=self.limits.seconds,
            )

    def take(self, text: str) -> str:
        """``text``, or as much of it as the character limit leaves (then ``cut`` is set)."""
        room = self.limits.max_chars - self.chars
        if len(text) > room:
            text = text[: max(room, 0)]
            self.cut = True
        self.chars += len(text)
        return text

    @property
    def full(self) -> bool:
        return self.chars >= self.limits.max_chars
