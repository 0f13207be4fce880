"""What a ChatGPT or LibreChat user expects, on the built-in offline model: the view follows
new answers, the DAG demo answers right, pictures are not arithmetic, tiles keep their text,
the usage split opens where it can be read. Light and dark, desktop and 390×844."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, PHONE, login, png_file, screenshot, send

pytestmark = pytest.mark.browser

SCREENS = {"desktop": DESKTOP, "phone": PHONE}
DAG_DEMO = "First compute 3+4, then multiply that result by 10, and report both."


@pytest.fixture
def open_page(new_page, live_daphne):
    def make(screen: str, scheme: str):
        page = new_page(viewport=SCREENS[screen], color_scheme=scheme)
        login(page, live_daphne)
        return page

    yield make


def wait_done(page, count: int) -> None:
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(count)
    expect(page.locator("#stop")).to_be_hidden()


def box(page, selector: str) -> dict:
    return page.locator(selector).last.bounding_box()


def newest_answer_is_in_view(page) -> bool:
    return page.evaluate(
        """() => {
            const list = document.getElementById("messages").getBoundingClientRect();
            const last = [...document.querySelectorAll(".msg-assistant")].pop();
            const r = last.getBoundingClientRect();
            return r.bottom <= list.bottom + 1 && r.bottom > list.top;
        }"""
    )


@pytest.mark.parametrize(("screen", "scheme"), [("desktop", "light"), ("phone", "dark")])
def test_the_view_follows_new_answers_and_the_jump_button_covers_no_text(open_page, screen, scheme):
    page = open_page(screen, scheme)
    for i, question in enumerate(
        [
            "Please explain in detail what a context window is and why it matters " * 3,
            "What is 1234 * 5678?",
            "Tell me about the history of the calculator " * 4,
            "What is 99 * 99?",
        ],
        start=1,
    ):
        send(page, question)
        wait_done(page, i)
        expect(page.get_by_role("button", name="Scroll to the newest message")).to_be_hidden()
        assert newest_answer_is_in_view(page), f"answer {i} ended below the fold"
    expect(page.locator(".msg-assistant").last).to_contain_text("9801")
    screenshot(page, f"ux-follows-bottom-{screen}-{scheme}")

    # Scrolled up: the view stays, and ↓ sits between the thread and the composer.
    page.locator("#messages").evaluate("m => m.scrollTo({top: 0, behavior: 'instant'})")
    jump = page.get_by_role("button", name="Scroll to the newest message")
    expect(jump).to_be_visible()
    jump_box = jump.bounding_box()
    thread = page.locator("#messages").bounding_box()
    assert jump_box["y"] >= thread["y"] + thread["height"] - 1, "↓ overlaps the thread"
    screenshot(page, f"ux-jump-button-{screen}-{scheme}")
    jump.click()
    expect(jump).to_be_hidden()
    assert newest_answer_is_in_view(page)

    # The usage split of the newest answer opens above its card, not under the composer.
    card = page.locator(".msg-assistant .usage-card").last
    card.click()
    detail = page.locator(".msg-assistant .usage-detail").last
    expect(detail).to_be_visible()
    detail_box, card_box = detail.bounding_box(), card.bounding_box()
    assert detail_box["y"] + detail_box["height"] <= card_box["y"] + 1
    composer = page.locator("#composer").bounding_box()
    assert detail_box["y"] + detail_box["height"] <= composer["y"]
    screenshot(page, f"ux-usage-split-above-{screen}-{scheme}")


@pytest.mark.parametrize(("screen", "scheme"), [("desktop", "dark"), ("phone", "light")])
def test_dag_demo_plans_the_dependency_and_answers_7_and_70(open_page, screen, scheme):
    page = open_page(screen, scheme)
    page.locator("label[for=mode-dag]").click()
    send(page, DAG_DEMO)
    wait_done(page, 1)

    answer = page.locator(".msg-assistant").last
    text = answer.locator(".answer").inner_text()
    assert re.search(r"(?<!\d)7(?!\d)", text) and "70" in text, text
    plan = answer.locator(".plan")
    second = plan.locator(".plan-step[data-step-id=s2]")
    expect(second.locator(".deps")).to_have_text("after #s1")
    expect(plan.locator(".verdict")).to_contain_text("goal achieved")
    # Each step: one "Result" of its own, rendered from Markdown on the server (code, not
    # backticks). A tool's result sits inside its call's row, under a label of its own.
    for step_id in ("s1", "s2", "s3"):
        row = plan.locator(f".plan-step[data-step-id={step_id}]")
        expect(row.locator("details.step-result > summary")).to_have_text(["Result"])
    result = second.locator("details.step-result")
    result.locator("summary").click()
    expect(result.locator(".result-body code")).to_have_text("7 * 10")
    assert "`" not in result.locator(".result-body").inner_text()
    screenshot(page, f"ux-dag-demo-{screen}-{scheme}")

    page.reload()
    plan = page.locator(".msg-assistant .plan").last
    expect(plan.locator(".plan-step[data-step-id=s2] .deps")).to_have_text("after #s1")
    plan.locator(".plan-step[data-step-id=s2] details.step-result summary").click()
    expect(plan.locator(".plan-step[data-step-id=s2] .result-body code")).to_have_text("7 * 10")


@pytest.mark.parametrize(("screen", "scheme"), [("desktop", "light"), ("phone", "dark")])
def test_pictures_are_not_arithmetic_and_a_broken_preview_stays_in_its_tile(
    open_page, tmp_path, screen, scheme
):
    page = open_page(screen, scheme)
    page.locator("#file-input").set_input_files(
        [
            png_file(tmp_path, "cat.png", size=(640, 480)),
            png_file(tmp_path, "dog.png", size=(640, 480)),
        ]
    )
    expect(page.locator("#attachment-tray .thumb:not(.uploading)")).to_have_count(2)
    send(page, "What is in these pictures?")
    wait_done(page, 1)
    answer = page.locator(".msg-assistant .answer").last
    # The offline model cannot see: it says so and repeats each upload's stored description.
    expect(answer).to_contain_text("I cannot see images")
    expect(answer).to_contain_text("cat.png (640x480) is described as:")
    expect(answer).to_contain_text("dog.png (640x480) is described as:")
    expect(answer).not_to_contain_text("307200")

    # A file that claims to be a PNG but is not: its tile says so inside the tile. (Bytes
    # that read as text would be a text document now, typed by content: these are binary.)
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    page.locator("#file-input").set_input_files(str(broken))
    tile = page.locator("#attachment-tray .thumb").last
    expect(tile).not_to_have_class(re.compile(r"\buploading\b"))  # its upload has settled
    expect(tile.locator(".img-broken")).to_have_text("No preview")
    expect(tile.locator(".img-broken")).to_be_visible()
    inner, outer = tile.locator(".img-broken").bounding_box(), tile.bounding_box()
    assert inner["x"] >= outer["x"] - 1 and inner["y"] >= outer["y"] - 1
    assert inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1
    assert inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1
    screenshot(page, f"ux-pictures-{screen}-{scheme}")


def test_please_remember_it_and_recall_in_chinese(open_page):
    page = open_page("desktop", "light")
    send(page, "My locker code is 4711.")
    wait_done(page, 1)
    send(page, "Please remember it")
    wait_done(page, 2)
    second = page.locator(".msg-assistant").nth(1)
    expect(second.locator(".answer")).to_contain_text("Noted.")
    expect(second.locator("details.step-tool")).to_have_count(0)  # no recall ran
    send(page, "我之前说过储物柜 locker 的什么？")
    wait_done(page, 3)
    third = page.locator(".msg-assistant .answer").nth(2)
    expect(third).to_contain_text("My locker code is 4711.")
    expect(third).to_contain_text("之前的对话中提到")
    expect(third).not_to_contain_text("Earlier in our conversation")
    expect(third).not_to_contain_text("You asked")
    screenshot(page, "ux-remember-and-recall-zh")


@pytest.mark.parametrize(("screen", "scheme"), [("desktop", "dark"), ("phone", "light")])
def test_regenerate_the_newest_answer_and_edit_the_last_question(open_page, screen, scheme):
    page = open_page(screen, scheme)
    send(page, "What is 2+3?")
    wait_done(page, 1)
    send(page, "What is 6*7?")
    wait_done(page, 2)
    answers = page.locator(".msg-assistant")
    old_id = answers.last.get_attribute("data-message-id")
    # Only the newest finished answer offers Regenerate; only the last question, Edit.
    expect(page.get_by_role("button", name="Regenerate this answer")).to_have_count(1)
    expect(page.get_by_role("button", name="Edit and resend this message")).to_have_count(1)
    # The last question's Pin and Edit sit side by side in one row under its bubble.
    row = page.locator(".msg-user").last.locator(".user-actions")
    expect(row.locator(".pin-btn")).to_be_visible()
    expect(row.locator(".btn-edit")).to_be_visible()
    pin_box = row.locator(".pin-btn").bounding_box()
    edit_box = row.locator(".btn-edit").bounding_box()
    assert abs(pin_box["y"] - edit_box["y"]) < 4 and pin_box["x"] < edit_box["x"]
    screenshot(page, f"ux-edit-regenerate-offered-{screen}-{scheme}")

    page.get_by_role("button", name="Regenerate this answer").click()
    expect(answers).to_have_count(2)
    expect(answers.last).not_to_have_attribute("data-message-id", old_id)
    wait_done(page, 2)
    expect(answers.last.locator(".answer")).to_contain_text("42")

    page.get_by_role("button", name="Edit and resend this message").click()
    box = page.get_by_label("Edit your message")
    expect(box).to_have_value("What is 6*7?")
    box.fill("What is 7*8?")
    screenshot(page, f"ux-editing-{screen}-{scheme}")
    box.press("Enter")
    expect(page.locator(".msg-user .bubble")).to_have_text(["What is 2+3?", "What is 7*8?"])
    wait_done(page, 2)
    expect(answers.last.locator(".answer")).to_contain_text("56")
    expect(answers.first.locator(".answer")).to_contain_text("5")
    screenshot(page, f"ux-edited-{screen}-{scheme}")

    page.reload()
    expect(page.locator(".msg-user .bubble")).to_have_text(["What is 2+3?", "What is 7*8?"])
    expect(page.locator(".msg-assistant")).to_have_count(2)
    expect(page.locator(".msg-assistant .answer").last).to_contain_text("56")
    expect(page.get_by_role("button", name="Regenerate this answer")).to_have_count(1)
    expect(page.get_by_role("button", name="Edit and resend this message")).to_have_count(1)


SEED_COMPACTED_RUN = """
from django.contrib.auth import get_user_model
from chat.models import Conversation, Message
u = get_user_model().objects.get(username={username!r})
c = Conversation.objects.create(owner=u, title="Compacted run")
Message.objects.create(conversation=c, role="user", kind="query", status="done",
    content="Summarise the logs")
