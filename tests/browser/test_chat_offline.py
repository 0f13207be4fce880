"""The chat UI on the built-in offline model: what a person sees and can do.

SPEC RU.2 (usage card), the offline note, DAG live plan, images, XSS, narrow screens,
keyboard use, the conversation list. Scripted-LLM scenarios (streaming, stop, errors,
divider, reconnect) live in test_chat_scripted.py.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, login, png_file, screenshot, send

pytestmark = pytest.mark.browser

# The offline model's usage is fimone's own count: marked "~" as estimated (RS.4).
# A count under a thousand is the number itself, a larger one in thousands (RU.13).
TOKENS = r"(?:\d{1,3}|\d+\.\dk)"
USAGE_CARD = re.compile(rf"^~{TOKENS} in / ~{TOKENS} out$")


def last_answer(page):
    return page.locator(".msg-assistant").last


def wait_done(page, count: int = 1) -> None:
    """``count`` answers finished: each finished answer carries its usage card (RU.2)."""
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


def test_login_redirects_then_an_answer_arrives_with_usage_card_ru2(new_page, live_daphne):
    page = new_page()
    page.goto(live_daphne.base_url + "/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    screenshot(page, "01-login")
    page.get_by_label("Username").fill(live_daphne.username)
    page.get_by_label("Password").fill(live_daphne.password)
    page.get_by_label("Password").press("Enter")
    expect(page.locator("#prompt")).to_be_focused()

    send(page, "What is 12*7?")

    expect(page.locator(".msg-user .bubble")).to_have_text("What is 12*7?")
    wait_done(page)
    answer = last_answer(page)
    expect(answer.locator(".answer")).to_contain_text("84")
    card = answer.locator(".usage-card .usage-total")
    expect(card).to_have_text(USAGE_CARD)
    title = answer.locator(".usage-card").get_attribute("title")
    assert "Answer:" in title and "Compaction:" in title and "Estimated" in title
    answer.locator(".usage-card").click()  # the split, for touch screens too
    expect(answer.locator(".usage-detail")).to_contain_text("Compaction: 0 in / 0 out")
    # The calculator call and its result are one collapsible row (RU.13).
    step = answer.locator("details.step-tool").first
    expect(step.locator(".step-output")).to_be_hidden()
    step.locator("summary").click()
    expect(step.locator(".step-output")).to_be_visible()
    answer.get_by_role("button", name="Copy the answer").click()
    expect(answer.locator(".copy-btn")).to_have_text("Copied")
    assert "84" in page.evaluate("navigator.clipboard.readText()")
    # The URL names the conversation; its title came from the first message.
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]{36}/$"))
    expect(page.locator("#conversation-title")).to_have_text("What is 12*7?")
    screenshot(page, "02-answer-with-usage-card")

    page.reload()

    # On reload: server-rendered HTML and the persisted usage (RU.2).
    expect(page.locator(".msg-assistant .answer").last).to_contain_text("84")
    expect(page.locator(".msg-assistant .usage-card .usage-total")).to_have_text(USAGE_CARD)
    assert not page.errors


def test_offline_note_and_context_gauge_are_shown(logged_in_page):
    page = logged_in_page
    note = page.locator("#offline-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("LLM_BASE_URL")
    send(page, "hello")
    wait_done(page)
    gauge = page.locator("#gauge")
    expect(gauge).to_be_visible()
    expect(page.locator("#gauge-text")).to_have_text(re.compile(rf"^{TOKENS} / 60\.0k$"))
    assert "Model:" in gauge.get_attribute("title")
    # The details open by click or keyboard (touch screens have no tooltips).
    gauge.focus()
    page.keyboard.press("Enter")
    detail = page.locator("#gauge-detail")
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("Usable input budget: 60,000 tokens")
    # Every tier apart (RT.3, RJ.2): the system prompt, the instructions (none yet), the
    # tool definitions, the history.
    expect(detail).to_contain_text(
        re.compile(
            r"system prompt [1-9][\d,]*, instructions 0, tool definitions [1-9][\d,]*, "
            r"history [1-9][\d,]*"
        )
    )
    page.keyboard.press("Escape")
    expect(detail).to_be_hidden()
    # The conversation gets instructions of its own: the next answer's gauge counts them.
    status = page.evaluate(
        """async () => {
            const id = location.pathname.split("/")[2];
            const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
            const response = await fetch(`/api/conversations/${id}/`, {
                method: "PATCH",
                credentials: "same-origin",
                headers: {"Content-Type": "application/json", "X-CSRFToken": token},
                body: JSON.stringify({instructions: "Answer in German."}),
            });
            return response.status;
        }"""
    )
    assert status == 200
    send(page, "hello again")
    wait_done(page, 2)
    gauge.focus()
    page.keyboard.press("Enter")
    expect(detail).to_contain_text(re.compile(r"instructions [1-9][\d,]*, tool definitions"))
    page.keyboard.press("Escape")
    # The long note can be hidden; the badge keeps saying which model answers.
    page.get_by_role("button", name="Hide this note").click()
    expect(note).to_be_hidden()
    page.reload()
    expect(note).to_be_hidden()
    expect(page.locator(".badge-offline")).to_have_text("Offline model")


def test_dag_mode_shows_the_live_plan_and_the_verdict(logged_in_page):
    page = logged_in_page
    page.locator("label[for=mode-dag]").click()
    expect(page.locator("#mode-dag")).to_be_checked()

    send(page, "Compute 17*23 and 19*29, then add the two results.")

    wait_done(page)
    plan = last_answer(page).locator(".plan")
    expect(plan).to_be_visible()
    steps = plan.locator(".plan-step")
    assert steps.count() >= 1
    for i in range(steps.count()):
        expect(steps.nth(i).locator(".pill")).to_have_text(re.compile("done|error|skipped"))
    expect(plan.locator(".verdict")).to_contain_text("Analyser")
    # A step's own tool calls are shown inside that step of the plan.
    assert plan.locator(".plan-step .plan-activity details.step-tool").count() >= 1
    screenshot(page, "03-dag-plan")
    # The mode sticks to the conversation.
    page.reload()
    expect(page.locator("#mode-dag")).to_be_checked()


def test_images_attach_by_button_paste_and_drop_with_remove_before_send(logged_in_page, tmp_path):
    page = logged_in_page
    page.locator("#file-input").set_input_files(
        [png_file(tmp_path, "red.png", color=(220, 40, 40)), png_file(tmp_path, "blue.png")]
    )
    tray = page.locator("#attachment-tray")
    expect(tray.locator(".thumb")).to_have_count(2)
    expect(tray.locator(".thumb.uploading")).to_have_count(0)
    # Paste an image into the text box, as from a screenshot tool.
    page.locator("#prompt").focus()
    page.evaluate(
        """async () => {
            const canvas = document.createElement("canvas");
            canvas.width = 40; canvas.height = 30;
            canvas.getContext("2d").fillRect(0, 0, 40, 30);
            const blob = await new Promise((ok) => canvas.toBlob(ok, "image/png"));
            const data = new DataTransfer();
            data.items.add(new File([blob], "pasted.png", { type: "image/png" }));
            const paste = new ClipboardEvent("paste", { clipboardData: data, bubbles: true,
                                                         cancelable: true });
            document.getElementById("prompt").dispatchEvent(paste);
        }"""
    )
    expect(tray.locator(".thumb")).to_have_count(3)
    # Drop one on the conversation.
    page.evaluate(
        """async () => {
            const canvas = document.createElement("canvas");
            canvas.width = 20; canvas.height = 20;
            const blob = await new Promise((ok) => canvas.toBlob(ok, "image/png"));
            const data = new DataTransfer();
            data.items.add(new File([blob], "dropped.png", { type: "image/png" }));
            const target = document.getElementById("messages");
            for (const type of ["dragenter", "dragover", "drop"]) {
              target.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true,
                                                         cancelable: true }));
            }
        }"""
    )
    expect(tray.locator(".thumb")).to_have_count(4)
    expect(tray.locator(".thumb.uploading")).to_have_count(0)
    screenshot(page, "04-thumbnails-before-send")

    page.get_by_role("button", name="Remove blue.png").click()
    expect(tray.locator(".thumb")).to_have_count(3)
    send(page, "What is in these images?")

    expect(tray).to_be_hidden()
    expect(page.locator(".msg-user .msg-images img")).to_have_count(3)
    wait_done(page)
    page.reload()

    images = page.locator(".msg-user .msg-images img")
    expect(images).to_have_count(3)
    for i in range(3):
        assert images.nth(i).get_attribute("src").startswith("/api/attachments/")
    page.wait_for_load_state("networkidle")
    widths = images.evaluate_all("imgs => imgs.map((img) => img.naturalWidth)")
    assert all(w > 0 for w in widths), widths
    screenshot(page, "05-images-sent")


def test_xss_attempts_are_rendered_inert_live_and_on_reload(logged_in_page):
    page = logged_in_page
    attacks = [
        "<img src=x onerror=alert(1)>",
        "[click me](javascript:alert(2))",
        "<script>alert(3)</script><a href='javascript:alert(4)'>x</a>",
    ]
    for n, attack in enumerate(attacks, start=1):
        send(page, attack)
        wait_done(page, n)
        # The user's text is shown as text, character for character.
        expect(page.locator(".msg-user .bubble").nth(n - 1)).to_have_text(attack)

    def assert_inert():
        messages = page.locator("#messages")
        assert messages.locator("[onerror], script, img[src='x'], iframe").count() == 0
        hrefs = messages.locator("a").evaluate_all("links => links.map((a) => a.href)")
        assert not [h for h in hrefs if h.lower().startswith("javascript:")], hrefs

    assert_inert()
    page.reload()
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(len(attacks))
    assert_inert()
    screenshot(page, "06-xss-inert")
    # The fixture fails the test if any alert() ran (an unexpected dialog).


def test_conversations_new_rename_and_delete(logged_in_page):
    page = logged_in_page  # a native confirm() would fail the test: delete asks in the page
    send(page, "First conversation")
    wait_done(page)
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("#empty-state")).to_be_visible()
    send(page, "Second conversation")
    wait_done(page)
    items = page.locator("#conversation-list .conv-item")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("Second conversation")

    # A row's actions show while it is hovered or focused: point at it as a mouse user does.
    items.first.hover()
    page.get_by_role("button", name="Rename “Second conversation”").click()
    title_input = page.get_by_label("New title")
    title_input.fill("Renamed by keyboard")
    title_input.press("Enter")
    expect(items.first).to_contain_text("Renamed by keyboard")
    expect(page.locator("#conversation-title")).to_have_text("Renamed by keyboard")
    page.reload()
    expect(page.locator("#conversation-list .conv-item").first).to_contain_text(
        "Renamed by keyboard"
    )

    page.locator("#conversation-list .conv-link", has_text="First conversation").click()
    expect(page.locator(".msg-user .bubble")).to_have_text("First conversation")
    first_row = page.locator("#conversation-list .conv-item", has_text="First conversation")
    first_row.hover()
    page.get_by_role("button", name="Delete “First conversation”").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Delete “First conversation”? This cannot be undone.")
    expect(dialog.get_by_role("button", name="Cancel")).to_be_focused()
    screenshot(page, "07-delete-confirm-dialog")
    page.keyboard.press("Escape")  # cancels: nothing deleted
    expect(dialog).to_have_count(0)
    expect(page.locator("#conversation-list .conv-item")).to_have_count(2)
    first_row.hover()
    page.get_by_role("button", name="Delete “First conversation”").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.locator("#conversation-list .conv-item")).to_have_count(1)
    expect(page.locator("#empty-state")).to_be_visible()
    page.reload()
    expect(page.locator("#conversation-list .conv-item")).to_have_count(1)


def test_keyboard_only_shift_enter_newline_enter_sends_and_tab_reaches_controls(
    logged_in_page,
):
    page = logged_in_page
    prompt = page.locator("#prompt")
    expect(prompt).to_be_focused()
    page.keyboard.press("Enter")  # nothing typed: nothing is sent
    expect(page.get_by_role("button", name="Send message")).to_be_disabled()
    expect(page.locator(".msg")).to_have_count(0)
    page.keyboard.type("line one")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("line two")
    assert prompt.input_value() == "line one\nline two"
    page.keyboard.press("Enter")
    expect(page.locator(".msg-user .bubble")).to_have_text("line one\nline two")
    wait_done(page)
    # Tab from the text box reaches the attach button, the tools menu and the mode switch;
    # arrows switch.
    prompt.focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Attach images or documents")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Tools for this chat")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.locator("#mode-react")).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#mode-dag")).to_be_checked()


def test_narrow_phone_viewport(logged_in_phone_page):
    page = logged_in_phone_page
    sidebar = page.locator("#sidebar")
    toggle = page.get_by_role("button", name="Show conversations")
    expect(toggle).to_be_visible()
    expect(sidebar).not_to_be_in_viewport()

    send(page, "Hello from a phone")
    wait_done(page)
    width = page.evaluate("document.scrollingElement.scrollWidth")
    assert width <= PHONE["width"], f"horizontal scroll: {width}px"
    composer = page.locator("#composer").bounding_box()
    assert composer["x"] >= 0 and composer["x"] + composer["width"] <= PHONE["width"]
    screenshot(page, "07-phone-chat")

    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#conversation-list .conv-item")).to_have_count(1)
    expect(sidebar).to_be_in_viewport(ratio=0.95)
    screenshot(page, "08-phone-drawer")
    page.keyboard.press("Escape")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(sidebar).not_to_be_in_viewport()


def test_long_conversation_loads_the_newest_page_then_earlier_ones(logged_in_page, live_daphne):
    page = logged_in_page
    conversation_id = live_daphne.manage_shell(
        "from django.contrib.auth import get_user_model\n"
        "from chat.models import Conversation, Message\n"
        f"u = get_user_model().objects.get(username={live_daphne.username!r})\n"
        "c = Conversation.objects.create(owner=u, title='Many messages')\n"
        "for i in range(130):\n"
        "    role = 'user' if i % 2 == 0 else 'assistant'\n"
        "    Message.objects.create(conversation=c, role=role, status='done',\n"
        "        kind='query' if role == 'user' else 'answer', content=f'Message {i}')\n"
        "print(c.id)\n"
    ).split()[-1]
    page.goto(f"{live_daphne.base_url}/c/{conversation_id}/")

    messages = page.locator("#messages .msg")
    expect(messages).to_have_count(100)
    expect(messages.last).to_contain_text("Message 129")
    jump = page.get_by_role("button", name="Scroll to the newest message")
    expect(jump).to_be_hidden()
    more = page.get_by_role("button", name="Show earlier messages")
    more.scroll_into_view_if_needed()
    expect(jump).to_be_visible()
    more.click()

    expect(messages).to_have_count(130)
    expect(messages.first.locator(".bubble")).to_have_text("Message 0")
    expect(more).to_have_count(0)
    jump.click()
    expect(jump).to_be_hidden()
    expect(messages.last).to_be_in_viewport()


def test_conversation_deleted_elsewhere_is_left_cleanly(logged_in_page, live_daphne):
    page = logged_in_page
    send(page, "Soon deleted in another tab")
    wait_done(page)
    conversation_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    live_daphne.api("DELETE", f"/api/conversations/{conversation_id}/")

    # The server closes the conversation's sockets (4404): the page says so at once and
    # leaves the deleted conversation, before the user types anything more (RO.3).
    expect(page.locator(".toast")).to_have_text("This conversation was deleted.")
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("#conversation-list .conv-item")).to_have_count(0)
    expect(page.locator("#empty-state")).to_be_visible()

    # What the user sends next is not lost: it starts a new conversation.
    send(page, "Anyone there?")
    wait_done(page)
    expect(page.locator("#conversation-list .conv-item")).to_have_count(1)
    assert conversation_id not in page.url


def test_dark_colour_scheme_follows_the_system(new_page, live_daphne):
    page = new_page(color_scheme="dark")
    login(page, live_daphne)
    send(page, "Hello in the dark")
    wait_done(page)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(v) for v in re.findall(r"\d+", background)[:3])
    assert max(red, green, blue) < 60, background
    screenshot(page, "09-dark")
    assert not page.errors


def test_a_file_that_is_neither_image_nor_document_is_refused_before_upload(
    logged_in_page, tmp_path
):
    page = logged_in_page
    program = tmp_path / "setup.exe"
    program.write_bytes(b"MZ not an image")
    page.locator("#file-input").set_input_files(str(program))
    expect(page.locator(".toast")).to_contain_text("setup.exe is not a supported image or document")
    expect(page.locator("#attachment-tray")).to_be_hidden()
    # A file that claims to be a PNG but is not one is refused by the server (Pillow).
    fake = tmp_path / "fake.png"
    # (Its header says PNG; text bytes would be read as a text document.)
    fake.write_bytes(b"\x89PNG\r\n\x1a\ndefinitely not a PNG")
    page.locator("#file-input").set_input_files(str(fake))
    expect(page.locator(".thumb.failed")).to_have_count(1)
    expect(page.locator(".toast")).to_contain_text("Upload failed")
    expect(page.get_by_role("button", name="Send message")).to_be_disabled()
    page.get_by_role("button", name="Remove fake.png").click()
    expect(page.locator("#attachment-tray")).to_be_hidden()
