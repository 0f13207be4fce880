"""The MCP client: one connection per configured server per process, its tools as fimone
tools (docs/tools.md, "MCP servers").

Built on the official SDK's public client API: ``ClientSession`` over ``stdio_client`` (the
server is a child process) or ``streamable_http_client``. A connection lives in a task of
its own on the server process's event loop and is shared by every run: a stdio server is
started once, not per call, and started again when it has died (the next use notices and
restarts it; a call under way when it dies gets an error the model reads). A run asks for
the tools of its servers; the listing is cached for ``list_ttl`` seconds, a failure for
less, and a server that cannot be started or listed is left out of the run with a
``ServerProblem`` the run shows as a note. Each call has the server's timeout; a cancelled
call (the user pressed Stop, or the timeout) sends the server the protocol's
``notifications/cancelled``, which the SDK does when the awaiting task is cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED, INVALID_REQUEST

from .mcp_config import (
    McpServerSpec,
    McpToolset,
    SecretLookup,
    SecretRefused,
    ServerProblem,
    resolve_secrets,
)
from .mcp_results import result_output, tool_name
from .registry import Tool, ToolOutput

logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="fimone", version="3")
MAX_LIST_PAGES = 20
FAILURE_TTL = 5.0  # a failed start or listing is tried again after this long


class ServerGone(RuntimeError):
    """The server's connection ended (a stdio server exited) during a request."""


class SessionExpired(ServerGone):
    """A streamable-HTTP server no longer knows the session (it restarted, or expired it):
    the request was not run, and a new session may send it again."""


class SecretNotForwarded(RuntimeError):
    """A request would have carried the configured headers to another origin."""


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return (url.scheme, url.host, url.port)


def origin_guard(configured: str) -> Callable[[httpx2.Request], Awaitable[None]]:
    """An httpx request hook that refuses any request to another origin than the configured
    URL's (an https upgrade of the same host excepted): the headers carry secrets, and a
    redirect must not take them elsewhere. The SDK follows only such redirects itself; this
    holds even if that changes."""
    base = httpx2.URL(configured)

    async def guard(request: httpx2.Request) -> None:
        url = request.url
        if _origin(url) == _origin(base):
            return
        if url.host == base.host and base.scheme == "http" and url.scheme == "https":
            return
        raise SecretNotForwarded(
            f"refused to send the server's headers to {url.scheme}://{url.host}"
        )

    return guard


class McpConnection:
    """One live session with one server (see the module's docstring)."""

    def __init__(
        self, spec: McpServerSpec, secret: SecretLookup, *, start_timeout: float, errlog: TextIO
    ) -> None:
        self.spec = spec
        self._secret = secret
        self._start_timeout = start_timeout
        self._errlog = errlog
        self._ready: asyncio.Future[ClientSession] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None
        self.dead = False

    def _transport(self):
        spec = self.spec
        if spec.transport == "stdio":
            env = {k: resolve_secrets(v, self._secret) for k, v in spec.env}
            params = StdioServerParameters(
                command=spec.command, args=list(spec.args), env=env or None, cwd=spec.cwd
            )
            return stdio_client(params, errlog=self._errlog)
        headers = {k: resolve_secrets(v, self._secret) for k, v in spec.headers}
        client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(30.0, read=max(300.0, spec.timeout)),
            event_hooks={"request": [origin_guard(spec.url)]},
        )
        return _HttpTransport(spec.url, client)

    async def session(self) -> ClientSession:
        """The initialised session, starting the server on first use."""
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            # A failed start nobody waits for any more is no "exception never retrieved".
            self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._task = asyncio.create_task(self._serve(self._ready), name=f"mcp:{self.spec.name}")
        # Shielded: a run stopped while the server starts does not stop the start.
        return await asyncio.wait_for(asyncio.shield(self._ready), self._start_timeout + 5)

    async def _serve(self, ready: asyncio.Future[ClientSession]) -> None:
        try:
            async with self._transport() as (read, write):
                relay_send, relay_read = anyio.create_memory_object_stream(0)
                async with anyio.create_task_group() as group:
                    group.start_soon(self._relay, read, relay_send)
                    try:
                        async with ClientSession(
                            relay_read, write, client_info=CLIENT_INFO
                        ) as session:
                            with anyio.fail_after(self._start_timeout):
                                await session.initialize()
                            ready.set_result(session)
                            await self._stop.wait()
                    finally:
                        group.cancel_scope.cancel()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(_start_error(exc))
            if not isinstance(exc, Exception):
                raise
            if not self._stop.is_set():
                logger.warning(
                    "MCP server %s: connection ended: %s", self.spec.name, _describe(exc)
                )
        finally:
            self.dead = True
            if not ready.done():
                ready.set_exception(ServerGone("the server stopped while starting"))

    async def _relay(self, read, send) -> None:
        """Passes the server's messages on, and notices when they end: a stdio server that
        exited while idle is then started again before its next use instead of failing it."""
        async with send:
            try:
                async for item in read:
                    await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
        self.dead = True
        self._stop.set()

    async def list_tools(self) -> list[types.Tool]:
        session = await self.session()
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._request(session.list_tools(params=params))
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        session = await self.session()
        return await self._request(session.call_tool(name, arguments))

    async def _request(self, request):
        try:
            return await request
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.dead = True
                raise ServerGone("the server's connection closed") from None
            if self.spec.transport == "http" and _session_unknown(exc):
                self.dead = True
                raise SessionExpired("the server ended the session") from None
            raise

    async def aclose(self) -> None:
        self.dead = True
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                # The SDK closes a stdio server's stdin, waits, then terminates it.
                await asyncio.wait_for(asyncio.shield(task), 10)
            except (TimeoutError, Exception):
                task.cancel()


