"""A reasoning model in the browser: its thinking in a collapsed part of the answer, apart
from the answer text, and its reasoning tokens in the usage split."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.support.scripted_server import text

pytestmark = pytest.mark.browser

THOUGHT = "The user wants a greeting. A short, friendly one will do."


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


def test_thinking_is_shown_apart_and_collapsed_with_its_tokens(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.use_profile("deepseek")
    # An empty first reply makes the agent stream its answer; both replies think first.
    scripted_server.enqueue(
        text("", reasoning=THOUGHT, usage=(40, 2)),
        text("Hello there!", reasoning=THOUGHT, usage=(60, 5)),
    )
    send(page, "Say hello")

    answer = page.locator(".msg-assistant")
    expect(answer.locator(".answer")).to_have_text("Hello there!")
    thinking = answer.locator("details.reasoning")
    expect(thinking).to_have_count(1)
    expect(thinking).not_to_have_attribute("open", "")  # collapsed until asked for
    expect(thinking.locator("summary")).to_have_text("Thinking")
    thinking.locator("summary").click()
    expect(thinking.locator(".reasoning-text")).to_have_text(THOUGHT + THOUGHT)
    assert THOUGHT not in answer.locator(".answer").text_content()
    card = answer.locator(".usage-card")
    expect(card.locator(".usage-reasoning")).to_have_text(
        re.compile(r"^(?:\d+\.\dk|\d{1,3}) reasoning$")
    )
    expect(card).to_have_attribute("title", re.compile(r"Reasoning: \d+ of the output tokens"))
    screenshot(page, "30-reasoning")

    # After a reload the thinking is still there, collapsed, and still apart from the answer.
    page.reload()
    answer = page.locator(".msg-assistant")
    expect(answer.locator(".answer")).to_have_text("Hello there!")
    thinking = answer.locator("details.reasoning")
    expect(thinking).not_to_have_attribute("open", "")
    thinking.locator("summary").click()
    expect(thinking.locator(".reasoning-text")).to_have_text(THOUGHT + THOUGHT)
