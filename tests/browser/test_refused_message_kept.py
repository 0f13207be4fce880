"""A message the rate limit refuses goes back into the composer with its attachments and a
notice saying why, and is still there after a reload; sent later, it goes as it was."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import png_file, screenshot, wait_ready
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import js_gettext, open_session

pytestmark = pytest.mark.browser

BACK_IN_THE_BOX = "Your message is back in the box: send it again in a moment."


@pytest.fixture
def live_daphne_env():
    # One frame a minute per user: the first message goes, the second is refused.
    return {"FIMONE_WS_RATE_LIMIT": "1", "FIMONE_WS_RATE_WINDOW_SECONDS": "60"}


@pytest.mark.parametrize(
    ("language", "phone"), [("en", False), ("de", True), ("zh", False)], ids=str
)
def test_a_refused_message_is_kept_with_its_files_across_a_reload(
    chromium, live_daphne, tmp_path, language, phone
):
    session = open_session(chromium, live_daphne, language=language, phone=phone)
    page = session.page
    try:
        page.locator("#prompt").fill("first")
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)

        page.locator("#file-input").set_input_files(png_file(tmp_path, "cat.png"))
        expect(page.locator("#attachment-tray .thumb.ready")).to_have_count(1)
        page.locator("#prompt").fill("second, with a picture")
        page.locator("#prompt").press("Enter")

        notice = page.locator("#composer-notice")
        expect(notice).to_be_visible()
        expect(notice).to_contain_text(js_gettext(language, BACK_IN_THE_BOX))
        expect(page.locator("#prompt")).to_have_value("second, with a picture")
        expect(page.locator("#attachment-tray .thumb.ready")).to_have_count(1)
        expect(page.locator(".msg-user")).to_have_count(1)  # the refused one is not shown
        problems = layout_problems(page, touch=phone)
        assert not problems, problems
        screenshot(page, f"refused-kept-{language}")

        page.reload()
        wait_ready(page)
        expect(page.locator("#prompt")).to_have_value("second, with a picture")
        expect(page.locator("#attachment-tray .thumb.ready")).to_have_count(1)
        expect(page.locator("#attachment-tray img")).to_have_js_property("complete", True)
        assert page.locator("#attachment-tray img").evaluate("i => i.naturalWidth") > 0
        expect(page.locator("#composer-notice")).to_be_visible()

        assert not session.errors
    finally:
        session.close()
