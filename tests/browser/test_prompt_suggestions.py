"""An empty chat suggests what fimone can do (tools, a DAG plan, an image, a document): a
click puts the prompt in the composer in the right mode, and the file ones open the file
chooser; the composer's hint names documents too. Desktop and touch phone, three languages."""

from __future__ import annotations

import pytest
from django.utils import translation
from playwright.sync_api import expect

from tests.browser.conftest import png_file, screenshot
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import DJANGO_LANGUAGES, open_session

pytestmark = pytest.mark.browser

TOOLS = "What time is it, and what is 17 * 23?"
DAG = "First compute 2+3, then double the result"
IMAGE = "What is in this picture?"
DOCUMENT = "Summarise this document in three points."
HINT = "Enter to send · Shift+Enter for a new line · paste or drop images and documents"


def translated(language: str, text: str) -> str:
    with translation.override(DJANGO_LANGUAGES[language]):
        return translation.gettext(text)


@pytest.mark.parametrize("language", ["en", "de", "zh"])
@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_a_suggestion_fills_the_composer_in_its_mode(
    chromium, live_daphne, tmp_path, language, phone
):
    session = open_session(chromium, live_daphne, language=language, phone=phone)
    page = session.page
    name = f"suggestions-{language}-{'phone' if phone else 'desktop'}"
    try:
        cards = page.locator("#empty-state .suggestion")
        expect(cards).to_have_count(4)
        for card in cards.all():
            expect(card).to_be_in_viewport()
        if language != "en":
            assert translated(language, TOOLS) != TOOLS
        problems = layout_problems(page, touch=phone)
        assert not problems, problems
        screenshot(page, name)
        if not phone:  # a phone has no room for the hint (and no keyboard shortcuts)
            expect(page.locator("#composer-hint")).to_have_text(translated(language, HINT))

        # The DAG one: its prompt, and the DAG mode.
        cards.nth(1).click()
        expect(page.locator("#prompt")).to_have_value(translated(language, DAG))
        expect(page.locator("#mode-dag")).to_be_checked()
        expect(page.locator("#send")).to_be_enabled()

        # The tools one: back to ReAct; sent as it is, the agent calls its tools.
        cards.nth(0).click()
        expect(page.locator("#prompt")).to_have_value(translated(language, TOOLS))
        expect(page.locator("#mode-react")).to_be_checked()
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
        expect(page.locator(".msg-assistant .answer")).to_contain_text("391")
        expect(page.locator(".msg-assistant .step").first).to_be_attached()
        expect(page.locator("#empty-state")).to_be_hidden()
        assert not session.errors
    finally:
        session.close()


@pytest.mark.parametrize("attach", ["image", "document"])
def test_the_file_suggestions_open_the_file_chooser(chromium, live_daphne, tmp_path, attach):
    session = open_session(chromium, live_daphne, language="de")
    page = session.page
    try:
        card = page.locator(f'.suggestion[data-attach="{attach}"]')
        with page.expect_file_chooser() as chooser:
            card.click()
        expected = translated("de", IMAGE if attach == "image" else DOCUMENT)
        expect(page.locator("#prompt")).to_have_value(expected)
        if attach == "image":
            chooser.value.set_files(png_file(tmp_path, "cat.png"))
            expect(page.locator("#attachment-tray .thumb.ready")).to_have_count(1)
        else:
            path = tmp_path / "notes.txt"
            path.write_text("Alpha.\nBeta.\nGamma.\n")
            chooser.value.set_files(str(path))
            expect(page.locator("#attachment-tray .doc-tile.ready")).to_have_count(1)
        page.locator("#send").click()
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
        assert not session.errors
    finally:
        session.close()
