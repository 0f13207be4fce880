"""A setting changed just before a message: the model picked for the conversation is
saved before the message goes out, so the run answers with the model the picker shows,
however slow the save. Against the scripted OpenAI-compatible server; the save's PATCH is
held by the browser until the message is on screen. (The tools menu's switches:
tests/browser/test_tool_approval.py.)"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import hold_saves, login, send
from tests.browser.test_chat_scripted import SEED_MAIN_MODELS, wait_done

pytestmark = pytest.mark.browser


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


@pytest.mark.own_server  # adds model configurations, which every user of a server sees
def test_a_message_sent_while_the_model_pick_is_saved_is_answered_by_the_picked_model(
    new_page, live_daphne, scripted_server
):
    live_daphne.manage_shell(SEED_MAIN_MODELS)
    page = new_page()
    login(page, live_daphne)
    scripted_server.enqueue("Answered by the big model.")
    send(page, "Who answers first?")
    wait_done(page)
    assert scripted_server.requests[-1]["model"] == "big-1"

    # The pick's PATCH, kept from the server until the message is on screen.
    held = hold_saves(page, "**/api/conversations/*/")
    page.get_by_label("Model for this conversation").select_option(label="Small model (small-1)")
    scripted_server.enqueue("Answered by the small model.")
    send(page, "And who answers now?")
    expect(page.locator(".msg-user .bubble")).to_have_text(
        ["Who answers first?", "And who answers now?"]
    )
    assert len(held) == 1 and len(scripted_server.requests) == 1
    held[0].continue_()
    wait_done(page, 2)
    assert scripted_server.requests[-1]["model"] == "small-1"
    expect(page.locator(".msg-assistant .usage-card .usage-model").last).to_have_text("small-1")
