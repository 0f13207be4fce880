"""Runs that survive a reload (issues 7, 8): tool steps and the DAG plan look the same after
a reload as they did live, and Retry (RU.3) answers the same question once more without a
second copy of it. Against the scripted OpenAI-compatible server."""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import enqueue_dag_with_one_replan, screenshot, send
from tests.support.scripted_server import held, server_error, slow, text, tool_calls

pytestmark = pytest.mark.browser

DEFAULT_REPLY = "This is the scripted server's default reply."
# Every websocket of the page waits at the door until ``window.openHeldSockets()``: a
# page whose socket is still opening while its history is already on screen.
HOLD_SOCKETS_JS = """(() => {
  const Real = window.WebSocket;
  const held = [];
  window.openHeldSockets = () => { while (held.length) held.shift()(); };
  class HeldSocket extends EventTarget {
    constructor(url) {
      super();
      this.readyState = Real.CONNECTING;
      held.push(() => {
        const ws = (this.real = new Real(url));
        for (const type of ["open", "message", "close", "error"]) {
          ws.addEventListener(type, (event) => {
            this.readyState = ws.readyState;
            this.dispatchEvent(new event.constructor(type, event));
          });
        }
      });
    }
    send(data) { this.real.send(data); }
    close(code, reason) {
      if (this.real) this.real.close(code, reason);
      this.readyState = Real.CLOSED;
    }
  }
  for (const name of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) HeldSocket[name] = Real[name];
  window.WebSocket = HeldSocket;
})();"""
TRACE_JS = """node => [...node.querySelectorAll(':scope > .plan, :scope > .steps')]
    .map(part => part.outerHTML)"""


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


def wait_done(page, count: int = 1) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


def trace_of(page) -> list[str]:
    """The steps and plan of the newest answer, as the page shows them."""
    return page.locator(".msg-assistant").last.evaluate(TRACE_JS)


def test_tool_steps_are_shown_after_a_reload_exactly_as_live(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "6*7"}), content="<img src=x onerror=alert(1)>"),
        "The answer is 42.",
    )
    send(page, "What is 6*7? Use the calculator.")
    wait_done(page)
    steps = page.locator(".msg-assistant .steps details.step")
    expect(steps).to_have_count(2)  # the thought; the call with its result (RU.13)
    live = trace_of(page)

    page.reload()

    wait_done(page)
    expect(steps).to_have_count(2)
    assert trace_of(page) == live
    # Escaped: the model's "thought" is text, never markup.
    expect(page.locator(".msg-assistant .steps img")).to_have_count(0)
    steps.nth(1).locator("summary").click()
    expect(steps.nth(1).locator(".step-output")).to_contain_text("42")
    screenshot(page, "30-tool-steps-after-reload")


def test_dag_plan_and_replan_are_shown_after_a_reload_exactly_as_live(
    logged_in_page, scripted_server
):
    page = logged_in_page
    enqueue_dag_with_one_replan(scripted_server)
    page.locator("label[for=mode-dag]").click()
    send(page, "How high is Mont Blanc, and since when?")
    wait_done(page)
    live = trace_of(page)

    page.reload()

    wait_done(page)
    plan_box = page.locator(".msg-assistant .plan")
    expect(plan_box).to_have_count(1)
    expect(plan_box.locator(".plan-head")).to_contain_text("re-plan round 1")
    expect(plan_box.locator(".plan-step .pill")).to_have_text(["done", "done"])
    expect(plan_box.locator(".verdict")).to_contain_text("goal achieved")
    expect(page.locator(".msg-assistant .step-note")).to_contain_text(["the year is missing"])
    assert trace_of(page) == live
    screenshot(page, "31-dag-plan-after-reload")


