"""Word, PowerPoint and Excel files (OOXML) with python-docx, python-pptx and openpyxl.

A zip archive is checked before anything is unpacked: member count, total unpacked size
and each member's compression ratio (a zip bomb is refused by its directory alone). The
libraries read XML parts only: macros (``vbaProject.bin``) are never opened, let alone
run, and macro-enabled files are refused by ``sniff``; openpyxl reads the values a
spreadsheet stored, never evaluating a formula, and uses defusedxml against entity
expansion.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from .text import limited_pages, markdown_heading, paginate
from .types import Budget, DamagedDocument, DocumentTooLarge, ExtractLimits, Heading, Page

_HEADING_STYLE = re.compile(r"^(?:Heading|Überschrift|标题)\s*(\d)", re.I)


def check_zip(data: bytes, limits: ExtractLimits) -> None:
    """Refuse an archive whose directory promises a zip bomb, before unpacking any of it."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError) as exc:
        raise DamagedDocument(f"The Office file is damaged: {exc}.") from exc
    if len(members) > limits.max_zip_members:
        raise DocumentTooLarge(
            f"The Office file has {len(members):,} parts; the limit is {limits.max_zip_members:,}."
        )
    total = 0
    for member in members:
        total += member.file_size
        if member.flag_bits & 0x1:
            raise DamagedDocument("The Office file is encrypted.", code="encrypted_document")
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > 1_000_000 and ratio > limits.max_zip_ratio:
            raise DocumentTooLarge(
                f"A part of the Office file unpacks {ratio:,.0f} times larger than it is "
                "stored (a zip bomb?).",
                code="zip_bomb",
            )
    if total > limits.max_unzipped_bytes:
        raise DocumentTooLarge(
            f"The Office file unpacks to {total:,} bytes; the limit is "
            f"{limits.max_unzipped_bytes:,}.",
            code="zip_bomb",
        )


def _headings_of(pages: list[Page]) -> list[Heading]:
    found = []
    for page in pages:
        for line in page.text.splitlines():
            heading = markdown_heading(line)
            if heading:
                found.append(Heading(heading.text[:200], page.number, heading.level))
    return found


def read_docx(data: bytes, budget: Budget) -> tuple[list[Page], int, str, list[Heading]]:
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
        styles = _ParagraphStyles(document)
        blocks: list[str] = []
        size = 0  # characters in blocks: summed as they come, never recounted
        for item in document.iter_inner_content():
            budget.check_time()
            if isinstance(item, Table):
                rows = _table_rows(item)
                blocks.extend(rows)
                size += sum(map(len, rows))
                continue
            text = item.text.strip()
            if not text:
                continue
            style = styles.name_of(item)
            level = _HEADING_STYLE.match(style)
            if style == "Title":
                blocks.append(f"# {text}")
            elif level:
                blocks.append(f"{'#' * min(int(level.group(1)) + 1, 6)} {text}")
            else:
                blocks.append(text)
            size += len(blocks[-1])
            if size > budget.limits.max_chars:
                break
        title = (document.core_properties.title or "").strip()
    except (KeyError, ValueError, TypeError, AttributeError, zipfile.BadZipFile) as exc:
        raise DamagedDocument(f"The Word document is damaged ({type(exc).__name__}).") from exc
    pages, count = limited_pages(paginate(blocks, budget), budget)
    return pages, count, title, _headings_of(pages)


class _ParagraphStyles:
    """Paragraph style names, looked up once per style. python-docx's ``paragraph.style``
    searches the document's style list on every call (a few milliseconds with Word's
    usual 160 styles: minutes for 60,000 paragraphs)."""

    def __init__(self, document) -> None:
        from docx.enum.style import WD_STYLE_TYPE
        from docx.oxml.ns import qn

        self._document = document
        self._type = WD_STYLE_TYPE.PARAGRAPH
        self._style_path = f"{qn('w:pPr')}/{qn('w:pStyle')}"
        self._value = qn("w:val")
        self._names: dict[str | None, str] = {}

    def name_of(self, paragraph) -> str:
        # The paragraph's <w:p> element, through the public element of its format.
        mark = paragraph.paragraph_format.element.find(self._style_path)
        style_id = None if mark is None else mark.get(self._value)
        if style_id not in self._names:
            style = self._document.styles.get_by_id(style_id, self._type)
            self._names[style_id] = (style.name or "") if style is not None else ""
        return self._names[style_id]


def _table_rows(table: Any) -> list[str]:  # a Word or a PowerPoint table
    rows = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            text = " ".join(cell.text.split())
            if not cells or cells[-1] != text:  # merged cells repeat their text
                cells.append(text)
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


def read_pptx(data: bytes, budget: Budget) -> tuple[list[Page], int, str, list[Heading]]:
    import pptx

    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        texts: list[str] = []
        headings: list[Heading] = []
        for number, slide in enumerate(presentation.slides, 1):
            budget.check_time()
            if number > budget.limits.max_pages:
                texts.append("")  # counted, not read
                continue
            title_shape = slide.shapes.title
            title = " ".join(title_shape.text.split()) if title_shape is not None else ""
            lines = [f"# {title}"] if title else []
            if title:
                headings.append(Heading(title[:200], number, 1))
            for shape in slide.shapes:
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                if shape.has_text_frame:
                    lines.extend(p.strip() for p in shape.text_frame.text.splitlines() if p.strip())
                elif getattr(shape, "has_table", False) and shape.has_table:
                    lines.extend(_table_rows(shape.table))
            if slide.has_notes_slide:
                notes = (
                    slide.notes_slide.notes_text_frame.text.strip()
                    if slide.notes_slide.notes_text_frame
                    else ""
                )
                if notes:
                    lines.append(f"Notes: {notes}")
            texts.append("\n".join(lines))
        title = (presentation.core_properties.title or "").strip()
    except (KeyError, ValueError, TypeError, AttributeError, zipfile.BadZipFile) as exc:
        raise DamagedDocument(f"The presentation is damaged ({type(exc).__name__}).") from exc
    pages, count = limited_pages(texts, budget)
    return pages, count, title, [h for h in headings if h.page <= len(pages)]


def read_xlsx(data: bytes, budget: Budget) -> tuple[list[Page], int, str, list[Heading]]:
    import openpyxl

    texts: list[str] = []
    headings: list[Heading] = []
    try:
        workbook = openpyxl.load_workbook(
            io.BytesIO(data), read_only=True, data_only=True, keep_links=False
        )
        try:
            for sheet in workbook.worksheets:
                rows: list[str] = []
                size = 0
                for index, row in enumerate(sheet.iter_rows(values_only=True)):
                    if index % 200 == 0:
                        budget.check_time()
                    cells = ["" if v is None else str(v) for v in row]
                    while cells and not cells[-1]:
                        cells.pop()
                    if cells:
                        line = " | ".join(cells)
                        rows.append(line)
                        size += len(line) + 1
                    if size > budget.limits.max_chars:
                        budget.cut = True
                        break
                sheet_pages = paginate(rows, budget) or [""]
                headings.append(Heading(f"Sheet {sheet.title}", len(texts) + 1, 1))
                texts.extend(f"## Sheet {sheet.title}\n{page}".rstrip() for page in sheet_pages)
            title = (workbook.properties.title or "").strip()
        finally:
            workbook.close()
    except (KeyError, ValueError, TypeError, AttributeError, zipfile.BadZipFile) as exc:
        raise DamagedDocument(f"The spreadsheet is damaged ({type(exc).__name__}).") from exc
    pages, count = limited_pages(texts, budget)
    return pages, count, title, [h for h in headings if h.page <= len(pages)]
