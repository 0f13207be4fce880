"""The MCP client against a real MCP server (the SDK's own server, tests/support/mcp_server.py)
run as a stdio child process and over streamable HTTP on loopback."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import sys

import pytest
import pytest_asyncio

from fimone.agent.tools import ToolRegistry
from fimone.agent.tools.mcp_client import McpPool
from fimone.agent.tools.mcp_config import McpServerSpec
from fimone.agent.tools.mcp_results import NAME_RULE
from tests.support.mcp_servers import REPO_ROOT, no_secrets, stdio_spec

pytestmark = pytest.mark.slow  # real MCP servers, hanging ones waited out (not in bin/test --fast)

WAIT = 60.0

# The tests that only list the stdio server and call tools that leave it as it was share
# one pool, and so one child, in the module's event loop: a child's start costs some two
# seconds of CPU (the SDK's import). The tests that kill, hang or restart a server keep a
# pool and a child of their own.
in_the_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def unchanged_server(tmp_path_factory) -> McpServerSpec:
    """The stdio test server of the tests that leave it as they found it."""
    return stdio_spec(tmp_path_factory.mktemp("unchanged-server-markers"))


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def module_pool():
    """A pool for the module's loop, closed (its children stopped) after the module."""
    pool = McpPool(no_secrets, start_timeout=30.0)
    yield pool
    await pool.aclose()


async def registry_of(pool, *specs, vision=True) -> tuple[ToolRegistry, list]:
    toolset = await pool.toolset(list(specs), vision=vision)
    return ToolRegistry(toolset.tools), toolset.problems


async def wait_for_file(path, seconds=WAIT) -> str:
    """The file's text once the server wrote it (it runs in another process)."""
    async with asyncio.timeout(seconds):
        while not path.exists():  # noqa: ASYNC110 - another process writes it
            await asyncio.sleep(0.05)
    return path.read_text()


@in_the_module_loop
async def test_a_stdio_server_lists_its_tools_namespaced_with_their_schemas(
    module_pool, unchanged_server
):
    tools, problems = await registry_of(module_pool, unchanged_server)
    assert problems == []
    assert {"test__echo", "test__add", "test__picture", "test__slow"} <= set(tools.names())
    assert all(NAME_RULE.match(name) for name in tools.names())
    add = next(t for t in tools.openai_tools() if t["function"]["name"] == "test__add")
    schema = add["function"]["parameters"]
    assert schema["properties"]["a"]["type"] == "integer"  # as the server gave it
    assert schema["required"] == ["a", "b"]


@in_the_module_loop
async def test_results_become_what_the_model_reads(module_pool, unchanged_server):
    tools, _ = await registry_of(module_pool, unchanged_server)
    assert (await tools.run_output("test__echo", '{"text": "hi"}')).text == "echo: hi"
    added = (await tools.run_output("test__add", '{"a": 2, "b": 40}')).text
    assert json.loads(added) == {"total": 42, "terms": [2, 40]}  # structured, once
    refused = (await tools.run_output("test__refuse", '{"reason": "not today"}')).text
    assert refused.startswith("Error: ") and "not today" in refused
    document = (await tools.run_output("test__document", "{}")).text
    assert "file:///notes/today.md" in document and "Buy milk." in document


@in_the_module_loop
async def test_an_image_is_an_image_part_for_a_model_that_sees_and_text_for_one_that_does_not(
    module_pool, unchanged_server
):
    spec = unchanged_server
    seeing, _ = await registry_of(module_pool, spec, vision=True)
    shown = await seeing.run_output("test__picture", "{}")
    assert len(shown.images) == 1
    assert shown.images[0]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    blind, _ = await registry_of(module_pool, spec, vision=False)
    told = await blind.run_output("test__picture", "{}")
    assert told.images == () and "image/png" in told.text and "cannot see images" in told.text


