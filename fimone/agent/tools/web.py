"""The ``fetch_url`` tool: read a web page (HTML as Markdown, JSON, text, PDF).

Its arguments follow the reference "fetch" MCP server that Claude Desktop users know:
``url``, ``start_index`` and ``max_length`` to read a long page in parts, ``raw`` for the
HTML source. Every refusal (a scheme other than http/https, an address that is not public,
too many redirects, a timeout, a file that is no page) is an ``Error: …`` text the model
reads. What it may connect to and how much it may download are set by the operator
(``FetchConfig``; the chat layer builds it from the settings). See docs/tools.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import ssl
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

from contextmgmt.core.readon import call_text, parts_of, read_on_line
from fimone.extract.isolated import ExtractionPool

from .netpolicy import AddressPolicy, AddressRefused
from .registry import Tool
from .web_content import PageText, page_text
from .web_fetch import FetchedBody, FetchError, FetchLimits, Resolver, fetch, system_resolver

logger = logging.getLogger(__name__)

# Time for turning the body into text, on top of the fetch's own deadline.
_EXTRACT_SECONDS = 20.0

T = TypeVar("T")


@dataclass(frozen=True)
class FetchConfig:
    """What ``fetch_url`` may do: the address policy, the download limits, how many
    characters one call returns at most; the resolver and the trusted certificates are
    injectable for tests."""

    policy: AddressPolicy = AddressPolicy()
    limits: FetchLimits = FetchLimits()
    max_chars: int = 20_000
    resolver: Resolver = system_resolver
    tls: ssl.SSLContext | None = None  # the certificates to trust; None: the system's
    # Worker processes that read HTML and PDF; None: a thread of this process, whose C
    # calls then hold the GIL and stall the event loop on a large page (docs/tools.md).
    pool: ExtractionPool | None = None
    # Whose share of the pool's workers the pages take (a user's id, from the run).
    owner_key: str = ""


@dataclass(frozen=True)
class _ReadPage:
    fetched: FetchedBody
    page: PageText


def fetch_url_tool(config: FetchConfig | None = None) -> Tool:
    config = config or FetchConfig()

    async def fetch_url(
        url: str, start_index: int = 0, max_length: int | None = None, raw: bool = False
    ) -> str:
        if start_index < 0:
            return "Error: start_index must be 0 or more."
        length = config.max_chars if max_length is None else max_length
        if length < 1:
            return "Error: max_length must be at least 1."
        length = min(length, config.max_chars)

        async def read() -> _ReadPage:
            fetched = await fetch(
                url,
                policy=config.policy,
                limits=config.limits,
                resolver=config.resolver,
                tls=config.tls,
            )
            page = page_text(fetched, raw=raw, pool=config.pool, owner=config.owner_key)
            return _ReadPage(fetched, page)

        try:
            read_page = await on_a_loop_of_its_own(read)
        except (FetchError, AddressRefused) as exc:
            logger.info("fetch_url %s: %s", _shown(url), exc)
            return f"Error: {exc}"
        fetched, page = read_page.fetched, read_page.page
        logger.info(
            "fetch_url %s: HTTP %s, %s, %d bytes%s",
            _shown(fetched.url),
            fetched.status,
            fetched.content_type or "no type",
            len(fetched.body),
            f", cut ({fetched.cut})" if fetched.cut else "",
        )
        header = [f"URL: {fetched.url}"]
        if fetched.redirects:
            header.append(f"Redirected from: {url.strip()}")
        if page.title:
            header.append(f"Title: {page.title}")
        if not 200 <= fetched.status < 300:
            header.insert(0, f"Error: the server answered HTTP {fetched.status}.")
        asked = ReadOn(url.strip(), max_length, raw)
        body = _window(page, fetched.cut, config, start_index, length, asked)
        return "\n".join(header) + "\n\n" + body

    return Tool(
        name="fetch_url",
        description=(
            "Fetch a web page or file by its http(s) URL and return its content as text: "
            "an HTML page's main text as Markdown (menus, ads and scripts left out), JSON "
            "pretty-printed, plain text as is, a PDF's text page by page. Long pages come "
            "in parts: each part ends with the call that reads on. Only public addresses can "
            "be fetched."
        ),
        parameters={
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "the http:// or https:// URL"},
                "start_index": {
                    "type": "integer",
                    "description": "character to start at, for the next part of a long "
                    "page (default 0)",
                },
                "max_length": {
                    "type": "integer",
                    "description": f"most characters to return (default and limit "
                    f"{config.max_chars})",
                },
                "raw": {
                    "type": "boolean",
                    "description": "return an HTML page's source instead of its main text",
                },
            },
            "required": ["url"],
        },
        func=fetch_url,
        timeout=config.limits.total_seconds + _EXTRACT_SECONDS,
    )


async def on_a_loop_of_its_own(work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``work()`` run on an event loop of its own, in a thread of its own, for as long as
    it takes (its own deadlines bound it); cancelling the caller cancels it.

    A page's body is read there, and turned into text: a server that sends its body one
    byte per chunk makes the HTTP client work on every byte without ever waiting, and on
    the server's loop that froze every other user for the whole fetch deadline. Here it
    costs one thread its time slices, and the loop keeps its pace (docs/tools.md). A
    thread per call, not a pool: a pool of a few threads would let one user's slow pages
    hold up everyone's."""
    loop = asyncio.new_event_loop()
    task = loop.create_task(work())  # not started until the thread runs the loop
    outcome: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            result = loop.run_until_complete(task)
        except BaseException as exc:  # handed to the caller, whatever it is
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                outcome.set_exception(exc)
        else:
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                outcome.set_result(result)
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()

    threading.Thread(target=run, name="fetch_url", daemon=True).start()
    try:
        return await asyncio.wrap_future(outcome)
    except asyncio.CancelledError:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the work has ended
            loop.call_soon_threadsafe(task.cancel)
        raise


