"""What ``fetch_url`` makes of a fetched body: text a model can read.

HTML → the page's main text as Markdown (``fimone.extract.html``); JSON → pretty printed;
other text as it is; PDF → the document reader the uploads use (``fimone.extract``), page by
page. Anything else (images, archives, …) is refused with a sentence saying what it was.
Sync and CPU-bound: call from a thread. Given an ``ExtractionPool``, HTML and PDF are read
in its worker processes, where their C calls cannot hold this process's GIL, as the
share of the workers of the user who asked (``owner``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from fimone.extract import ExtractionError, ExtractLimits, extract_document
from fimone.extract.html import decoded, html_text
from fimone.extract.isolated import ExtractionPool

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
# What reading one page may take in a worker process (it is killed past it).
EXTRACT_SECONDS = 15.0
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
    """The body as text, in the charset the server named, else UTF-8."""
    return decoded(fetched.body, fetched.charset)


def page_text(
    fetched: FetchedBody,
    *,
    raw: bool = False,
    pool: ExtractionPool | None = None,
    owner: str = "",
) -> PageText:
    """The readable text of ``fetched``; ``raw``: HTML as its source, not its main text;
    ``pool``: read HTML and PDF in its worker processes, as ``owner``'s share. Raises
    ``FetchError`` for what cannot be read."""
    kind = kind_of(fetched)
    if kind == "html":
        return _html(fetched, raw=raw, pool=pool, owner=owner)
    if kind == "json":
        return _json(fetched)
    if kind == "pdf":
        return _pdf(fetched, pool=pool, owner=owner)
    if kind == "text":
        return PageText("text", decode(fetched))
    raise FetchError(
        f"{fetched.url} is a {fetched.content_type or 'binary'} file of "
        f"{len(fetched.body):,} bytes, not a page fetch_url can read "
        "(it reads HTML, text, JSON and PDF)."
    )


def _html(fetched: FetchedBody, *, raw: bool, pool: ExtractionPool | None, owner: str) -> PageText:
    charset, url = fetched.charset, fetched.url
    try:
        if pool is None:
            page = html_text(fetched.body, charset=charset, url=url, raw=raw)
        else:
            page = pool.html(
                fetched.body,
                charset=charset,
                url=url,
                raw=raw,
                seconds=EXTRACT_SECONDS,
                owner=owner,
            )
    except ExtractionError as exc:
        raise FetchError(f"{fetched.url} could not be read: {exc.message}") from None
    return PageText("html", page.text, page.title, page.notes)


def _json(fetched: FetchedBody) -> PageText:
    text = decode(fetched)
    try:
        value = json.loads(text)
    except ValueError:
        why = "the download was cut" if fetched.cut else "it is not valid JSON"
        return PageText("json", text, notes=(f"Shown as received: {why}.",))
    return PageText("json", json.dumps(value, indent=2, ensure_ascii=False))


def _pdf(fetched: FetchedBody, *, pool: ExtractionPool | None, owner: str) -> PageText:
    if fetched.cut:
        raise FetchError(
            f"{fetched.url} is a PDF larger than the download limit of "
            f"{len(fetched.body):,} bytes, and a PDF cut short cannot be read."
        )
    try:
        limits = ExtractLimits(seconds=EXTRACT_SECONDS)
        if pool is None:
            doc = extract_document(fetched.body, mime_type="application/pdf", limits=limits)
        else:
            doc = pool.extract(
                fetched.body, mime_type="application/pdf", limits=limits, owner=owner
            )
    except ExtractionError as exc:
        raise FetchError(f"{fetched.url} is a PDF that cannot be read: {exc.message}") from None
    pages = "\n\n".join(f"[page {page.number}]\n{page.text.strip()}" for page in doc.pages)
    pages_said = "1 page" if doc.page_count == 1 else f"{doc.page_count} pages"
    notes = (f"A PDF of {pages_said}.", *doc.warnings)
    return PageText("pdf", pages, doc.title, notes)
