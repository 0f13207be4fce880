"""The MCP client: one connection per configured server per process, its tools as fimone
tools (docs/tools.md, "MCP servers").

Built on the official SDK's public client API: ``ClientSession`` over ``stdio_client`` (the
server is a child process) or ``streamable_http_client``. A connection lives in a task of
its own on the server process's event loop and is shared by every run: a stdio server is
started once, not per call, and started again when it has died (the next use notices and
restarts it; a call under way when it dies gets an error the model reads). A run asks for
the tools of its servers; the listing is cached for ``list_ttl`` seconds, and a server
that cannot be started or listed is left out of the run with a ``ServerProblem`` the run
shows as a note. A failure is remembered from the moment it happened (``failure_memory``
seconds, doubled for each failure in a row up to ``MAX_FAILURE_MEMORY``): a server that
hangs costs one start timeout, not one per run. A listing keeps at most ``max_tools``
tools (after the allow-list) and stops asking for pages once it has them; a server cut so
is named in ``McpToolset.capped``. An admin-added server is connected only to addresses
the ``fetch_url`` address policy allows (docs/tools.md, "MCP servers"). Each call has the
server's timeout; a cancelled
call (the user pressed Stop, or the timeout) sends the server the protocol's
``notifications/cancelled``, which the SDK does when the awaiting task is cancelled.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, INVALID_REQUEST

from .mcp_config import (
    McpServerSpec,
    McpToolset,
    SecretLookup,
    SecretRefused,
    ServerCap,
    ServerProblem,
    address_refusal,
    resolve_secrets,
)
from .mcp_results import MAX_RESULT_CHARS, result_output, tool_name
from .netpolicy import AddressPolicy
from .registry import Tool, ToolOutput
from .web_fetch import Resolver, system_resolver

logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="fimone", version="3")
MAX_LIST_PAGES = 20
# A stdio server's messages go through this script; one longer than this many bytes that is
# a tool result is cut there, in a process of its own (its module docstring says why).
RELAY = str(Path(__file__).with_name("mcp_relay.py"))
RELAY_LINE_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_TOOLS = 128
# A failed start or listing is tried again this long after it failed, doubled for each
# failure in a row up to the maximum (docs/operations.md, "round 4: tool servers").
FAILURE_MEMORY = 30.0
MAX_FAILURE_MEMORY = 300.0


class ServerGone(RuntimeError):
    """The server's connection ended (a stdio server exited) during a request."""


class SessionExpired(ServerGone):
    """A streamable-HTTP server no longer knows the session (it restarted, or expired it):
    the request was not run, and a new session may send it again."""


class SecretNotForwarded(RuntimeError):
    """A request would have carried the configured headers to another origin."""


class AddressNotAllowed(RuntimeError):
    """An admin-added server's host is (or resolves to) an address the policy refuses."""


@dataclass(frozen=True)
class ToolListing:
    """What a server listed, as offered: at most the pool's ``max_tools`` of the tools its
    allow-list keeps; ``cut`` when it listed more (or more pages than are read)."""

    tools: tuple[types.Tool, ...]
    cut: bool


@dataclass(frozen=True)
class _Failure:
    reason: str
    until: float  # monotonic time
    in_a_row: int


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


class PolicyTransport(httpx2.AsyncBaseTransport):
    """Connects only where the address policy allows, and to exactly the address checked:
    the host is resolved once per request, every address it gives is checked, and the
    connection goes to the first with the name in the Host header and in TLS — a second
    lookup could answer differently (as ``fetch_url``, docs/tools.md). No proxy from the
    environment: a proxy would make the connection the check never saw."""

    def __init__(self, policy: AddressPolicy, resolver: Resolver = system_resolver) -> None:
        self._policy, self._resolver = policy, resolver
        self._inner = httpx2.AsyncHTTPTransport(trust_env=False, retries=0)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        host = url.raw_host.decode("ascii")
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            port = url.port or (443 if url.scheme == "https" else 80)
            addresses = [ipaddress.ip_address(a) for a in await self._resolver(host, port)]
        refusal = address_refusal(host, addresses, self._policy) if addresses else None
        if refusal is not None or not addresses:
            raise AddressNotAllowed(refusal or f"{host} resolves to no address")
        pinned = httpx2.Request(
            request.method,
            url.copy_with(host=str(addresses[0])),
            headers=request.headers,  # the Host header keeps the name
            stream=request.stream,
            extensions={**request.extensions, "sni_hostname": host},
        )
        return await self._inner.handle_async_request(pinned)

    async def aclose(self) -> None:
        await self._inner.aclose()


