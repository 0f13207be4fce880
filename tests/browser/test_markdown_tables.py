"""Table alignment in a rendered answer takes effect under the page's Content-Security-Policy
(which allows no inline style attribute), as the answer arrives and after a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.support.scripted_server import text

pytestmark = pytest.mark.browser

TABLE = "| item | price | note |\n|:--|--:|:-:|\n| tea | 3.50 | hot |\n| a long name | 12.00 | x |"


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env()


def alignments(page) -> list[str]:
    return page.locator(".msg-assistant .answer td").evaluate_all(
        "cells => cells.map(c => getComputedStyle(c).textAlign)"
    )


def test_table_columns_are_aligned_as_the_markdown_says(logged_in_page, scripted_server):
    page = logged_in_page
    scripted_server.enqueue(text(TABLE))
    send(page, "A price list, please")
    expect(page.locator(".msg-assistant .answer table")).to_be_visible()
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    expected = ["left", "right", "center"] * 2
    assert alignments(page) == expected
    screenshot(page, "markdown-table-alignment")
    page.reload()
    expect(page.locator(".msg-assistant .answer table")).to_be_visible()
    assert alignments(page) == expected
