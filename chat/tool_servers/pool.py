"""The tool servers (MCP) of this server process: which are configured, and the one pool of
connections to them that every run shares (docs/tools.md, docs/operations.md).

Servers come from the operator's ``FIMONE_MCP_CONFIG`` file (stdio and HTTP) and from the
admin's ``ToolServer`` rows (streamable HTTP only). A file server gets a row the first time
it is seen, so the admin can switch it and its tools; its command, environment, URL and
headers are always the file's, and of the file and the row the stricter wins for switching
it off and for the tools that need approval. An admin-added server's URL obeys
``fetch_url``'s address policy, on save and on every connection. Secrets in headers and
environments are ``${NAME}`` references to environment variables on the allow-list shared
with model keys (``contextmgmt.secrets``), resolved when a server is connected.

One pool per process: a stdio server is one child of this process, reused by every run,
started again when it died, closed on shutdown and at the end of a drain (``close``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib
import ipaddress
import json
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.utils import timezone

from chat.models.tool_servers import ToolServer
from chat.tools.fetch import address_policy
from contextmgmt import generations
from contextmgmt.secrets import secret_env_allowed, secret_env_refusal
from fimone.agent.tools.mcp_config import (
    McpServerSpec,
    McpToolset,
    ParsedServers,
    SecretRefused,
    address_refusal,
    parse_mcp_servers,
    server_from_entry,
)

if TYPE_CHECKING:
    from fimone.agent.tools.mcp_client import McpPool

logger = logging.getLogger(__name__)

# The configured servers (file and rows) are read again when either changes: the file by
# its modification stamp, the rows by a generation token in Django's cache that a row's
# save or delete replaces (chat/signals.py, contextmgmt.generations) — shared through
# Redis when several processes serve (REDIS_URL), so a change made through one process
# reaches every other's next run.
GENERATION_KEY = "fimone:tool-servers:generation"

# The servers the last ``warm`` found current: what a run's engine then uses.
_validated: dict[str, list[McpServerSpec]] = {}


@dataclass
class _ProcessPool:
    """This process's connections, and the event loop they belong to."""

    pool: McpPool | None = None
    loop: asyncio.AbstractEventLoop | None = None


_pool = _ProcessPool()
# The health each server's row was last given by this process (``record_changes``): a row
# is written when it changes, not on every run.
_recorded: dict[str, tuple] = {}


@dataclass(frozen=True)
class ServerHealth:
    """One look at a server: the tools it listed (name and description), or why not."""

    server: str
    tools: tuple[tuple[str, str], ...] = ()
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def secret_lookup(name: str) -> str:
    """The value of an allowed secret variable; SecretRefused says why not."""
    if not secret_env_allowed(name):
        raise SecretRefused(name, secret_env_refusal(name))
    value = os.environ.get(name)
    if value is None:
        raise SecretRefused(name, f"the environment variable {name} is not set")
    return value


