"""A failing tool server in the browser (RU.12): the operator's file names a program that
does not exist ("orders") beside the `mcp` package's own stdio server ("notes"). Users read
a plain note in the tools menu and on the answer, never the exception; the menu shows each
tool's description and a switch per tool, and a tool switched off (a built-in one too) is
not offered to the next answer. Desktop and touch phone."""

from __future__ import annotations

import json
import sys

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot, send
from tests.browser.layout_audit import layout_problems
from tests.browser.sessions import open_session
from tests.support.mcp_servers import REPO_ROOT, SERVER_MODULE

pytestmark = pytest.mark.browser

MENU_NOTE = "The orders tool server is unavailable right now."
ANSWER_NOTE = (
    "The orders tool server is unavailable right now; the answer goes on without its tools."
)


@pytest.fixture
def live_daphne_env(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mcp-failing")
    notes = {
        "command": sys.executable,
        "args": ["-m", SERVER_MODULE, "stdio", "--marker-dir", str(folder)],
        "cwd": str(REPO_ROOT),
    }
    servers = {"orders": {"command": "/nonexistent/mcp-server"}, "notes": notes}
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return {"FIMONE_MCP_CONFIG": str(path)}


def answer_steps(page) -> list[dict]:
    """The steps stored with the newest answer, as the API gives them."""
    return page.evaluate(
        """async () => {
          const id = location.pathname.split("/")[2];
          const page = await fetch(`/api/conversations/${id}/messages/`).then((r) => r.json());
          const answers = page.messages.filter((m) => m.role === "assistant");
          const last = answers[answers.length - 1];
          return last.steps || (last.metadata && last.metadata.steps) || [];
        }"""
    )


@pytest.mark.parametrize("phone", [False, True], ids=["desktop", "phone"])
def test_a_failing_tool_server_is_a_plain_note_and_each_tool_has_a_switch(
    chromium, live_daphne, phone
):
    session = open_session(chromium, live_daphne, phone=phone)
    page = session.page
    try:
        page.locator("#tools-button").click()
        menu = page.locator("#tools-menu")
        orders = menu.locator('[data-source="mcp:orders"]')
        expect(orders.locator(".tools-error")).to_have_text(MENU_NOTE, timeout=60_000)
        expect(orders).not_to_contain_text("No tools listed")
        expect(menu).not_to_contain_text("nonexistent")
        expect(menu).not_to_contain_text("Errno")
        notes = menu.locator('[data-source="mcp:notes"]')
        echo = notes.locator('[data-tool="notes__echo"]')
        expect(echo.locator(".tools-description")).not_to_be_empty()
        calculator = menu.locator('[data-tool="calculator"]')
        expect(calculator.locator(".tools-description")).not_to_be_empty()
        expect(menu.locator('[data-tool="fetch_url"]')).to_have_count(1)
        expect(menu.locator('[data-tool="recall"]')).to_have_count(1)

        switch = calculator.get_by_role("switch")
        expect(switch).to_be_checked()
        calculator.locator("label").click()
        expect(menu.locator('[data-tool="calculator"]').get_by_role("switch")).not_to_be_checked()
        expect(menu.locator('[data-tool="calculator"]')).to_have_class("tools-tool tools-tool-off")
        problems = layout_problems(page, touch=phone)
        assert not problems, problems
        screenshot(page, f"tools-menu-per-tool-{'phone' if phone else 'desktop'}")
        page.keyboard.press("Escape")
        expect(menu).to_be_hidden()

        send(page, "What is 17 * 23?")
        answer = page.locator(".msg-assistant").last
        expect(answer.locator(".usage-card")).to_have_count(1)
        expect(answer).to_contain_text(ANSWER_NOTE)
        expect(answer).not_to_contain_text("nonexistent")
        expect(answer).not_to_contain_text("Errno")
        steps = answer_steps(page)
        called = [s.get("name") for s in steps if s.get("kind") in ("tool_call", "tool_result")]
        assert "calculator" not in called, steps
        assert not session.errors
    finally:
        session.close()
