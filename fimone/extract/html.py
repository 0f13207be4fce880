"""HTML → the page's main text as Markdown (trafilatura: navigation, ads, footers, scripts
and styles left out; docs/tools.md, "Web pages" says why this extractor), with its title.

CPU-bound, and most of the work is in C calls that hold the GIL on whole strings: a server
runs it in an extraction worker process (``fimone.extract.isolated``), where a page of
several MB cannot stall the event loop of every socket.
"""

from __future__ import annotations

from dataclasses import dataclass

# Beyond this many elements a page gets its plain text, not its main text (see html_text).
MAX_HTML_ELEMENTS = 10_000
# Markup beyond this is not searched for the main text (see html_text).
MAX_HTML_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class HtmlText:
    """A page's readable text, its title, and sentences about what was left out."""

    text: str
    title: str = ""
    notes: tuple[str, ...] = ()


def decoded(data: bytes, charset: str | None) -> str:
    """``data`` as text, in ``charset``, else UTF-8 (bad bytes shown as U+FFFD rather than
    refused: a page with one broken byte is still worth reading)."""
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return data.decode("utf-8", errors="replace")


def html_text(
    markup: bytes, *, charset: str | None = None, url: str | None = None, raw: bool = False
) -> HtmlText:
    """The main text of the page ``markup`` as Markdown; ``raw``: the source as it is (with
    the title read from its first ``MAX_HTML_BYTES``)."""
    if raw:
        return HtmlText(decoded(markup, charset), _title_of(_parse(markup[:MAX_HTML_BYTES])))
    notes: tuple[str, ...] = ()
    if len(markup) > MAX_HTML_BYTES:
        # The extractor's work grows with the markup: a page's text is near its top.
        markup = markup[:MAX_HTML_BYTES]
        notes = (
            f"Only the first {MAX_HTML_BYTES:,} bytes of this page's HTML were searched for "
            "its text (raw=true gives all of the source).",
        )
    # Without a charset from the server, the extractor reads the page's own meta tag.
    source: str | bytes = decoded(markup, charset) if charset else markup
    tree = _parse(source)
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
        return HtmlText((trafilatura.html2txt(source) or "").strip(), title, (*notes, note))
    markdown = trafilatura.extract(
        source,
        url=url,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_images=False,
        include_comments=False,
    )
    if markdown and markdown.strip():
        return HtmlText(markdown.strip(), title, notes)
    # No main text found (a short page, a list of links): all of the page's visible text
    # is better than nothing.
    text = trafilatura.html2txt(source) or ""
    note = "No article was found on this page; all of its visible text is given instead."
    return HtmlText(text.strip(), title, (*notes, note))


def _title_of(tree) -> str:
    return " ".join((tree.findtext(".//title") or "").split()) if tree is not None else ""


def _parse(source: str | bytes):
    import lxml.html

    try:
        return lxml.html.document_fromstring(source)
    except (ValueError, lxml.etree.ParserError):
        return None