@in_the_module_loop
async def test_one_child_process_serves_every_run_of_the_process(module_pool, unchanged_server):
    first, _ = await registry_of(module_pool, unchanged_server)
    second, _ = await registry_of(module_pool, unchanged_server)
    pids = {(await tools.run_output("test__pid", "{}")).text for tools in (first, second, first)}
    assert len(pids) == 1


async def test_a_server_that_dies_mid_call_is_an_error_and_is_started_again(mcp_pool, marker_dir):
    tools, _ = await registry_of(mcp_pool, stdio_spec(marker_dir))
    before = (await tools.run_output("test__pid", "{}")).text
    died = (await tools.run_output("test__die", "{}")).text
    assert died.startswith("Error: ") and "stopped during the call" in died
    after = (await tools.run_output("test__pid", "{}")).text
    assert after.isdigit() and after != before
    assert (marker_dir / "died").read_text() == before


async def test_a_hanging_call_times_out_and_the_server_is_told(mcp_pool, marker_dir):
    tools, _ = await registry_of(mcp_pool, stdio_spec(marker_dir, timeout=1.5))
    hung = (await tools.run_output("test__hang", "{}")).text
    assert hung == "Error: tool test__hang timed out after 1.5 seconds."
    slow = (await tools.run_output("test__slow", '{"seconds": 30}')).text
    assert "timed out" in slow
    await wait_for_file(marker_dir / "slow-cancelled")  # the server saw the cancellation
    assert (
        await tools.run_output("test__echo", '{"text": "still here"}')
    ).text == "echo: still here"


async def test_stop_during_a_long_call_cancels_the_request_on_the_server(mcp_pool, marker_dir):
    tools, _ = await registry_of(mcp_pool, stdio_spec(marker_dir))
    call = asyncio.create_task(tools.run_output("test__slow", '{"seconds": 60}'))
    await wait_for_file(marker_dir / "slow-started")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_for_file(marker_dir / "slow-cancelled")


@in_the_module_loop
async def test_a_server_that_fails_at_start_is_left_out_and_the_others_stay(
    module_pool, unchanged_server
):
    broken = McpServerSpec(
        name="broken",
        transport="stdio",
        command=sys.executable,
        args=("-m", "tests.support.mcp_server", "fail-at-start"),
    )
    missing = McpServerSpec(name="missing", transport="stdio", command="/nonexistent/mcp-server")
    tools, problems = await registry_of(module_pool, broken, unchanged_server, missing)
    assert [p.server for p in problems] == ["broken", "missing"]
    assert all(p.reason for p in problems)
    assert "test__echo" in tools and not any(n.startswith("broken") for n in tools.names())


async def test_the_allow_list_keeps_only_the_named_tools(mcp_pool, marker_dir):
    spec = stdio_spec(marker_dir, allowed_tools=frozenset({"echo", "add"}))
    tools, _ = await registry_of(mcp_pool, spec)
    assert sorted(tools.names()) == ["test__add", "test__echo"]


@in_the_module_loop
async def test_tools_marked_for_approval_say_so(module_pool, unchanged_server):
    """The approval list is not part of the connection: the same child serves it."""
    spec = dataclasses.replace(unchanged_server, approval_tools=frozenset({"echo"}))
    toolset = await module_pool.toolset([spec], vision=False)
    marked = {t.name: t.needs_approval for t in toolset.tools}
    assert marked["test__echo"] is True and marked["test__add"] is False
    assert {t.source for t in toolset.tools} == {"mcp:test"}


async def test_a_streamable_http_server_lists_and_calls(mcp_pool, http_mcp):
    url, _ = http_mcp
    spec = McpServerSpec(name="web", transport="http", url=url, timeout=20.0)
    tools, problems = await registry_of(mcp_pool, spec)
    assert problems == []
    assert (await tools.run_output("web__echo", '{"text": "over http"}')).text == "echo: over http"
    added = json.loads((await tools.run_output("web__add", '{"a": 1, "b": 2}')).text)
    assert added["total"] == 3
    assert len((await tools.run_output("web__picture", "{}")).images) == 1
    assert (await tools.run_output("web__refuse", '{"reason": "x"}')).text.startswith("Error: ")