def test_error_then_retry_gives_one_question_and_one_answer(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(server_error(500))
    send(page, "This one fails first")
    error = page.locator(".msg-assistant .error-box")
    expect(error).to_be_visible()

    error.get_by_role("button", name="Retry").click()
    # The server has the question: the retry is a new run on it, not a new message.

    wait_done(page)
    expect(page.locator(".msg-user .bubble")).to_have_text(["This one fails first"])
    expect(page.locator(".msg-assistant .answer")).to_have_text([DEFAULT_REPLY])
    expect(error).to_have_count(0)
    page.reload()
    wait_done(page)
    expect(page.locator(".msg-user .bubble")).to_have_text(["This one fails first"])
    expect(page.locator(".msg-assistant .answer")).to_have_text([DEFAULT_REPLY])
    expect(page.locator(".btn-retry")).to_have_count(0)
    screenshot(page, "32-retried")


def test_a_stopped_answer_can_be_retried_after_a_reload(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(slow(60))
    send(page, "Stop me, then ask again")
    stop = page.locator("#stop")
    expect(page.locator(".msg-assistant .thinking")).to_be_visible()
    for _ in range(300):  # the model is busy with the slow reply
        if scripted_server.requests:
            break
        page.wait_for_timeout(100)
    stop.click()
    expect(page.locator(".msg-assistant .status-badge")).to_have_text("Stopped")

    page.reload()
    retry = page.locator(".msg-assistant").get_by_role("button", name="Retry")
    expect(retry).to_have_count(1)
    retry.click()

    wait_done(page)
    expect(page.locator(".msg-user .bubble")).to_have_text(["Stop me, then ask again"])
    expect(page.locator(".msg-assistant .answer")).to_have_text([DEFAULT_REPLY])
    expect(page.locator(".status-badge")).to_have_count(0)


def test_a_retry_clicked_while_the_socket_still_opens_goes_out_once_it_is_open(
    logged_in_page, scripted_server
):
    page = logged_in_page
    scripted_server.enqueue(server_error(500))
    send(page, "Asked before the socket was back")
    expect(page.locator(".msg-assistant .error-box")).to_be_visible()

    page.add_init_script(HOLD_SOCKETS_JS)
    page.reload()
    retry = page.locator(".msg-assistant").get_by_role("button", name="Retry")
    expect(retry).to_have_count(1)
    retry.click()  # the history is on screen; the socket is not open yet
    expect(retry).to_have_text("Retrying…")  # waiting for the socket, not refused
    expect(retry).to_be_disabled()
    expect(page.locator(".toast")).to_have_count(0)
    assert len(scripted_server.requests) == 1

    page.evaluate("window.openHeldSockets()")
    wait_done(page)
    expect(page.locator(".msg-user .bubble")).to_have_text(["Asked before the socket was back"])
    expect(page.locator(".msg-assistant .answer")).to_have_text([DEFAULT_REPLY])
    expect(page.locator(".msg-assistant .error-box")).to_have_count(0)
    assert len(scripted_server.requests) == 2


def test_a_page_that_read_the_answer_running_shows_it_finished_when_its_run_ended_first(
    logged_in_page, scripted_server
):
    """RD.6: reloaded as the run ends. The history said the answer was running, the socket
    joined after the run had ended, and the answer showed "Still running…" for good. Held
    sockets make the crossing certain: the history is read mid-run, the socket opens once
    the run has ended (another tab shows its end)."""
    page = logged_in_page
    release = threading.Event()
    scripted_server.enqueue(held(text("Alpha beta gamma delta."), release, after=2))
    send(page, "Say four Greek letters")
    expect(page.locator(".msg-assistant .answer")).to_have_text("Alpha beta")

    reloaded = page.context.new_page()
    reloaded.add_init_script(HOLD_SOCKETS_JS)
    reloaded.goto(page.url)
    answer = reloaded.locator(".msg-assistant")
    expect(answer.locator(".status-badge")).to_have_text("Still running…")

    release.set()
    wait_done(page)  # the run has ended: the first tab shows its end
    reloaded.evaluate("window.openHeldSockets()")
    expect(answer.locator(".answer")).to_have_text("Alpha beta gamma delta.")
    expect(answer.locator(".usage-card")).to_have_count(1)
    expect(answer.locator(".status-badge")).to_have_count(0)
    expect(reloaded.locator("#stop")).to_be_hidden()
    assert len(scripted_server.requests) == 1


def test_reload_mid_run_shows_the_steps_so_far_once_and_keeps_going(
    logged_in_page, scripted_server
):
    page = logged_in_page
    streamed = " ".join(f"word{i}" for i in range(40))
    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "2+3"})),
        text(""),  # an empty reply: the agent writes its answer with the streaming call
        text(streamed, chunk_delay=0.1),
    )
    send(page, "Add, then write a lot")
    steps = page.locator(".msg-assistant .steps details.step")
    # Long enough for a progress checkpoint (every 2 s) to have stored the steps.
    expect(page.locator(".msg-assistant .answer")).to_contain_text("word22")
    expect(steps).to_have_count(1)  # the call with its result

    page.reload()

    # History (the last checkpoint) and run.active (the record so far) together: each
    # step once, the answer still streaming.
    expect(page.locator(".msg-assistant .answer")).to_contain_text("word")
    expect(steps).to_have_count(1)  # the call with its result
    wait_done(page)
    expect(steps).to_have_count(1)  # the call with its result
    expect(page.locator(".msg-assistant .answer")).to_have_text(streamed)
