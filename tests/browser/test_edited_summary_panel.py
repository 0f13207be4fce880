"""After a summary is edited, its panel describes the edited text: a fact the fact check put
back is listed as put back only while the edited text still holds it; the facts the text no
longer holds are listed as not in it. Live after the save and after a reload, in three
languages, on a desktop and a touch phone."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, wait_ready
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import js_gettext, open_session

pytestmark = pytest.mark.browser

SEED = """
from django.contrib.auth import get_user_model
from chat.models import Conversation, Message
from chat.compaction.summaries import summary_save
u = get_user_model().objects.get(username={username!r})
c = Conversation.objects.create(owner=u, title="Budget talk")
old = Message.objects.create(conversation=c, role="user", kind="query", status="done",
    content="The budget is 4,200 EUR on host db-17, process pid 4411.")
Message.objects.create(conversation=c, role="assistant", kind="answer", status="done",
    content="Noted.")
stored = summary_save(conversation_id=c.id, covers_through_id=old.pk, covered_count=1,
    summary="[Conversation summary]\\nThe user set a budget.\\n\\nKey facts: 4,200 EUR; db-17",
    metadata={{"facts_appended": ["4,200 EUR", "db-17"],
               "facts_missing": ["4,200 EUR", "db-17", "pid 4411"]}})
Message.objects.create(conversation=c, role="user", kind="query", status="done",
    content="Go on")
steps = [{{"kind": "compact", "scope": "planner", "strategy": "llm", "seq": 1,
    "original_count": 2, "compacted_count": 1, "tokens_before": 9000, "tokens_after": 3000,
    "summary_id": stored.pk, "summary": stored.content}}]
usage = {{"input_tokens": 1, "output_tokens": 1}}
Message.objects.create(conversation=c, role="assistant", kind="answer", status="done",
    content="Done.", metadata={{"steps": steps, "usage": usage}})
print(c.id)
"""
NOT_IN_YOUR_TEXT = "Found by the fact check, not in your edited text:"


def open_panel(page):
    page.locator(".msg-assistant .step-note-toggle").last.click()
    panel = page.locator(".msg-assistant .summary-panel").last
    expect(panel.locator(".summary-text")).to_contain_text("The user set a budget")
    return panel


def chips(panel, kind: str):
    return panel.locator(f".summary-facts.{kind} .fact-chip")


@pytest.mark.parametrize(
    ("language", "phone"), [("en", False), ("de", True), ("zh", False)], ids=str
)
def test_the_panel_lists_only_the_facts_the_edited_text_holds(
    chromium, live_daphne, language, phone
):
    conversation_id = live_daphne.manage_shell(SEED.format(username=live_daphne.username)).split()[
        -1
    ]
    session = open_session(chromium, live_daphne, language=language, phone=phone)
    page = session.page
    try:
        page.goto(f"{live_daphne.base_url}/c/{conversation_id}/")
        wait_ready(page)
        panel = open_panel(page)
        expect(chips(panel, "appended")).to_have_text(["4,200 EUR", "db-17"])
        expect(chips(panel, "missing")).to_have_text(["pid 4411"])

        panel.locator(".summary-edit").click()
        panel.locator(".summary-editor").fill("The user set a budget of 4,200 EUR.")
        panel.locator(".btn-send-edit").click()
        expect(panel.locator(".summary-text")).to_contain_text("budget of 4,200 EUR.")
        expect(chips(panel, "appended")).to_have_text(["4,200 EUR"])
        expect(chips(panel, "missing")).to_have_text(["db-17", "pid 4411"])
        expect(panel.locator(".summary-facts.missing .facts-label")).to_have_text(
            js_gettext(language, NOT_IN_YOUR_TEXT)
        )
        problems = layout_problems(page, touch=phone)
        assert not problems, problems
        screenshot(page, f"edited-summary-panel-{language}")

        page.reload()
        wait_ready(page)
        panel = open_panel(page)
        expect(chips(panel, "appended")).to_have_text(["4,200 EUR"])
        expect(chips(panel, "missing")).to_have_text(["db-17", "pid 4411"])
        assert not session.errors
    finally:
        session.close()