async def test_stop_during_a_long_http_call_cancels_it_on_the_server(mcp_pool, http_mcp):
    url, markers = http_mcp
    for name in ("slow-started", "slow-cancelled"):
        (markers / name).unlink(missing_ok=True)
    tools, _ = await registry_of(mcp_pool, McpServerSpec(name="web", transport="http", url=url))
    call = asyncio.create_task(tools.run_output("web__slow", '{"seconds": 60}'))
    await wait_for_file(markers / "slow-started")
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await wait_for_file(markers / "slow-cancelled")


async def test_a_server_that_never_answers_the_handshake_is_left_out_in_time(marker_dir):
    pool = McpPool(no_secrets, start_timeout=2.0)
    hanging = McpServerSpec(
        name="mute",
        transport="stdio",
        command=sys.executable,
        args=("-m", "tests.support.mcp_server", "hang-at-start"),
    )
    try:
        async with asyncio.timeout(30):
            toolset = await pool.toolset([hanging], vision=False)
    finally:
        await pool.aclose()
    assert toolset.tools == [] and [p.server for p in toolset.problems] == ["mute"]
    assert "in time" in toolset.problems[0].reason


async def test_a_server_that_died_while_idle_is_started_again_without_an_error(
    mcp_pool, marker_dir
):
    tools, _ = await registry_of(mcp_pool, stdio_spec(marker_dir))
    before = int((await tools.run_output("test__pid", "{}")).text)
    os.kill(before, signal.SIGKILL)
    connection = await mcp_pool.connection(stdio_spec(marker_dir))
    async with asyncio.timeout(WAIT):
        while not connection.dead:  # noqa: ASYNC110 - the end of its output is noticed
            await asyncio.sleep(0.05)
    assert (await tools.run_output("test__echo", '{"text": "again"}')).text == "echo: again"
    assert int((await tools.run_output("test__pid", "{}")).text) != before


async def test_a_restarted_http_server_gets_a_new_session_without_a_failed_call(mcp_pool, tmp_path):
    from tests.support.mcp_servers import free_port, http_server

    port = free_port()
    spec = McpServerSpec(name="web", transport="http", url=f"http://127.0.0.1:{port}/mcp")
    with http_server(tmp_path, port=port):
        tools, _ = await registry_of(mcp_pool, spec)
        assert (await tools.run_output("web__echo", '{"text": "one"}')).text == "echo: one"
    with http_server(tmp_path, port=port):  # the same URL, a new process: old session unknown
        assert (await tools.run_output("web__echo", '{"text": "two"}')).text == "echo: two"


# -- a cap on the tools of one server ----------------------------------------------------------


def many_tools_spec(marker_dir, *args: str, **changes) -> McpServerSpec:
    """The test module's server of many tools (``many-tools``), pages noted in marker_dir."""
    fields = {
        "name": "many",
        "transport": "stdio",
        "command": sys.executable,
        "args": ("-m", "tests.support.mcp_server", "many-tools", "--marker-dir", str(marker_dir))
        + args,
        "cwd": str(REPO_ROOT),
    }
    return McpServerSpec(**{**fields, **changes})


def pages_listed(marker_dir) -> list[int]:
    return [int(line) for line in (marker_dir / "pages-listed").read_text().split()]


@pytest.fixture
async def capped_pool():
    """A pool whose servers offer at most 50 tools each."""
    pool = McpPool(no_secrets, start_timeout=30.0, max_tools=50)
    yield pool
    await pool.aclose()


