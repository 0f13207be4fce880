"""RO.11: untrusted text is parsed in linear time. Each input is read by the extraction
worker, whose deadline is the observable: a document (or a clear error other than
``extraction_timeout``) comes back, where a backtracking pattern or a loop that recounts
what it has read ran past the deadline and was refused."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fimone.extract import ExtractionError, ExtractLimits, sniff
from fimone.extract.isolated import ExtractionPool
from fimone.extract.text import PAGE_CHARS, markdown_heading, paginate
from fimone.extract.types import Budget
from tests.support import documents

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
# The tests that read through an extraction worker process (not in bin/test --fast).
through_a_worker = pytest.mark.slow

# Far more than any of these inputs needs read linearly (milliseconds), far less than the
# old patterns needed (minutes to years).
DEADLINE = ExtractLimits(seconds=10)


@pytest.fixture(scope="module")
def pool():
    made = ExtractionPool(workers=1)
    yield made
    made.close()


def read(pool: ExtractionPool, data: bytes):
    """The document the worker read from ``data``; an ``ExtractionError`` other than a
    timeout counts as read too (the input was judged, not given up on)."""
    try:
        return pool.extract(data, limits=DEADLINE)
    except ExtractionError as exc:
        assert exc.code != "extraction_timeout", data[:200]
        return None


@through_a_worker
@pytest.mark.parametrize("comments", [26, 40, 400])
def test_ro11_runs_of_comments_are_sniffed_without_backtracking(pool, comments):
    """Empty comments before something that is not an HTML tag: each comment more doubled
    the work of the old pattern (26 took 8 s)."""
    text = pool.extract(b"<!---->" * comments + b"<root>a note</root>", limits=DEADLINE)
    assert text.kind == "text" and "a note" in text.text
    page = b"<!---->" * comments + b"<html><body><p>Hello</p></body></html>"
    assert pool.extract(page, limits=DEADLINE).kind == "html"


@through_a_worker
def test_ro11_an_xml_file_with_a_licence_header_is_accepted(pool):
    """A real kind of file: a 30-line licence, one comment a line, then the XML."""
    data = documents.licence_xml()
    assert 1_500 < len(data) < 4_096  # within the part the sniff reads, like the report's
    doc = pool.extract(data, filename="strings.xml", limits=DEADLINE)
    assert doc.kind == "text" and "Bluebird" in doc.text and "Apache License" in doc.text


@through_a_worker
def test_ro11_a_word_file_of_60000_paragraphs_is_read_completely(pool):
    """Short paragraphs: the old reader summed every block's length again for each
    paragraph and looked each paragraph's style up among all styles. Read with the
    default limits, as an upload is."""
    data = documents.many_paragraph_docx(60_000)
    doc = pool.extract(data, filename="long.docx")
    assert doc.kind == "docx" and not doc.truncated and doc.page_count == len(doc.pages)
    assert doc.pages[0].text.startswith("Paragraph 1.\nParagraph 2.\n")
    assert "Paragraph 59999." in doc.text and doc.pages[-1].text.endswith(documents.FACT)


# Pieces that made the old patterns and parsers backtrack or rescan: comment openers,
# unclosed quotes and tags, runs of blank lines, spaces, brackets and hashes.
UNITS = [
    "<!---->",
    "<!--",
    "<!-- x -->\n",
    "\n",
    " ",
    "\t\n",
    "[",
    "[a](",
    "**",
    "# ",
    ",'",
    ',"',
    "<a b='",
    "<div>",
    "<![",
    "1",
]
# What the run follows: nothing, the start of an HTML page, of a Markdown heading, of a
# table, of a JSON value.
PREFIXES = ["", "<html>", "# a", "## x ", "a,b\nc,d\n", "[", "- item\n"]
SUFFIXES = ["", "b", "x\n", "-->", "\n\n"]


@through_a_worker
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    prefix=st.sampled_from(PREFIXES),
    units=st.lists(st.sampled_from(UNITS), min_size=1, max_size=3),
    repeats=st.integers(min_value=1_000, max_value=20_000),
    suffix=st.sampled_from(SUFFIXES),
)
def test_ro11_adversarial_text_uploads_are_read_within_the_deadline(
    pool, prefix, units, repeats, suffix
):
    data = (prefix + "".join(units) * repeats + suffix).encode()
    doc = read(pool, data)
    if doc is not None:
        assert doc.page_count >= len(doc.pages)


@pytest.mark.parametrize(
    ("line", "level", "text"),
    [
        ("# Title", 1, "Title"),
        ("## Title ##", 2, "Title"),
        ("### Title   ", 3, "Title"),
        ("# C#", 1, "C#"),
        ("# a" + " " * 5_000 + "b", 1, "a" + " " * 5_000 + "b"),
    ],
)
def test_ro11_markdown_headings(line, level, text):
    heading = markdown_heading(line)
    assert heading is not None and (heading.level, heading.text) == (level, text)


@pytest.mark.parametrize("line", ["#", "#Title", "####### seven", "# ", "text # not"])
def test_ro11_what_is_no_markdown_heading(line):
    assert markdown_heading(line) is None


class CopyCountingText(str):
    """A text that counts the characters its slices copy."""

    copied = 0

    def __getitem__(self, key):
        part = CopyCountingText(str.__getitem__(self, key))
        CopyCountingText.copied += len(part)
        return part


@pytest.mark.parametrize("pages", [10, 400, 2_000])
def test_ro11_a_paragraph_of_many_pages_is_cut_with_one_copy(pages):
    """A text file without blank lines is one block: it was cut by slicing the rest off
    for each page (8 MB: 6 s, quadratic); its pages now cost one copy of the text."""
    block = CopyCountingText("x" * (PAGE_CHARS * pages + 7))
    CopyCountingText.copied = 0
    cut = paginate([block], Budget(ExtractLimits()))
    assert len(cut) == min(pages, ExtractLimits().max_pages) + 1
    assert cut[0] == "x" * PAGE_CHARS and len(cut[-1]) <= len(block)
    assert CopyCountingText.copied <= 2 * len(block)


def test_ro11_tables_are_told_by_one_width_for_every_line():
    assert sniff(b"city;population\nBerlin;3.7\nParis;2.1\n") == "csv"
    assert sniff(b'name, note\nAda, "slides, talk"\nBob, "tea"\n') == "csv"
    assert sniff(b"One line, with a comma.\nAnother line without.\n") == "text"