steps = [
    {{"kind": "compact", "scope": "iteration", "strategy": "truncate", "seq": 1,
     "original_count": 30, "compacted_count": 12, "tokens_before": 9100, "tokens_after": 3900}},
    {{"kind": "compact", "scope": "step", "step_id": "s2", "strategy": "llm", "seq": 2,
     "original_count": 8, "compacted_count": 2, "tokens_before": 5200, "tokens_after": 1200}},
    {{"kind": "compact", "scope": "planner", "strategy": "llm", "seq": 3,
     "original_count": 40, "compacted_count": 3, "tokens_before": 20000, "tokens_after": 15000}},
]
usage = {{"input_tokens": 1, "output_tokens": 1}}
Message.objects.create(conversation=c, role="assistant", kind="answer", status="done",
    content="Done.", metadata={{"steps": steps, "usage": usage}})
print(c.id)
"""


@pytest.mark.parametrize(("screen", "scheme"), [("desktop", "light"), ("phone", "dark")])
def test_compaction_notes_use_plain_words(open_page, live_daphne, screen, scheme):
    conversation_id = live_daphne.manage_shell(
        SEED_COMPACTED_RUN.format(username=live_daphne.username)
    ).split()[-1]
    page = open_page(screen, scheme)
    page.goto(f"{live_daphne.base_url}/c/{conversation_id}/")
    notes = page.locator(".msg-assistant .step-note")
    expect(notes).to_have_text(
        [
            "Context shortened (oldest parts left out) before the next model call: "
            "9.1k → 3.9k tokens",
            "Context summarised for step s2: 5.2k → 1.2k tokens",
            "Context summarised for planning: 20.0k → 15.0k tokens",
        ]
    )
    text = " ".join(notes.all_inner_texts())
    for internal in ("truncate", "iteration", "for this", "llm"):
        assert internal not in text, internal
    screenshot(page, f"ux-compaction-notes-{screen}-{scheme}")