async def test_a_server_listing_more_tools_than_the_cap_offers_the_first_ones_with_a_note(
    capped_pool, marker_dir
):
    """RO.12 / RT.3: 300 tools listed, 50 offered, and the toolset names the server cut."""
    toolset = await capped_pool.toolset(
        [many_tools_spec(marker_dir, "--count", "300")], vision=False
    )
    assert [t.name for t in toolset.tools] == [f"many__tool_{i:05d}" for i in range(50)]
    assert [(c.server, c.offered, c.limit) for c in toolset.capped] == [("many", 50, 50)]
    assert toolset.problems == []


async def test_endless_pagination_stops_once_the_cap_is_reached(capped_pool, marker_dir):
    """RO.12: pages of 20 tools, always with a next one: three pages give the 50 tools (and
    one more, which says there are more), instead of the 20 pages read before."""
    spec = many_tools_spec(marker_dir, "--count", "1000", "--page-size", "20", "--endless")
    toolset = await capped_pool.toolset([spec], vision=False)
    assert len(toolset.tools) == 50 and toolset.capped
    assert pages_listed(marker_dir) == [0, 20, 40]


async def test_the_cap_counts_the_tools_the_allow_list_keeps(capped_pool, marker_dir):
    """Tools allowed on a later page are still found: the cap is on what is offered."""
    allowed = frozenset({"tool_00003", "tool_00250"})
    spec = many_tools_spec(
        marker_dir, "--count", "300", "--page-size", "100", allowed_tools=allowed
    )
    toolset = await capped_pool.toolset([spec], vision=False)
    assert sorted(t.name for t in toolset.tools) == ["many__tool_00003", "many__tool_00250"]
    assert toolset.capped == []
    assert pages_listed(marker_dir) == [0, 100, 200]


async def test_closing_the_pool_during_a_listing_leaves_the_server_out_of_the_run(marker_dir):
    """A listing runs apart from the runs that wait for it: closing the pool (a drain's
    end) ends it, and a waiting run reads a problem, not a cancellation of its own."""
    pool = McpPool(no_secrets, start_timeout=60.0)
    hanging = McpServerSpec(
        name="mute",
        transport="stdio",
        command=sys.executable,
        args=("-m", "tests.support.mcp_server", "hang-at-start", "--marker-dir", str(marker_dir)),
        cwd=str(REPO_ROOT),
    )
    waiting = asyncio.create_task(pool.toolset([hanging], vision=False))
    async with asyncio.timeout(WAIT):
        while not list(marker_dir.glob("hang-started-*")):  # noqa: ASYNC110 - a child writes it
            await asyncio.sleep(0.05)
    await pool.aclose()
    toolset = await waiting
    assert toolset.tools == [] and [p.server for p in toolset.problems] == ["mute"]


class StoppedClock:
    """``time`` for the pool's module: a monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_a_failure_is_remembered_from_when_it_happened_and_longer_each_time(
    marker_dir, monkeypatch
):
    """RO.12: 30 s from the failure, then 60 s after a second failure in a row; no start
    is tried meanwhile (the clock stands still while a start fails)."""
    from fimone.agent.tools import mcp_client

    clock = StoppedClock()
    monkeypatch.setattr(mcp_client, "time", clock)
    pool = mcp_client.McpPool(no_secrets, start_timeout=30.0, failure_memory=30.0)
    broken = McpServerSpec(
        name="broken",
        transport="stdio",
        command=sys.executable,
        args=("-m", "tests.support.mcp_server", "fail-at-start", "--marker-dir", str(marker_dir)),
        cwd=str(REPO_ROOT),
    )

    def starts() -> int:
        return len(list(marker_dir.glob("fail-started-*")))

    try:
        for moved_to, expected_starts in [
            (1000.0, 1),  # the first failure: remembered until 1030
            (1029.0, 1),
            (1030.5, 2),  # the second in a row: until 1090.5
            (1090.0, 2),
            (1091.0, 3),
        ]:
            clock.now = moved_to
            toolset = await pool.toolset([broken], vision=False)
            assert [p.server for p in toolset.problems] == ["broken"]
            assert starts() == expected_starts, moved_to
    finally:
        await pool.aclose()
