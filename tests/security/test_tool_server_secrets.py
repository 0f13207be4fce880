"""Where a tool server's secrets may go: only variables on the key allow-list are read, and
the headers are sent only to the configured URL's origin, never across a redirect."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from chat.tool_servers import pool as tool_servers
from fimone.agent.tools import ToolRegistry
from fimone.agent.tools.mcp_client import McpPool, SecretNotForwarded, origin_guard
from fimone.agent.tools.mcp_config import McpServerSpec, SecretRefused
from tests.support.mcp_servers import free_port, http_server

pytestmark = pytest.mark.slow  # real MCP servers over HTTP (not in bin/test --fast)

SECRET = "s3cret-value-for-the-test"


@pytest.fixture
def docs_key(monkeypatch):
    monkeypatch.setenv("DOCS_API_KEY", SECRET)
    monkeypatch.setenv("SECRET_KEY", "the-django-secret")


@pytest.fixture
async def pool():
    pool = McpPool(tool_servers.secret_lookup, start_timeout=30.0)
    yield pool
    await pool.aclose()


def test_only_variables_on_the_allow_list_are_read(docs_key):
    assert tool_servers.secret_lookup("DOCS_API_KEY") == SECRET
    with pytest.raises(SecretRefused, match="never sent to another server"):
        tool_servers.secret_lookup("SECRET_KEY")
    with pytest.raises(SecretRefused, match="FIMONE_SECRET_ENV_ALLOWLIST"):
        tool_servers.secret_lookup("HOME")


async def test_an_allowed_secret_reaches_the_configured_server(pool, docs_key, tmp_path):
    with http_server(tmp_path, "--require-header", "X-Api-Key") as url:
        spec = McpServerSpec(
            name="docs", transport="http", url=url, headers=(("X-Api-Key", "${DOCS_API_KEY}"),)
        )
        toolset = await pool.toolset([spec], vision=False)
        assert toolset.problems == []
        tools = ToolRegistry(toolset.tools)
        assert (await tools.run_output("docs__echo", '{"text": "x"}')).text == "echo: x"
    assert SECRET in (tmp_path / "headers-seen").read_text()


async def test_a_header_naming_a_refused_variable_leaves_the_server_out(pool, docs_key, tmp_path):
    with http_server(tmp_path, "--require-header", "Authorization") as url:
        spec = McpServerSpec(
            name="docs", transport="http", url=url, headers=(("Authorization", "${SECRET_KEY}"),)
        )
        toolset = await pool.toolset([spec], vision=False)
    assert toolset.tools == []
    assert "SECRET_KEY" in toolset.problems[0].reason
    assert not (tmp_path / "headers-seen").exists()  # nothing was sent


class _Redirect(BaseHTTPRequestHandler):
    target = ""
    seen: list[str] = []

    def _redirect(self) -> None:
        self.seen.append(self.headers.get("Authorization", ""))
        self.send_response(307)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET = do_DELETE = _redirect

    def log_message(self, *args) -> None:
        pass


async def test_a_secret_is_not_forwarded_across_a_redirect_to_another_host(
    pool, docs_key, tmp_path
):
    with http_server(tmp_path, "--require-header", "Authorization") as real_url:
        # The real server is asked for by another name: another host than the configured one.
        _Redirect.target = real_url.replace("127.0.0.1", "localhost")
        _Redirect.seen = []
        redirector = ThreadingHTTPServer(("127.0.0.1", free_port()), _Redirect)
        threading.Thread(target=redirector.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{redirector.server_address[1]}/mcp"
            spec = McpServerSpec(
                name="docs",
                transport="http",
                url=url,
                headers=(("Authorization", "Bearer ${DOCS_API_KEY}"),),
            )
            toolset = await pool.toolset([spec], vision=False)
        finally:
            redirector.shutdown()
            redirector.server_close()
    assert toolset.tools == [] and toolset.problems  # the redirect was not followed
    assert _Redirect.seen and all(SECRET in h for h in _Redirect.seen)  # the configured URL had it
    seen = (tmp_path / "headers-seen").read_text() if (tmp_path / "headers-seen").exists() else ""
    assert SECRET not in seen


async def test_the_request_hook_refuses_every_other_origin():
    guard = origin_guard("http://127.0.0.1:8000/mcp")
    await guard(httpx2.Request("POST", "http://127.0.0.1:8000/mcp/"))
    await guard(httpx2.Request("POST", "https://127.0.0.1/mcp"))  # the https upgrade
    for elsewhere in ("http://localhost:8000/mcp", "http://127.0.0.1:8001/mcp", "http://evil/mcp"):
        with pytest.raises(SecretNotForwarded):
            await guard(httpx2.Request("POST", elsewhere))
