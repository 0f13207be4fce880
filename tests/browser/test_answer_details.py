"""An answer's details, round 4 (RU.13): a tool call and its result are one row, a stopped
answer keeps Copy and its usage card, and one popover is open at a time."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.support.scripted_server import held, text, tool_calls

pytestmark = pytest.mark.browser


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


def wait_done(page, count: int = 1) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


def test_ru13_two_tool_calls_are_two_rows_with_name_arguments_and_result(
    logged_in_page, scripted_server
):
    page = logged_in_page
    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "6*7"}), ("calculator", {"expression": "2+3"})),
        "6*7 is 42 and 2+3 is 5.",
    )
    send(page, "Work out 6*7 and 2+3 with the calculator.")
    wait_done(page)
    rows = page.locator(".msg-assistant .steps details.step")
    expect(rows).to_have_count(2)  # not a row per call and another per result
    for row, expression, result in ((rows.nth(0), "6*7", "42"), (rows.nth(1), "2+3", "5")):
        summary = row.locator("summary")
        expect(summary.locator(".step-title")).to_have_text("calculator")
        expect(summary.locator(".step-args")).to_contain_text(expression)
        expect(summary.locator(".step-outcome")).to_contain_text(result)
    rows.nth(1).locator("summary").click()
    expect(rows.nth(1).locator(".step-arguments")).to_contain_text('"2+3"')
    expect(rows.nth(1).locator(".step-output")).to_contain_text("5")
    screenshot(page, "33-tool-call-and-result-one-row")

    page.reload()  # the stored record draws the same rows
    wait_done(page)
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator(".step-outcome")).to_contain_text("42")


def test_ru13_a_stopped_answer_can_be_copied_and_shows_its_usage(
    logged_in_page, scripted_server, release
):
    page = logged_in_page
    scripted_server.enqueue(
        held(text("The first part of a long answer, and then more."), release, after=3)
    )
    send(page, "Write a long answer")
    answer = page.locator(".msg-assistant")
    expect(answer.locator(".answer")).to_contain_text("The first")
    page.get_by_role("button", name="Stop").click()
    expect(answer.locator(".status-badge")).to_have_text("Stopped")
    release.set()
    # Live, as after a reload: Copy and what the stopped answer cost.
    expect(answer.locator(".usage-card")).to_have_count(1)
    answer.get_by_role("button", name="Copy the answer").click()
    expect(answer.locator(".copy-btn")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()").startswith("The first")
    screenshot(page, "34-stopped-answer-copy-and-usage")

    page.reload()
    expect(answer.locator(".status-badge")).to_have_text("Stopped")
    expect(answer.locator(".usage-card")).to_have_count(1)
    expect(answer.get_by_role("button", name="Copy the answer")).to_be_visible()


def test_ru13_the_usage_popover_closes_when_the_gauge_opens(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(text("A short answer.", usage=(40, 12)))
    send(page, "Say something short")
    wait_done(page)
    card = page.locator(".msg-assistant .usage-card")
    # Small counts are numbers, not "0.0k" (RU.13).
    expect(card.locator(".usage-total")).to_contain_text("12 out")
    card.click()
    detail = page.locator(".msg-assistant .usage-detail")
    expect(detail).to_be_visible()
    gauge = page.locator("#gauge")
    expect(gauge).to_be_visible()
    gauge.click()
    expect(page.locator("#gauge-detail")).to_be_visible()
    expect(detail).to_be_hidden()
    expect(card).to_have_attribute("aria-expanded", "false")
