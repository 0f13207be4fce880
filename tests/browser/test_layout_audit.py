"""The main states of the chat, on a touch phone and a desktop, in English, German and
Chinese: nothing wider than the screen, no clipped label, touch targets of 44 px (RU.9)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, TIMEOUT_MS, screenshot, wait_ready
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import wait_sidebar_slid_in

pytestmark = pytest.mark.browser

LOCALES = {"en": "en-US", "de": "de-DE", "zh": "zh-CN"}
QUESTION = "What is 1234 * 5.5? Show it as a Python snippet."


def open_session(chromium, server, *, locale: str, phone: bool):
    options = {"viewport": PHONE if phone else DESKTOP, "locale": locale}
    if phone:
        options |= {"has_touch": True, "is_mobile": True, "device_scale_factor": 2}
    context = chromium.new_context(**options)
    context.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.base_url + "/")
    page.locator("#id_username").fill(server.username)
    page.locator("#id_password").fill(server.password)
    page.locator("#id_password").press("Enter")
    wait_ready(page)
    return context, page, errors


def check(page, states: dict[str, list[str]], state: str, *, touch: bool) -> None:
    problems = layout_problems(page, touch=touch)
    if problems:
        states[state] = problems


@pytest.mark.parametrize("language", list(LOCALES))
@pytest.mark.parametrize("phone", [True, False], ids=["phone", "desktop"])
def test_the_main_states_fit(chromium, live_daphne, language, phone):
    context, page, errors = open_session(
        chromium, live_daphne, locale=LOCALES[language], phone=phone
    )
    name = f"audit-{language}-{'phone' if phone else 'desktop'}"
    states: dict[str, list[str]] = {}
    try:
        check(page, states, "login → empty chat", touch=phone)
        page.locator("#prompt").fill(QUESTION)
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
        expect(page.locator("#stop")).to_be_hidden()
        check(page, states, "after an answer", touch=phone)
        screenshot(page, f"{name}-answer")
        page.locator("#gauge").click()
        expect(page.locator("#gauge-detail")).to_be_visible()
        check(page, states, "gauge details open", touch=phone)
        page.keyboard.press("Escape")
        if phone:
            page.locator("#sidebar-toggle").click()
            expect(page.locator("#conversation-list .conv-item")).to_have_count(1)
            wait_sidebar_slid_in(page)
            check(page, states, "conversation list open", touch=phone)
            screenshot(page, f"{name}-sidebar")
        assert not states, "\n".join(f"{s}:\n  " + "\n  ".join(p) for s, p in states.items())
        assert not errors
    finally:
        context.close()
