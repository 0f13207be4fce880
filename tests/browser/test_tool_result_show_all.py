"""RT.2 in the browser: after a reload, a tool step whose result was cut to its preview
expands to the whole result ("Show all" reads it from the server). Against the scripted
OpenAI-compatible server, with ``fetch_url`` reading a long page from a local server."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.support.scripted_server import text, tool_calls
from tests.support.web_server import long_fact, long_page, serve_pages

pytestmark = pytest.mark.browser

PAGE_CHARS = 20_000


@pytest.fixture(scope="module")
def site():
    with serve_pages() as server:
        yield server


@pytest.fixture
def live_daphne_env(scripted_server):
    return scripted_server.daphne_env(
        FIMONE_FETCH_ALLOWED_HOSTS="127.0.0.1", FIMONE_FETCH_MAX_CHARS="60000"
    )


def test_rt2_a_reloaded_step_expands_to_the_whole_result(logged_in_page, scripted_server, site):
    page = logged_in_page
    url = site.url(f"/long.txt?n=7&chars={PAGE_CHARS}&at=0.6")
    scripted_server.enqueue(
        tool_calls(("fetch_url", {"url": url})), text("I read the pier notice.")
    )
    send(page, "Read the pier notice.")
    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)

    page.reload()

    expect(page.locator(".msg-assistant .usage-card")).to_have_count(1)
    result = page.locator(".msg-assistant .steps details.step-tool")
    expect(result).to_have_count(1)
    result.locator("summary").click()
    body = result.locator(".step-output")
    expect(body).to_contain_text("more chars]")  # the recorded preview, cut
    expect(body).not_to_contain_text(long_fact(7))
    result.get_by_role("button", name="Show all").click()

    expect(body).to_contain_text(long_fact(7))
    expect(result.get_by_role("button", name="Show all")).to_have_count(0)
    shown = body.text_content()
    assert "more chars]" not in shown
    assert shown.endswith(long_page(7, PAGE_CHARS, 0.6)[-200:])
    screenshot(page, "32-tool-result-show-all")
