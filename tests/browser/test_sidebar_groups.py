"""The conversation list is grouped by date, and its titles use the sidebar's width (RU.9)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, screenshot

pytestmark = pytest.mark.browser

SEED = """
from datetime import timedelta
from django.contrib.auth.models import User
from django.utils import timezone
from chat import services
from chat.models import Conversation

me = User.objects.get(username=USERNAME)
now = timezone.now()
for title, days in SPECS:
    conversation = services.conversation_create(owner=me, title=title)
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=now - timedelta(days=days))
"""

# Title, and how many days ago the conversation last changed.
SPECS = [
    ("Quarterly budget for Berlin", 0),
    ("Packing list for the fair", 1),
    ("Supplier invoice questions", 4),
    ("Booth layout ideas", 20),
    ("Old notes from the summer", 100),
]


def seed(server) -> None:
    code = SEED.replace("USERNAME", repr(server.username)).replace("SPECS", repr(SPECS))
    server.manage_shell(code)


def month_heading(days_ago: int) -> str:
    when = datetime.now(UTC) - timedelta(days=days_ago)
    if when.year == datetime.now(UTC).year:
        return when.strftime("%B")
    return when.strftime("%B %Y")


def test_conversations_are_listed_under_date_headings(logged_in_page, live_daphne):
    page = logged_in_page
    seed(live_daphne)
    page.reload()
    headings = page.locator("#conversation-list .conv-group-title")
    expect(headings).to_have_text(
        ["Today", "Yesterday", "Previous 7 days", "Previous 30 days", month_heading(100)]
    )
    expect(page.locator("#conversation-list .conv-item")).to_have_count(5)
    # Each conversation sits under its own heading, newest first.
    rows = page.locator("#conversation-list > li").all_inner_texts()
    assert [row.strip() for row in rows][:4] == [
        "Today",
        "Quarterly budget for Berlin",
        "Yesterday",
        "Packing list for the fair",
    ]
    screenshot(page, "sidebar-date-groups")


def test_a_title_uses_the_sidebars_width_when_its_actions_are_hidden(logged_in_page, live_daphne):
    page = logged_in_page
    seed(live_daphne)
    page.reload()
    link = page.locator(".conv-link", has_text="Quarterly budget for Berlin")
    expect(link).to_be_visible()
    page.mouse.move(900, 400)  # away from the list: no row is hovered
    widths = link.evaluate("a => [a.scrollWidth, a.clientWidth]")
    assert widths[0] <= widths[1], f"a 27-character title is clipped: {widths}"
    actions = page.locator(".conv-item", has=link).locator(".conv-actions")
    expect(actions).to_be_hidden()
    link.hover()
    expect(actions).to_be_visible()
    expect(page.get_by_role("button", name="Rename “Quarterly budget for Berlin”")).to_be_visible()


def test_the_headings_speak_the_pages_language(chromium, live_daphne):
    context = chromium.new_context(viewport=PHONE, locale="de-DE")
    try:
        page = context.new_page()
        page.goto(live_daphne.base_url + "/")
        page.locator("#id_username").fill(live_daphne.username)
        page.locator("#id_password").fill(live_daphne.password)
        page.locator("#id_password").press("Enter")
        expect(page.locator("#prompt")).to_be_visible()
        seed(live_daphne)
        page.reload()
        page.locator("#sidebar-toggle").click()
        headings = page.locator("#conversation-list .conv-group-title")
        expect(headings.first).to_have_text("Heute")
        expect(headings.nth(1)).to_have_text("Gestern")
        expect(headings.nth(2)).to_have_text("Letzte 7 Tage")
        screenshot(page, "sidebar-date-groups-de-phone")
    finally:
        context.close()


def test_the_open_conversations_title_is_whole_until_its_row_is_pointed_at(
    logged_in_page, live_daphne
):
    """With a mouse the open conversation's actions show on hover, as every row's do, so its
    title is not cut for icons nobody is pointing at."""
    page = logged_in_page
    seed(live_daphne)
    page.reload()
    link = page.locator(".conv-link", has_text="Quarterly budget for Berlin")
    link.click()
    expect(page.locator(".conv-item[aria-current=page]")).to_contain_text("Quarterly budget")
    page.locator("#prompt").focus()  # as after opening it: the composer has the keyboard
    page.mouse.move(900, 400)
    widths = link.evaluate("a => [a.scrollWidth, a.clientWidth]")
    assert widths[0] <= widths[1], f"the open conversation's title is clipped: {widths}"
    actions = page.locator(".conv-item", has=link).locator(".conv-actions")
    expect(actions).to_be_hidden()
    link.hover()
    expect(actions).to_be_visible()
