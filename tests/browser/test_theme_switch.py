"""The light / dark / system switch: the system decides until the user picks, the pick is
kept across reloads and tabs and applied before the page is drawn (no light flash on a
dark page), the admin follows it; on a desktop and a touch phone, in three languages."""

from __future__ import annotations

import pytest
from django.utils import translation
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, wait_ready
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import DJANGO_LANGUAGES, open_session, open_sidebar

pytestmark = pytest.mark.browser

# The page's colour, as the stylesheet sets it for each scheme.
LIGHT_BG = "rgb(255, 255, 255)"
DARK_BG = "rgb(22, 24, 28)"
# Which theme the page had when <body> first existed: set by a script run before any of
# the page's own (an init script), so a value here proves the choice came before drawing.
RECORD_THEME_AT_BODY = """
new MutationObserver((_, observer) => {
  if (!document.body) return;
  window.themeAtBody = document.documentElement.dataset.theme || "";
  window.backgroundAtBody = getComputedStyle(document.documentElement).colorScheme;
  observer.disconnect();
}).observe(document, { childList: true, subtree: true });
"""


def background(page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def pick(session, mode: str) -> None:
    open_sidebar(session)
    session.page.locator(f"label[for=theme-{mode}]").click()
    expect(session.page.locator(f"#theme-{mode}")).to_be_checked()


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_the_system_decides_until_a_theme_is_picked_and_the_pick_is_kept(
    chromium, live_daphne, phone
):
    session = open_session(chromium, live_daphne, phone=phone, color_scheme="dark")
    page = session.page
    try:
        expect(page.locator("#theme-auto")).to_be_checked()
        assert background(page) == DARK_BG  # nothing picked: the system's dark

        pick(session, "light")
        assert background(page) == LIGHT_BG
        if phone:
            problems = layout_problems(page, touch=True)
            assert not problems, problems
        screenshot(page, f"theme-light-{'phone' if phone else 'desktop'}")

        page.add_init_script(RECORD_THEME_AT_BODY)
        page.reload()
        wait_ready(page)
        assert page.evaluate("window.themeAtBody") == "light"  # before the body was drawn
        assert page.evaluate("window.backgroundAtBody") == "light"
        assert background(page) == LIGHT_BG
        expect(page.locator("#theme-light")).to_be_checked()

        # A second tab opened now has it; a change in one reaches the other.
        other = session.context.new_page()
        other.goto(page.url)
        wait_ready(other)
        assert background(other) == LIGHT_BG
        pick(session, "auto")
        assert background(page) == DARK_BG
        expect(other.locator("#theme-auto")).to_be_checked()
        assert background(other) == DARK_BG

        pick(session, "dark")
        # The admin's own toggle reads the same choice.
        page.goto(live_daphne.base_url + "/admin/")
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        assert page.evaluate("getComputedStyle(document.documentElement).colorScheme") == "dark"
        assert not session.errors
    finally:
        session.close()


def test_a_light_system_gets_the_light_page_and_the_dark_pick_applies_at_once(
    chromium, live_daphne
):
    session = open_session(chromium, live_daphne, color_scheme="light")
    page = session.page
    try:
        assert background(page) == LIGHT_BG
        pick(session, "dark")
        assert background(page) == DARK_BG
        # Nothing the stylesheet draws stays light: the composer and the sidebar too.
        for selector in (".composer-box", ".sidebar"):
            colour = page.locator(selector).evaluate("e => getComputedStyle(e).backgroundColor")
            assert colour != LIGHT_BG, selector
        screenshot(page, "theme-dark-desktop")
    finally:
        session.close()


@pytest.mark.parametrize("language", ["en", "de", "zh"])
def test_the_switch_speaks_the_language(chromium, live_daphne, language):
    session = open_session(chromium, live_daphne, language=language, phone=True)
    page = session.page
    try:
        with translation.override(DJANGO_LANGUAGES[language]):
            expected = [
                translation.pgettext("colour theme", w) for w in ("System", "Light", "Dark")
            ]
            legend = translation.gettext("Colour theme")
        open_sidebar(session)
        labels = page.locator(".theme-switch label").all_inner_texts()
        assert [label.strip() for label in labels] == expected
        assert page.locator(".theme-switch legend").inner_text().strip() == legend
        if language != "en":
            assert expected != ["System", "Light", "Dark"]
        problems = layout_problems(page, touch=True)
        assert not problems, problems
        screenshot(page, f"theme-switch-{language}-phone")
    finally:
        session.close()
