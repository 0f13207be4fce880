"""What ``fetch_url`` makes of a fetched body: text a model can read.

HTML → the page's main text as Markdown (trafilatura: navigation, ads, footers, scripts
and styles left out; docs/tools.md, "Web pages" says why this extractor); JSON → pretty
printed; other text as it is; PDF → the document reader the uploads use
(``fimone.extract``), page by page. Anything else (images, archives, …) is refused with a
sentence saying what it was. Sync and CPU-bound: call from a thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fimone.extract import ExtractionError, ExtractLimits, extract_document

from .web_fetch import FetchedBody, FetchError

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
# Types read as text although they are not text/*.
TEXT_TYPES = frozenset(
    {
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/csv",
        "application/rss+xml",
        "application/atom+xml",
    }
)
# Beyond this many elements a page gets its plain text, not its main text (see _html).
MAX_HTML_ELEMENTS = 10_000
# Markup beyond this is not searched for the main text (see _html).
MAX_HTML_BYTES = 2 * 1024 * 1024
# Types fetch_url sniffs: servers send them for anything.
_UNSURE = frozenset({"", "application/octet-stream", "binary/octet-stream", "unknown/unknown"})


@dataclass(frozen=True)
class PageText:
    """A fetched page as text: what kind it was, its title if it has one, the text, and
    sentences about what was changed or left out."""

    kind: str  # html, json, text, pdf
    text: str
    title: str = ""
    notes: tuple[str, ...] = ()


def kind_of(fetched: FetchedBody) -> str:
    """html, json, pdf, text, or ``binary`` — by the Content-Type, by the bytes when the
    server does not say (or says only "octet-stream")."""
    mime = fetched.content_type
    if mime in HTML_TYPES:
        return "html"
    if mime in PDF_TYPES:
        return "pdf"
    if mime in ("application/json", "text/json") or mime.endswith("+json"):
        return "json"
    if mime.startswith("text/") or mime in TEXT_TYPES or mime.endswith("+xml"):
        return "text"
    if mime not in _UNSURE:
        return "binary"
    head = fetched.body[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "pdf"
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "html"
    if head[:1] in (b"{", b"["):
        return "json"
    return "text" if _looks_like_text(fetched.body[:4096]) else "binary"


def _looks_like_text(sample: bytes) -> bool:
    if b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(sample) - 4  # a character cut at the sample's end
    return True


def decode(fetched: FetchedBody) -> str:
    """The body as text, in the charset the server named, else UTF-8 (bad bytes shown as
    U+FFFD rather than refused: a page with one broken byte is still worth reading)."""
    return _decoded(fetched.body, fetched.charset)


def _decoded(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return data.decode("utf-8", errors="replace")


def page_text(fetched: FetchedBody, *, raw: bool = False) -> PageText:
    """The readable text of ``fetched``; ``raw``: HTML as its source, not its main text.
    Raises ``FetchError`` for what cannot be read."""
    kind = kind_of(fetched)
    if kind == "html":
        return _html(fetched, raw=raw)
    if kind == "json":
        return _json(fetched)
    if kind == "pdf":
        return _pdf(fetched)
    if kind == "text":
        return PageText("text", decode(fetched))
    raise FetchError(
        f"{fetched.url} is a {fetched.content_type or 'binary'} file of "
        f"{len(fetched.body):,} bytes, not a page fetch_url can read "
        "(it reads HTML, text, JSON and PDF)."
    )


def _html(fetched: FetchedBody, *, raw: bool) -> PageText:
    if raw:
        tree = _parse_html(fetched.body[:MAX_HTML_BYTES])
        return PageText("html", decode(fetched), _title_of(tree))
    notes: tuple[str, ...] = ()
    markup = fetched.body
    if len(markup) > MAX_HTML_BYTES:
        # The extractor's C calls work on whole strings and hold the GIL meanwhile: on a
        # page of several MB each one stalls the event loop of every socket for a while.
        markup = markup[:MAX_HTML_BYTES]
        notes = (
            f"Only the first {MAX_HTML_BYTES:,} bytes of this page's HTML were searched for "
            "its text (raw=true gives all of the source).",
        )
    # Without a charset from the server, the extractor reads the page's own meta tag.
    source = _decoded(markup, fetched.charset) if fetched.charset else markup
    tree = _parse_html(source)
    title = _title_of(tree)
    import trafilatura  # imported on first use: it takes a noticeable part of a second

    elements = sum(1 for _ in tree.iter()) if tree is not None else 0
    if elements > MAX_HTML_ELEMENTS:
        # Finding the main text takes time that grows faster than the page (seconds of
        # CPU for tens of thousands of elements); the plain text is quick at any size.
        note = (
            f"The page is too large ({elements:,} HTML elements) to find its main text in "
            "time: all of its visible text is given instead."
        )
        text = (trafilatura.html2txt(source) or "").strip()
        return PageText("html", text, title, (*notes, note))
    markdown = trafilatura.extract(
        source,
        url=fetched.url,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_images=False,
        include_comments=False,
    )
    if markdown and markdown.strip():
        return PageText("html", markdown.strip(), title, notes)
    # No main text found (a short page, a list of links): all of the page's visible text
    # is better than nothing.
    text = trafilatura.html2txt(source) or ""
    note = "No article was found on this page; all of its visible text is given instead."
    return PageText("html", text.strip(), title, (*notes, note))


def _title_of(tree) -> str:
    return " ".join((tree.findtext(".//title") or "").split()) if tree is not None else ""


def _parse_html(source: str | bytes):
    import lxml.html

    try:
        return lxml.html.document_fromstring(source)
    except (ValueError, lxml.etree.ParserError):
        return None


def _json(fetched: FetchedBody) -> PageText:
    text = decode(fetched)
    try:
        value = json.loads(text)
    except ValueError:
        why = "the download was cut" if fetched.cut else "it is not valid JSON"
        return PageText("json", text, notes=(f"Shown as received: {why}.",))
    return PageText("json", json.dumps(value, indent=2, ensure_ascii=False))


def _pdf(fetched: FetchedBody) -> PageText:
    if fetched.cut:
        raise FetchError(
            f"{fetched.url} is a PDF larger than the download limit of "
            f"{len(fetched.body):,} bytes, and a PDF cut short cannot be read."
        )
    try:
        doc = extract_document(
            fetched.body, mime_type="application/pdf", limits=ExtractLimits(seconds=15.0)
        )
    except ExtractionError as exc:
        raise FetchError(f"{fetched.url} is a PDF that cannot be read: {exc.message}") from None
    pages = "\n\n".join(f"[page {page.number}]\n{page.text.strip()}" for page in doc.pages)
    pages_said = "1 page" if doc.page_count == 1 else f"{doc.page_count} pages"
    notes = (f"A PDF of {pages_said}.", *doc.warnings)
    return PageText("pdf", pages, doc.title, notes)
