"""A real MCP server for the tests, written with the SDK's own server (FastMCP, named
``MCPServer`` since mcp 2), run as a stdio child process or over streamable HTTP.

    python -m tests.support.mcp_server stdio [--marker-dir DIR] [--service-tools N]
    python -m tests.support.mcp_server http --port 8123 [--marker-dir DIR] [--require-header NAME]
    python -m tests.support.mcp_server fail-at-start | hang-at-start [--marker-dir DIR]
    python -m tests.support.mcp_server many-tools --count 10000 [--page-size N] [--endless]
        [--marker-dir DIR]

Its tools cover what a client must handle: text, long pages, structured content, images,
an error result, embedded resources, a slow call that notes its cancellation (in
``marker-dir``), a call that kills the process, and one that never answers. ``many-tools``
is a server of ``--count`` tools (each says its name back), listed ``--page-size`` at a
time; ``--endless`` always offers a next page; each page asked for is noted in
``marker-dir``. ``hang-at-start`` and ``fail-at-start`` note each start there.
``--service-tools N`` adds N tools to the stdio server, named and described like a real
service's (``archive_ticket``: "Archive a support ticket…"), each answering with its name
and arguments: a server whose definitions do not fit a small window, searched by name
and description.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import EmbeddedResource, TextResourceContents
from pydantic import BaseModel

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


class Sum(BaseModel):
    total: int
    terms: list[int]


def long_page(number: int, chars: int) -> str:
    """Page ``number`` of a long report: a heading, then one reading repeated to ``chars``."""
    line = f"Reading {number}: sensor {number} logged {1000 + number}.{number:02d} units. "
    return (f"# Page {number}\n" + line * (chars // len(line) + 1))[:chars]


_VERBS = (
    ("list", "List the {plural} matching a filter, newest first, with paging."),
    ("get", "Get one {noun} by its id, with every field and its change history."),
    ("create", "Create a {noun} from the given fields; returns the new {noun}'s id."),
    ("update", "Update fields of an existing {noun}; unknown fields are refused."),
    ("delete", "Delete a {noun} by its id (it can be restored for 30 days)."),
    ("archive", "Archive a {noun}: hidden from lists, kept for audits."),
    ("export", "Export {plural} as CSV or JSON for a date range."),
    ("count", "Count the {plural} matching a filter, grouped by status."),
    ("assign", "Assign a {noun} to a team member by their email address."),
    ("comment", "Add a comment to a {noun}, visible to the whole team."),
)
_NOUNS = (
    ("invoice", "invoices"), ("customer", "customers"), ("order", "orders"),
    ("ticket", "support tickets"), ("product", "products"), ("shipment", "shipments"),
    ("refund", "refunds"), ("subscription", "subscriptions"), ("coupon", "coupons"),
    ("supplier", "suppliers"), ("warehouse", "warehouses"), ("employee", "employees"),
    ("meeting", "meetings"), ("project", "projects"), ("task", "tasks"),
    ("contract", "contracts"), ("payment", "payments"), ("report", "reports"),
    ("campaign", "campaigns"), ("lead", "sales leads"), ("asset", "assets"),
    ("license", "licenses"), ("incident", "incidents"), ("survey", "surveys"),
    ("budget", "budgets"), ("expense", "expenses"), ("vendor", "vendors"),
    ("document", "documents"), ("release", "releases"), ("account", "accounts"),
)  # fmt: skip


def _service_tools(server: MCPServer, count: int) -> None:
    """``count`` tools named verb_noun (``archive_ticket``), described as a real service's."""
    pairs = [(v, n) for n in _NOUNS for v in _VERBS]
    for i in range(count):
        (verb, text), (noun, plural) = pairs[i % len(pairs)]
        name = f"{verb}_{noun}" + (f"_{i // len(pairs)}" if i >= len(pairs) else "")

        description = text.format(noun=noun, plural=plural)
        server.add_tool(_operation(name), name=name, description=description)


def _operation(name: str):
    def operate(record_id: str, fields: dict | None = None) -> str:
        return f"{name} done: {record_id} {fields or {}}"

    return operate


