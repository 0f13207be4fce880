"""No empty conversation is left behind: a new chat that got an attachment (which makes
the server create its conversation) but never a message stays out of the list and the
address bar, and is deleted when the user leaves it — for a new chat, another chat, or by
closing the tab; once a message is sent it is a conversation like any other."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import png_file
from tests.browser.sessions import open_session, open_sidebar

pytestmark = pytest.mark.browser


def stored_conversations(server) -> list[dict]:
    return server.api("GET", "/api/conversations/")["conversations"]


def eventually_stored(server, ids: set, timeout: float = 15.0) -> None:
    """Wait until exactly ``ids`` are stored: the page's delete goes out without an answer
    on screen (a hang guard, not a speed bound)."""
    deadline = time.monotonic() + timeout
    while {c["id"] for c in stored_conversations(server)} != ids:
        assert time.monotonic() < deadline, (stored_conversations(server), ids)
        time.sleep(0.1)


def attach_then_remove(page, tmp_path) -> None:
    page.locator("#file-input").set_input_files(png_file(tmp_path, "cat.png"))
    expect(page.locator("#attachment-tray .thumb.ready")).to_have_count(1)
    page.locator("#attachment-tray .remove").click()
    expect(page.locator("#attachment-tray")).to_be_hidden()


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_an_attachment_removed_and_never_sent_leaves_no_conversation(
    chromium, live_daphne, tmp_path, phone
):
    session = open_session(chromium, live_daphne, phone=phone)
    page = session.page
    deletes = []
    page.on("request", lambda r: deletes.append(r.url) if r.method == "DELETE" else None)
    try:
        attach_then_remove(page, tmp_path)
        assert len(stored_conversations(live_daphne)) == 1  # the upload needed one
        assert page.url.rstrip("/") == live_daphne.base_url  # not addressed yet
        open_sidebar(session)
        expect(page.locator("#conversation-list .conv-item")).to_have_count(0)
        page.locator("#new-conversation").click()
        eventually_stored(live_daphne, set())
        expect(page.locator("#conversation-list .conv-item")).to_have_count(0)

        # Sent: listed, addressed, and kept when the user moves on.
        page.locator("#file-input").set_input_files(png_file(tmp_path, "dog.png"))
        expect(page.locator("#attachment-tray .thumb.ready")).to_have_count(1)
        page.locator("#prompt").fill("What is in this picture?")
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
        expect(page).to_have_url(
            live_daphne.base_url + f"/c/{stored_conversations(live_daphne)[0]['id']}/"
        )
        open_sidebar(session)
        expect(page.locator("#conversation-list .conv-item")).to_have_count(1)
        deleted_before = len(deletes)
        page.locator("#new-conversation").click()
        # The page asks for an empty chat's delete as it leaves it, before the new chat
        # shows: by then no delete went out for this one.
        expect(page).to_have_url(live_daphne.base_url + "/")
        expect(page.locator("#conversation-title")).to_have_text("New chat")
        assert deletes[deleted_before:] == []
        assert len(stored_conversations(live_daphne)) == 1
        assert not session.errors
    finally:
        session.close()


def test_leaving_for_another_chat_or_closing_the_tab_deletes_the_empty_one(
    chromium, live_daphne, tmp_path
):
    kept = live_daphne.api("POST", "/api/conversations/", {"title": "Kept"})
    session = open_session(chromium, live_daphne)
    page = session.page
    try:
        page.locator("#prompt").fill("hello")
        page.locator("#prompt").press("Enter")
        expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
        sent_id = page.url.rstrip("/").rsplit("/", 1)[-1]
        page.locator("#new-conversation").click()

        attach_then_remove(page, tmp_path)
        ids = {c["id"] for c in stored_conversations(live_daphne)}
        assert len(ids) == 3
        page.locator(f'#conversation-list a[href="/c/{sent_id}/"]').click()
        expect(page).to_have_url(live_daphne.base_url + f"/c/{sent_id}/")
        eventually_stored(live_daphne, {kept["id"], sent_id})

        page.locator("#new-conversation").click()
        attach_then_remove(page, tmp_path)
        assert len(stored_conversations(live_daphne)) == 3
        page.close(run_before_unload=True)
        eventually_stored(live_daphne, {kept["id"], sent_id})
        assert not session.errors
    finally:
        session.close()