class McpConnection:
    """One live session with one server (see the module's docstring)."""

    def __init__(
        self,
        spec: McpServerSpec,
        secret: SecretLookup,
        *,
        start_timeout: float,
        errlog: TextIO,
        policy: AddressPolicy | None = None,
        max_tools: int = DEFAULT_MAX_TOOLS,
    ) -> None:
        self.spec = spec
        self._max_tools = max_tools
        self._secret = secret
        self._policy = policy
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
            # Through the relay, which cuts a result too large to read, and a listing to
            # the tools offered, before this process parses them on its event loop
            # (fimone/agent/tools/mcp_relay.py).
            allowed = sorted(spec.allowed_tools) if spec.allowed_tools is not None else None
            relay = [
                RELAY,
                str(RELAY_LINE_BYTES),
                str(MAX_RESULT_CHARS),
                str(self._max_tools),
                json.dumps(allowed),
                "--",
            ]
            params = StdioServerParameters(
                command=sys.executable,
                args=[*relay, spec.command, *spec.args],
                env=env or None,
                cwd=spec.cwd,
            )
            return stdio_client(params, errlog=self._errlog)
        headers = {k: resolve_secrets(v, self._secret) for k, v in spec.headers}
        client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(30.0, read=max(300.0, spec.timeout)),
            event_hooks={"request": [origin_guard(spec.url)]},
            transport=PolicyTransport(self._policy) if self._policy is not None else None,
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
                relay_send, relay_read = anyio.create_memory_object_stream[
                    SessionMessage | Exception
                ](0)
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

    async def list_tools(self, *, keep: Callable[[str], bool], limit: int) -> ToolListing:
        """The server's tools ``keep`` keeps (the allow-list), at most ``limit``: no page
        is asked for once more than that are in hand."""
        session = await self.session()
        kept: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._request(session.list_tools(params=params))
            kept.extend(tool for tool in page.tools if keep(tool.name))
            cursor = page.next_cursor
            if not cursor or len(kept) > limit:
                break
        return ToolListing(tuple(kept[:limit]), cut=len(kept) > limit or bool(cursor))

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
            if self._ready is not None and not self._ready.done():
                # Still starting (perhaps hung before its handshake): nothing to end
                # politely, and the start would hold the close for its whole timeout. The
                # SDK's shutdown, shielded from the cancel, still ends the child.
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                return
            try:
                # The SDK closes a stdio server's stdin, waits, then terminates it.
                await asyncio.wait_for(asyncio.shield(task), 10)
            except (TimeoutError, Exception):
                task.cancel()


class _HttpTransport:
    """``streamable_http_client`` with its own httpx client, closed with it."""

    def __init__(self, url: str, client: httpx2.AsyncClient) -> None:
        self._client = client
        # Nothing runs before it is entered.
        self._cm = streamable_http_client(url, http_client=client)

    async def __aenter__(self):
        await self._client.__aenter__()
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
    if isinstance(exc, ServerGone | TimeoutError | SecretRefused | AddressNotAllowed) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _start_error(exc: BaseException) -> Exception:
    if isinstance(_unwrap(exc), TimeoutError):
        return TimeoutError("the server did not answer in time")
    return ServerGone(_describe(exc))


