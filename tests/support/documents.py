"""Documents made for the tests (nothing is shipped as a binary fixture).

``pdf_with_fact`` is the standard case: twelve pages of filler with one fact on page 7,
which ``read_document`` must bring to the model and ``recall`` must cite with its page.
"""

from __future__ import annotations

import functools
import io
import textwrap
import zipfile

FACT = "The launch code of project Bluebird is ZEBRA-7741."
FACT_WORDS = "launch code Bluebird"
FACT_VALUE = "ZEBRA-7741"


def _filler(page: int) -> str:
    return (
        f"Page {page} of the quarterly review. The committee discussed routine matters, "
        "budgets for office supplies, the cafeteria menu and the parking rota. Nothing "
        "on this page is of lasting importance."
    )


# Characters per line of 11 pt Helvetica across 185 mm of the page (about 2 mm a character).
_LINE_CHARS = 95


def make_pdf(pages: list[str], *, title: str = "", outline: list[tuple[str, int]] = ()) -> bytes:
    """A PDF with one page per text (fpdf2, core font: Latin-1 text only), a line of text
    every 5 mm. The lines are wrapped here by their length: fpdf2's own wrapping
    (``multi_cell``) measures every candidate line again, 18 ms a page of 1,200
    characters (5.4 s for ``long_pdf``), this 0.5 ms."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_auto_page_break(False)
    if title:
        pdf.set_title(title)
    bookmarks = dict((page, name) for name, page in outline)
    for number, text in enumerate(pages, 1):
        pdf.add_page()
        if number in bookmarks:
            pdf.start_section(bookmarks[number])
        pdf.set_font("helvetica", size=11)
        lines = [
            line
            for paragraph in text.split("\n")
            for line in textwrap.wrap(paragraph, _LINE_CHARS) or [""]
        ]
        for row, line in enumerate(lines):
            if line:
                pdf.text(15, 20 + 5 * row, line)
    return bytes(pdf.output())


# Made once per process: the bytes are the same for the same arguments.
@functools.cache
def pdf_with_fact(pages: int = 12, fact_page: int = 7) -> bytes:
    texts = [_filler(n) for n in range(1, pages + 1)]
    texts[fact_page - 1] = f"{_filler(fact_page)}\n\n{FACT}"
    return make_pdf(
        texts,
        title="Quarterly review",
        outline=[("Introduction", 1), ("Secrets", fact_page)] if pages >= fact_page else [],
    )


@functools.cache
def long_pdf(pages: int = 300) -> bytes:
    """A long text PDF (each page about 1,200 characters), the fact on page 7."""
    body = " ".join(_filler(0) for _ in range(5))
    texts = [f"Chapter {n}. {body}" for n in range(1, pages + 1)]
    texts[6] = f"{texts[6]}\n\n{FACT}"
    return make_pdf(texts, title="A long report")


def image_only_pdf(pages: int = 2) -> bytes:
    """A 'scan': pages that are pictures, no text layer."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw

    pdf = FPDF()
    for _ in range(pages):
        picture = Image.new("RGB", (400, 200), "white")
        ImageDraw.Draw(picture).rectangle((20, 20, 380, 180), outline="black", width=4)
        buffer = io.BytesIO()
        picture.save(buffer, format="PNG")
        pdf.add_page()
        pdf.image(io.BytesIO(buffer.getvalue()), x=10, y=10, w=180)
    return bytes(pdf.output())


def malformed_pdf() -> bytes:
    """Starts like a PDF, and is not one."""
    return b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\ngarbage \x00\xff" * 3


def slow_pdf(operations: int = 2_000_000) -> bytes:
    """A PDF of a few KB whose one page draws ``operations`` one-letter texts: reading it
    takes about 17 µs of CPU per operation (half a minute for the default), and the time
    limit, checked between pages, never interrupts it; the hard limit does."""
    import zlib

    content = zlib.compress(b"BT /F1 1 Tf " + b"(a) Tj " * operations + b"ET", 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content)
        + content
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def docx_bytes(paragraphs: list[str] | None = None, *, heading: str = "Findings") -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = "Team notes"
    document.add_heading(heading, level=1)
    for text in paragraphs or ["We met on Monday.", FACT, "Next meeting in May."]:
        document.add_paragraph(text)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "owner", "task"
    table.cell(1, 0).text, table.cell(1, 1).text = "Ada", "slides"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def pptx_bytes() -> bytes:
    import pptx

    presentation = pptx.Presentation()
    for title, body in [("Welcome", "Agenda for today"), ("Secrets", FACT)]:
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def xlsx_bytes() -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "Codes"
    sheet.append(["project", "code"])
    sheet.append(["Bluebird", FACT_VALUE])
    sheet["C2"] = "=1+1"  # a formula is never evaluated: its cached value (none) is read
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def csv_bytes(rows: int = 5) -> bytes:
    lines = ["city,population,country"]
    lines += [f"Town{n},{1000 + n},Nowhere" for n in range(rows)]
    lines.append(f"Bluebird,{FACT_VALUE},Launch")
    return ("\n".join(lines) + "\n").encode()


def zip_bomb_docx(size: int = 300_000_000) -> bytes:
    """A .docx whose one part unpacks to ``size`` bytes of zeros (stored as a few hundred KB)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        with zipfile.ZipFile(io.BytesIO(docx_bytes())) as real:
            for item in real.infolist():
                archive.writestr(item, real.read(item))
        with archive.open("word/media/bomb.bin", "w", force_zip64=True) as member:
            chunk = b"\0" * 1_000_000
            for _ in range(size // len(chunk)):
                member.write(chunk)
    return buffer.getvalue()


def many_paragraph_docx(paragraphs: int = 60_000) -> bytes:
    """A Word document of ``paragraphs`` short paragraphs ("Paragraph 1." …), the last one
    ``FACT``: written straight into the document's XML (python-docx's ``add_paragraph``
    takes minutes for that many)."""
    body = b"".join(
        b"<w:p><w:r><w:t>Paragraph %d.</w:t></w:r></w:p>" % n for n in range(1, paragraphs)
    )
    body += f"<w:p><w:r><w:t>{FACT}</w:t></w:r></w:p>".encode()
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(docx_bytes())) as real,
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out,
    ):
        for item in real.infolist():
            data = real.read(item)
            if item.filename == "word/document.xml":
                start, end = data.index(b"<w:body>") + len(b"<w:body>"), data.index(b"</w:body>")
                data = data[:start] + body + data[end:]
            out.writestr(item, data)
    return buffer.getvalue()


LICENCE = [
    "Copyright 2019 The Example Authors. All rights reserved.",
    "",
    'Licensed under the Apache License, Version 2.0 (the "License");',
    "you may not use this file except in compliance with the License.",
    "You may obtain a copy of the License at",
    "",
    "    http://www.apache.org/licenses/LICENSE-2.0",
    "",
    "Unless required by applicable law or agreed to in writing, software",
    'distributed under the License is distributed on an "AS IS" BASIS,',
    "WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.",
    "See the License for the specific language governing permissions and",
    "limitations under the License.",
]


def licence_xml() -> bytes:
    """An XML file as projects ship them: a 30-line licence header, one comment a line."""
    header = "\n".join(f"<!-- {line} -->" for line in (LICENCE * 3)[:30])
    body = '<resources>\n  <string name="app_name">Bluebird</string>\n</resources>\n'
    return f"{header}\n{body}".encode()