def read_config_file(path: str | None = None) -> ParsedServers:
    """The servers of the ``FIMONE_MCP_CONFIG`` file (re-read when it changes)."""
    path = settings.FIMONE_MCP_CONFIG if path is None else path
    if not path:
        return ParsedServers([], [])
    try:
        stat = Path(path).stat()
    except OSError as exc:
        return ParsedServers([], [f"FIMONE_MCP_CONFIG {path}: {exc.strerror or exc}"])
    return _parsed_file(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _parsed_file(path: str, mtime_ns: int, size: int) -> ParsedServers:
    """The file parsed, once per version of it (its stamp is the key)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        parsed = ParsedServers([], [f"FIMONE_MCP_CONFIG {path}: not readable JSON ({exc})"])
    else:
        parsed = parse_mcp_servers(data, source="file")
    for error in parsed.errors:
        logger.warning("%s", error)
    return parsed


def sync_file_rows(parsed: ParsedServers) -> dict[str, ToolServer]:
    """Every row by name, after adding one for each file server that has none."""
    rows = {row.name: row for row in ToolServer.objects.all()}
    for spec in parsed.servers:
        if spec.name in rows:
            continue
        try:
            with transaction.atomic():
                rows[spec.name] = ToolServer.objects.create(
                    name=spec.name,
                    source=ToolServer.Source.FILE,
                    transport=spec.transport,
                    enabled=not spec.extra.get("disabled", False),
                    allowed_tools="\n".join(sorted(spec.allowed_tools or ())),
                    approval_tools="\n".join(sorted(spec.approval_tools)),
                    timeout_seconds=spec.timeout,
                )
        except IntegrityError:  # another process added it first
            rows[spec.name] = ToolServer.objects.get(name=spec.name)
    return rows


def admin_row_spec(row: ToolServer) -> McpServerSpec:
    """An admin-defined (streamable HTTP) row as a spec; ValueError when it is unusable."""
    entry = {"type": "http", "url": row.url, "headers": row.headers or {}}
    return server_from_entry(row.name, entry, source="admin")


def url_refusal(url: str) -> str | None:
    """Why an admin may not add a server at ``url``: its host is, or resolves to, an address
    ``fetch_url`` may not reach (and the operator did not allow), or None. A name that does
    not resolve (yet) is not refused here: every connection checks it again (sync: a DNS
    lookup)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return None  # the URL field's own check says what is wrong
    if not host:
        return None
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            found = socket.getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return None
        addresses = [ipaddress.ip_address(info[4][0]) for info in found]
    return address_refusal(host, addresses, address_policy())


def configured_servers() -> list[McpServerSpec]:
    """The enabled servers, file first (a name defined in the file is the file's)."""
    parsed = read_config_file()
    rows = sync_file_rows(parsed)
    specs: list[McpServerSpec] = []
    for spec in parsed.servers:
        row = rows[spec.name]
        if row.source != ToolServer.Source.FILE:
            logger.warning("tool server %s: the file's definition wins over the admin's", spec.name)
        specs.append(_with_row(spec, row))
    file_names = {spec.name for spec in parsed.servers}
    for row in rows.values():
        if row.source == ToolServer.Source.ADMIN and row.name not in file_names and row.enabled:
            try:
                specs.append(_with_row(admin_row_spec(row), row))
            except ValueError as exc:
                logger.warning("tool server %s left out: %s", row.name, exc)
    return [spec for spec in specs if spec.extra.get("enabled")]


def _with_row(spec: McpServerSpec, row: ToolServer) -> McpServerSpec:
    """The spec as run: the row's allow-list and timeout; off if the file or the row says
    so, and a tool needs approval if either says so. The file is the operator's emergency
    switch: it must hold even after the admin touched the row (docs/operations.md)."""
    return dataclasses.replace(
        spec,
        allowed_tools=row.allowed_set,
        approval_tools=spec.approval_tools | row.approval_set,
        timeout=row.timeout_seconds,
        extra={**spec.extra, "enabled": row.enabled and not spec.extra.get("disabled", False)},
    )


def rows_generation() -> str:
    """The rows' current generation token."""
    return generations.current(GENERATION_KEY)


def _file_stamp() -> tuple:
    path = settings.FIMONE_MCP_CONFIG
    try:
        stat = Path(path).stat() if path else None
    except OSError:
        return (path, None)
    return (path, stat and (stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=1)
def _servers_at(generation: str, file_stamp: tuple) -> list[McpServerSpec]:
    """``configured_servers`` for one generation of the rows and one version of the file."""
    return configured_servers()


def warm() -> None:
    """Make sure the servers a run will use are current: the rows' generation and the
    file's stamp are checked, the rows read only when one changed (sync: a run calls it in
    the database thread that prepares it)."""
    _validated["specs"] = _servers_at(rows_generation(), _file_stamp())


async def current_servers() -> list[McpServerSpec]:
    """The servers ``warm`` found current (a run warms them as it is prepared: no thread
    hop here), else read now."""
    specs = _validated.get("specs")
    if specs is not None:
        return specs
    await database_sync_to_async(warm)()
    return _validated["specs"]


def forget_cached_servers() -> None:
    """Every process reads the file and the rows again on its next run: a row was saved or
    deleted (chat/signals.py) or changed in bulk (the admin's actions)."""
    generations.replace(GENERATION_KEY)
    _servers_at.cache_clear()
    _parsed_file.cache_clear()
    _validated.clear()
    _recorded.clear()


def pool() -> McpPool:
    """This process's pool (a new one on another event loop: a test's own loop)."""
    # Imported here: the MCP SDK is loaded once a server is configured, not by every
    # process start (docs/testing.md, "How long it takes").
    from fimone.agent.tools.mcp_client import McpPool

    loop = asyncio.get_running_loop()
    current = _pool.pool
    if current is None or _pool.loop is not loop:
        current = McpPool(
            secret_lookup,
            list_ttl=settings.FIMONE_MCP_TOOLS_TTL_SECONDS,
            start_timeout=settings.FIMONE_MCP_START_TIMEOUT_SECONDS,
            max_tools=max_tools(),
            policy=address_policy,
        )
        _pool.pool, _pool.loop = current, loop
    return current


def max_tools() -> int:
    """``FIMONE_MCP_MAX_TOOLS``, the most tools one server offers."""
    value = settings.FIMONE_MCP_MAX_TOOLS
    if value < 1:
        raise ImproperlyConfigured(f"FIMONE_MCP_MAX_TOOLS must be 1 or more, not {value}")
    return value


@transaction.atomic
def record_health(*, health: ServerHealth, full_listing: bool) -> None:
    """Keep what one look at a server found on its row, for the admin: when it was listed,
    with how many tools (their names and descriptions too when ``full_listing``: no
    allow-list cut it), or the error and when it happened."""
    now = timezone.now()
    if health.ok:
        changes: dict = {"last_listed_at": now, "tool_count": len(health.tools)}
        if full_listing:
            changes["listed_tools"] = [{"name": n, "description": d} for n, d in health.tools]
    else:
        changes = {"last_error": health.error[:2000], "last_error_at": now}
    ToolServer.objects.filter(name=health.server).update(**changes)


def _health_of(specs: list[McpServerSpec], served: McpToolset) -> list[ServerHealth]:
    failed = {problem.server: problem.reason for problem in served.problems}
    looks = []
    for spec in specs:
        if spec.name in failed:
            looks.append(ServerHealth(spec.name, error=failed[spec.name]))
            continue
        prefix = f"mcp:{spec.name}"
        # The server's own names (the admin's rules use them), not the namespaced ones.
        tools = tuple(
            (tool.name.removeprefix(f"{spec.name}__"), tool.description)
            for tool in served.tools
            if tool.source == prefix
        )
        looks.append(ServerHealth(spec.name, tools=tools))
    return looks


async def record_changes(specs: list[McpServerSpec], served: McpToolset) -> None:
    """Write the health of the servers whose listing changed since this process last wrote
    it (a failure is kept from when it happened; a run with nothing new writes nothing)."""
    for health in _health_of(specs, served):
        key = (health.error, tuple(name for name, _ in health.tools))
        if _recorded.get(health.server) == key:
            continue
        _recorded[health.server] = key
        spec = next(s for s in specs if s.name == health.server)
        try:
            await database_sync_to_async(record_health)(
                health=health, full_listing=spec.allowed_tools is None
            )
        except Exception:  # the health is for the admin; a run never fails over it
            logger.exception("tool server %s: its health could not be kept", health.server)


async def test_connection(spec: McpServerSpec) -> ServerHealth:
    """Start (or connect to) the server on a connection of its own, list every tool it
    offers (no allow-list), close it: the admin's "test connection"."""
    from fimone.agent.tools.mcp_client import McpPool

    probe = McpPool(
        secret_lookup,
        list_ttl=0,
        start_timeout=settings.FIMONE_MCP_START_TIMEOUT_SECONDS,
        max_tools=max_tools(),
        policy=address_policy,
    )
    whole = dataclasses.replace(spec, allowed_tools=None)
    try:
        listing = await probe.listing(whole)
    except Exception as exc:
        return ServerHealth(spec.name, error=str(exc) or type(exc).__name__)
    finally:
        await probe.aclose()
    return ServerHealth(
        spec.name,
        tools=tuple(
            (tool.name, (tool.description or tool.title or "").strip()) for tool in listing.tools
        ),
    )


def spec_for_row(row: ToolServer) -> McpServerSpec | None:
    """The server a row stands for, as the file or the row defines it (None: no longer in
    the file; ValueError: an admin row that is unusable)."""
    if row.source == ToolServer.Source.FILE:
        return next((s for s in read_config_file().servers if s.name == row.name), None)
    return admin_row_spec(row)


async def server_tools(*, vision: bool) -> McpToolset:
    """The tools of the enabled servers for one run, and the servers left out."""
    specs = await current_servers()
    if not specs and _pool.pool is None:
        return McpToolset([], [])  # nothing configured, nothing started
    if _pool.pool is None:
        # The MCP SDK's first import takes a second or more (pydantic models): in a
        # thread, so that the first run with a server configured does not pause the loop.
        await asyncio.to_thread(importlib.import_module, "fimone.agent.tools.mcp_client")
    current = pool()
    # A server taken out of the file or the admin, or switched off, is stopped here rather
    # than at the next restart.
    for name in current.retire(keep=specs):
        logger.info("MCP server %s is no longer configured: its connection is closed", name)
    if not specs:
        return McpToolset([], [])
    served = await current.toolset(specs, vision=vision)
    await record_changes(specs, served)
    return served


def cached_server_tools() -> list:
    """The servers' tools as the next run will likely offer them, from what this process
    listed last (no server is asked, nothing is started): the context gauge counts them."""
    current = _pool.pool
    if current is None:
        return []
    if _validated.get("specs") is None:
        warm()  # the rows are read only when they changed, as for a run
    return current.cached_tools(_validated["specs"])


async def close() -> None:
    """Close every connection of this process (stdio servers exit)."""
    current = _pool.pool
    _pool.pool, _pool.loop = None, None
    _recorded.clear()
    if current is not None:
        await current.aclose()