class McpPool:
    """This process's connections and tool listings (one pool per server process).

    ``policy`` gives the address policy an admin-added server must obey (read when it is
    connected); ``max_tools`` is the most tools one server offers."""

    def __init__(
        self,
        secret: SecretLookup,
        *,
        list_ttl: float = 30.0,
        start_timeout: float = 30.0,
        max_tools: int = DEFAULT_MAX_TOOLS,
        failure_memory: float = FAILURE_MEMORY,
        policy: Callable[[], AddressPolicy] | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        self._secret = secret
        self.list_ttl = list_ttl
        self.start_timeout = start_timeout
        self.max_tools = max_tools
        self.failure_memory = failure_memory
        self._policy = policy
        self._errlog = errlog or sys.stderr
        self._connections: dict[tuple, McpConnection] = {}
        # By (connection key, allow-list): (fresh until, listing).
        self._listings: dict[tuple, tuple[float, ToolListing]] = {}
        self._listing_tasks: dict[tuple, asyncio.Task[ToolListing]] = {}
        self._failures: dict[tuple, _Failure] = {}  # by connection key
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
            policy = self._policy() if self._policy is not None and spec.source == "admin" else None
            fresh = McpConnection(
                spec,
                self._secret,
                start_timeout=self.start_timeout,
                errlog=self._errlog,
                policy=policy,
                max_tools=self.max_tools,
            )
            self._connections[spec.connection_key] = fresh
            return fresh

    async def listing(self, spec: McpServerSpec) -> ToolListing:
        """The server's tools as offered, cached; raises what made starting or listing
        fail, also while that failure is remembered. Runs asking at once share one listing."""
        now = time.monotonic()
        failure = self._failures.get(spec.connection_key)
        if failure is not None and failure.until > now:
            raise ServerGone(failure.reason)
        key = (spec.connection_key, spec.allowed_tools)
        cached = self._listings.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        task = self._listing_tasks.get(key)
        if task is None:
            task = asyncio.create_task(self._list(spec, key), name=f"mcp-list:{spec.name}")
            self._listing_tasks[key] = task
            task.add_done_callback(lambda done: self._listing_done(key, done))
        try:
            # Shielded: a run stopped meanwhile does not stop the listing others wait for.
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # this run was stopped
            raise ServerGone("the tool servers were closed during the listing") from None

    def _listing_done(self, key: tuple, task: asyncio.Task) -> None:
        if self._listing_tasks.get(key) is task:
            del self._listing_tasks[key]
        if not task.cancelled():
            task.exception()  # retrieved: a failure nobody waits for any more is no error

    async def _list(self, spec: McpServerSpec, key: tuple) -> ToolListing:
        try:
            async with asyncio.timeout(self.start_timeout + 5):
                connection = await self.connection(spec)
                listing = await connection.list_tools(keep=spec.allows, limit=self.max_tools)
        except Exception as exc:
            timed_out = isinstance(_unwrap(exc), TimeoutError) and not str(_unwrap(exc))
            reason = "the server did not answer in time" if timed_out else _describe(exc)
            previous = self._failures.get(spec.connection_key)
            in_a_row = previous.in_a_row + 1 if previous is not None else 1
            memory = min(
                self.failure_memory * 2 ** (in_a_row - 1),
                max(self.failure_memory, MAX_FAILURE_MEMORY),
            )
            # Counted from now, when it failed: the attempt may have taken the whole start
            # timeout, and a memory counted from before it would be over already.
            self._failures[spec.connection_key] = _Failure(
                reason, time.monotonic() + memory, in_a_row
            )
            raise ServerGone(reason) from None
        self._failures.pop(spec.connection_key, None)
        if listing.cut:
            logger.warning(
                "MCP server %s lists more tools than are offered: only its first %d are "
                "(FIMONE_MCP_MAX_TOOLS=%d)",
                spec.name,
                len(listing.tools),
                self.max_tools,
            )
        self._listings[key] = (time.monotonic() + self.list_ttl, listing)
        return listing

    async def toolset(self, specs: Sequence[McpServerSpec], *, vision: bool) -> McpToolset:
        """The tools of ``specs`` for one run (their servers listed concurrently)."""
        results = await asyncio.gather(
            *(self.listing(spec) for spec in specs), return_exceptions=True
        )
        tools: list[Tool] = []
        problems: list[ServerProblem] = []
        capped: list[ServerCap] = []
        for spec, listed in zip(specs, results, strict=True):
            if isinstance(listed, BaseException):
                if isinstance(listed, asyncio.CancelledError):
                    raise listed
                logger.warning("MCP server %s left out of this run: %s", spec.name, listed)
                problems.append(ServerProblem(spec.name, str(listed)))
                continue
            tools.extend(self._tool(spec, entry, vision) for entry in listed.tools)
            if listed.cut:
                capped.append(ServerCap(spec.name, len(listed.tools), self.max_tools))
        return McpToolset(tools, problems, capped)

    def retire(self, keep: Sequence[McpServerSpec]) -> list[str]:
        """Close the connections of servers not in ``keep`` (removed, switched off or
        changed since they were started: a stdio server's process ends) and forget their
        listings and failures; the names of the servers closed. A call still running on
        one of them ends with the error a stopped server gives."""
        wanted = {spec.connection_key for spec in keep}
        closed = []
        for key in [key for key in self._connections if key not in wanted]:
            connection = self._connections.pop(key)
            closed.append(connection.spec.name)
            closing = asyncio.create_task(connection.aclose())
            self._closing.add(closing)  # kept until done: a task is only weakly held
            closing.add_done_callback(self._closing.discard)
        for key in [key for key in self._listings if key[0] not in wanted]:
            del self._listings[key]
        for key in [key for key in self._failures if key not in wanted]:
            del self._failures[key]
        return closed

    def cached_tools(self, specs: Sequence[McpServerSpec]) -> list[Tool]:
        """The tools of ``specs`` whose listing is cached (no server is asked)."""
        tools: list[Tool] = []
        for spec in specs:
            cached = self._listings.get((spec.connection_key, spec.allowed_tools))
            if cached is not None:
                tools.extend(self._tool(spec, t, False) for t in cached[1].tools)
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
        for task in self._listing_tasks.values():
            task.cancel()
        connections = list(self._connections.values())
        self._connections.clear()
        self._listings.clear()
        self._failures.clear()
        await asyncio.gather(*(c.aclose() for c in connections), return_exceptions=True)
