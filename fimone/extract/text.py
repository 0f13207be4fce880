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

from .sniff import csv_delimiter, head_lines
from .types import Budget, Heading, Page

PAGE_CHARS = 3_000
_HEADING_MARK = re.compile(r"(#{1,6})[ \t]+(?=\S)")


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
        # A block longer than a page is cut by position: cutting the rest off again for
        # each page copied the rest once a page (quadratic in the block).
        start = 0
        while len(block) - start > page_chars and len(pages) < budget.limits.max_pages:
            flush()
            pages.append(block[start : start + page_chars])
            start += page_chars
        if start:
            block = block[start:]
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
            found = None if in_code else markdown_heading(line)
            if found:
                headings.append(Heading(found.text, page.number, found.level))
    return pages, count, headings


def read_json(text: str, budget: Budget) -> tuple[list[Page], int]:
    pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return limited_pages(paginate(pretty.splitlines(), budget), budget)


def read_csv(text: str, budget: Budget) -> tuple[list[Page], int]:
    """Rows as ``a | b | c`` lines; each page starts with the header row again, so a page
    read alone still says what its columns are."""
    delimiter = csv_delimiter(head_lines(text)) or ","
    rows = [
        " | ".join(cell.strip() for cell in row)
        for row in csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True)
    ]
    if not rows:
        return [], 0
    header, body = rows[0], rows[1:]
    pages = paginate(body, budget, page_chars=PAGE_CHARS - len(header))
    return limited_pages([f"{header}\n{page}" for page in pages] or [header], budget)


def markdown_heading(line: str) -> Heading | None:
    """The heading a Markdown line is (``## Title ##``: "Title", level 2; page 0), or None.
    The text is cut by string methods: a pattern with a lazy text followed by optional
    spaces and hashes tried every split of a long line of spaces (cubic work)."""
    mark = _HEADING_MARK.match(line)
    if mark is None:
        return None
    text = line[mark.end() :].rstrip()
    closing = text.rstrip("#")
    if closing != text and closing[-1:] in (" ", "\t"):  # a closing run of #s
        text = closing.rstrip()
    return Heading(text, 0, len(mark.group(1))) if text else None


def read_html(text: str, budget: Budget) -> tuple[list[Page], int, list[Heading], str]:
    import lxml.etree

    # libxml2's HTML parser, events only (no tree): linear in the markup, where the
    # standard library's parser rescans an unclosed attribute quote for every tag after it.
    target = _TextOfHtml()
    # The stub asks a target for every method of lxml's target interface; lxml calls only
    # those the target has.
    parser = lxml.etree.HTMLParser(target=target, no_network=True)  # type: ignore[call-overload]
    parser.feed(text)
    parser.close()
    blocks = [b for b in target.blocks if b.strip()]
    pages, count = limited_pages(paginate(blocks, budget), budget)
    headings = []
    for page in pages:
        for line in page.text.splitlines():
            found = markdown_heading(line)
            if found:
                headings.append(Heading(found.text, page.number, found.level))
    return pages, count, headings, " ".join(target.title.split())


def _paragraphs(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()] or ([text] if text.strip() else [])


class _TextOfHtml:
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
        self.blocks: list[str] = []
        self.title = ""
        self._current: list[str] = []
        self._skipping: list[str] = []
        self._in_title = False
        self._heading = 0

    def start(self, tag: str, attrib: dict[str, str]) -> None:
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

    def end(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._skipping and self._skipping[-1] == tag:
            self._skipping.pop()
        if tag in self._BLOCKS:
            self._end_block()
        if tag in {"td", "th"}:
            self._current.append(" | ")

    def data(self, data: str) -> None:
        if self._in_title:
            self.title += data
            return
        if not self._skipping:
            self._current.append(data)

    def close(self) -> None:
        self._end_block()

    def _end_block(self) -> None:
        text = " ".join("".join(self._current).split()).strip(" |")
        if text:
            self.blocks.append(f"{'#' * self._heading} {text}" if self._heading else text)
        self._current = []
        self._heading = 0
