"""A long paste is never lost (RU.10): past FIMONE_PASTE_ATTACH_CHARS it becomes a text
document attached to the message (a chip with its size), sent and read like any document,
and still there with its whole text after a reload; a long typed message is folded in the
chat with "Show more". Desktop and touch phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import open_session

pytestmark = pytest.mark.browser

PASTED_CHARS = 105_000


def long_text(chars: int) -> str:
    line = "Line {:05d}: the quarterly figures of the northern warehouse were checked.\n"
    text = "".join(line.format(n) for n in range(chars // len(line.format(0)) + 1))
    return text[:chars]


def paste(page, text: str) -> None:
    """A real paste event on the composer, as the clipboard gives it."""
    page.locator("#prompt").focus()
    page.evaluate(
        """(text) => {
          const data = new DataTransfer();
          data.setData("text/plain", text);
          const event = new ClipboardEvent(
            "paste", { clipboardData: data, bubbles: true, cancelable: true });
          const prompt = document.getElementById("prompt");
          if (prompt.dispatchEvent(event)) {  // not taken over: the browser would insert it
            prompt.setRangeText(text, prompt.selectionStart, prompt.selectionEnd, "end");
            prompt.dispatchEvent(new Event("input", { bubbles: true }));
          }
        }""",
        text,
    )


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_a_105000_character_paste_survives_a_reload_as_an_attachment(chromium, live_daphne, phone):
    session = open_session(chromium, live_daphne, phone=phone)
    page = session.page
    text = long_text(PASTED_CHARS)
    try:
        paste(page, text)
        chip = page.locator("#attachment-tray .doc-tile.ready .doc-chip")
        expect(chip).to_have_count(1)
        expect(chip.locator(".doc-name")).to_have_text("pasted-text-1.txt")
        expect(chip.locator(".doc-meta")).to_contain_text("KB")
        expect(page.locator("#prompt")).to_have_value("")
        expect(page.locator("#composer-notice")).to_contain_text("attached as a text document")
        problems = layout_problems(page, touch=phone)
        assert not problems, problems
        screenshot(page, f"long-paste-chip-{'phone' if phone else 'desktop'}")

        page.locator("#prompt").fill("What was checked?")
        page.locator("#prompt").press("Enter")
        answer = page.locator(".msg-assistant").last
        expect(answer.locator(".usage-card")).to_have_count(1)
        expect(answer).not_to_contain_text("longer than")
        expect(page.locator(".msg-user .msg-documents .doc-chip")).to_have_count(1)
        expect(page.locator(".msg-user .bubble")).to_have_text("What was checked?")

        page.reload()
        sent = page.locator(".msg-user .msg-documents a.doc-chip")
        expect(sent).to_have_count(1)
        expect(sent.locator(".doc-name")).to_have_text("pasted-text-1.txt")
        stored = page.evaluate(
            "(url) => fetch(url).then((r) => r.text())", sent.get_attribute("href")
        )
        assert stored == text  # every character of the paste, kept
        assert not session.errors
    finally:
        session.close()


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_typed_text_past_the_size_goes_as_a_document_and_long_messages_fold(
    chromium, live_daphne, phone
):
    session = open_session(chromium, live_daphne, phone=phone)
    page = session.page
    try:
        # Past the size when sent: Enter attaches it and sends it once uploaded.
        page.locator("#prompt").fill(long_text(21_000))
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-user .msg-documents .doc-chip")).to_have_count(1)
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
        expect(page.locator("#prompt")).to_have_value("")

        # Under the size but long: a folded bubble with the whole text, "Show more".
        folded = long_text(4_000)
        page.locator("#prompt").fill(folded)
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(2)
        bubble = page.locator(".msg-user .bubble.collapsed")
        expect(bubble).to_have_count(1)
        assert bubble.text_content() == folded.strip()
        height = bubble.bounding_box()["height"]
        more = page.locator(".msg-user .show-more")
        expect(more).to_have_text("Show more")
        more.click()
        expect(page.locator(".msg-user .bubble.collapsed")).to_have_count(0)
        expect(more).to_have_text("Show less")
        assert page.locator(".msg-user .bubble").last.bounding_box()["height"] > height * 2
        problems = layout_problems(page, touch=phone)
        assert not problems, problems
        assert not session.errors
    finally:
        session.close()
