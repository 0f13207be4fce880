"""Compaction the user can see and steer, in the browser (SPEC RV.1-RV.3).

A long conversation on a small budget: the user pins messages, a run summarises the
history (oldest pins yield, and say so), the divider opens onto the summary as the model
got it, its fact check and the greyed original messages; the summary is edited (the next
request gets the edit as written) and discarded. Light and dark, desktop and 390x844.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, login, screenshot, send
from tests.browser.test_chat_scripted import record_frames, seed_long_conversation, wait_done

pytestmark = pytest.mark.browser

SMALL_WINDOW = {"LLM_CONTEXT_SIZE": "9000", "LLM_MAX_OUTPUT_TOKENS": "1000"}  # 4,000 usable


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env(
        **SMALL_WINDOW,
    )


def pin_button(message):
    return message.locator(".pin-btn")


def open_divider(page):
    toggle = page.locator(".compact-divider-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    panel = page.locator(".summary-panel")
    expect(panel.locator(".summary-text")).to_contain_text("[Conversation summary]")
    return panel


def test_rv1_rv2_rv3_pin_open_expand_edit_discard(chromium, live_daphne, scripted_server, new_page):
    conversation_id = seed_long_conversation(live_daphne)
    page = new_page(viewport=DESKTOP)
    frames = record_frames(page)
    login(page, live_daphne)
    page.goto(f"{live_daphne.base_url}/c/{conversation_id}/")
    questions = page.locator(".msg-user")
    expect(questions).to_have_count(7)

    # RV.2: pin six of the seven questions (~500 tokens each: over half of 4,000).
    for i in range(6):
        button = pin_button(questions.nth(i))
        expect(button).to_have_attribute("aria-pressed", "false")
        button.click()
        expect(button).to_have_attribute("aria-pressed", "true")
    expect(page.locator(".msg.pinned")).to_have_count(6)
    page.reload()  # stored, not just drawn
    expect(page.locator(".msg-user.pinned")).to_have_count(6)
    expect(pin_button(questions.nth(0))).to_have_text("Pinned")

    send(page, "And what about roses?")
    wait_done(page)
    compact = next(f for f in frames if f["type"] == "compact" and f["scope"] == "history")
    assert compact["strategy"] == "llm" and compact["summary_id"]
    yielded = compact["pins_yielded"]
    assert yielded and len(yielded) < 6  # the oldest yield, not all of them
    # The note sits on exactly the pins that yielded, oldest first.
    notes = page.locator(".msg.pinned .pin-note")
    expect(notes).to_have_count(len(yielded))
    expect(questions.nth(0).locator(".pin-note")).to_contain_text("had to yield")
    expect(questions.nth(5).locator(".pin-note")).to_have_count(0)
    questions.nth(0).locator(".pin-note").scroll_into_view_if_needed()
    screenshot(page, "rv-01-pins-with-cap-note-light-desktop")

    # RV.1: the divider opens onto the summary as the model received it.
    panel = open_divider(page)
    expect(panel.locator(".summary-meta")).to_contain_text("stands for")
    # One count: the divider says what the opened summary says it stands for.
    covered = compact["summarized_count"]
    assert covered > 0
    expect(page.locator(".compact-divider-toggle")).to_contain_text(f"({covered} messages)")
    expect(panel.locator(".summary-meta")).to_contain_text(f"{covered} messages")
    expect(panel.locator(".summary-head + .summary-text")).to_have_count(1)  # nothing stray
    expect(panel.locator(".summary-facts, .summary-facts-box").first).to_be_visible()
    panel.scroll_into_view_if_needed()
    screenshot(page, "rv-02-divider-open-light-desktop")

    # The covered messages, greyed, inline; the yielded pin is among them.
    panel.locator(".covered-toggle").click()
    covered = panel.locator(".covered-msg")
    expect(covered.first).to_contain_text("Turn 0 about gardens")
    assert covered.count() >= len(yielded)
    expect(covered.first).to_have_css("opacity", "0.85")
    screenshot(page, "rv-03-covered-messages-light-desktop")
    panel.locator(".covered-toggle").click()
    expect(panel.locator(".covered-list")).to_be_hidden()

    # RV.3: edit; the edit is what the next request gets, as written.
    panel.get_by_role("button", name="Edit summary").click()
    editor = panel.get_by_label("Edit the summary")
    editor.fill("Roses need 6 hours of sun; the user grows them in pots.")
    screenshot(page, "rv-04-editing-summary-light-desktop")
    panel.get_by_role("button", name="Save").click()
    expect(panel.locator(".summary-text")).to_have_text(
        "[Conversation summary]\nRoses need 6 hours of sun; the user grows them in pots."
    )
    expect(panel.locator(".summary-status")).to_contain_text("Edited by you")
    screenshot(page, "rv-05-edited-summary-light-desktop")

    before = len(scripted_server.requests)
    send(page, "How often should I water them?")
    wait_done(page, 2)
    sent = [str(r) for r in scripted_server.requests[before:]]
    assert any("Roses need 6 hours of sun; the user grows them in pots." in s for s in sent)

    # Discard: the next request summarises the originals afresh.
    page.reload()
    panel = open_divider(page)
    page.confirm_dialogs = True
    panel.get_by_role("button", name="Discard").click()
    expect(panel.locator(".summary-status")).to_contain_text("Discarded")
    expect(panel.get_by_role("button", name="Edit summary")).to_have_count(0)
    screenshot(page, "rv-06-discarded-summary-light-desktop")
    before = len(scripted_server.requests)
    send(page, "And in winter?")
    wait_done(page, 3)
    sent = [str(r) for r in scripted_server.requests[before:]]
    assert not any("Roses need 6 hours of sun; the user grows them" in s for s in sent)
    assert any("Turn 0 about gardens" in s for s in sent)  # summarised from the originals

    # Unpin: the pin and its note go.
    button = pin_button(questions.nth(0))
    button.click()
    expect(button).to_have_attribute("aria-pressed", "false")
    expect(questions.nth(0).locator(".pin-note")).to_have_count(0)
    page.reload()
    expect(page.locator(".msg-user.pinned")).to_have_count(5)
    assert not page.errors


@pytest.mark.parametrize(
    ("viewport", "scheme", "name"),
    [
        (PHONE, "dark", "dark-phone"),
        (DESKTOP, "dark", "dark-desktop"),
        (PHONE, "light", "light-phone"),
    ],
)
def test_rv1_divider_panel_and_pins_fit_every_screen(
    chromium, live_daphne, scripted_server, new_page, viewport, scheme, name
):
    conversation_id = seed_long_conversation(live_daphne)
    page = new_page(viewport=viewport, color_scheme=scheme)
    login(page, live_daphne)
    page.goto(f"{live_daphne.base_url}/c/{conversation_id}/")
    questions = page.locator(".msg-user")
    expect(questions).to_have_count(7)
    for i in range(6):
        pin_button(questions.nth(i)).click()
        expect(pin_button(questions.nth(i))).to_have_attribute("aria-pressed", "true")
    send(page, "And what about roses?")
    wait_done(page)
    expect(questions.nth(0).locator(".pin-note")).to_be_visible()
    questions.nth(0).locator(".pin-note").scroll_into_view_if_needed()
    screenshot(page, f"rv-pins-{name}")
    panel = open_divider(page)
    panel.locator(".covered-toggle").click()
    expect(panel.locator(".covered-msg").first).to_be_visible()
    # Nothing of the panel sticks out of the screen sideways (waited for, not read once).
    page.wait_for_function(
        """() => {
            const r = document.querySelector(".summary-panel").getBoundingClientRect();
            const width = document.documentElement.clientWidth;
            return r.width > 0 && r.left >= 0 && r.right <= width + 1;
        }"""
    )
    panel.scroll_into_view_if_needed()
    screenshot(page, f"rv-divider-open-{name}")
    panel.get_by_role("button", name="Edit summary").click()
    expect(panel.get_by_label("Edit the summary")).to_be_visible()
    screenshot(page, f"rv-editing-{name}")
    assert not page.errors


SEED_RUN_WITH_ENGINE_SUMMARIES = """
from django.contrib.auth import get_user_model
from chat.models import Conversation, Message
from chat.compaction.summaries import summary_save
u = get_user_model().objects.get(username={username!r})
c = Conversation.objects.create(owner=u, title="Summaries in a run")
old = Message.objects.create(conversation=c, role="user", kind="query", status="done",
    content="Earlier: the budget is 4,200 EUR on host db-17.")
