"""Text files (plain, Markdown, CSV, JSON, HTML) and the pages of any flowing text.

A flowing text has no pages of its own, so it is cut into pages of about
``PAGE_CHARS`` characters at paragraph (else line) boundaries: a page number then names a
stable stretch that ``read_document`` can return and ``recall`` can cite.
"""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser

from .types import Budget, Heading, Page

PAGE_CHARS = 3_000
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def paginate(blocks: list[str], budget: Budget, *, page_chars: int = PAGE_CHARS) -> list[str]:
    """``blocks`` (paragraphs, lines, rows) joined into pages of about ``page_chars``; a
    block longer than a page is split. Stops at the page and character limits."""
    pages: list[str] = []
    current: list[str] = []
    size = 0

    def flush() -> None:
        nonlocal current, size
        if current:
            pages.append("\n".join(current))
        current, size = [], 0

    for block in blocks:
        while len(block) > page_chars:
            flush()
            pages.append(block[:page_chars])
            block = block[page_chars:]
        if size and size + len(block) + 1 > page_chars:
            flush()
        current.append(block)
        size += len(block) + 1
        if len(pages) >= budget.limits.max_pages:
            break
    flush()
    return pages


def limited_pages(texts: list[str], budget: Budget) -> tuple[list[Page], int]:
    """Pages within the page and character limits, and how many there were in all."""
    pages = []
    for number, text in enumerate(texts[: budget.limits.max_pages], 1):
        if budget.full:
            budget.cut = True
            break
        pages.append(Page(number, budget.take(text)))
    if len(texts) > budget.limits.max_pages:
        budget.cut = True
    return pages, len(texts)


def read_plain(text: str, budget: Budget) -> tuple[list[Page], int]:
    return limited_pages(paginate(_paragraphs(text), budget), budget)


def read_markdown(text: str, budget: Budget) -> tuple[list[Page], int, list[Heading]]:
    pages, count = read_plain(text, budget)
    headings = []
    for page in pages:
        in_code = False
        for line in page.text.splitlines():
            if line.lstrip().startswith("```"):
                in_code = not in_code
            m = None if in_code else _MD_HEADING.match(line)
            if m:
                headings.append(Heading(m.group(2), page.number, len(m.group(1))))
    return pages, count, headings


def read_json(text: str, budget: Budget) -> tuple[list[Page], int]:
    pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return limited_pages(paginate(pretty.splitlines(), budget), budget)


def read_csv(text: str, budget: Budget) -> tuple[list[Page], int]:
    """Rows as ``a | b | c`` lines; each page starts with the header row again, so a page
    read alone still says what its columns are."""
    sample = "\n".join(text.splitlines()[:20])
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = [
        " | ".join(cell.strip() for cell in row) for row in csv.reader(io.StringIO(text), dialect)
    ]
    if not rows:
        return [], 0
    header, body = rows[0], rows[1:]
    pages = paginate(body, budget, page_chars=PAGE_CHARS - len(header))
    return limited_pages([f"{header}\n{page}" for page in pages] or [header], budget)


def read_html(text: str, budget: Budget) -> tuple[list[Page], int, list[Heading], str]:
    parser = _TextOfHtml()
    parser.feed(text)
    parser.close()
    blocks = [b for b in parser.blocks if b.strip()]
    pages, count = limited_pages(paginate(blocks, budget), budget)
    headings = []
    for page in pages:
        for line in page.text.splitlines():
            m = _MD_HEADING.match(line)
            if m:
                headings.append(Heading(m.group(2), page.number, len(m.group(1))))
    return pages, count, headings, " ".join(parser.title.split())


def _paragraphs(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()] or ([text] if text.strip() else [])


class _TextOfHtml(HTMLParser):
    """An HTML file's visible text, a block per paragraph, headings as ``#`` lines; scripts,
    styles and templates are dropped, and nothing is fetched or run."""

    _SKIP = {"script", "style", "template", "noscript", "svg", "head"}
    _BLOCKS = {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "section",
        "article",
        "header",
        "footer",
        "pre",
        "blockquote",
        "table",
        "ul",
        "ol",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "dt",
        "dd",
    }

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.title = ""
        self._current: list[str] = []
        self._skipping: list[str] = []
        self._in_title = False
        self._heading = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "title":
            self._in_title = True
        if tag in self._SKIP:
            self._skipping.append(tag)
        if tag in self._BLOCKS:
            self._end_block()
        if tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self._heading = int(tag[1])
        if tag == "li":
            self._current.append("- ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skipping and self._skipping[-1] == tag:
            self._skipping.pop()
        if tag in self._BLOCKS:
            self._end_block()
        if tag in {"td", "th"}:
            self._current.append(" | ")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if not self._skipping:
            self._current.append(data)

    def close(self) -> None:
        super().close()
        self._end_block()

    def _end_block(self) -> None:
        text = " ".join("".join(self._current).split()).strip(" |")
        if text:
            self.blocks.append(f"{'#' * self._heading} {text}" if self._heading else text)
        self._current = []
        self._heading = 0
