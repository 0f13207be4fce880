"""Approving a tool call in the browser, on the offline model with a test tool that needs
approval (``send_note``, loaded through FIMONE_EXTRA_TOOLS): the card in the answer, its
buttons by keyboard, the card again after a reload and in a second tab, "always for this
chat", a decline, and the composer's tools menu switching the tool's source off. Desktop
and 390×844."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    DESKTOP,
    PHONE,
    hold_requests,
    hold_saves,
    login,
    screenshot,
    send,
)

pytestmark = pytest.mark.browser

SCREENS = {"desktop": DESKTOP, "phone": PHONE}
ASK = 'call send_note {"text": "hello team"}'


@pytest.fixture
def live_daphne_env():
    return {"FIMONE_EXTRA_TOOLS": "tests.support.approval_tool:approval_tools"}


@pytest.fixture
def open_page(new_page, live_daphne):
    def make(screen: str = "desktop"):
        page = new_page(viewport=SCREENS[screen])
        login(page, live_daphne)
        return page

    return make


def card(page):
    return page.locator(".approval-card")


def wait_done(page, count: int) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_approve_a_tool_call_with_the_keyboard(open_page, screen):
    page = open_page(screen)
    send(page, ASK)
    expect(card(page)).to_be_visible()
    expect(card(page)).to_contain_text("send_note")
    expect(card(page).locator(".approval-arguments")).to_contain_text('"text": "hello team"')
    approve = card(page).get_by_role("button", name="Approve")
    approve.scroll_into_view_if_needed()
    bounds = approve.bounding_box()
    width = SCREENS[screen]["width"]
    assert bounds["x"] >= 0 and bounds["x"] + bounds["width"] <= width, bounds
    screenshot(page, f"tool-approval-card-{screen}")
    approve.focus()
    page.keyboard.press("Enter")
    expect(card(page)).to_have_count(0)
    wait_done(page, 1)
    answer = page.locator(".msg-assistant").last
    expect(answer.locator(".approval-ended")).to_have_text("Approved once: send_note")
    expect(answer.locator(".answer")).to_contain_text("note sent: hello team")
    screenshot(page, f"tool-approval-done-{screen}")


def test_the_card_comes_back_after_a_reload_and_always_for_this_chat_sticks(open_page):
    page = open_page()
    send(page, ASK)
    expect(card(page)).to_be_visible()
    page.wait_for_url("**/c/*/")
    page.reload()
    expect(card(page)).to_be_visible()
    card(page).get_by_role("button", name="Always for this chat").click()
    wait_done(page, 1)
    expect(page.locator(".approval-ended")).to_have_text("Approved for this chat: send_note")
    send(page, 'call send_note {"text": "second"}')
    wait_done(page, 2)
    expect(card(page)).to_have_count(0)
    expect(page.locator(".msg-assistant").last.locator(".answer")).to_contain_text(
        "note sent: second"
    )
    # After a reload the finished answers say how each call was allowed.
    page.reload()
    expect(page.locator(".approval-ended")).to_have_text(["Approved for this chat: send_note"])


def test_a_second_tab_sees_the_card_and_its_decline_counts_in_both(open_page):
    first = open_page()
    send(first, ASK)
    expect(card(first)).to_be_visible()
    first.wait_for_url("**/c/*/")
    second = open_page()
    second.goto(first.url)
    expect(card(second)).to_be_visible()
    card(second).get_by_role("button", name="Decline").click()
    for page in (first, second):
        expect(card(page)).to_have_count(0)
        expect(page.locator(".approval-ended")).to_have_text("Declined: send_note was not run")
        wait_done(page, 1)
        expect(page.locator(".msg-assistant .answer")).to_contain_text("declined")


def test_the_tools_menu_lists_the_sources_and_switches_one_off_for_this_chat(open_page):
    page = open_page()
    page.locator("#tools-button").click()
    menu = page.locator("#tools-menu")
    expect(menu).to_be_visible()
    expect(menu).to_contain_text("Built-in")
    expect(menu.locator("code", has_text="calculator")).to_be_visible()
    test_source = menu.locator('[data-source="test"]')
    expect(test_source).to_contain_text("send_note")
    expect(test_source).to_contain_text("asks first")
    switch = test_source.locator(".tools-source-switch").get_by_role("switch")
    expect(switch).to_be_checked()
    switch.press("Space")
    expect(
        menu.locator('[data-source="test"] .tools-source-switch').get_by_role("switch")
    ).not_to_be_checked()
    screenshot(page, "tools-menu")
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    send(page, ASK)
    wait_done(page, 1)
    expect(card(page)).to_have_count(0)
    expect(page.locator(".msg-assistant .step")).to_have_count(0)


def test_a_key_pressed_in_the_menu_before_its_listing_arrives_reaches_the_switch(open_page):
    """RD.6: opening the menu reads the listing again; when it arrives after the user has
    moved onto a switch, the new switches replace the old ones and the focus stays on the
    user's switch (it used to jump to the first tool, and the key went there)."""
    page = open_page()
    menu = page.locator("#tools-menu")
    # By CSS: the closed menu's switches have no role for Playwright yet.
    switch = menu.locator('[data-source="test"] .tools-source-switch input')
    expect(switch).to_be_attached()  # the new chat's listing is in, the menu still closed
    held = hold_requests(page, "**/api/tools/", method="GET")
    page.locator("#tools-button").click()
    expect(switch).to_be_checked()
    switch.focus()
    for _ in range(500):  # the menu's second read of the listing reaches the route
        if held:
            break
        page.wait_for_timeout(20)
    assert len(held) == 1
    replaced = switch.element_handle()
    held[0].continue_()
    page.wait_for_function("node => !node.isConnected", arg=replaced)
    expect(switch).to_be_focused()
    page.keyboard.press("Space")
    expect(switch).not_to_be_checked()
    expect(menu.locator('[data-tool="calculator"] input')).to_be_checked()


def test_a_message_sent_while_a_switch_is_saved_waits_for_the_switch(open_page):
    page = open_page()
    # The switch's PATCH, kept from the server until the message is on screen.
    held = hold_saves(page, "**/api/conversations/*/tools/")
    page.locator("#tools-button").click()
    switch = page.locator('#tools-menu [data-source="test"] .tools-source-switch').get_by_role(
        "switch"
    )
    expect(switch).to_be_checked()
    expect(page.locator("#tools-menu input").first).to_be_focused()  # the menu has loaded
    switch.press("Space")
    expect(switch).not_to_be_checked()  # as the user sees it, before the server knows
    page.keyboard.press("Escape")
    send(page, ASK)
    expect(page.locator(".msg-user .bubble")).to_have_text([ASK])
    assert len(held) == 1
    held[0].continue_()
    wait_done(page, 1)
    # The message went out after the switch: send_note was off for its answer.
    expect(card(page)).to_have_count(0)
    expect(page.locator(".msg-assistant .step")).to_have_count(0)
