"""The chat UI when answers and clicks cross: what the server says about a conversation
the user has left (or is leaving) goes to that conversation, and the one on screen stays
as the user chose it. On the built-in offline model; held requests make the crossing
certain rather than likely."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import hold_requests, png_file, send

pytestmark = pytest.mark.browser

ONE_CONVERSATION = re.compile(r".*/api/conversations/[0-9a-f-]{36}/$")
CREATE = re.compile(r".*/api/conversations/$")
HISTORY = re.compile(r".*/api/conversations/[0-9a-f-]{36}/messages/.*")
LISTING = re.compile(r".*/api/conversations/\?limit=.*")


def wait_done(page, count: int = 1) -> None:
    """``count`` answers finished: each finished answer carries its usage card."""
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


def wait_held(page, held: list) -> None:
    for _ in range(100):
        if held:
            return
        page.wait_for_timeout(50)
    raise AssertionError("the request was never made")


def reopened_with(page, held_pattern) -> tuple[str, list]:
    """A first conversation with one answer, opened again with the requests matching
    ``held_pattern`` (GET) held: its address and the held routes."""
    send(page, "First conversation")
    wait_done(page)
    url = page.url
    held = hold_requests(page, held_pattern, method="GET")
    page.goto(url)
    wait_held(page, held)
    return url, held


def let_through(page, held: list, pattern) -> None:
    """The held requests go on, and the page has their answers; later ones are not held."""
    with page.expect_response(lambda r: pattern.match(r.url)):
        for route in held:
            route.continue_()
    page.unroute(pattern)


def two_conversations(page) -> None:
    """ "First conversation" and "Second conversation", each answered; the second on screen."""
    send(page, "First conversation")
    wait_done(page)
    page.get_by_role("button", name="New chat", exact=True).click()
    send(page, "Second conversation")
    wait_done(page)


def conversations(page) -> list[dict]:
    return page.evaluate(
        "async () => (await (await fetch('/api/conversations/')).json()).conversations"
    )


def stored_messages(page, conversation_id: str) -> list[dict]:
    return page.evaluate(
        "async (id) => (await (await fetch(`/api/conversations/${id}/messages/`)).json()).messages",
        conversation_id,
    )


def user_texts(page, conversation_id: str) -> list[str]:
    return [m["content"] for m in stored_messages(page, conversation_id) if m["role"] == "user"]


def test_an_answer_about_the_last_chat_arriving_after_new_chat_leaves_the_new_one_alone(
    logged_in_page,
):
    # A run's start asks for its conversation again (the automatic title). Its answer came
    # after a click on "New chat" and put the old conversation back under the empty page:
    # the next message went to the old conversation's closed socket and was never sent.
    page = logged_in_page
    held = hold_requests(page, ONE_CONVERSATION, method="GET")
    send(page, "First conversation")
    wait_done(page)
    wait_held(page, held)  # the run's start asks for its conversation
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page.locator("#empty-state")).to_be_visible()
    with page.expect_response(lambda response: ONE_CONVERSATION.match(response.url)):
        for route in held:
            route.continue_()
    page.unroute(ONE_CONVERSATION)  # the next run's asks go through
    page.evaluate("() => new Promise((resolve) => setTimeout(resolve, 0))")
    expect(page.locator("#conversation-title")).to_have_text("New chat")
    send(page, "Second conversation")
    wait_done(page)
    items = page.locator("#conversation-list .conv-item")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("Second conversation")
    # The title read for the chat left still reaches its row in the list.
    expect(items.nth(1)).to_contain_text("First conversation")


def test_a_first_message_whose_new_chat_was_left_before_the_server_made_it_goes_there(
    logged_in_page,
):
    # The first message of a new chat waits for the server to make its conversation. The
    # user opened another conversation meanwhile: the new chat came back over it, or the
    # message went out through the other conversation's socket, into the wrong chat.
    page = logged_in_page
    send(page, "First conversation")
    wait_done(page)
    first_url = page.url
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page.locator("#empty-state")).to_be_visible()
    held = hold_requests(page, CREATE, method="POST")
    send(page, "Second question: what is 6*7?")
    wait_held(page, held)
    items = page.locator("#conversation-list .conv-item")
    items.first.click()
    expect(page.locator("#conversation-title")).to_have_text("First conversation")
    expect(page.locator(".msg-user .bubble")).to_have_text(["First conversation"])
    with page.expect_response(lambda r: CREATE.match(r.url) and r.request.method == "POST"):
        for route in held:
            route.continue_()
    page.unroute(CREATE)

    # The new chat joins the list with its question; the screen stays where the user went.
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("Second question")
    expect(page.locator("#conversation-title")).to_have_text("First conversation")
    expect(page.locator(".msg-user .bubble")).to_have_text(["First conversation"])
    assert page.url == first_url
    stored = {c["title"]: c["id"] for c in conversations(page)}
    assert user_texts(page, stored["First conversation"]) == ["First conversation"]
    assert user_texts(page, stored["Second question: what is 6*7?"]) == [
        "Second question: what is 6*7?"
    ]

    items.first.click()
    wait_done(page)
    expect(page.locator(".msg-user .bubble")).to_have_text(["Second question: what is 6*7?"])
    expect(page.locator(".msg-assistant").last.locator(".answer")).to_contain_text("42")


def test_a_new_chat_left_before_the_server_made_it_for_an_upload_is_not_kept(
    logged_in_page, tmp_path
):
    # An image attached in a new chat makes its conversation; left before that is done
    # (nothing sent), it is an empty chat like any other left: deleted, never listed.
    page = logged_in_page
    send(page, "First conversation")
    wait_done(page)
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page.locator("#empty-state")).to_be_visible()
    held = hold_requests(page, CREATE, method="POST")
    page.locator("#file-input").set_input_files(png_file(tmp_path, "left.png"))
    wait_held(page, held)
    items = page.locator("#conversation-list .conv-item")
    items.first.click()
    expect(page.locator("#conversation-title")).to_have_text("First conversation")
    with page.expect_response(
        lambda r: ONE_CONVERSATION.match(r.url) and r.request.method == "DELETE"
    ):
        for route in held:
            route.continue_()
    page.unroute(CREATE)
    expect(items).to_have_count(1)
    assert [c["title"] for c in conversations(page)] == ["First conversation"]
    expect(page.locator("#conversation-title")).to_have_text("First conversation")


def test_a_message_sent_while_the_conversation_loads_goes_to_that_conversation(
    logged_in_page,
):
    # The page of a conversation has just opened and its history is still on the way: a
    # message sent now went to a new conversation of its own (the one on screen was not
    # known yet), and its answer appeared nowhere.
    page = logged_in_page
    url, held = reopened_with(page, HISTORY)
    send(page, "Sent before the history arrived")
    let_through(page, held, HISTORY)
    wait_done(page, 2)
    expect(page.locator(".msg-user .bubble")).to_have_text(
        ["First conversation", "Sent before the history arrived"]
    )
    stored = conversations(page)
    assert [c["title"] for c in stored] == ["First conversation"]
    assert user_texts(page, stored[0]["id"]) == [
        "First conversation",
        "Sent before the history arrived",
    ]
    assert page.url == url


def test_a_message_for_a_left_chat_that_cannot_go_waits_there_as_a_draft(logged_in_page):
    # The left chat's own socket is answered by a refusal (a server shutting down): the
    # message is not lost, it is that chat's draft, with the notice saying why.
    page = logged_in_page
    send(page, "First conversation")
    wait_done(page)
    first_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page.locator("#empty-state")).to_be_visible()
    held = hold_requests(page, CREATE, method="POST")
    send(page, "A question the server refuses")
    wait_held(page, held)
    items = page.locator("#conversation-list .conv-item")
    items.first.click()
    expect(page.locator("#conversation-title")).to_have_text("First conversation")

    def refuse(socket):
        socket.on_message(
            lambda _frame: socket.send(
                json.dumps({"type": "error", "code": "server_draining", "message": "draining"})
            )
        )

    page.route_web_socket(re.compile(rf".*/ws/chat/(?!{first_id}).*"), refuse)
    for route in held:
        route.continue_()
    page.unroute(CREATE)
    expect(page.locator(".toast")).to_have_text(
        "Your message did not reach the chat you left: it waits there as a draft."
    )
    expect(items).to_have_count(2)
    expect(page.locator("#conversation-title")).to_have_text("First conversation")
    stored = {c["title"]: c["id"] for c in conversations(page)}
    assert set(stored) == {"First conversation", ""}
    assert user_texts(page, stored[""]) == []

    items.first.click()
    expect(page.locator("#prompt")).to_have_value("A question the server refuses")
    expect(page.locator("#composer-notice")).to_contain_text("did not reach the server")


def test_a_message_sent_while_the_conversation_fails_to_load_goes_back_in_the_box(
    logged_in_page,
):
    page = logged_in_page
    _, held = reopened_with(page, HISTORY)
    send(page, "Sent while the history failed")
    for route in held:
        route.fulfill(status=500, content_type="application/json", body='{"error": {}}')
    page.unroute(HISTORY)
    expect(page.locator("#prompt")).to_have_value("Sent while the history failed")
    expect(page.locator("#composer-notice")).to_contain_text("did not reach the server")
    stored = conversations(page)
    assert [c["title"] for c in stored] == ["First conversation"]
    assert user_texts(page, stored[0]["id"]) == ["First conversation"]


def test_a_conversation_read_before_a_mode_pick_does_not_undo_it(logged_in_page):
    # A run's start reads its conversation again (the automatic title). Read before the
    # switch to DAG was saved and answered after it, it switched the composer back to
    # ReAct, and the next question ran in the mode the user had just left.
    page = logged_in_page
    held = hold_requests(page, ONE_CONVERSATION, method="GET")
    send(page, "What is 12*7?")
    wait_done(page)
    wait_held(page, held)
    stale = held[0].fetch()  # the conversation as it was before the pick: ReAct
    assert stale.json()["mode"] == "react"
    with page.expect_response(
        lambda r: ONE_CONVERSATION.match(r.url) and r.request.method == "PATCH"
    ):
        page.locator("label[for=mode-dag]").click()
    held[0].fulfill(response=stale)
    for route in held[1:]:
        route.continue_()
    page.unroute(ONE_CONVERSATION)
    page.evaluate("() => new Promise((resolve) => setTimeout(resolve, 50))")
    expect(page.locator("#mode-dag")).to_be_checked()
    send(page, "First compute 2+3, then double the result")
    wait_done(page, 2)
    expect(page.locator(".msg-assistant").last.locator(".plan-head")).to_be_visible()


def test_a_message_sent_before_the_conversation_list_arrives_goes_to_the_open_conversation(
    logged_in_page,
):
    # The page of a conversation loaded its list of conversations first and only then the
    # conversation itself: a message sent in between started a new chat of its own.
    page = logged_in_page
    url, held = reopened_with(page, LISTING)
    send(page, "Sent before the list arrived")
    for route in held:
        route.continue_()
    page.unroute(LISTING)
    wait_done(page, 2)
    expect(page.locator(".msg-user .bubble")).to_have_text(
        ["First conversation", "Sent before the list arrived"]
    )
    expect(page.locator("#conversation-list .conv-item")).to_have_count(1)
    stored = conversations(page)
    assert [c["title"] for c in stored] == ["First conversation"]
    assert user_texts(page, stored[0]["id"]) == [
        "First conversation",
        "Sent before the list arrived",
    ]


def test_text_typed_while_the_conversation_loads_stays_in_the_box(logged_in_page):
    # The history's arrival put the conversation's stored draft (none) in the box, over
    # what the user had typed meanwhile: the Enter that followed sent nothing.
    page = logged_in_page
    _, held = reopened_with(page, HISTORY)
    prompt = page.locator("#prompt")
    prompt.click()
    prompt.fill("Typed before the history arrived")
    let_through(page, held, HISTORY)
    expect(page.locator(".msg-user .bubble")).to_have_text(["First conversation"])
    expect(prompt).to_have_value("Typed before the history arrived")
    prompt.press("Enter")
    wait_done(page, 2)
    expect(page.locator(".msg-user .bubble")).to_have_text(
        ["First conversation", "Typed before the history arrived"]
    )


def test_a_draft_shows_at_once_and_what_is_typed_while_its_chat_loads_stays_its_own(
    logged_in_page,
):
    # Opening another chat from the list: its draft (kept in this browser) is in the box
    # before its history arrives, and what is typed meanwhile belongs to it, not to the chat
    # left (which the box used to save it to, while showing it under the new one).
    page = logged_in_page
    two_conversations(page)
    prompt = page.locator("#prompt")
    prompt.fill("A draft for the second")
    items = page.locator("#conversation-list .conv-item")
    items.filter(has_text="First conversation").click()
    expect(page.locator("#conversation-title")).to_have_text("First conversation")
    expect(prompt).to_have_value("")

    held = hold_requests(page, HISTORY, method="GET")
    items.filter(has_text="Second conversation").click()
    wait_held(page, held)
    expect(prompt).to_have_value("A draft for the second")
    prompt.press("End")
    prompt.type(", and more")
    let_through(page, held, HISTORY)
    expect(page.locator(".msg-user .bubble")).to_have_text(["Second conversation"])
    expect(prompt).to_have_value("A draft for the second, and more")

    items.filter(has_text="First conversation").click()
    expect(page.locator(".msg-user .bubble")).to_have_text(["First conversation"])
    expect(prompt).to_have_value("")
    items.filter(has_text="Second conversation").click()
    expect(page.locator(".msg-user .bubble")).to_have_text(["Second conversation"])
    expect(prompt).to_have_value("A draft for the second, and more")


def test_an_image_attached_while_the_conversation_loads_goes_with_its_next_message(
    logged_in_page, tmp_path
):
    # Attached before the history arrived, the image made a new conversation of its own,
    # which then took the place of the one being opened.
    page = logged_in_page
    url, held = reopened_with(page, HISTORY)
    uploaded = re.compile(r".*/attachments/$")
    with page.expect_response(lambda r: uploaded.match(r.url) and r.request.method == "POST"):
        page.locator("#file-input").set_input_files(png_file(tmp_path, "early.png"))
    let_through(page, held, HISTORY)
    expect(page.locator(".msg-user .bubble")).to_have_text(["First conversation"])
    tray = page.locator("#attachment-tray")
    expect(tray.locator(".thumb")).to_have_count(1)
    expect(tray.locator(".thumb.uploading")).to_have_count(0)
    send(page, "And this picture")
    wait_done(page, 2)
    assert page.url == url
    stored = conversations(page)
    assert [c["title"] for c in stored] == ["First conversation"]
    [last_question] = [
        m for m in stored_messages(page, stored[0]["id"]) if m["content"] == "And this picture"
    ]
    assert len(last_question["images"]) == 1, last_question


def test_a_mode_picked_while_the_conversation_loads_is_that_conversations(logged_in_page):
    # Picked before the conversation was read, the mode was not saved at all (at the page's
    # start) or saved on the chat left (when opened from the list), and the history's
    # arrival switched the composer back.
    page = logged_in_page
    two_conversations(page)
    items = page.locator("#conversation-list .conv-item")
    ids = {c["title"]: c["id"] for c in conversations(page)}

    held = hold_requests(page, HISTORY, method="GET")
    items.filter(has_text="First conversation").click()
    wait_held(page, held)
    with page.expect_response(
        lambda r: ONE_CONVERSATION.match(r.url) and r.request.method == "PATCH"
    ) as patched:
        page.locator("label[for=mode-dag]").click()
    assert ids["First conversation"] in patched.value.url
    let_through(page, held, HISTORY)
    expect(page.locator(".msg-user .bubble")).to_have_text(["First conversation"])
    expect(page.locator("#mode-dag")).to_be_checked()
    modes = {c["title"]: c["mode"] for c in conversations(page)}
    assert modes == {"First conversation": "dag", "Second conversation": "react"}
    items.filter(has_text="Second conversation").click()
    expect(page.locator(".msg-user .bubble")).to_have_text(["Second conversation"])
    expect(page.locator("#mode-react")).to_be_checked()
