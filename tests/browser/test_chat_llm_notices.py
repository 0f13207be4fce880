"""The model call's notices in the browser: a rate limit waited out ("Rate limited …,
retrying in N s", counting down, gone once the answer arrives) and a model that may not
stream (the answer arrives at once). Fakes: OpenAI's 429 and its refusal to stream an
unverified organisation (tests/support/provider_profiles.py)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.support.scripted_server import rate_limited_as_openai, slow, text

pytestmark = pytest.mark.browser


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env(LLM_RATE_LIMIT_RETRIES="2")


def test_a_rate_limit_is_counted_down_then_the_answer_arrives(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(rate_limited_as_openai({"retry-after": "3"}), text("After the wait."))
    send(page, "Hello?")
    answer = page.locator(".msg-assistant")
    notice = answer.locator(".llm-notice")
    expect(notice).to_contain_text("Rate limited by the model's provider, retrying in")
    expect(notice).to_contain_text("attempt 1 of 2")
    screenshot(page, "31-rate-limited")
    expect(answer.locator(".answer")).to_have_text("After the wait.", timeout=15_000)
    expect(notice).to_have_count(0)


def test_a_model_that_may_not_stream_says_the_answer_comes_at_once(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.use_profile("openai_unverified")
    scripted_server.enqueue(slow(2.0, text("Whole at once.")))
    send(page, "Hello?")
    answer = page.locator(".msg-assistant")
    expect(answer.locator(".llm-notice")).to_contain_text("the answer arrives at once")
    expect(answer.locator(".answer")).to_have_text("Whole at once.", timeout=15_000)
    expect(answer.locator(".llm-notice")).to_have_count(0)
