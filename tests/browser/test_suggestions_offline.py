"""Every empty-chat suggestion works on the built-in offline model (RU.11): "Read a
document" summarises an 11-page PDF from all its pages, and with a PDF and a DOCX reads
both; "Ask about an image" answers from the description stored with the upload, saying it
cannot see. Desktop and touch phone."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import png_file, screenshot
from tests.browser.sessions import open_session
from tests.support import documents

pytestmark = pytest.mark.browser


def suggestion(page, attach: str, files: list[str]) -> None:
    """Click the suggestion, give its file chooser ``files``, send once they are read."""
    with page.expect_file_chooser() as chooser:
        page.locator(f'.suggestion[data-attach="{attach}"]').click()
    chooser.value.set_files(files)
    expect(page.locator("#attachment-tray li.ready")).to_have_count(len(files))
    page.locator("#send").click()


def new_chat(page, phone: bool) -> None:
    if phone:
        page.locator("#sidebar-toggle").click()
    page.locator("#new-conversation").click()
    expect(page.locator("#empty-state")).to_be_visible()


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_the_file_suggestions_are_answered_by_the_offline_model(
    chromium, live_daphne, tmp_path, phone
):
    session = open_session(chromium, live_daphne, phone=phone)
    page = session.page
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(documents.pdf_with_fact(pages=11, fact_page=7))
    docx = tmp_path / "notes.docx"
    docx.write_bytes(documents.docx_bytes())
    try:
        # An 11-page PDF: summarised from all its pages, not searched for "three points".
        suggestion(page, "document", [str(pdf)])
        answer = page.locator(".msg-assistant").last
        expect(answer.locator(".usage-card")).to_have_count(1)
        expect(answer).to_contain_text("report.pdf (11 pages), in short:")
        expect(answer).not_to_contain_text("No page of")
        expect(answer).not_to_contain_text("matches")
        points = answer.locator(".answer li")
        expect(points).to_have_count(3)
        # inner_text, not text_content: the Markdown list item carries a trailing newline.
        last_page = int(re.search(r"\(p\. (\d+)\)", points.nth(2).inner_text()).group(1))
        assert last_page >= 8  # the points span the document, its end included
        screenshot(page, f"suggestion-document-{'phone' if phone else 'desktop'}")

        # A PDF and a DOCX: each is read.
        new_chat(page, phone)
        suggestion(page, "document", [str(pdf), str(docx)])
        answer = page.locator(".msg-assistant").last
        expect(answer.locator(".usage-card")).to_have_count(1)
        expect(answer).to_contain_text("report.pdf (11 pages), in short:")
        expect(answer).to_contain_text("notes.docx (1 page), in short:")

        # An image: described from its stored description, saying so.
        new_chat(page, phone)
        suggestion(page, "image", [png_file(tmp_path, "dot.png")])
        answer = page.locator(".msg-assistant").last
        expect(answer.locator(".usage-card")).to_have_count(1)
        expect(answer).to_contain_text("I cannot see images, but every upload has a description")
        expect(answer).to_contain_text("dot.png (64x48) is described as:")
        assert not session.errors
    finally:
        session.close()
