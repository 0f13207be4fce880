"""Streaming in the browser (RS.1): text appears while the model is still writing, text the
model wrote before calling a tool ends up inside the step, and a DAG step's progress shows
live in the plan. The scripted server holds back the rest of each stream until the test
releases it, so "while still streaming" is behaviour, not timing.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.support.scripted_server import held, text, tool_calls

pytestmark = pytest.mark.browser

PRE_TOOL = "Let me work this out step by step with the calculator. "


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


def wait_done(page) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    expect(page.locator("#stop")).to_be_hidden()


def test_text_shows_while_streaming_and_pre_tool_text_moves_into_the_step(
    logged_in_page, scripted_server, release
):
    page = logged_in_page
    scripted_server.enqueue(
        held(tool_calls(("calculator", {"expression": "6*7"}), content=PRE_TOOL), release, after=4),
        text("Six times seven is **42**."),
    )
    send(page, "What is 6*7?")

    answer = page.locator(".msg-assistant .answer")
    expect(answer).to_contain_text("Let me work this")
    # The provider is holding the rest of its reply: this text arrived mid-stream.
    assert not release.is_set()
    assert "calculator" not in answer.text_content()
    screenshot(page, "stream-01-text-while-streaming")

    release.set()
    wait_done(page)
    thought = page.locator(".msg-assistant .steps .step-thought")
    expect(thought).to_have_count(1)
    expect(thought).to_contain_text("Let me work this out step by step with the calculator.")
    expect(answer).to_have_text("Six times seven is 42.")
    expect(page.locator(".msg-assistant .steps .step-tool")).to_have_count(1)
    screenshot(page, "stream-02-pre-tool-text-in-the-step")

    page.reload()
    expect(page.locator(".msg-assistant .steps .step-thought")).to_contain_text("Let me work")
    expect(page.locator(".msg-assistant .answer")).to_have_text("Six times seven is 42.")


def test_a_dag_steps_progress_shows_live_in_the_plan(logged_in_page, scripted_server, release):
    page = logged_in_page
    scripted_server.enqueue(
        '{"steps": [{"id": "s1", "task": "Find the height of Mont Blanc", "depends_on": []}]}',
        held(text("Looking it up: Mont Blanc is 4,806 metres high."), release, after=3),
        '{"achieved": true, "confidence": 0.95, "reason": "complete"}',
        "Mont Blanc is 4,806 m high.",
    )
    page.locator("label[for=mode-dag]").click()
    send(page, "How high is Mont Blanc?")

    progress = page.locator(".plan-step[data-step-id='s1'] .plan-progress")
    expect(progress).to_contain_text("Looking it up:")
    assert not release.is_set()
    expect(page.locator(".plan-step[data-step-id='s1'] .pill")).to_have_text("running")
    screenshot(page, "stream-03-dag-step-progress")

    release.set()
    wait_done(page)
    expect(progress).to_have_count(0)  # the result replaced the live progress
    expect(page.locator(".msg-assistant .answer")).to_have_text("Mont Blanc is 4,806 m high.")


def test_a_reload_mid_dag_step_shows_the_plan_and_the_running_steps_text_so_far(
    logged_in_page, scripted_server, release
):
    page = logged_in_page
    scripted_server.enqueue(
        '{"steps": [{"id": "s1", "task": "Find the height of Mont Blanc", "depends_on": []},'
        ' {"id": "s2", "task": "Convert it to feet", "depends_on": ["s1"]}]}',
        "Mont Blanc is 4,806 metres high.",
        held(text("Converting: 4,806 metres are about 15,768 feet."), release, after=3),
        '{"achieved": true, "confidence": 0.95, "reason": "complete"}',
        "Mont Blanc is 4,806 m (about 15,768 ft) high.",
    )
    page.locator("label[for=mode-dag]").click()
    send(page, "How high is Mont Blanc in feet?")
    expect(page.locator(".plan-step[data-step-id='s2'] .plan-progress")).to_contain_text(
        "Converting: 4,806 metres"
    )

    page.reload()

    first, second = (page.locator(f".plan-step[data-step-id='{s}']") for s in ("s1", "s2"))
    expect(first.locator(".pill")).to_have_text("done")
    expect(first).to_contain_text("4,806 metres high")
    expect(second.locator(".pill")).to_have_text("running")
    expect(second.locator(".plan-progress")).to_have_text("Converting: 4,806 metres ")
    assert not release.is_set()  # the step is still being written: this came from run.active
    screenshot(page, "stream-04-dag-step-progress-after-reload")

    release.set()
    wait_done(page)
    expect(second.locator(".pill")).to_have_text("done")
    expect(second.locator(".plan-progress")).to_have_count(0)
    expect(page.locator(".msg-assistant .answer")).to_have_text(
        "Mont Blanc is 4,806 m (about 15,768 ft) high."
    )
