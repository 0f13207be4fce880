"""An answer's actions keep one order, live and after a reload (RU.9)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send

pytestmark = pytest.mark.browser

ORDER_JS = """row => [...row.children].map(child =>
  ['usage-wrap', 'copy-btn', 'pin-btn', 'btn-regenerate'].find(c => child.classList.contains(c))
  || child.className)"""


def test_the_answers_buttons_keep_their_order_after_a_reload(logged_in_page):
    page = logged_in_page
    send(page, "What is 17 * 23?")
    row = page.locator(".msg-assistant .msg-actions").last
    expect(row.locator(".btn-regenerate")).to_be_visible()
    expect(row.locator(".pin-btn")).to_be_visible()
    live = row.evaluate(ORDER_JS)
    assert live == ["usage-wrap", "copy-btn", "pin-btn", "btn-regenerate"], live

    page.reload()
    row = page.locator(".msg-assistant .msg-actions").last
    expect(row.locator(".btn-regenerate")).to_be_visible()
    expect(row.locator(".pin-btn")).to_be_visible()
    assert row.evaluate(ORDER_JS) == live
    # The keyboard meets them in the same order as the eye.
    labels = [b.get_attribute("class") for b in row.locator("button").all()]
    assert [c.split()[-1] for c in labels if "usage" not in c][-3:] == [
        "copy-btn",
        "pin-btn",
        "btn-regenerate",
    ], labels
    screenshot(page, "answer-actions-after-reload")