def build(marker_dir: Path | None, service_tools: int = 0) -> MCPServer:
    server = MCPServer("fimone-test", log_level="WARNING")
    _service_tools(server, service_tools)

    def mark(name: str, text: str = "") -> None:
        if marker_dir is not None:
            (marker_dir / name).write_text(text or str(time.time()))

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return f"echo: {text}"

    @server.tool()
    def pid() -> str:
        """The server process's id."""
        return str(os.getpid())

    @server.tool()
    def add(a: int, b: int) -> Sum:
        """Add two integers (structured result)."""
        return Sum(total=a + b, terms=[a, b])

    @server.tool()
    def picture() -> Image:
        """A tiny red picture."""
        return Image(data=PNG, format="png")

    @server.tool()
    def refuse(reason: str) -> str:
        """Always fails with the reason (an isError result)."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def document() -> EmbeddedResource:
        """An embedded text resource."""
        return EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes/today.md", mime_type="text/markdown", text="# Notes\nBuy milk."
            ),
        )

    @server.tool()
    def page(number: int, chars: int = 30_000) -> str:
        """A long page of a report: about ``chars`` characters, its number throughout."""
        return long_page(number, chars)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, noting in the marker directory whether the call was cancelled."""
        mark("slow-started")
        try:
            await asyncio.sleep(seconds)
        except BaseException:
            mark("slow-cancelled")
            raise
        return f"slept {seconds}"

    @server.tool()
    def die() -> str:
        """The process exits in the middle of the call."""
        mark("died", str(os.getpid()))
        os._exit(3)

    @server.tool()
    def big_json(megabytes: int) -> str:
        """A JSON text of about ``megabytes`` MB (a list of small records)."""
        record = '{"id": 12345, "name": "a record of a large answer", "ok": true}'
        count = megabytes * 1024 * 1024 // (len(record) + 2)
        return "[" + ", ".join([record] * count) + "]"

    @server.tool()
    async def hang() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "mode", choices=["stdio", "http", "fail-at-start", "hang-at-start", "many-tools"]
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--endless", action="store_true")
    parser.add_argument("--marker-dir", type=Path)
    parser.add_argument("--require-header", default="")
    parser.add_argument("--service-tools", type=int, default=0)
    args = parser.parse_args(argv)
    if args.mode == "fail-at-start":
        if args.marker_dir is not None:
            (args.marker_dir / f"fail-started-{os.getpid()}").write_text("")
        print("this server cannot start", file=sys.stderr)
        sys.exit(2)
    if args.mode == "hang-at-start":
        if args.marker_dir is not None:
            (args.marker_dir / f"hang-started-{os.getpid()}").write_text("")
        time.sleep(3600)  # never answers the handshake
    if args.mode == "many-tools":
        page_size = args.page_size or args.count
        asyncio.run(_serve_many_tools(args.count, page_size, args.endless, args.marker_dir))
        return
    server = build(args.marker_dir, args.service_tools)
    if args.mode == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app()
    if args.require_header:
        app = _RequireHeader(app, args.require_header, args.marker_dir)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


async def _serve_many_tools(
    count: int, page_size: int, endless: bool, marker_dir: Path | None
) -> None:
    """The SDK's low-level server with ``count`` tools, paginated; the cursor is an offset.
    Each page asked for is a line of ``marker_dir/pages-listed``."""
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp_types import CallToolResult, ListToolsResult, TextContent, Tool

    # About 350 bytes a tool, as the hostile server's (3.5 MB for 10,000).
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "Any text."}},
    }
    about = "Looks the text up in one of many indexes and says what it found there, " * 3
    tools = [
        Tool(name=f"tool_{i:05d}", description=f"Tool number {i}. {about}", input_schema=schema)
        for i in range(count)
    ]

    async def list_tools(ctx, params) -> ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        if marker_dir is not None:
            with (marker_dir / "pages-listed").open("a") as f:  # noqa: ASYNC230
                f.write(f"{start}\n")
        page = tools[start % count : start % count + page_size]
        more = endless or start + page_size < count
        return ListToolsResult(tools=page, next_cursor=str(start + page_size) if more else None)

    async def call_tool(ctx, params) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=f"called {params.name}")])

    server = Server("fimone-many-tools", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class _RequireHeader:
    """Answers 401 unless the request carries the header; notes every value it saw."""

    def __init__(self, app, header: str, marker_dir: Path | None) -> None:
        self.app, self.header, self.marker_dir = app, header.lower().encode(), marker_dir

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            value = dict(scope["headers"]).get(self.header)
            if self.marker_dir is not None and value is not None:
                with (self.marker_dir / "headers-seen").open("a") as f:  # noqa: ASYNC230
                    f.write(value.decode() + "\n")
            if value is None:
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"missing credentials"})
                return
        await self.app(scope, receive, send)


if __name__ == "__main__":
    main()
