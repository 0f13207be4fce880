"""Document extraction: every accepted kind, typed by content, with its limits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fimone.extract import (
    DamagedDocument,
    DocumentTooLarge,
    ExtractionError,
    ExtractionTimeout,
    ExtractLimits,
    UnsupportedDocument,
    extract_document,
    sniff,
)
from tests.support import documents

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_a_pdf_keeps_its_pages_title_and_outline():
    doc = extract_document(documents.pdf_with_fact(), filename="review.pdf")
    assert doc.kind == "pdf" and doc.mime_type == "application/pdf"
    assert doc.page_count == len(doc.pages) == 12
    assert [p.number for p in doc.pages] == list(range(1, 13))
    assert documents.FACT_VALUE in doc.pages[6].text
    assert all(documents.FACT_VALUE not in p.text for i, p in enumerate(doc.pages) if i != 6)
    assert doc.title == "Quarterly review"
    assert [(h.text, h.page) for h in doc.headings] == [("Introduction", 1), ("Secrets", 7)]
    assert doc.warnings == () and doc.has_text_layer and not doc.truncated


def test_the_name_does_not_decide_the_kind():
    doc = extract_document(documents.pdf_with_fact(), filename="notes.txt", mime_type="text/plain")
    assert doc.kind == "pdf"
    doc = extract_document(documents.csv_bytes(), filename="report.pdf")
    assert doc.kind == "csv"


def test_an_image_only_pdf_says_it_has_no_text_layer():
    doc = extract_document(documents.image_only_pdf(pages=2))
    assert doc.page_count == 2 and not doc.has_text_layer
    assert any("no text layer" in w for w in doc.warnings)


def test_a_malformed_pdf_is_a_damaged_document():
    with pytest.raises(DamagedDocument) as caught:
        extract_document(documents.malformed_pdf())
    assert caught.value.code == "damaged_document" and "PDF" in caught.value.message


def test_a_long_pdf_is_cut_at_the_page_limit_and_says_so():
    doc = extract_document(documents.long_pdf(pages=30), limits=ExtractLimits(max_pages=10))
    assert doc.page_count == 30 and len(doc.pages) == 10 and doc.truncated
    assert any("first 10 of 30 pages" in w for w in doc.warnings)


def test_the_character_limit_cuts_the_text():
    doc = extract_document(documents.long_pdf(pages=20), limits=ExtractLimits(max_chars=5_000))
    assert doc.chars <= 5_000 and doc.truncated


def test_the_time_limit_refuses_a_slow_document():
    with pytest.raises(ExtractionTimeout):
        extract_document(documents.long_pdf(pages=20), limits=ExtractLimits(seconds=0.0))


def test_docx_paragraphs_headings_and_tables():
    doc = extract_document(documents.docx_bytes())
    assert doc.kind == "docx" and doc.title == "Team notes"
    assert documents.FACT in doc.text and "Ada | slides" in doc.text
    assert [h.text for h in doc.headings] == ["Findings"]


def test_pptx_slides_are_pages_titles_are_headings():
    doc = extract_document(documents.pptx_bytes())
    assert doc.kind == "pptx" and doc.page_count == 2
    assert documents.FACT in doc.pages[1].text
    assert doc.pages[1].text.count("Secrets") == 1
    assert [(h.text, h.page) for h in doc.headings] == [("Welcome", 1), ("Secrets", 2)]


def test_xlsx_reads_stored_values_and_never_evaluates_formulas():
    doc = extract_document(documents.xlsx_bytes())
    assert doc.kind == "xlsx"
    assert "Bluebird | ZEBRA-7741" in doc.text
    assert "2" not in doc.pages[0].text.split("\n")[-1].split(" | ")[2:]


def test_csv_pages_repeat_the_header():
    doc = extract_document(documents.csv_bytes(rows=400))
    assert doc.kind == "csv" and len(doc.pages) > 1
    assert all(p.text.startswith("city | population | country") for p in doc.pages)
    assert documents.FACT_VALUE in doc.pages[-1].text


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b'{"a": [1, 2]}', "json"),
        (b"<!DOCTYPE html><html><body><p>x</p></body></html>", "html"),
        (b"# Title\n\nSome **bold** text.\n\n- one\n- two\n", "markdown"),
        (b"Just a line of text, with a comma.\nAnd another one.", "text"),
        ("Grüße aus Köln".encode("utf-16"), "text"),
    ],
)
def test_text_kinds_by_content(data, kind):
    assert sniff(data) == kind
    assert extract_document(data).kind == kind


def test_html_drops_scripts_and_styles_and_keeps_headings():
    html = (
        b"<html><head><title>Page</title><style>p{}</style><script>alert(1)</script></head>"
        b"<body><h2>Results</h2><p>The fact: ZEBRA-7741.</p><script>evil()</script></body></html>"
    )
    doc = extract_document(html)
    assert doc.title == "Page" and "ZEBRA-7741" in doc.text
    assert "alert" not in doc.text and "evil" not in doc.text and "p{}" not in doc.text
    assert [h.text for h in doc.headings] == ["Results"]


def test_json_is_pretty_printed():
    assert extract_document(b'{"b":{"c":1}}').text == '{\n  "b": {\n    "c": 1\n  }\n}'


def test_a_zip_bomb_is_refused_before_unpacking():
    with pytest.raises(DocumentTooLarge) as caught:
        extract_document(documents.zip_bomb_docx(size=50_000_000))
    assert caught.value.code == "zip_bomb"


def test_the_unpacked_size_limit():
    with pytest.raises(DocumentTooLarge):
        extract_document(documents.docx_bytes(), limits=ExtractLimits(max_unzipped_bytes=1_000))


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", "empty_file"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "unsupported_type"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64, "legacy_office"),
        (b"PK\x03\x04 not really a zip", "damaged_document"),
    ],
)
def test_what_is_not_a_document_is_a_clear_error(data, code):
    with pytest.raises(ExtractionError) as caught:
        extract_document(data)
    assert caught.value.code == code and caught.value.message


def test_a_macro_enabled_file_is_refused():
    import io
    import zipfile

    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(documents.docx_bytes())) as real,
        zipfile.ZipFile(buffer, "w") as out,
    ):
        for item in real.infolist():
            data = real.read(item)
            if item.filename == "[Content_Types].xml":
                data = data.replace(
                    b"wordprocessingml.document.main+xml", b"ms-word.document.macroEnabled.main+xml"
                )
            out.writestr(item, data)
    with pytest.raises(UnsupportedDocument) as caught:
        extract_document(buffer.getvalue())
    assert caught.value.code == "macro_enabled"


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=2_000))
def test_any_bytes_give_a_document_or_an_extraction_error(data):
    try:
        doc = extract_document(data, limits=ExtractLimits(seconds=5))
    except ExtractionError as exc:
        assert exc.code and exc.message
    else:
        assert doc.page_count >= len(doc.pages)


@pytest.mark.parametrize("data", [b"\x01", b"\x01\x02\x03abc", b"ok\x07\x08\x0e\x0f" * 10])
def test_control_bytes_are_no_text_even_when_they_decode_as_utf8(data):
    """A byte like 0x01 is valid UTF-8, but a file of them is binary data, not a document."""
    from fimone.extract.sniff import decode_text

    assert decode_text(data) is None
    assert decode_text(b"a long log line of plain words " * 10 + b"\x1b[0m") is not None


def _stored_texts(doc) -> list[str]:
    return [doc.title, *(p.text for p in doc.pages), *(h.text for h in doc.headings)]


@pytest.mark.parametrize(
    "data",
    [
        b"The plover nests on shingle. " * 2_500 + b"\x00The avocet\x00 sweeps.",
        "Grüße\x00 aus Köln".encode("utf-16"),
        b"# Shore birds\n\n" + b"Terns and plovers.\n" * 4_000 + b"\n## Tail\x00 notes\n\nend",
    ],
    ids=["nul-past-64k", "utf-16-nul", "markdown-heading"],
)
def test_no_extracted_text_holds_a_nul(data):
    """NUL is looked for in a file's first 64 KiB only (binary data shows there); one
    further on, or a UTF-16 U+0000, is dropped: PostgreSQL's text and jsonb cannot hold
    it, and it means nothing in a text."""
    doc = extract_document(data)
    assert not [t for t in _stored_texts(doc) if "\x00" in t]
    assert "avocet sweeps" in doc.text or "Grüße aus Köln" in doc.text or "end" in doc.text


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=2_000).map(lambda b: b"plain words " * 6_000 + b))
def test_any_tail_of_a_text_gives_text_without_nul(data):
    try:
        doc = extract_document(data, limits=ExtractLimits(seconds=5))
    except ExtractionError:
        return
    assert not [t for t in _stored_texts(doc) if "\x00" in t]
