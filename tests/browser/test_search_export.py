"""Conversation search in the sidebar and export, as a person uses them
(sidebar_search.js, sidebar_export.js)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, login, screenshot

pytestmark = pytest.mark.browser

SEED = """
from django.contrib.auth.models import User
from chat import services

def chat(owner, title, texts):
    conversation = services.conversation_create(owner=owner, title=title)
    for i, (question, answer) in enumerate(texts):
        services.user_message_create(conversation=conversation, content=question, run_id=f"r{i}")
        reply = services.assistant_message_start(
            conversation=conversation, run_id=f"r{i}", mode="react"
        )
        services.assistant_message_finish(message=reply, content=answer)
    return conversation

me = User.objects.get(username=USERNAME)
trip = chat(me, "Lisbon trip", [
    ("Which hotel did we pick?", "The hotel near Alfama costs 180 EUR per night."),
    *[(f"Question {n} about the museum", f"Answer {n}: open 10-18.") for n in range(35)],
])
chat(me, "Groceries", [("Buy oat milk and 预算 notes", "Noted.")])
other = User.objects.create_user(username=f"someone-else-than-{me.username}")
chat(other, "Their Alfama notes", [("Alfama secret", "hidden")])
print(trip.id)
"""


def seed(server) -> str:
    code = SEED.replace("USERNAME", repr(server.username))
    return server.manage_shell(code).strip().splitlines()[-1]


def test_search_jumps_to_an_old_message_and_export_downloads(logged_in_page, live_daphne):
    page = logged_in_page
    trip_id = seed(live_daphne)
    page.reload()
    expect(page.locator(".conv-item")).to_have_count(2)

    box = page.get_by_role("searchbox", name="Search conversations")
    box.fill("alfam")  # unfinished word: a prefix of the last word matches
    results = page.locator(".search-item")
    expect(results).to_have_count(1)
    hit = results.first
    expect(hit.locator(".search-title")).to_have_text("Lisbon trip")
    expect(hit.locator("mark")).to_have_text("Alfama")
    expect(hit.locator(".search-meta")).to_contain_text("Answer")
    expect(page.locator("#conversation-list")).to_be_hidden()
    expect(page.locator(".search-status")).to_have_text("1 match")
    screenshot(page, "search-01-results")

    # The message is 70 messages back: older pages load until it is there.
    hit.locator("a").click()
    expect(page).to_have_url(re.compile(rf"/c/{trip_id}/$"))
    target = page.locator(".msg.search-target")
    expect(target).to_contain_text("The hotel near Alfama costs 180 EUR per night.")
    expect(target).to_be_in_viewport()
    screenshot(page, "search-02-jumped-to-message")

    box.fill("milk 预算")
    expect(page.locator(".search-item .search-title")).to_have_text(["Groceries"])
    box.fill("nothing-like-this")
    expect(page.locator(".search-status")).to_have_text("No matches")
    box.press("Escape")
    expect(box).to_have_value("")
    expect(page.locator("#conversation-list")).to_be_visible()
    expect(page.locator(".conv-item")).to_have_count(2)

    item = page.locator(f'.conv-item[data-id="{trip_id}"]')
    item.hover()
    item.get_by_role("button", name="Export “Lisbon trip”").click()
    menu = page.get_by_role("menu")
    expect(menu.get_by_role("menuitem")).to_have_count(2)
    expect(menu.get_by_role("menuitem").first).to_be_focused()
    screenshot(page, "export-01-menu")
    for name, content_type in (("Markdown", "text/markdown"), ("JSON", "application/json")):
        link = menu.get_by_role("menuitem", name=re.compile(f"Download as {name}"))
        response = page.request.get(live_daphne.base_url + link.get_attribute("href"))
        assert response.status == 200
        assert response.headers["content-type"].startswith(content_type)
        assert response.headers["content-disposition"].startswith("attachment; filename=")
        assert "Alfama" in response.text() and "Alfama secret" not in response.text()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()


def test_search_on_a_phone_in_dark_mode(new_page, live_daphne):
    seed(live_daphne)
    page = new_page(viewport=PHONE, color_scheme="dark")
    login(page, live_daphne)
    page.locator("#sidebar-toggle").click()
    box = page.get_by_role("searchbox", name="Search conversations")
    box.fill("museum")
    expect(page.locator(".search-item")).to_have_count(3)  # three hits of one conversation
    screenshot(page, "search-03-phone-dark")
    page.locator(".search-item a").first.click()
    expect(page.locator("#layout")).not_to_have_class(re.compile("sidebar-open"))
    expect(page.locator(".msg.search-target")).to_contain_text("museum")
    assert not page.errors, page.errors