def _shown(url: str) -> str:
    """A URL for the log without its query, which may carry a token."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "(an invalid URL)"
    return f"{parts.scheme}://{parts.hostname or ''}{parts.path}"[:200]


@dataclass(frozen=True)
class ReadOn:
    """What the model asked for, for the call that reads the next part the same way."""

    url: str
    max_length: int | None
    raw: bool

    def next_call(self, start_index: int) -> str:
        arguments: dict[str, object] = {"url": self.url, "start_index": start_index}
        if self.max_length is not None:
            arguments["max_length"] = self.max_length
        if self.raw:
            arguments["raw"] = True
        return call_text("fetch_url", arguments)


def _window(
    page: PageText,
    cut: str | None,
    config: FetchConfig,
    start_index: int,
    length: int,
    asked: ReadOn,
) -> str:
    """The part of the page's text this call returns, with notes on what is left out: a
    part of a long page ends with where it stands and the call that reads on
    (contextmgmt.core.readon: the line outlives the part in stubs and summaries)."""
    total = len(page.text)
    if total and start_index >= total:
        return f"Error: start_index {start_index} is past the end of the text ({total} characters)."
    part = page.text[start_index : start_index + length]
    notes = list(page.notes)
    end = start_index + len(part)
    number, parts = parts_of(start_index, length, total)
    if end < total:
        line = read_on_line(
            part=number,
            parts=parts,
            start=start_index,
            end=end,
            total=total,
            unit="characters",
            next_call=asked.next_call(end),
        )
        notes.append(line[1:-1])
    elif start_index:
        notes.append(
            f"Part {number:,} of {parts:,}: characters {start_index:,}–{end:,} of {total:,}; "
            "the end of the text."
        )
    if cut == "size":
        limit = config.limits.max_bytes
        notes.append(
            f"The download stopped at the limit of {limit:,} bytes: the rest of the file "
            "was not read."
        )
    elif cut == "time":
        notes.append(
            f"The server was still sending after {config.limits.total_seconds:g} seconds: "
            "only what arrived by then is shown."
        )
    body = part if part.strip() else "(the page has no text)"
    return body + ("\n\n" + "\n".join(f"[{n}]" for n in notes) if notes else "")
