"""The chat UI against a scripted OpenAI-compatible server (tests/support/scripted_server.py).

Scripted replies make runs slow, failing or compacting on demand: streaming as it
arrives, stop, RU.3 error + retry, RU.1 divider live and on reopen, reconnect + catch-up.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    enqueue_dag_with_one_replan,
    login,
    png_file,
    screenshot,
    send,
)
from tests.support.scripted_server import server_error, slow, text

pytestmark = pytest.mark.browser

STREAMED = " ".join(f"word{i}" for i in range(40))
DEFAULT_REPLY = "This is the scripted server's default reply."


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


def record_frames(page) -> list[dict]:
    """Every websocket frame the page receives, decoded."""
    frames: list[dict] = []

    def on_socket(ws):
        ws.on("framereceived", lambda payload: frames.append(json.loads(payload)))

    page.on("websocket", on_socket)
    return frames


def wait_for_llm_requests(page, scripted_server, count: int) -> None:
    for _ in range(300):
        if len(scripted_server.requests) >= count:
            return
        page.wait_for_timeout(100)  # keeps the page's event loop running while we poll
    raise AssertionError(f"the LLM never got {count} request(s)")


def wait_done(page, count: int = 1) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


def test_answer_streams_as_markdown_then_takes_the_servers_html(logged_in_page, scripted_server):
    page = logged_in_page
    # An empty first reply makes the agent write its answer with the streaming call (RR.2),
    # which the server sends word by word.
    scripted_server.enqueue(
        text(""), text(f"**Bold** start. {STREAMED}", chunk_delay=0.15, usage=(50, 60))
    )
    expect(page.locator("#offline-note")).to_be_hidden()

    send(page, "Tell me a long story")

    answer = page.locator(".msg-assistant .answer")
    expect(answer).to_have_class(re.compile(r"\bstreaming\b"))
    expect(answer).to_contain_text("word3")
    streamed_so_far = answer.text_content()
    assert "word39" not in streamed_so_far  # seen mid-stream, not all at once
    # Markdown while streaming: the bold text is laid out, no asterisks shown (RU.6).
    assert "**" not in streamed_so_far
    expect(answer.locator("strong")).to_have_text("Bold")
    expect(page.locator("#stop")).to_be_visible()
    expect(page.locator(".msg-assistant")).to_have_attribute("aria-busy", "true")
    screenshot(page, "10-streaming")

    wait_done(page)
    expect(answer).not_to_have_class(re.compile(r"\bstreaming\b"))
    expect(answer.locator("strong")).to_have_text("Bold")  # the server's HTML at done
    expect(answer).to_contain_text("word39")
    # A small count reads as a number, not "0.1k" (RU.13); the input, with the prompt
    # and tool definitions of two calls, is in thousands.
    expect(page.locator(".msg-assistant .usage-card .usage-total")).to_have_text(
        re.compile(r"^(\d+\.\dk|\d{1,3}) in / \d{1,3} out$")
    )


def test_stop_button_cancels_a_run_and_the_conversation_goes_on(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(slow(60))

    send(page, "Take your time")

    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible()
    expect(page.locator(".msg-assistant .thinking")).to_be_visible()
    wait_for_llm_requests(page, scripted_server, 1)  # the model is busy with the slow reply
    stop.click()
    expect(page.locator(".msg-assistant .status-badge")).to_have_text("Stopped")
    expect(stop).to_be_hidden()
    screenshot(page, "11-stopped")

    send(page, "Now answer quickly")
    # The new answer's own card (the stopped one has a card too when usage was known).
    expect(page.locator(".msg-assistant").last.locator(".usage-card")).to_have_count(1)
    expect(stop).to_be_hidden()
    expect(page.locator(".msg-assistant .answer").last).to_have_text(DEFAULT_REPLY)
    page.reload()
    expect(page.locator(".msg-assistant .status-badge").first).to_have_text("Stopped")


def test_error_shows_as_agent_error_with_retry_ru3(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(server_error(500))

    send(page, "This one fails")

    error = page.locator(".msg-assistant .error-box")
    expect(error).to_be_visible()
    expect(error).to_have_attribute("role", "alert")
    expect(page.locator("#stop")).to_be_hidden()
    screenshot(page, "12-error-with-retry")
    # The page did not freeze: Retry answers the stored question again (websocket retry
    # frame); the new answer takes the failed one's place, the question is not repeated.
    error.get_by_role("button", name="Retry").click()
    wait_done(page)
    expect(page.locator(".msg-assistant .answer")).to_have_text([DEFAULT_REPLY])
    expect(page.locator(".msg-user .bubble")).to_have_text(["This one fails"])
    page.reload()
    expect(page.locator(".msg-assistant .answer")).to_have_text([DEFAULT_REPLY])
    expect(page.locator(".msg-assistant .error-box")).to_have_count(0)


def seed_long_conversation(server, pairs: int = 7) -> str:
    """A conversation whose history is far over a small budget (made in the server's DB)."""
    out = server.manage_shell(
        "from django.contrib.auth import get_user_model\n"
        "from chat.models import Conversation, Message\n"
        f"u = get_user_model().objects.get(username={server.username!r})\n"
        "c = Conversation.objects.create(owner=u, title='Long history')\n"
        f"for i in range({pairs * 2}):\n"
        "    role = 'user' if i % 2 == 0 else 'assistant'\n"
        "    Message.objects.create(conversation=c, role=role, status='done',\n"
        "        kind='query' if role == 'user' else 'answer',\n"
        "        content=f'Turn {i} about gardens. ' + 'lorem ipsum dolor sit amet ' * 80)\n"
        "print(c.id)\n"
    )
    return out.strip().splitlines()[-1]


def test_divider_appears_live_from_compact_event_and_on_reopen_ru1(
    chromium, live_daphne_factory, live_daphne_env, new_page
):
    # 9,000 context - 1,000 output - 4,000 reserve = 4,000 usable: the history must compact.
    server = live_daphne_factory(
        env={**live_daphne_env, "LLM_CONTEXT_SIZE": "9000", "LLM_MAX_OUTPUT_TOKENS": "1000"}
    )
    conversation_id = seed_long_conversation(server)
    page = new_page()
    frames = record_frames(page)
    login(page, server)
    page.goto(f"{server.base_url}/c/{conversation_id}/")
    expect(page.locator(".msg")).to_have_count(14)
    expect(page.locator(".compact-divider")).to_have_count(0)
    expect(page.locator("#gauge-text")).to_have_text(re.compile(r"/ 4\.0k$"))

    send(page, "And what about roses?")

    wait_done(page)
    compact = next(f for f in frames if f["type"] == "compact" and f["scope"] == "history")
    assert compact["strategy"] == "llm"
    summarized = compact["original_count"] - (compact["compacted_count"] - 1)
    expected = f"Earlier context ({summarized} messages) was summarized by AI"
    divider = page.locator(".compact-divider")
    expect(divider).to_have_text(expected)
    kept = compact["compacted_count"] - 1

    def messages_between_divider_and_query() -> int:
        return page.evaluate(
            """() => {
                let n = 0;
                for (let e = document.querySelector(".compact-divider").nextElementSibling;
                     e && !e.textContent.includes("And what about roses?");
                     e = e.nextElementSibling) n += 1;
                return n;
            }"""
        )

    assert messages_between_divider_and_query() == kept
    # The usage card counts the compaction call too (RU.2), split out in its tooltip.
    card = page.locator(".msg-assistant .usage-card").last
    expect(card).to_contain_text("compaction")
    compaction_in = re.search(r"Compaction: ([\d,]+) in", card.get_attribute("title")).group(1)
    assert int(compaction_in.replace(",", "")) > 0
    divider.scroll_into_view_if_needed()
    screenshot(page, "13-divider-live")

    page.reload()

    expect(page.locator(".compact-divider")).to_have_text(expected)
    assert messages_between_divider_and_query() == kept
    # Near-full after a summary is the normal state: said in words, not shown as an alarm.
    expect(page.locator("#gauge-label")).to_have_text("History summarised to fit")
    expect(page.locator("#gauge")).to_have_class(re.compile(r"\bsummarised\b"))
    assert page.locator("#gauge-meter").evaluate("m => m.optimum") == 100
    assert "This is normal" in page.locator("#gauge").get_attribute("title")
    assert not page.errors


@pytest.mark.own_server  # kills and restarts its daphne
def test_lost_socket_reconnects_and_catches_up(logged_in_page, live_daphne, scripted_server):
    page = logged_in_page
    send(page, "First, while connected")
    wait_done(page)
    page.evaluate(
        """() => {
            window.connectionTexts = [];
            const box = document.getElementById("connection");
            new MutationObserver(() => window.connectionTexts.push(box.textContent))
                .observe(box, { childList: true, characterData: true, subtree: true });
        }"""
    )
    # A slow stream, and the server dies in the middle of it (SIGKILL).
    scripted_server.enqueue(text(""), text(STREAMED, chunk_delay=0.2, usage=(40, 40)))
    send(page, "Second, cut off by a crash")
    expect(page.locator(".msg-assistant .answer").last).to_contain_text("word1")

    live_daphne.kill()

    expect(page.locator("#connection")).to_contain_text("Reconnecting")
    expect(page.locator("#prompt")).to_be_editable()  # the page does not freeze
    screenshot(page, "14-reconnecting")
    live_daphne.restart()  # recover_runs marks the cut-off answer interrupted, then serves

    expect(page.locator("#connection")).to_be_hidden()
    # Caught up through the messages API: the server's view of the cut-off answer.
    expect(page.locator(".msg-assistant .status-badge").last).to_contain_text("Interrupted")
    expect(page.locator("#stop")).to_be_hidden()
    assert any("Reconnecting" in t for t in page.evaluate("window.connectionTexts"))
    send(page, "Third, after reconnecting")
    wait_done(page, 2)
    expect(page.locator(".msg-assistant .answer").last).to_have_text(DEFAULT_REPLY)


def test_follow_up_sent_while_running_is_shown_and_answered_rp1(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(slow(5, "First answer."), "Answer that saw the follow-up.")
    send(page, "Start something slow")
    wait_for_llm_requests(page, scripted_server, 1)

    send(page, "Also consider this")

    follow_up = page.locator(".msg-user.injected")
    expect(follow_up).to_have_count(1)
    expect(follow_up.locator(".msg-tag")).to_contain_text("while the agent was working")
    expect(follow_up).to_have_attribute("data-message-id", re.compile(r"^\d+$"))  # confirmed
    wait_done(page)
    expect(page.locator(".msg-assistant .follow-up-mark")).to_be_visible()
    # One run: the agent saw the follow-up before answering (RP.1); it sits above the answer,
    # and the reply that streamed before the follow-up was read stays in the answer.
    expect(page.locator(".msg-assistant .answer p")).to_have_text(
        ["First answer.", "Answer that saw the follow-up."]
    )
    expect(page.locator(".msg").nth(1)).to_have_class(re.compile(r"\binjected\b"))
    screenshot(page, "15-follow-up")
    page.reload()
    expect(page.locator(".msg-user.injected .bubble")).to_have_text("Also consider this")
    # After a reload it is where it was live: between the question and the answer it shaped.
    expect(page.locator(".msg").nth(1)).to_have_class(re.compile(r"\binjected\b"))
    expect(page.locator(".msg").nth(2)).to_have_class(re.compile(r"\bmsg-assistant\b"))
    # The reply is marked as one to the follow-up (RU.13), live as after the reload...
    expect(page.locator(".msg-assistant .follow-up-mark")).to_have_text(
        "Also answers your follow-up"
    )
    # ...and the exports keep the page's order and the mark.
    origin, conversation = re.match(r"^(https?://[^/]+)/c/([^/]+)/", page.url).groups()
    export = f"{origin}/api/conversations/{conversation}/export/?format="
    markdown = page.request.get(export + "markdown").text()
    assert markdown.index("Also consider this") < markdown.index("Answer that saw the follow-up")
    assert "### Assistant · " in markdown and "also answers 1 follow-up" in markdown
    exported = page.request.get(export + "json").json()["messages"]
    assert [m["kind"] for m in exported] == ["query", "injected", "answer"]
    assert exported[2]["follow_ups"] == [exported[1]["id"]]


def test_a_second_tab_sees_the_run_started_in_the_first(
    logged_in_page, live_daphne, chromium, new_page, scripted_server
):
    first = logged_in_page
    send(first, "Opened in two tabs")
    wait_done(first)
    second = new_page()
    second.context.add_cookies(
        [{"name": "sessionid", "value": live_daphne.session_cookie, "url": live_daphne.base_url}]
    )
    second.goto(first.url)
    expect(second.locator(".msg-assistant .usage-card")).to_have_count(1)
    scripted_server.enqueue(text(""), text(STREAMED, chunk_delay=0.05))

    send(first, "Typed in the first tab")

    expect(second.locator(".msg-user .bubble").last).to_have_text("Typed in the first tab")
    expect(second.locator(".msg-assistant .answer").last).to_contain_text("word39")
    expect(second.locator(".msg-assistant .usage-card")).to_have_count(2)
    expect(second.locator("#stop")).to_be_hidden()
    assert not second.errors


def test_reload_mid_answer_shows_the_answer_so_far_and_keeps_streaming(
    logged_in_page, scripted_server
):
    page = logged_in_page
    scripted_server.enqueue(text(""), text(STREAMED, chunk_delay=0.1, usage=(40, 40)))
    send(page, "Long answer, then I reload")
    expect(page.locator(".msg-assistant .answer")).to_contain_text("word3")

    page.reload()

    answer = page.locator(".msg-assistant .answer")
    expect(answer).to_contain_text("word3")  # the run.active snapshot
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    wait_done(page)
    expect(answer).to_have_text(STREAMED)
    expect(page.locator(".msg-user .bubble")).to_have_text(["Long answer, then I reload"])


def test_dag_replan_shows_the_new_plan_and_why_the_old_one_was_not_enough(
    logged_in_page, scripted_server
):
    page = logged_in_page
    enqueue_dag_with_one_replan(scripted_server)
    page.locator("label[for=mode-dag]").click()

    send(page, "How high is Mont Blanc, and since when?")

    wait_done(page)
    answer = page.locator(".msg-assistant")
    plan_box = answer.locator(".plan")
    expect(plan_box).to_have_count(1)  # the re-plan replaced the first plan
    expect(plan_box.locator(".plan-head")).to_contain_text("re-plan round 1")
    expect(plan_box.locator(".plan-step .task")).to_have_text(
        ["Find the year it was measured", "Combine height and year"]
    )
    expect(plan_box.locator(".plan-step .pill")).to_have_text(["done", "done"])
    expect(plan_box.locator(".plan-step .deps")).to_have_text(["after #s1"])
    expect(plan_box.locator(".verdict")).to_contain_text("goal achieved (confidence 95%)")
    expect(answer.locator(".step-note")).to_contain_text(
        ["Goal not reached yet (the year is missing): re-planning, round 1"]
    )
    expect(answer.locator(".answer")).to_have_text("Mont Blanc is 4,806 m high (measured in 2015).")
    screenshot(page, "16-dag-replan")


CODE_ANSWER = """Here is the function:

```python
def greet(name):
    return "Hello, " + name  # friendly
```

And a shell line:

```bash
echo done
```
"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_code_blocks_are_highlighted_with_a_copy_button_each(
    new_page, live_daphne, scripted_server, scheme
):
    page = new_page(color_scheme=scheme)
    login(page, live_daphne)
    scripted_server.enqueue(CODE_ANSWER)
    send(page, "Write a greeting function")
    wait_done(page)

    answer = page.locator(".msg-assistant .answer")
    python = answer.locator("pre code.language-python")
    expect(python.locator("span.tok-k").first).to_have_text("def")
    expect(python.locator("span.tok-nf")).to_have_text("greet")
    colours = python.evaluate(
        "c => [...new Set([...c.querySelectorAll('span')].map(s => getComputedStyle(s).color))]"
    )
    assert len(colours) >= 3, colours  # keywords, names, strings and comments differ
    buttons = answer.get_by_role("button", name="Copy this code")
    expect(buttons).to_have_count(2)
    buttons.first.click()
    expect(buttons.first).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("def greet(name):") and "echo done" not in copied
    # The copy button of the whole answer stays.
    page.locator(".msg-assistant").get_by_role("button", name="Copy the answer").click()
    assert "```python" in page.evaluate("navigator.clipboard.readText()")
    screenshot(page, f"ux-code-highlighted-{scheme}")

    page.reload()
    expect(page.locator(".msg-assistant pre code.language-python span.tok-k").first).to_be_visible()
    copy_buttons = page.locator(".msg-assistant").get_by_role("button", name="Copy this code")
    expect(copy_buttons).to_have_count(2)


SEED_MAIN_MODELS = """
from contextmgmt.models import ModelConfig
ModelConfig.objects.get_or_create(name="Big model", model="big-1", role="main", is_active=True)
ModelConfig.objects.get_or_create(name="Small model", model="small-1", role="main")
"""


# Adds model configurations, which every user of a server sees: its two runs share a server
# of their own.
@pytest.mark.module_server
@pytest.mark.parametrize(("viewport", "scheme"), [("desktop", "light"), ("phone", "dark")])
def test_a_model_picked_for_a_conversation_answers_and_shows_on_the_usage_card(
    new_page, live_daphne, scripted_server, viewport, scheme
):
    from tests.browser.conftest import DESKTOP, PHONE

    live_daphne.manage_shell(SEED_MAIN_MODELS)
    page = new_page(viewport=DESKTOP if viewport == "desktop" else PHONE, color_scheme=scheme)
    login(page, live_daphne)
    picker = page.get_by_label("Model for this conversation")
    expect(picker.locator("option")).to_have_text(
        ["Default: Big model", "Small model (small-1)", "fimone-offline (offline)"]
    )

    picker.select_option(label="Small model (small-1)")
    scripted_server.enqueue("Answered by the small model.")
    send(page, "Who answers?")
    wait_done(page)
    assert scripted_server.requests[-1]["model"] == "small-1"
    card = page.locator(".msg-assistant .usage-card")
    expect(card.locator(".usage-model")).to_have_text("small-1")
    assert "Model: small-1" in card.get_attribute("title")
    screenshot(page, f"ux-model-picker-{viewport}-{scheme}")

    page.reload()
    expect(page.get_by_label("Model for this conversation")).to_have_value(re.compile(r"^\d+$"))
    expect(page.locator(".msg-assistant .usage-card .usage-model")).to_have_text("small-1")

    # Back to the default: the next answer comes from the active main model.
    with page.expect_response(lambda r: r.request.method == "PATCH"):
        page.get_by_label("Model for this conversation").select_option(label="Default: Big model")
    scripted_server.enqueue("Answered by the big model.")
    send(page, "And now?")
    wait_done(page, 2)
    assert scripted_server.requests[-1]["model"] == "big-1"
    expect(page.locator(".msg-assistant .usage-card .usage-model").last).to_have_text("big-1")


def test_an_image_described_after_the_answer_updates_its_usage_card(
    new_page, shared_daphne_factory, scripted_server, tmp_path
):
    """With no earlier turn as pixels, the question's image goes as text from the next run
    on: the fast model (the scripted one, which sees) describes it after the answer, and the
    answer's usage card counts that call as upkeep."""
    server = shared_daphne_factory(scripted_server.daphne_env(FIMONE_IMAGE_PIXEL_TURNS="0"))
    page = new_page()
    frames = record_frames(page)
    login(page, server)
    scripted_server.enqueue(
        text("A chart.", usage=(200, 20)), text("A blue rectangle.", usage=(1234, 56))
    )
    page.locator("#file-input").set_input_files(png_file(tmp_path, "chart.png"))
    expect(page.locator("#attachment-tray .thumb:not(.uploading)")).to_have_count(1)
    send(page, "What is this?")
    wait_done(page, 1)
    card = page.locator(".msg-assistant .usage-card").last
    expect(card).to_have_attribute("title", re.compile(r"Compaction: 1,234 in / 56 out"))
    expect(card).to_have_attribute("title", re.compile(r"Answer: 200 in / 20 out"))
    expect(card).to_have_attribute(
        "title", re.compile(r"1 image described for later answers: 1,234 in / 56 out")
    )
    [told] = [f for f in frames if f.get("type") == "images.described"]
    assert told["usage"]["described_after"] == {
        "images": 1,
        "input_tokens": 1234,
        "output_tokens": 56,
    }
    describe = scripted_server.requests[1]
    assert len(describe["messages"]) == 1
