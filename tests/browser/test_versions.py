"""Versions of an edited question and a regenerated answer, on the built-in offline model:
"‹ 3 / 3 ›" after two edits, back to the first, still there after a reload, the export and
the title following it; a regenerated answer "2 / 2" and back. Desktop and a touch phone
(the arrows' touch targets 44 px)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, TIMEOUT_MS, screenshot, send, wait_ready
from tests.browser.layout_audit import layout_problems

pytestmark = pytest.mark.browser


@pytest.fixture
def open_page(chromium, live_daphne):
    contexts = []

    def make(phone: bool, locale: str = "en-US"):
        options = {"viewport": PHONE if phone else DESKTOP, "locale": locale}
        if phone:
            options |= {"has_touch": True, "is_mobile": True, "device_scale_factor": 2}
        context = chromium.new_context(**options)
        contexts.append(context)
        context.set_default_timeout(TIMEOUT_MS)
        expect.set_options(timeout=TIMEOUT_MS)
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))
        page.goto(live_daphne.base_url + "/")
        page.locator("#id_username").fill(live_daphne.username)
        page.locator("#id_password").fill(live_daphne.password)
        page.locator("#id_password").press("Enter")
        wait_ready(page)
        return page

    yield make
    for context in contexts:
        context.close()


def wait_done(page, count: int) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


def edit_last_question(page, text: str) -> None:
    page.get_by_role("button", name="Edit and resend this message").click()
    box = page.get_by_label("Edit your message")
    box.fill(text)
    box.press("Enter")


def switcher(page, selector: str):
    return page.locator(selector).last.locator(".versions")


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_edit_twice_go_back_to_the_first_reload_and_export_it(open_page, live_daphne, phone):
    page = open_page(phone)
    name = f"versions-{'phone' if phone else 'desktop'}"
    send(page, "What is 2+3?")
    wait_done(page, 1)
    expect(page.locator("#conversation-title")).to_have_text("What is 2+3?")
    edit_last_question(page, "What is 6*7?")
    expect(page.locator(".msg-assistant .answer").last).to_contain_text("42")
    wait_done(page, 1)
    edit_last_question(page, "What is 7*8?")
    expect(page.locator(".msg-assistant .answer").last).to_contain_text("56")
    wait_done(page, 1)

    versions = switcher(page, ".msg-user")
    expect(versions.locator(".version-count")).to_have_text("3 / 3")
    expect(versions).to_have_attribute("aria-label", "Version 3 of 3")
    expect(versions.get_by_role("button", name="Next version")).to_be_disabled()
    # The title follows the edited first question (it was never renamed).
    expect(page.locator("#conversation-title")).to_have_text("What is 7*8?")
    assert layout_problems(page, touch=phone) == []
    if phone:
        arrow = versions.get_by_role("button", name="Previous version").bounding_box()
        assert arrow["height"] >= 44 and arrow["width"] >= 44, arrow
    screenshot(page, f"{name}-3-of-3")

    versions.get_by_role("button", name="Previous version").click()
    expect(switcher(page, ".msg-user").locator(".version-count")).to_have_text("2 / 3")
    expect(page.locator(".msg-user .bubble")).to_have_text(["What is 6*7?"])
    switcher(page, ".msg-user").get_by_role("button", name="Previous version").click()
    expect(switcher(page, ".msg-user").locator(".version-count")).to_have_text("1 / 3")
    # Drawn again, the switcher keeps the keyboard (on the arrow still enabled).
    expect(switcher(page, ".msg-user").get_by_role("button", name="Next version")).to_be_focused()
    expect(page.locator(".msg-user .bubble")).to_have_text(["What is 2+3?"])
    expect(page.locator(".msg-assistant")).to_have_count(1)
    expect(page.locator(".msg-assistant .answer")).to_contain_text("5")
    expect(page.locator("#conversation-title")).to_have_text("What is 2+3?")
    screenshot(page, f"{name}-1-of-3")

    page.reload()
    wait_ready(page)
    expect(switcher(page, ".msg-user").locator(".version-count")).to_have_text("1 / 3")
    expect(page.locator(".msg-user .bubble")).to_have_text(["What is 2+3?"])
    conversation_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    export = page.request.get(f"{live_daphne.base_url}/api/conversations/{conversation_id}/export/")
    assert export.ok
    text = export.text()
    assert "What is 2+3?" in text
    assert "What is 6*7?" not in text and "What is 7*8?" not in text

    # Regenerate the answer of version one: "2 / 2" beside it, then back to the first.
    first_answer = page.locator(".msg-assistant").last.get_attribute("data-message-id")
    page.get_by_role("button", name="Regenerate this answer").click()
    expect(page.locator(".msg-assistant").last).not_to_have_attribute(
        "data-message-id", first_answer
    )
    wait_done(page, 1)
    answer_versions = switcher(page, ".msg-assistant")
    expect(answer_versions.locator(".version-count")).to_have_text("2 / 2")
    # First in the answer's row of buttons, which keeps its one order.
    row = page.locator(".msg-assistant .msg-actions").last
    expect(row.locator(":scope > *").first).to_have_class("versions")
    screenshot(page, f"{name}-answer-2-of-2")
    answer_versions.get_by_role("button", name="Previous version").click()
    expect(switcher(page, ".msg-assistant").locator(".version-count")).to_have_text("1 / 2")
    expect(page.locator(".msg-assistant")).to_have_attribute("data-message-id", first_answer)
    expect(switcher(page, ".msg-user").locator(".version-count")).to_have_text("1 / 3")
    page.reload()
    wait_ready(page)
    expect(switcher(page, ".msg-assistant").locator(".version-count")).to_have_text("1 / 2")
    assert page.errors == []


def test_a_second_tab_follows_a_switch(open_page, live_daphne):
    page = open_page(False)
    send(page, "What is 2+3?")
    wait_done(page, 1)
    edit_last_question(page, "What is 6*7?")
    expect(page.locator(".msg-assistant .answer").last).to_contain_text("42")
    wait_done(page, 1)
    other = page.context.new_page()
    other.goto(page.url)
    wait_ready(other)
    expect(switcher(other, ".msg-user").locator(".version-count")).to_have_text("2 / 2")

    switcher(page, ".msg-user").get_by_role("button", name="Previous version").click()
    expect(switcher(page, ".msg-user").locator(".version-count")).to_have_text("1 / 2")
    # The other tab is told over its socket: same branch, same title, without a reload.
    expect(switcher(other, ".msg-user").locator(".version-count")).to_have_text("1 / 2")
    expect(other.locator(".msg-user .bubble")).to_have_text(["What is 2+3?"])
    expect(other.locator("#conversation-title")).to_have_text("What is 2+3?")
    assert page.errors == []


@pytest.mark.parametrize("locale", ["de-DE", "zh-CN"])
def test_the_switcher_fits_a_phone_in_german_and_chinese(open_page, locale):
    page = open_page(True, locale)
    send(page, "What is 2+3?")
    wait_done(page, 1)
    page.locator(".msg-user .btn-edit").click()
    box = page.locator(".msg-user .edit-box")
    box.fill("What is 6*7?")
    box.press("Enter")
    expect(page.locator(".msg-assistant .answer").last).to_contain_text("42")
    wait_done(page, 1)
    page.locator(".msg-assistant .msg-actions .btn-regenerate").click()
    wait_done(page, 1)
    expect(switcher(page, ".msg-assistant").locator(".version-count")).to_have_text("2 / 2")
    versions = switcher(page, ".msg-user")
    expect(versions.locator(".version-count")).to_have_text("2 / 2")
    previous = {"de-DE": "Vorherige Version", "zh-CN": "上一个版本"}[locale]
    expect(versions.get_by_role("button", name=previous)).to_be_enabled()
    # The switcher shows as soon as the second answer starts; the layout is checked once it
    # has finished (a Stop button still in the row narrows the others).
    wait_done(page, 1)
    assert layout_problems(page, touch=True) == []
    screenshot(page, f"versions-phone-{locale}")
    assert page.errors == []
