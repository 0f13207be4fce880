"""The layout check over more pages and states than the chat's main ones: the login page,
the tools menu, a search with hits, a DAG run, an opened summary panel and the admin's
pages, light and dark, on a touch phone and a desktop, in English, German and Chinese:
nothing wider than the screen, no clipped label, touch targets of 44 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, TIMEOUT_MS, screenshot, wait_ready
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import LOCALES, wait_sidebar_slid_in
from tests.browser.test_edited_summary_panel import SEED

# Makes its user staff, who sees every user's rows in the admin's lists: the module's tests
# share a server, each with a user of its own.
pytestmark = [pytest.mark.browser, pytest.mark.module_server]

DAG_QUESTIONS = {
    "en": "First compute 2+3, then double the result",
    "de": "Berechne zuerst 2+3, dann verdopple das Ergebnis",
    "zh": "先计算2+3，然后把结果翻倍",
}
SCHEMES = ("light", "dark")
MAKE_STAFF = """
from django.contrib.auth import get_user_model
get_user_model().objects.filter(username={username!r}).update(is_staff=True, is_superuser=True)
"""


class Audit:
    """Each state checked light and dark: the page follows the system's colours, so
    switching the emulated scheme redraws the same state in the other one."""

    def __init__(self, page, touch: bool, name: str):
        self.page, self.touch, self.name = page, touch, name
        self.found: dict[str, list[str]] = {}

    def check(self, state: str) -> None:
        for scheme in SCHEMES:
            self.page.emulate_media(color_scheme=scheme)
            problems = layout_problems(self.page, touch=self.touch)
            if problems:
                self.found[f"{scheme}: {state}"] = problems
                screenshot(self.page, f"audit-{self.name}-{scheme}-{state.replace(' ', '-')}")


def new_context(chromium, language: str, phone: bool):
    options = {
        "viewport": PHONE if phone else DESKTOP,
        "locale": LOCALES[language],
        "color_scheme": SCHEMES[0],
    }
    if phone:
        options |= {"has_touch": True, "is_mobile": True, "device_scale_factor": 2}
    context = chromium.new_context(**options)
    context.set_default_timeout(TIMEOUT_MS)
    return context


def audit_session(chromium, server, conversation_id, language, phone) -> dict:
    context = new_context(chromium, language, phone)
    expect.set_options(timeout=TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    audit = Audit(page, phone, f"{language}-{'phone' if phone else 'desktop'}")
    try:
        page.goto(server.base_url + "/")
        page.locator("#id_username").wait_for()
        audit.check("login page")
        page.locator("#id_username").fill(server.username)
        page.locator("#id_password").fill(server.password)
        page.locator("#id_password").press("Enter")
        wait_ready(page)

        page.locator("#tools-button").click()
        expect(page.locator("#tools-menu")).to_be_visible()
        audit.check("tools menu open")
        page.keyboard.press("Escape")

        page.locator("label[for=mode-dag]").click()
        page.locator("#prompt").fill(DAG_QUESTIONS[language])
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
        expect(page.locator("#stop")).to_be_hidden()
        for details in page.locator(".msg-assistant details").all()[:4]:
            details.locator("summary").first.click()
        audit.check("DAG run, steps open")

        open_sidebar_for(page, phone)
        page.locator(".conv-search-input").fill("2+3")
        expect(page.locator(".search-hit").first).to_be_visible()
        audit.check("search with hits")

        page.goto(f"{server.base_url}/c/{conversation_id}/")
        wait_ready(page)
        page.locator(".msg-assistant .step-note-toggle").last.click()
        expect(page.locator(".summary-panel .summary-text").last).to_be_visible()
        audit.check("summary panel open")

        if not phone:  # the admin is a desktop tool (Django's own pages)
            for path in ("/admin/", "/admin/contextmgmt/modelconfig/", "/admin/chat/conversation/"):
                page.goto(server.base_url + path)
                page.locator("#content").wait_for()
                audit.check(f"admin {path}")
        assert not errors, errors
    finally:
        context.close()
    return audit.found


def open_sidebar_for(page, phone: bool) -> None:
    if phone and "sidebar-open" not in (page.locator("#layout").get_attribute("class") or ""):
        page.locator("#sidebar-toggle").click()
        wait_sidebar_slid_in(page)


@pytest.mark.parametrize("language", list(LOCALES))
def test_more_pages_and_states_fit(chromium, live_daphne, language):
    live_daphne.manage_shell(MAKE_STAFF.format(username=live_daphne.username))
    conversation_id = live_daphne.manage_shell(SEED.format(username=live_daphne.username)).split()[
        -1
    ]
    found: dict[str, list[str]] = {}
    for phone in (True, False):
        where = "phone" if phone else "desktop"
        for state, problems in audit_session(
            chromium, live_daphne, conversation_id, language, phone
        ).items():
            found[f"{where} {state}"] = problems
    assert not found, "\n".join(f"{s}:\n  " + "\n  ".join(p) for s, p in found.items())
