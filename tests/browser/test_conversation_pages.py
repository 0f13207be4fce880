"""The conversation list loads page by page as the user scrolls it (sidebar.js)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser

SEED = """
from django.contrib.auth.models import User
from chat import services

me = User.objects.get(username=USERNAME)
for n in range(COUNT):
    services.conversation_create(owner=me, title=f"Chat number {n:03d}")
"""


def seed(server, count: int) -> None:
    code = SEED.replace("USERNAME", repr(server.username)).replace("COUNT", str(count))
    server.manage_shell(code)


def test_scrolling_the_list_loads_older_conversations_once_each(logged_in_page, live_daphne):
    page = logged_in_page
    seed(live_daphne, 120)
    page.reload()
    items = page.locator(".conv-item")
    expect(items.first).to_have_text("Chat number 119")
    expect(page.get_by_role("button", name="Show older conversations")).to_be_attached()

    # Scrolling to the end of the list brings the next pages, until the oldest is there.
    for _ in range(10):
        page.locator(".conv-nav").evaluate("nav => nav.scrollTo(0, nav.scrollHeight)")
        if items.count() == 120:
            break
        page.wait_for_timeout(150)
    expect(items).to_have_count(120)
    expect(items.last).to_have_text("Chat number 000")
    expect(page.locator(".conv-more")).to_be_hidden()
    titles = items.locator(".conv-link").all_inner_texts()
    assert titles == [f"Chat number {n:03d}" for n in reversed(range(120))]
    screenshot(page, "conversation-pages-end")


def test_a_failed_older_page_says_so_and_retries_from_the_keyboard(logged_in_page, live_daphne):
    page = logged_in_page
    seed(live_daphne, 160)
    older_pages = "**/api/conversations/?limit=50&before=*"
    page.route(older_pages, lambda route: route.abort())
    page.reload()
    items = page.locator(".conv-item")
    expect(items).to_have_count(50)
    page.locator(".conv-nav").evaluate("nav => nav.scrollTo(0, nav.scrollHeight)")
    retry = page.get_by_role("button", name="Could not load older conversations")
    expect(retry).to_be_visible()
    expect(items).to_have_count(50)  # what was listed stays listed

    page.unroute(older_pages)
    # Scrolled away and back, the failed page is not asked for again by itself, and the
    # button keeps saying why: only a press retries.
    asked: list[str] = []
    page.on("request", lambda request: "before=" in request.url and asked.append(request.url))
    nav = page.locator(".conv-nav")
    nav.evaluate("nav => nav.scrollTo(0, 0)")
    expect(retry).not_to_be_in_viewport()
    nav.evaluate("nav => nav.scrollTo(0, nav.scrollHeight)")
    expect(retry).to_be_in_viewport()
    retry.focus()
    page.keyboard.press("Enter")
    expect(items.nth(50)).to_have_text("Chat number 109")
    expect(items.nth(99)).to_have_text("Chat number 060")
    assert len(asked) == 1, asked
    # Focus stays on the button (now offering the next page), not lost to the page, and
    # the page it keeps in view is not loaded until the user presses it again.
    more = page.locator(".conv-more")
    expect(more).to_be_focused()
    expect(more).to_have_text("Show older conversations")
    expect(items).to_have_count(100)
    screenshot(page, "conversation-pages-retry")
    page.keyboard.press("Enter")
    expect(items).to_have_count(150)
    expect(more).to_be_focused()
    page.keyboard.press("Enter")
    expect(items).to_have_count(160)
    # The last page: the button goes, and focus moves to the oldest conversation.
    expect(more).to_be_hidden()
    expect(items.last.locator("a").first).to_be_focused()
