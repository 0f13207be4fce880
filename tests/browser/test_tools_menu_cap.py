"""The tools menu names a tool server that lists more tools than are offered (RO.12, the
cap of RT.3): the SDK's own server listing 40 tools under ``FIMONE_MCP_MAX_TOOLS=5``."""

from __future__ import annotations

import json
import sys

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import DESKTOP, login
from tests.support.mcp_servers import REPO_ROOT, SERVER_MODULE

pytestmark = pytest.mark.browser


@pytest.fixture
def live_daphne_env(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcp-cap") / "mcp.json"
    entry = {
        "command": sys.executable,
        "args": ["-m", SERVER_MODULE, "many-tools", "--count", "40"],
        "cwd": str(REPO_ROOT),
    }
    path.write_text(json.dumps({"mcpServers": {"many": entry}}))
    return {"FIMONE_MCP_CONFIG": str(path), "FIMONE_MCP_MAX_TOOLS": "5"}


def test_the_tools_menu_notes_a_server_cut_to_the_cap(new_page, live_daphne):
    page = new_page(viewport=DESKTOP)
    login(page, live_daphne)
    page.locator("#tools-button").click()
    many = page.locator('#tools-menu [data-source="mcp:many"]')
    expect(many.locator(".tools-note")).to_have_text(
        "This server lists more tools than are offered: only its first 5 are "
        "(at most 5 per server).",
        timeout=60_000,  # the menu starts the server
    )
    expect(many.locator("code")).to_have_count(5)
