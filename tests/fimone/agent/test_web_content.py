"""What ``fetch_url`` makes of a body: typed by its header, else by its bytes."""

from __future__ import annotations

import pytest

from fimone.agent.tools import web_content
from fimone.agent.tools.web_content import kind_of, page_text
from fimone.agent.tools.web_fetch import FetchedBody, FetchError
from fimone.extract import isolated
from fimone.extract.html import MAX_HTML_BYTES, MAX_HTML_ELEMENTS
from fimone.extract.isolated import ExtractionPool
from tests.support.documents import make_pdf
from tests.support.web_server import ARTICLE, ARTICLE_FACT


def body(data: bytes, content_type: str = "", charset: str | None = None, cut=None):
    return FetchedBody("https://x.example/a", 200, content_type, charset, data, cut)


@pytest.mark.parametrize(
    "data,content_type,kind",
    [
        (b"<html><body>x</body></html>", "text/html", "html"),
        (b"{}", "application/problem+json", "json"),
        (b"<rss/>", "application/rss+xml", "text"),
        (b"a,b\n1,2", "text/csv", "text"),
        (make_pdf(["x"]), "application/octet-stream", "pdf"),
        (b"  <!DOCTYPE html><html></html>", "", "html"),
        (b'[{"a": 1}]', "application/octet-stream", "json"),
        ("grüße\n".encode(), "", "text"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "application/octet-stream", "binary"),
        (b"PK\x03\x04", "application/zip", "binary"),
    ],
)
def test_the_kind_comes_from_the_header_else_the_bytes(data, content_type, kind):
    assert kind_of(body(data, content_type)) == kind


def test_a_charset_the_server_names_is_used():
    page = page_text(body("naïve café".encode("latin-1"), "text/plain", "iso-8859-1"))
    assert page.text == "naïve café"


def test_an_html_page_without_a_charset_is_read_by_its_meta_tag():
    html = ARTICLE.replace("Arctic terns", "Küstenseeschwalben").encode("utf-8")
    page = page_text(body(html, "text/html"))
    assert "Küstenseeschwalben" in page.text and ARTICLE_FACT in page.text
    assert page.title == "The Tern Report"


def test_a_page_with_no_text_says_so():
    html = b"<html><head><title>App</title></head><body><script>boot()</script></body></html>"
    page = page_text(body(html, "text/html"))
    assert page.text == "" and page.title == "App"
    assert "No article was found" in page.notes[0]


def test_a_page_too_large_to_search_gets_its_plain_text_quickly():
    rows = "".join(f"<p>row {i}</p>" for i in range(MAX_HTML_ELEMENTS + 10))
    html = f"<html><body><nav>NAV</nav>{rows}</body></html>".encode()
    page = page_text(body(html, "text/html"))
    assert page.notes[0].startswith(
        f"The page is too large ({MAX_HTML_ELEMENTS + 13:,} HTML elements)"
    )
    assert "row 0" in page.text and f"row {MAX_HTML_ELEMENTS + 9}" in page.text


def test_a_cut_json_body_is_shown_as_received():
    page = page_text(body(b'{"a": [1, 2', "application/json", cut="size"))
    assert page.text == '{"a": [1, 2' and page.notes == (
        "Shown as received: the download was cut.",
    )


def test_a_cut_pdf_cannot_be_read():
    with pytest.raises(FetchError, match="a PDF cut short cannot be read"):
        page_text(body(make_pdf(["x"])[:200], "application/pdf", cut="size"))


def test_a_damaged_pdf_is_a_clear_error():
    with pytest.raises(FetchError, match="is a PDF that cannot be read"):
        page_text(body(b"%PDF-1.4\n" + b"garbage " * 50, "application/pdf"))


def test_only_the_first_megabytes_of_html_are_searched():
    filler = "".join(f"<p>Filler paragraph {i} about nothing much at all.</p>" for i in range(60))
    head = f"<html><head><title>Long</title></head><body><article>{filler}"
    # One long paragraph past the cut: the article is searched for its main text (a page of
    # a few elements), and the tail after it is found without the cut. Hundreds of
    # thousands of small elements cost seconds of CPU and take the plain-text path instead
    # (test_a_page_too_large_to_search_gets_its_plain_text_quickly).
    words = "x " * (MAX_HTML_BYTES // 2)
    html = (head + f"<p>{words}</p><p>THE TAIL</p></article></body></html>").encode()
    assert len(html) > MAX_HTML_BYTES
    page = page_text(body(html, "text/html", "utf-8"))
    assert "Filler paragraph 0" in page.text and "THE TAIL" not in page.text
    assert page.notes[0].startswith(f"Only the first {MAX_HTML_BYTES:,} bytes")
    assert page.title == "Long"
    raw = page_text(body(html, "text/html", "utf-8"), raw=True)
    assert "THE TAIL" in raw.text


def test_an_unknown_charset_falls_back_to_utf8():
    html = "<html><body><article><p>héllo, a page in an odd charset</p></article></body></html>"
    page = page_text(body(html.encode(), "text/html", "x-no-such-charset"))
    assert "héllo" in page.text


def test_the_same_page_read_again_gives_the_same_text():
    """The extractor's duplicate filter remembers paragraphs across calls in a process: on,
    the third reading of a page lost its article."""
    first = page_text(body(ARTICLE.encode(), "text/html"))
    for _ in range(4):
        assert page_text(body(ARTICLE.encode(), "text/html")) == first


@pytest.fixture
def pool():
    made = ExtractionPool(workers=1)
    yield made
    made.close()


def test_a_worker_process_reads_a_page_as_this_process_would(pool, monkeypatch):
    """Given the extraction workers, the page is read in one of them (this process's
    extractor is never called), with the same text, title and notes."""
    pages = [
        body(ARTICLE.encode(), "text/html", "utf-8"),
        body(b"<html><head><title>App</title></head><body></body></html>", "text/html"),
        body(ARTICLE.encode(), "text/html", "utf-8"),
    ]
    here = [page_text(page, raw=i == 2) for i, page in enumerate(pages)]

    def not_here(*args, **kwargs):
        raise AssertionError("the page was read in the server's process")

    monkeypatch.setattr(web_content, "html_text", not_here)
    there = [page_text(page, raw=i == 2, pool=pool) for i, page in enumerate(pages)]
    assert there == here
    assert ARTICLE_FACT in there[0].text and there[1].title == "App"
    assert there[2].text == ARTICLE


def test_a_page_read_in_a_worker_past_its_time_is_a_clear_error(pool, monkeypatch):
    monkeypatch.setattr(web_content, "EXTRACT_SECONDS", 0.0)
    monkeypatch.setattr(isolated, "GRACE_SECONDS", 0.0)
    with pytest.raises(FetchError, match="Reading the page took longer than 0 seconds"):
        page_text(body(ARTICLE.encode(), "text/html"), pool=pool)


def test_a_pdf_is_read_in_a_worker_too(pool, monkeypatch):
    monkeypatch.setattr(web_content, "extract_document", None)  # not called here
    page = page_text(body(make_pdf(["first page", "second page"]), "application/pdf"), pool=pool)
    assert page.kind == "pdf" and "[page 2]\nsecond page" in page.text
