"""Which addresses ``fetch_url`` may connect to (server-side request forgery protection).

A fetched URL comes from a model, and a model repeats what a page or a user told it: left
alone it would read the server's own admin ports, the office network or the cloud's
metadata service (which hands out credentials). So every address a fetch connects to must
be public, unless the operator allowed its host name or network in
``FIMONE_FETCH_ALLOWED_HOSTS``. A metadata address is the exception: only an entry naming
exactly that address allows it, never a host name or a network that contains it. The
check is on the resolved address (docs/tools.md, "Web pages"); addresses that carry an
IPv4 address inside an IPv6 one are judged by the IPv4 address they lead to.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Metadata services answer on these (AWS, GCP, Azure, OpenStack: 169.254.169.254; AWS over
# IPv6; Alibaba; Oracle's older one). Most are in a refused range anyway: listed so that the
# refusal names them, and so that an allowed network never lets them through by accident.
_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200", "192.0.0.192")
)
# Shared address space between a carrier's NAT and its customers (RFC 6598).
_SHARED = ipaddress.ip_network("100.64.0.0/10")
# The well-known NAT64 prefix: 64:ff9b::a.b.c.d reaches a.b.c.d through a NAT64 gateway.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_HOST_NAME = re.compile(r"^(?:\*\.|\.)?(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?\.?)+$", re.I)


class AddressRefused(Exception):
    """A connection this policy does not allow; the message is written for the model."""


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address leads to (mapped, NAT64, 6to4, Teredo), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def is_metadata(address: IPAddress) -> bool:
    """Whether ``address`` is (or leads to) a cloud metadata service's address."""
    return address in _METADATA or embedded_ipv4(address) in _METADATA


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not public ("a loopback address", …), or None when it is."""
    inner = embedded_ipv4(address)
    if inner is not None:
        return refusal_reason(inner)
    if address in _METADATA:
        return "the address of a cloud metadata service"
    checks = (
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (
            isinstance(address, ipaddress.IPv4Address) and address in _SHARED,
            "a shared (CGNAT) address",
        ),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a public address"),
    )
    return next((reason for refused, reason in checks if refused), None)


@dataclass(frozen=True)
class AddressPolicy:
    """Public addresses only, plus the host names and networks the operator allowed.

    A host name entry allows that name (``.example.com`` or ``*.example.com``: its
    subdomains too) whatever it resolves to; a network or address entry allows connections
    to addresses inside it, whatever name led there.
    """

    hosts: frozenset[str] = frozenset()
    domains: tuple[str, ...] = ()  # ".example.com": any name ending so
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_entries(cls, entries: Iterable[str]) -> AddressPolicy:
        """The policy of ``FIMONE_FETCH_ALLOWED_HOSTS`` entries; ValueError names a bad one."""
        hosts: set[str] = set()
        domains: list[str] = []
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower().strip("[]")
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            except ValueError:
                pass
            if "/" in entry or ":" in entry or not _HOST_NAME.match(entry):
                raise ValueError(
                    f"{raw.strip()!r} is neither a host name nor an address or network "
                    "such as 10.0.0.0/8"
                )
            if entry.startswith(("*.", ".")):
                domains.append("." + entry.lstrip("*."))
            else:
                hosts.add(entry.rstrip("."))
        return cls(frozenset(hosts), tuple(domains), tuple(networks))

    def host_allowed(self, host: str) -> bool:
        name = host.lower().rstrip(".")
        return name in self.hosts or any(name.endswith(d) for d in self.domains)

    def metadata_allowed(self, address: IPAddress) -> bool:
        """Whether an entry names exactly ``address`` (or the IPv4 address it leads to):
        the only way a metadata address is allowed."""
        named = {n.network_address for n in self.networks if n.num_addresses == 1}
        return address in named or embedded_ipv4(address) in named

    def address_allowed(self, address: IPAddress) -> bool:
        candidates = [address]
        inner = embedded_ipv4(address)
        if inner is not None:
            candidates.append(inner)
        return any(
            a in network
            for a in candidates
            for network in self.networks
            if a.version == network.version
        )

    def check(self, host: str, address: IPAddress) -> None:
        """Raise ``AddressRefused`` unless a connection to ``address`` for ``host`` is
        allowed."""
        if is_metadata(address):
            # Credentials are handed out there: an allowed name (which may be re-pointed),
            # a wildcard or a network that merely contains the address is no consent.
            if self.metadata_allowed(address):
                return
        elif self.host_allowed(host) or self.address_allowed(address):
            return
        reason = refusal_reason(address)
        if reason is None:
            return
        shown = host if host == str(address) else f"{host} (which resolves to {address})"
        allow = (
            "An operator can allow exactly this address (not a network around it) in "
            "FIMONE_FETCH_ALLOWED_HOSTS."
            if is_metadata(address)
            else "An operator can allow this host or network in FIMONE_FETCH_ALLOWED_HOSTS."
        )
        raise AddressRefused(
            f"refused to connect to {shown}: that is {reason}, and fetch_url only "
            f"reads public web pages. {allow}"
        )
