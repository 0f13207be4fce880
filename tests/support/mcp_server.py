"""A real MCP server for the tests, written with the SDK's own server (FastMCP, named
``MCPServer`` since mcp 2), run as a stdio child process or over streamable HTTP.

    python -m tests.support.mcp_server stdio [--marker-dir DIR] [--service-tools N]
    python -m tests.support.mcp_server http --port 8123 [--marker-dir DIR] [--require-header NAME]
    python -m tests.support.mcp_server fail-at-start | hang-at-start [--marker-dir DIR]
    python -m tests.support.mcp_server many-tools --count 10000 [--page-size N] [--endless]
        [--marker-dir DIR]

Its tools (tests/support/mcp_server_tools.py) cover what a client must handle: text, long
pages, structured content, images, an error result, embedded resources, a slow call that
notes its cancellation (in ``marker-dir``), a call that kills the process, and one that
never answers; the servers that fail or hang at start never import the SDK, which costs a
child some two seconds of CPU. ``many-tools``
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
import os
import sys
import time
from pathlib import Path


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
    from tests.support.mcp_server_tools import build

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
