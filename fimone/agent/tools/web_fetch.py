"""Getting one web resource for ``fetch_url``: the HTTP half, with its limits.

Every hop (the URL and each redirect) is checked before anything is sent: http or https
only; the host name resolved once, every address it resolves to checked against the
``AddressPolicy``, and the connection made to exactly that checked address, with the name
in the Host header and in TLS (SNI and certificate check). A second lookup at connect time
could answer differently (DNS rebinding), so there is none: each hop gets a client of its
own that knows only the address. No proxy from the environment is used, since a proxy
would make the connection the check never saw.

The body is streamed and cut at ``max_bytes`` (after decompression, which is bounded the
same way); the whole fetch has a deadline, and what arrived before it is kept.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx2

from .netpolicy import AddressPolicy, IPAddress

Resolver = Callable[[str, int], Awaitable[list[str]]]

REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "fimone-fetch/1.0 (an AI assistant reading a page a user asked about)"
_ACCEPT = (
    "text/html,application/xhtml+xml,application/json;q=0.9,text/plain;q=0.9,"
    "application/pdf;q=0.8,*/*;q=0.5"
)


class FetchError(Exception):
    """A fetch that did not get a page; the message is written for the model."""


@dataclass(frozen=True)
class FetchLimits:
    """How much one fetch may take: bytes of body, seconds, redirects."""

    max_bytes: int = 5 * 1024 * 1024
    total_seconds: float = 20.0
    connect_seconds: float = 5.0
    read_seconds: float = 10.0
    max_redirects: int = 5


@dataclass(frozen=True)
class FetchedBody:
    """What a fetch got: the final URL (after redirects), status, headers' content type
    and charset, the body, and why it was cut (``"size"``, ``"time"``) if it was."""

    url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    cut: str | None = None
    redirects: tuple[str, ...] = field(default=())


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system's resolver gives ``host`` (in a thread: never blocks)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=False)


async def fetch(
    url: str,
    *,
    policy: AddressPolicy,
    limits: FetchLimits,
    resolver: Resolver = system_resolver,
    tls: ssl.SSLContext | None = None,
) -> FetchedBody:
    """GET ``url``, following redirects; raises ``FetchError`` (or ``AddressRefused``).
    ``tls``: the certificates to trust (default: the system's)."""
    if tls is None:
        tls = await asyncio.to_thread(_tls_context)  # reads the CA bundle once per process
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limits.total_seconds
    current = _parse(url)
    redirects: list[str] = []
    try:
        async with asyncio.timeout_at(deadline):
            while True:
                response, client = await _open(current, policy, limits, resolver, tls)
                location = response.headers.get("location")
                if response.status_code not in REDIRECTS or not location:
                    break
                await response.aclose()
                await client.aclose()
                if len(redirects) >= limits.max_redirects:
                    raise FetchError(
                        f"too many redirects (more than {limits.max_redirects}), last to {location}"
                    )
                current = _parse(str(current.join(location)), redirected_from=current)
                redirects.append(str(current))
    except TimeoutError:
        raise FetchError(
            f"gave up on {current} after {limits.total_seconds:g} seconds without an answer"
        ) from None
    try:
        body, cut = await _read_body(response, limits.max_bytes, deadline)
    finally:
        await response.aclose()
        await client.aclose()
    content_type = response.headers.get("content-type", "")
    return FetchedBody(
        url=str(current),
        status=response.status_code,
        content_type=content_type.split(";", 1)[0].strip().lower(),
        charset=response.charset_encoding,
        body=body,
        cut=cut,
        redirects=tuple(redirects),
    )


def _parse(url: str, redirected_from: httpx2.URL | None = None) -> httpx2.URL:
    where = f" (a redirect from {redirected_from})" if redirected_from else ""
    try:
        parsed = httpx2.URL(url.strip())
    except (httpx2.InvalidURL, TypeError) as exc:
        raise FetchError(f"{url!r} is not a valid URL{where}: {exc}") from None
    if not parsed.scheme:
        raise FetchError(
            f"only http:// and https:// URLs can be fetched, and {url!r} has no scheme{where}: "
            "write it as https://…"
        )
    if parsed.scheme not in ("http", "https"):
        raise FetchError(
            f"only http:// and https:// URLs can be fetched, not {parsed.scheme}://{where}: {url}"
        )
    if not parsed.host:
        raise FetchError(f"{url!r} names no host{where}")
    return parsed.copy_with(fragment=None)


async def _addresses(
    url: httpx2.URL, policy: AddressPolicy, limits: FetchLimits, resolver: Resolver
) -> list[IPAddress]:
    """The checked addresses to connect to for ``url``'s host; raises on any refused one."""
    host = url.raw_host.decode("ascii")
    try:
        found: list[IPAddress] = [ipaddress.ip_address(host)]
    except ValueError:
        found = await _resolve(url, limits, resolver)
    for address in found:
        policy.check(host, address)  # one refused address refuses the name
    return found


async def _open(
    url: httpx2.URL,
    policy: AddressPolicy,
    limits: FetchLimits,
    resolver: Resolver,
    tls: ssl.SSLContext,
) -> tuple[httpx2.Response, httpx2.AsyncClient]:
    """The response headers of a GET of ``url`` from the first of its checked addresses
    that answers; the client to close with the response."""
    addresses = await _addresses(url, policy, limits, resolver)
    host_header = url.netloc.decode("ascii")
    failures: list[str] = []
    for address in addresses:
        client = httpx2.AsyncClient(
            transport=httpx2.AsyncHTTPTransport(verify=tls, trust_env=False, retries=0),
            trust_env=False,
            follow_redirects=False,
            timeout=httpx2.Timeout(
                connect=limits.connect_seconds,
                read=limits.read_seconds,
                write=limits.read_seconds,
                pool=limits.connect_seconds,
            ),
        )
        request = client.build_request(
            "GET",
            url.copy_with(host=str(address)),
            headers={
                "Host": host_header,
                "User-Agent": USER_AGENT,
                "Accept": _ACCEPT,
                "Accept-Encoding": "gzip, deflate",
            },
            # The name (in its ASCII form) for SNI and the certificate check.
            extensions={"sni_hostname": url.raw_host.decode("ascii")}
            if url.scheme == "https"
            else {},
        )
        try:
            return await client.send(request, stream=True), client
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            await client.aclose()
            failures.append(f"{address}: {exc or type(exc).__name__}")
        except httpx2.ReadTimeout:
            await client.aclose()
            raise FetchError(
                f"{url.host} did not answer within {limits.read_seconds:g} seconds"
            ) from None
        except httpx2.TransportError as exc:
            await client.aclose()
            raise FetchError(f"fetching {url} failed: {exc or type(exc).__name__}") from None
        except BaseException:
            await client.aclose()
            raise
    raise FetchError(f"could not connect to {url.host} ({'; '.join(failures)})")


async def _resolve(url: httpx2.URL, limits: FetchLimits, resolver: Resolver) -> list[IPAddress]:
    try:
        async with asyncio.timeout(limits.connect_seconds):
            names = await resolver(url.raw_host.decode("ascii"), url.port or _default_port(url))
    except (OSError, UnicodeError) as exc:
        raise FetchError(f"could not resolve the host {url.host}: {exc}") from None
    except TimeoutError:
        raise FetchError(f"resolving the host {url.host} took too long") from None
    if not names:
        raise FetchError(f"the host {url.host} has no address")
    # A scoped IPv6 address ("fe80::1%eth0") is judged without its scope.
    return [ipaddress.ip_address(name.split("%", 1)[0]) for name in names]


def _default_port(url: httpx2.URL) -> int:
    return 443 if url.scheme == "https" else 80


class _Inflater:
    """Bounded decompression of a gzip or deflate body: never more out than asked for."""

    def __init__(self, encoding: str) -> None:
        self.raw_deflate = False
        wbits = 16 + zlib.MAX_WBITS if encoding in ("gzip", "x-gzip") else zlib.MAX_WBITS
        self._decoder = zlib.decompressobj(wbits)
        self._deflate = encoding == "deflate"

    def feed(self, data: bytes, room: int) -> bytes:
        try:
            return self._decoder.decompress(data, room)
        except zlib.error:
            if not self._deflate or self.raw_deflate:
                raise
            # Some servers send deflate without its zlib header.
            self.raw_deflate = True
            self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._decoder.decompress(data, room)


async def _read_body(
    response: httpx2.Response, max_bytes: int, deadline: float
) -> tuple[bytes, str | None]:
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    inflater = None
    if encoding not in ("", "identity"):
        if encoding not in ("gzip", "x-gzip", "deflate"):
            raise FetchError(f"the server sent a body encoded as {encoding!r}, which is not read")
        inflater = _Inflater(encoding)
    body = bytearray()
    try:
        async with asyncio.timeout_at(deadline):
            async for chunk in response.aiter_raw():
                room = max_bytes - len(body)
                piece = inflater.feed(chunk, room + 1) if inflater else chunk[: room + 1]
                body += piece
                if len(body) > max_bytes:
                    return bytes(body[:max_bytes]), "size"
    except TimeoutError:
        if not body:
            raise FetchError(
                "the server sent nothing of the page before the time ran out"
            ) from None
        return bytes(body), "time"
    except zlib.error as exc:
        raise FetchError(f"the compressed body could not be read: {exc}") from None
    except httpx2.ReadTimeout:
        if not body:
            raise FetchError("the server stopped sending before the page began") from None
        return bytes(body), "time"
    except httpx2.TransportError as exc:
        raise FetchError(f"the connection broke while reading the page: {exc}") from None
    return bytes(body), None
