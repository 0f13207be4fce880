"""How the browser tests launch Chromium (tests/browser/conftest.py, ``CHROMIUM_ARGS``).

RD.6: a new context opens no page of the browser's own interface, whose rendering cost
more CPU than the test's page; Playwright's own disabled features stay disabled.
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import CHROMIUM_ARGS, PLAYWRIGHT_DISABLED_FEATURES

pytestmark = pytest.mark.browser


def test_rd6_a_new_context_renders_no_page_of_the_browsers_interface(chromium):
    """The address bar's popup (``chrome://omnibox-popup.top-chrome/``) was a web page
    rendered for every new context."""
    browser_session = chromium.new_browser_cdp_session()
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto("data:text/html,<p>a page</p>")
        page.get_by_text("a page").wait_for()
        targets = browser_session.send("Target.getTargets", {"filter": [{}]})["targetInfos"]
    finally:
        context.close()
        browser_session.detach()
    interface_pages = [t["url"] for t in targets if t["type"] == "browser_ui"]
    assert interface_pages == []
    assert any(t["url"].startswith("data:") for t in targets if t["type"] == "page")


def test_rd6_chromium_runs_with_playwrights_disabled_features_too(chromium):
    """Chromium takes the last ``--disable-features``: ours must repeat what Playwright
    disables itself, or a Playwright upgrade's additions would silently go."""
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto("chrome://version")
        command_line = page.locator("#command_line").inner_text().split()
    finally:
        context.close()
    lists = [
        arg.split("=", 1)[1].split(",")
        for arg in command_line
        if arg.startswith("--disable-features=")
    ]
    playwrights, effective = lists[0], lists[-1]
    assert set(playwrights) <= set(effective), set(playwrights) - set(effective)
    assert set(PLAYWRIGHT_DISABLED_FEATURES) == set(playwrights)
    assert effective == CHROMIUM_ARGS[-1].split("=", 1)[1].split(",")