Message.objects.create(conversation=c, role="assistant", kind="answer", status="done",
    content="Noted.")
stored = summary_save(conversation_id=c.id, covers_through_id=old.pk, covered_count=1,
    summary="[Conversation summary]\\nThe user set a budget.",
    metadata={{"facts_appended": [], "facts_missing": ["4,200 EUR", "db-17"]}})
Message.objects.create(conversation=c, role="user", kind="query", status="done",
    content="Summarise the logs")
steps = [
    {{"kind": "compact", "scope": "iteration", "strategy": "llm", "seq": 1,
     "original_count": 30, "compacted_count": 6, "tokens_before": 9100, "tokens_after": 2100,
     "summary": "[Conversation summary]\\nThe logs show 3 restarts.\\n\\nKey facts: 03:12 UTC",
     "summarized_count": 24, "facts_appended": ["03:12 UTC"],
     "facts_missing": ["03:12 UTC", "pid 4411"]}},
    {{"kind": "compact", "scope": "planner", "strategy": "llm", "seq": 2,
     "original_count": 4, "compacted_count": 2, "tokens_before": 20000, "tokens_after": 15000,
     "summary_id": stored.pk, "summary": stored.content}},
]
usage = {{"input_tokens": 1, "output_tokens": 1}}
Message.objects.create(conversation=c, role="assistant", kind="answer", status="done",
    content="Done.", metadata={{"steps": steps, "usage": usage}})
