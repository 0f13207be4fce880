"""The tools of the test MCP server (tests/support/mcp_server.py): text, long pages,
structured content, images, an error result, embedded resources, a slow call that notes its
cancellation, a call that kills the process and one that never answers.

Apart from the command line because importing the SDK costs a child some two seconds of CPU:
the servers that fail or hang at start never import it."""

from __future__ import annotations

import asyncio
import base64
import os
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
