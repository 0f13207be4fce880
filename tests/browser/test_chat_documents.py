"""A document in the browser: attached with a chip (name, pages, size), asked about, and
answered by the offline model through read_document; a damaged one is a clear error and
the typed question stays."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.support import documents

pytestmark = pytest.mark.browser


def test_attach_a_pdf_ask_about_it_and_see_the_chip_and_the_answer(logged_in_page, tmp_path):
    page = logged_in_page
    pdf = tmp_path / "review.pdf"
    pdf.write_bytes(documents.pdf_with_fact())
    page.locator("#file-input").set_input_files(str(pdf))
    tray = page.locator("#attachment-tray")
    chip = tray.locator(".doc-tile.ready .doc-chip")
    expect(chip).to_have_count(1)
    expect(chip.locator(".doc-name")).to_have_text("review.pdf")
    expect(chip.locator(".doc-meta")).to_contain_text("12 pages")
    expect(chip.locator(".doc-meta")).to_contain_text("KB")
    screenshot(page, "documents-01-chip-before-send")

    send(page, "What is the launch code of project Bluebird?")
    expect(tray).to_be_hidden()
    sent = page.locator(".msg-user .msg-documents .doc-chip")
    expect(sent).to_have_count(1)
    expect(sent.locator(".doc-meta")).to_contain_text("12 pages")
    answer = page.locator(".msg-assistant").last
    expect(answer.locator(".usage-card")).to_have_count(1)
    expect(answer).to_contain_text(documents.FACT_VALUE)
    expect(answer).to_contain_text("page 7")
    screenshot(page, "documents-02-answered")

    page.reload()
    chip = page.locator(".msg-user .msg-documents a.doc-chip")
    expect(chip).to_have_count(1)
    assert chip.get_attribute("href").startswith("/api/attachments/")
    expect(chip.locator(".doc-meta")).to_contain_text("12 pages")
    expect(page.locator(".msg-assistant").last).to_contain_text(documents.FACT_VALUE)
    assert not page.errors


def test_a_damaged_pdf_is_a_clear_error_and_the_question_stays(logged_in_page, tmp_path):
    page = logged_in_page
    page.locator("#prompt").fill("Please summarise the attached report")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(documents.malformed_pdf())
    page.locator("#file-input").set_input_files(str(broken))
    expect(page.locator(".toast")).to_contain_text("damaged")
    expect(page.locator("#attachment-tray .doc-tile.failed")).to_have_count(1)
    expect(page.locator("#prompt")).to_have_value("Please summarise the attached report")
    # The failed file is left out; the question is sent as typed.
    page.locator("#prompt").press("Enter")
    expect(page.locator(".msg-user .bubble")).to_have_text("Please summarise the attached report")
    expect(page.locator(".msg-user .doc-chip")).to_have_count(0)