print(c.id)
"""


@pytest.mark.parametrize(("viewport", "scheme"), [(DESKTOP, "light"), (PHONE, "dark")])
def test_rv1_a_summary_made_during_a_run_opens_from_its_step(
    chromium, live_daphne, new_page, viewport, scheme
):
    conversation_id = live_daphne.manage_shell(
        SEED_RUN_WITH_ENGINE_SUMMARIES.format(username=live_daphne.username)
    ).split()[-1]
    page = new_page(viewport=viewport, color_scheme=scheme)
    login(page, live_daphne)
    page.goto(f"{live_daphne.base_url}/c/{conversation_id}/")
    toggles = page.locator(".msg-assistant .step-note-toggle")
    expect(toggles).to_have_text(
        [
            "Context summarised before the next model call: 9.1k → 2.1k tokens",
            "Context summarised for planning: 20.0k → 15.0k tokens",
        ]
    )
    # Not stored (it covered this run's tool results): the text the event carried.
    toggles.first.click()
    panel = page.locator(".msg-assistant .summary-panel").first
    expect(panel.locator(".summary-text")).to_have_text(
        "[Conversation summary]\nThe logs show 3 restarts.\n\nKey facts: 03:12 UTC"
    )
    expect(panel.locator(".summary-facts.appended .fact-chip")).to_have_text(["03:12 UTC"])
    expect(panel.locator(".summary-facts.missing .fact-chip")).to_have_text(["pid 4411"])
    expect(panel.locator(".summary-meta")).to_contain_text("24 messages")
    # Stored (it stood for loaded history): opened from the API, like the divider.
    toggles.last.click()
    stored = page.locator(".msg-assistant .summary-panel").last
    expect(stored.locator(".summary-text")).to_have_text(
        "[Conversation summary]\nThe user set a budget."
    )
    expect(stored.locator(".summary-facts.missing .fact-chip")).to_have_text(["4,200 EUR", "db-17"])
    stored.locator(".covered-toggle").click()
    expect(stored.locator(".covered-msg")).to_have_count(1)
    expect(stored.locator(".covered-msg")).to_contain_text("the budget is 4,200 EUR")
    panel.scroll_into_view_if_needed()
    name = f"{'phone' if viewport == PHONE else 'desktop'}-{scheme}"
    screenshot(page, f"rv-run-summary-open-{name}")
    assert not page.errors
