"""A tool-heavy run in the browser: old tool results are masked before anything is
summarised, and the run's compaction note lists them (tool, size, tokens saved), live and
after a reload; the usage card's details list them apart from what was summarised."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login, screenshot, send
from tests.browser.test_chat_scripted import record_frames, wait_done
from tests.support.scripted_server import text, tool_call, tool_calls

pytestmark = pytest.mark.browser

# 12,000 context - 1,000 output - 4,000 reserve = 7,000 usable.
WINDOW = {"LLM_CONTEXT_SIZE": "12000", "LLM_MAX_OUTPUT_TOKENS": "1000"}
RECALLS = 7


def seed_garden_notes(server) -> str:
    """Four earlier messages about gardens, each long enough that a recall of "gardens"
    brings back a few hundred tokens."""
    out = server.manage_shell(
        "from django.contrib.auth import get_user_model\n"
        "from chat import services\n"
        "from chat.models import Conversation\n"
        f"u = get_user_model().objects.get(username={server.username!r})\n"
        "c = Conversation.objects.create(owner=u, title='Garden notes')\n"
        "for i in range(2):\n"
        "    services.user_message_create(conversation=c,\n"
        "        content=f'Note {i} about gardens: ' + f'bed {i} gets compost and mulch. ' * 70)\n"
        "    a = services.assistant_message_start(conversation=c, run_id=f'r{i}', mode='react')\n"
        "    services.assistant_message_finish(message=a,\n"
        "        content=f'Answer {i} about gardens: ' + f'water bed {i} at dawn. ' * 90)\n"
        "print(c.id)\n"
    )
    return out.strip().splitlines()[-1]


def test_the_note_of_a_tool_heavy_run_lists_the_masked_results(
    chromium, shared_daphne_factory, scripted_server, new_page
):
    server = shared_daphne_factory(scripted_server.daphne_env(**WINDOW))
    conversation_id = seed_garden_notes(server)
    scripted_server.enqueue(
        *[
            tool_calls(
                tool_call("recall", {"query": f"gardens bed {i % 2}"}, f"rc{i}"), usage=(500, 10)
            )
            for i in range(RECALLS)
        ],
        text("The beds get compost, mulch and water at dawn.", usage=(500, 12)),
    )
    page = new_page()
    frames = record_frames(page)
    login(page, server)
    page.goto(f"{server.base_url}/c/{conversation_id}/")
    send(page, "Look up everything about the garden beds, several times.")
    wait_done(page)

    compacts = [f for f in frames if f["type"] == "compact"]
    assert compacts and compacts[0]["scope"] == "iteration", compacts
    assert compacts[0]["strategy"] == "mask"  # masking was enough: no summariser call
    # The run masks again each time its context passes half the budget; each event lists
    # only what it masked, and the answer shows them all in one note.
    masks = [f for f in compacts if f["strategy"] == "mask"]
    assert len(masks) > 1, "several maskings in this run: they share one note"
    masked = [m for f in masks for m in f["masked"]]
    assert masked and all(m["tool"] == "recall" for m in masked)
    assert len({m["call_id"] for m in masked}) == len(masked)  # none masked twice
    total = sum(f["masked_count"] for f in masks)

    def check(page) -> None:
        note = page.locator(".msg-assistant .step-note", has_text="Old tool results masked")
        expect(note).to_have_count(1)
        items = note.locator(".masked-item")
        expect(items).to_have_count(len(masked))
        expect(items.first).to_contain_text(
            f"recall: {masked[0]['chars']:,} characters, {masked[0]['tokens_saved']:,} tokens saved"
        )
        expect(note.locator(".masked-results p")).to_contain_text(
            f"{total} old tool results masked"
        )

    check(page)
    card = page.locator(".msg-assistant .usage-card").last
    assert "masked" in (card.get_attribute("title") or "")
    screenshot(page, "masking-note-live")
    page.reload()
    check(page)
