"""The compaction ledger in the UI: the usage card of an answer whose history was
summarised lists that compaction (tokens before and after, its cost) and what it saved; the
context gauge sums the conversation's ledger. Against the scripted OpenAI-compatible server,
with a 4,000-token usable budget so that the fifth long question summarises the
oldest turns at load."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send

pytestmark = pytest.mark.browser


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env(
        # 12,000 context − 4,000 output − 4,000 reserve = 4,000 usable input tokens.
        LLM_CONTEXT_SIZE="12000",
        LLM_MAX_OUTPUT_TOKENS="4000",
    )


def test_the_usage_card_and_the_gauge_show_the_compaction_ledger(logged_in_page):
    page = logged_in_page
    cards = page.locator(".msg-assistant .usage-card")
    for i in range(5):
        send(page, f"Note {i}: " + "the shipment of 412 pallets leaves Osaka on Friday. " * 50)
        expect(cards).to_have_count(i + 1)
        expect(page.locator("#stop")).to_be_hidden()
    expect(page.locator(".compact-divider")).to_have_count(1)

    card = cards.last
    card.click()
    detail = page.locator(".msg-assistant").last.locator(".usage-detail")
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("History at load:")
    expect(detail).to_contain_text("Compaction saved")
    expect(detail).not_to_contain_text("Compaction: 0 in / 0 out")
    expect(detail).not_to_contain_text("cost 0")
    screenshot(page, "60-usage-card-compaction-ledger")

    gauge = page.locator("#gauge")
    expect(gauge).to_be_visible()
    gauge.click()
    expect(page.locator("#gauge-detail")).to_contain_text("Compaction so far: 1 compaction")
    # The stored summary's own line: its cost and the request that started from it.
    expect(page.locator("#gauge-detail")).to_contain_text("Summary of 4 messages: cost")
    expect(page.locator("#gauge-detail")).to_contain_text("used by 1 request, net")
    screenshot(page, "61-gauge-compaction-ledger")
