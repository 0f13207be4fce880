"""RU.11: the page says truthfully which model answers, per conversation: the offline
badge and note are there while the built-in model answers, and gone while the
conversation picked a configured model that answers instead."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, login, screenshot, send

pytestmark = pytest.mark.browser

# Each test adds a model configuration, which every user of a server sees: its desktop and
# phone runs share a server of their own, each with a user of its own.
ENV = {"SCRIPTED_KEY": "sk-scripted", "LLM_MAX_RETRIES": "0"}

SEED_A_REMOTE_MODEL = """
from contextmgmt.models import ModelConfig
ModelConfig.objects.get_or_create(name="Remote model", model="remote-1", role="main",
    base_url={base_url!r}, api_key_env="SCRIPTED_KEY")
"""


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_ru11_the_offline_marks_follow_the_model_that_answers(
    new_page, shared_daphne_factory, scripted_server, viewport
):
    # No model in the environment: the built-in model is the default.
    server = shared_daphne_factory(ENV, group=f"{__name__}: a remote model, not active")
    server.manage_shell(SEED_A_REMOTE_MODEL.format(base_url=scripted_server.base_url))
    page = new_page(viewport=DESKTOP if viewport == "desktop" else PHONE)
    login(page, server)
    badge = page.locator("#offline-badge")
    note = page.locator("#offline-note")
    expect(note).to_be_visible()
    if viewport == "desktop":  # a phone shows the note only
        expect(badge).to_be_visible()

    picker = page.get_by_label("Model for this conversation")
    picker.select_option(label="Remote model (remote-1)")
    expect(note).to_be_hidden()
    expect(badge).to_be_hidden()
    scripted_server.enqueue("Answered by the remote model.")
    send(page, "Who answers?")
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    expect(page.locator(".msg-assistant .answer")).to_have_text("Answered by the remote model.")
    assert scripted_server.requests[-1]["model"] == "remote-1"
    expect(note).to_be_hidden()
    expect(badge).to_be_hidden()
    screenshot(page, f"model-in-use-remote-{viewport}")

    page.reload()  # the conversation's pick, read back
    expect(page.locator(".msg-assistant .answer")).to_have_text("Answered by the remote model.")
    expect(note).to_be_hidden()
    expect(badge).to_be_hidden()

    # A new chat answered by the default: the built-in model again, and the page says so.
    if viewport == "phone":
        page.locator("#sidebar-toggle").click()  # the list is a drawer
    page.locator("#new-conversation").click()
    expect(picker).to_have_value("")
    expect(note).to_be_visible()
    if viewport == "desktop":
        expect(badge).to_be_visible()


SEED_AN_ACTIVE_REMOTE_MODEL = """
from contextmgmt.models import ModelConfig
ModelConfig.objects.get_or_create(name="Remote model", model="remote-1", role="main",
    is_active=True, base_url={base_url!r}, api_key_env="SCRIPTED_KEY")
"""


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_ru11_the_builtin_model_stays_pickable_beside_an_active_model(
    new_page, shared_daphne_factory, scripted_server, viewport
):
    # An admin made a row active: it is the default, and the built-in model is still offered.
    server = shared_daphne_factory(ENV, group=f"{__name__}: an active remote model")
    server.manage_shell(SEED_AN_ACTIVE_REMOTE_MODEL.format(base_url=scripted_server.base_url))
    page = new_page(viewport=DESKTOP if viewport == "desktop" else PHONE)
    login(page, server)
    badge = page.locator("#offline-badge")
    note = page.locator("#offline-note")
    picker = page.get_by_label("Model for this conversation")
    expect(picker).to_have_value("")
    expect(note).to_be_hidden()
    expect(badge).to_be_hidden()

    picker.select_option(label="fimone-offline (offline)")
    expect(note).to_be_visible()
    if viewport == "desktop":  # a phone shows the note only
        expect(badge).to_be_visible()
    send(page, "Who answers?")
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    assert not scripted_server.requests  # the active model was never asked
    expect(page.locator(".msg-assistant .usage-card").first).to_contain_text("fimone-offline")
    screenshot(page, f"model-in-use-builtin-picked-{viewport}")

    page.reload()  # the conversation's pick, read back
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    expect(picker).to_have_value("builtin")
    expect(note).to_be_visible()

    # Back to the default: the active model answers, and the page stops saying offline.
    picker.select_option("")
    expect(note).to_be_hidden()
    expect(badge).to_be_hidden()
    scripted_server.enqueue("Answered by the remote model.")
    send(page, "And now?")
    expect(page.locator(".msg-assistant .answer").last).to_have_text(
        "Answered by the remote model."
    )
    assert scripted_server.requests[-1]["model"] == "remote-1"
    expect(note).to_be_hidden()
