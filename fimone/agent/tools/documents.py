"""``read_document``: the agent reads pages of a document the user attached.

A small document reaches the model inline with its message; a larger one only as its
outline (name, pages, size, headings, first lines), and the model reads what it needs with
``read_document(file, pages)`` ("7", "3-5", "1,4,9-10") or ``read_document(file, query)``
(the pages that match best); a page longer than a call is read on with ``start``. The
chat layer gives the reader (``DocumentReader``), which finds the file and caps what one
call returns: never a whole long document at once.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from .registry import Tool

# (file, pages, query, start) -> the tool's text
DocumentReader = Callable[[str, str | None, str | None, int], Awaitable[str]]

# However many pages a call asks for, at most this many are returned.
MAX_PAGES_PER_CALL = 20
_PAGE_WORDS = re.compile(r"\b(?:pages?|pp?\.|seiten?|s\.)\s*|页|第", re.I)
_RANGE = re.compile(r"^(\d+)\s*(?:-|–|—|to|bis|到|至)\s*(\d+)$", re.I)


def parse_pages(spec: str, page_count: int) -> list[int]:
    """Page numbers from ``spec`` ("7", "3-5", "1, 4, 9-10"), in the order asked, each once;
    ``ValueError`` with a sentence the model can act on when it names no valid page."""
    text = _PAGE_WORDS.sub(" ", spec).strip()
    if not text:
        raise ValueError('give pages as "7", "3-5" or "1,4,9-10"')
    found: list[int] = []
    for part in re.split(r"\s*[,;、，]\s*|\s+and\s+|\s+und\s+", text):
        part = part.strip()
        if not part:
            continue
        m = _RANGE.match(part)
        if m:
            first, last = int(m.group(1)), int(m.group(2))
        elif part.isdigit():
            first = last = int(part)
        else:
            raise ValueError(f'{part!r} is not a page number; give pages as "7" or "3-5"')
        if first > last:
            first, last = last, first
        if first < 1 or first > page_count:
            raise ValueError(f"page {first} does not exist: the document has {page_count} pages")
        for number in range(first, min(last, page_count) + 1):
            if number not in found:
                found.append(number)
            if len(found) > MAX_PAGES_PER_CALL * 50:  # "1-100000": no need to list them all
                break
    if not found:
        raise ValueError('give pages as "7", "3-5" or "1,4,9-10"')
    return found


def read_document_tool(reader: DocumentReader) -> Tool:
    async def read_document(
        file: str, pages: str | None = None, query: str | None = None, start: int = 0
    ) -> str:
        file = file.strip()
        if not file:
            return "Error: name the document: its file name as the conversation shows it."
        pages = (pages or "").strip() or None
        query = (query or "").strip() or None
        if start < 0 or (start and pages is None):
            return 'Error: start reads on within one page: give that page too (pages="7").'
        return await reader(file, pages, query, start)

    return Tool(
        name="read_document",
        description=(
            "Read a document the user attached (PDF, Word, PowerPoint, Excel, text, CSV, "
            "JSON, HTML). Long documents are shown to you only as an outline: use this to "
            'read pages ("7", "3-5", "1,4") or to find the pages that match a query. One '
            f"call returns at most {MAX_PAGES_PER_CALL} pages and a limited number of "
            "characters; a result that was cut ends with the call that reads on."
        ),
        parameters={
            "type": "object",
            "properties": {
                "file": {"type": "string", "description": "the document's file name"},
                "pages": {"type": "string", "description": 'e.g. "7", "3-5" or "1,4,9-10"'},
                "query": {
                    "type": "string",
                    "description": "words to look for; the best matching pages are returned",
                },
                "start": {
                    "type": "integer",
                    "description": "with one page: the character of it to read on from, as "
                    "a page cut short says (default 0)",
                },
            },
            "required": ["file"],
        },
        func=read_document,
        timeout=30.0,
    )
