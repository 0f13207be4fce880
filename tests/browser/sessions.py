"""A logged-in browser session in a given language, screen and colour scheme, for tests
that run the same steps on a desktop and a touch phone in English, German and Chinese."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import polib
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, TIMEOUT_MS, login

# The browser's language: the server answers in it (Accept-Language).
LOCALES = {"en": "en-US", "de": "de-DE", "zh": "zh-CN"}
# Django's codes for the same languages (translation.override in a test).
DJANGO_LANGUAGES = {"en": "en", "de": "de", "zh": "zh-hans"}


@dataclass
class Session:
    context: object
    page: object
    errors: list[str] = field(default_factory=list)
    phone: bool = False

    def close(self) -> None:
        self.context.close()


def open_session(
    chromium, server, *, language: str = "en", phone: bool = False, color_scheme: str = "light"
) -> Session:
    """Logged in, the chat page started (its composer listens)."""
    options = {
        "viewport": PHONE if phone else DESKTOP,
        "locale": LOCALES[language],
        "color_scheme": color_scheme,
    }
    if phone:
        options |= {"has_touch": True, "is_mobile": True, "device_scale_factor": 2}
    context = chromium.new_context(**options)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    context.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    page = context.new_page()
    session = Session(context=context, page=page, phone=phone)
    page.on("pageerror", lambda exc: session.errors.append(str(exc)))
    login(page, server)
    return session


def open_sidebar(session: Session) -> None:
    """On a phone the conversation list is a drawer: open it (a desktop shows it always)."""
    if not session.phone:
        return
    page = session.page
    if "sidebar-open" in (page.locator("#layout").get_attribute("class") or ""):
        return
    page.locator("#sidebar-toggle").click()
    expect(page.locator("#layout")).to_have_class(re.compile(r"\bsidebar-open\b"))
    wait_sidebar_slid_in(page)


def wait_sidebar_slid_in(page) -> None:
    """Until the phone's drawer has ended its slide: at rest, nothing animating it."""
    page.wait_for_function(
        """() => {
          const sidebar = document.getElementById("sidebar");
          return sidebar.getAnimations().length === 0
            && getComputedStyle(sidebar).transform === "none";
        }"""
    )


def js_gettext(language: str, msgid: str) -> str:
    """A string of the static JS in ``language``, from its catalog (djangojs.po)."""
    if language == "en":
        return msgid
    folder = {"de": "de", "zh": "zh_Hans"}[language]
    path = Path(__file__).resolve().parents[2] / "locale" / folder / "LC_MESSAGES" / "djangojs.po"
    entry = polib.pofile(str(path)).find(msgid)
    assert entry and entry.msgstr, f"{msgid!r} has no {language} translation"
    return entry.msgstr