class _HttpTransport:
    """``streamable_http_client`` with its own httpx client, closed with it."""

    def __init__(self, url: str, client: httpx2.AsyncClient) -> None:
        self._url, self._client = url, client
        self._cm = None

    async def __aenter__(self):
        await self._client.__aenter__()
        self._cm = streamable_http_client(self._url, http_client=self._client)
        try:
            return await self._cm.__aenter__()
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc):
        try:
            return await self._cm.__aexit__(*exc)
        finally:
            await self._client.__aexit__(None, None, None)


def _session_unknown(exc: MCPError) -> bool:
    """An HTTP 404 on a session the server no longer knows: the SDK's client says "Session
    terminated", its server "Session not found" (both as an invalid request)."""
    return exc.code == INVALID_REQUEST and "session" in exc.message.lower()


def _unwrap(exc: BaseException) -> BaseException:
    """The first real exception inside task groups' exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    """A short, readable reason."""
    exc = _unwrap(exc)
    text = str(exc).strip()
    if isinstance(exc, ServerGone | TimeoutError | SecretRefused) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _start_error(exc: BaseException) -> Exception:
    if isinstance(_unwrap(exc), TimeoutError):
        return TimeoutError("the server did not answer in time")
    return ServerGone(_describe(exc))


class McpPool:
    """This process's connections and tool listings (one pool per server process)."""

    def __init__(
        self,
        secret: SecretLookup,
        *,
        list_ttl: float = 30.0,
        start_timeout: float = 30.0,
        errlog: TextIO | None = None,
    ) -> None:
        self._secret = secret
        self.list_ttl = list_ttl
        self.start_timeout = start_timeout
        self._errlog = errlog or sys.stderr
        self._connections: dict[tuple, McpConnection] = {}
        self._listings: dict[tuple, tuple[float, list[types.Tool] | str]] = {}
        self._lock = asyncio.Lock()
        self._closing: set[asyncio.Task] = set()

    async def connection(self, spec: McpServerSpec) -> McpConnection:
        """The live connection for ``spec``, a new one if there is none or it died."""
        async with self._lock:
            current = self._connections.get(spec.connection_key)
            if current is not None and not current.dead:
                return current
            if current is not None:
                logger.warning("MCP server %s: starting it again", spec.name)
                closing = asyncio.create_task(current.aclose())
                self._closing.add(closing)  # kept until done: a task is only weakly held
                closing.add_done_callback(self._closing.discard)
            fresh = McpConnection(
                spec, self._secret, start_timeout=self.start_timeout, errlog=self._errlog
            )
            self._connections[spec.connection_key] = fresh
            return fresh

    async def listing(self, spec: McpServerSpec) -> list[types.Tool]:
        """The server's tools, cached; raises what made starting or listing fail."""
        now = time.monotonic()
        cached = self._listings.get(spec.connection_key)
        if cached is not None and cached[0] > now:
            if isinstance(cached[1], str):
                raise ServerGone(cached[1])
            return cached[1]
        try:
            async with asyncio.timeout(self.start_timeout + 5):
                tools = await (await self.connection(spec)).list_tools()
        except Exception as exc:
            timed_out = isinstance(_unwrap(exc), TimeoutError) and not str(_unwrap(exc))
            reason = "the server did not answer in time" if timed_out else _describe(exc)
            self._listings[spec.connection_key] = (now + FAILURE_TTL, reason)
            raise ServerGone(reason) from None
        self._listings[spec.connection_key] = (time.monotonic() + self.list_ttl, tools)
        return tools

    async def toolset(self, specs: Sequence[McpServerSpec], *, vision: bool) -> McpToolset:
        """The tools of ``specs`` for one run (their servers listed concurrently)."""
        results = await asyncio.gather(
            *(self.listing(spec) for spec in specs), return_exceptions=True
        )
        tools: list[Tool] = []
        problems: list[ServerProblem] = []
        for spec, listed in zip(specs, results, strict=True):
            if isinstance(listed, BaseException):
                if isinstance(listed, asyncio.CancelledError):
                    raise listed
                logger.warning("MCP server %s left out of this run: %s", spec.name, listed)
                problems.append(ServerProblem(spec.name, str(listed)))
                continue
            tools.extend(
                self._tool(spec, entry, vision) for entry in listed if spec.allows(entry.name)
            )
        return McpToolset(tools, problems)

    def retire(self, keep: Sequence[McpServerSpec]) -> list[str]:
        """Close the connections of servers not in ``keep`` (removed, switched off or
        changed since they were started: a stdio server's process ends) and forget their
        listings; the names of the servers closed. A call still running on one of them
        ends with the error a stopped server gives."""
        wanted = {spec.connection_key for spec in keep}
        closed = []
        for key in [key for key in self._connections if key not in wanted]:
            connection = self._connections.pop(key)
            closed.append(connection.spec.name)
            closing = asyncio.create_task(connection.aclose())
            self._closing.add(closing)  # kept until done: a task is only weakly held
            closing.add_done_callback(self._closing.discard)
        for key in [key for key in self._listings if key not in wanted]:
            del self._listings[key]
        return closed

    def cached_tools(self, specs: Sequence[McpServerSpec]) -> list[Tool]:
        """The tools of ``specs`` whose listing is cached (no server is asked)."""
        tools = []
        for spec in specs:
            cached = self._listings.get(spec.connection_key)
            if cached is not None and not isinstance(cached[1], str):
                tools.extend(self._tool(spec, t, False) for t in cached[1] if spec.allows(t.name))
        return tools

    def _tool(self, spec: McpServerSpec, entry: types.Tool, vision: bool) -> Tool:
        original = entry.name

        async def call(**arguments: Any) -> ToolOutput:
            connection = await self.connection(spec)
            try:
                try:
                    result = await connection.call(original, arguments)
                except SessionExpired:  # not run: once more, in a new session
                    result = await (await self.connection(spec)).call(original, arguments)
            except ServerGone:
                return ToolOutput(
                    f"Error: the MCP server {spec.name} stopped during the call; it is started "
                    "again for the next call."
                )
            except MCPError as exc:
                return ToolOutput(
                    f"Error: the MCP server {spec.name} refused the call: {exc.message}"
                )
            return result_output(spec.name, original, result, vision=vision)

        schema = entry.input_schema if isinstance(entry.input_schema, dict) else {}
        return Tool(
            name=tool_name(spec.name, original),
            description=(entry.description or entry.title or original).strip(),
            parameters=schema or {"type": "object", "properties": {}},
            func=call,
            timeout=spec.timeout,
            needs_approval=spec.needs_approval(original),
            source=f"mcp:{spec.name}",
        )

    async def aclose(self) -> None:
        """Close every connection (stdio servers exit); the pool can be used again."""
        connections = list(self._connections.values())
        self._connections.clear()
        self._listings.clear()
        await asyncio.gather(*(c.aclose() for c in connections), return_exceptions=True)
