"""MCP server definitions: the standard ``mcpServers`` JSON (Claude Desktop, Cursor,
LibreChat) read into ``McpServerSpec`` values, and the secrets their headers and
environment name (docs/tools.md, "MCP servers").

A secret is never written into a definition: a header or environment value names an
environment variable as ``${NAME}`` (or ``${env:NAME}``), resolved when the server is
connected by a lookup the caller gives, which refuses names off the operator's allow-list.
Plain Python: the chat layer reads the file and the admin's rows and hands specs here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .netpolicy import AddressPolicy, AddressRefused, IPAddress, is_metadata, refusal_reason

if TYPE_CHECKING:
    from .registry import Tool

DEFAULT_CALL_TIMEOUT = 60.0
SERVER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")
_SECRET_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamablehttp", "streamableHttp"}


class SecretRefused(ValueError):
    """A definition names an environment variable that may not serve as a secret."""

    def __init__(self, name: str, reason: str = "") -> None:
        self.name = name
        super().__init__(reason or f"{name} may not serve as a secret")


# name → value; raises SecretRefused for a name off the allow-list (or unset).
SecretLookup = Callable[[str], str]


def secret_names(value: str) -> list[str]:
    """The environment variables a header or environment value names."""
    return _SECRET_REF.findall(value or "")


def resolve_secrets(value: str, lookup: SecretLookup) -> str:
    """``value`` with every ``${NAME}`` replaced through ``lookup``."""
    return _SECRET_REF.sub(lambda m: lookup(m.group(1)), value)


@dataclass(frozen=True)
class McpServerSpec:
    """One configured server. ``allowed_tools`` None: every tool the server lists;
    ``approval_tools`` holds names (or ``*``) the user must approve before each call."""

    name: str
    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    allowed_tools: frozenset[str] | None = None
    approval_tools: frozenset[str] = frozenset()
    timeout: float = DEFAULT_CALL_TIMEOUT
    source: str = "file"
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def connection_key(self) -> tuple:
        """What identifies the connection: a change of any of it starts a new one. A stdio
        server's allow-list is part of it: its relay drops the tools left out of a listing
        (fimone/agent/tools/mcp_relay.py)."""
        allowed = self.allowed_tools if self.transport == "stdio" else None
        return (
            self.transport,
            self.command,
            self.args,
            self.env,
            self.cwd,
            self.url,
            self.headers,
            allowed,
        )

    def allows(self, tool: str) -> bool:
        return self.allowed_tools is None or tool in self.allowed_tools

    def needs_approval(self, tool: str) -> bool:
        return "*" in self.approval_tools or tool in self.approval_tools

    def secret_names(self) -> list[str]:
        values = [v for _, v in self.env] + [v for _, v in self.headers]
        return [name for value in values for name in secret_names(value)]


@dataclass(frozen=True)
class ParsedServers:
    servers: list[McpServerSpec]
    errors: list[str]  # one line per entry left out, for the log and the admin


def _names(value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("a list of tool names was expected")
    return frozenset(v.strip() for v in value if v.strip())


def _pairs(value: Any, what: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str | int | float) for k, v in value.items()
    ):
        raise ValueError(f"{what} must be an object of strings")
    return tuple(sorted((k, str(v)) for k, v in value.items()))


def server_from_entry(name: str, entry: Any, *, source: str = "file") -> McpServerSpec:
    """One ``mcpServers`` entry as a spec; ValueError says what is wrong with it.

    Besides the standard keys (``command``/``args``/``env``/``cwd`` or ``url``/``headers``,
    ``type``), fimone reads ``disabled``, ``allowedTools``, ``needsApproval`` and
    ``timeout`` (seconds per call)."""
    if not SERVER_NAME.match(name):
        raise ValueError("a server name is 1-40 letters, digits, '_' or '-'")
    if not isinstance(entry, Mapping):
        raise ValueError("an entry must be an object")
    kind = str(entry.get("type") or entry.get("transport") or "").strip()
    if not kind:
        kind = "stdio" if entry.get("command") else "http" if entry.get("url") else ""
    if kind in _HTTP_TYPES:
        kind = "http"
    if kind == "sse":
        raise ValueError("SSE servers are not supported; use the server's streamable HTTP URL")
    if kind not in ("stdio", "http"):
        raise ValueError("an entry needs a 'command' (stdio) or a 'url' (streamable HTTP)")
    timeout = entry.get("timeout", DEFAULT_CALL_TIMEOUT)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not 0 < timeout <= 3600:
        raise ValueError("timeout must be a number of seconds between 0 and 3600")
    common: dict[str, Any] = {
        "name": name,
        "allowed_tools": _names(entry.get("allowedTools")),
        "approval_tools": _names(entry.get("needsApproval")) or frozenset(),
        "timeout": float(timeout),
        "source": source,
        "extra": {"disabled": bool(entry.get("disabled", False))},
    }
    if kind == "stdio":
        command = entry.get("command")
        args = entry.get("args") or []
        if not isinstance(command, str) or not command.strip():
            raise ValueError("'command' must be a program to run")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("'args' must be a list of strings")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("'cwd' must be a folder")
        return McpServerSpec(
            transport="stdio",
            command=command,
            args=tuple(args),
            env=_pairs(entry.get("env"), "'env'"),
            cwd=cwd,
            **common,
        )
    url = entry.get("url")
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        raise ValueError("'url' must be an http or https URL")
    return McpServerSpec(
        transport="http", url=url, headers=_pairs(entry.get("headers"), "'headers'"), **common
    )


def parse_mcp_servers(data: Any, *, source: str = "file") -> ParsedServers:
    """The servers of an ``{"mcpServers": {name: entry}}`` document; a bad entry is left
    out with a line in ``errors``, the others stay usable."""
    if not isinstance(data, Mapping) or not isinstance(data.get("mcpServers"), Mapping):
        return ParsedServers([], ['the file must hold an object with "mcpServers": {…}'])
    servers, errors = [], []
    for name, entry in data["mcpServers"].items():
        try:
            servers.append(server_from_entry(str(name), entry, source=source))
        except ValueError as exc:
            errors.append(f"MCP server {name!r}: {exc}")
    return ParsedServers(servers, errors)


def unique(specs: Iterable[McpServerSpec]) -> list[McpServerSpec]:
    """The first spec of each name (the file's win over the admin's)."""
    seen: dict[str, McpServerSpec] = {}
    for spec in specs:
        seen.setdefault(spec.name, spec)
    return list(seen.values())


# What a run is offered by the servers, light to import: the client (and the MCP SDK
# behind it, about half a second of imports) loads only once a server is configured.
@dataclass(frozen=True)
class ServerProblem:
    server: str
    reason: str


@dataclass(frozen=True)
class ServerCap:
    """A server that lists more tools than are offered: only its first ``offered`` are
    (at most ``limit`` per server)."""

    server: str
    offered: int
    limit: int


@dataclass(frozen=True)
class McpToolset:
    tools: list[Tool]
    problems: list[ServerProblem]
    capped: list[ServerCap] = field(default_factory=list)


def address_refusal(host: str, addresses: Sequence[IPAddress], policy: AddressPolicy) -> str | None:
    """Why an admin-added server at ``host`` (resolving to ``addresses``) may not be
    connected to, or None. The decision is ``fetch_url``'s address policy: such a URL is
    typed by someone who cannot run a program here, and must not reach what a fetched page
    may not (loopback, this machine, the office network, a metadata service)."""
    for address in addresses:
        try:
            policy.check(host, address)
        except AddressRefused as exc:
            reason = refusal_reason(address)
            if reason is None:
                return str(exc)
            shown = host if host == str(address) else f"{host} (which resolves to {address})"
            allowed = "exactly this address" if is_metadata(address) else "its host or network"
            return (
                f"{shown} is {reason}: a tool server added in the admin must be on a public "
                f"address unless the operator allows {allowed} in FIMONE_FETCH_ALLOWED_HOSTS"
            )
    return None
