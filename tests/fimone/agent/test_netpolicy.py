"""The address policy of ``fetch_url``: public addresses only, unless allowed."""

from __future__ import annotations

import ipaddress
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fimone.agent.tools.netpolicy import AddressPolicy, AddressRefused, refusal_reason

REFUSED = {
    "127.0.0.1": "a loopback address",
    "127.8.9.10": "a loopback address",
    "::1": "a loopback address",
    "10.1.2.3": "a private address",
    "172.16.0.1": "a private address",
    "172.31.255.254": "a private address",
    "192.168.1.1": "a private address",
    "fd12:3456::1": "a private address",
    "169.254.1.1": "a link-local address",
    "fe80::1": "a link-local address",
    "100.64.0.1": "a shared (CGNAT) address",
    "100.127.255.254": "a shared (CGNAT) address",
    "224.0.0.1": "a multicast address",
    "239.255.255.250": "a multicast address",
    "ff02::1": "a multicast address",
    "0.0.0.0": "an unspecified address",
    "::": "an unspecified address",
    "240.0.0.1": "a private address",  # reserved, and Python files 240/4 as private too
    "169.254.169.254": "the address of a cloud metadata service",
    "fd00:ec2::254": "the address of a cloud metadata service",
    "100.100.100.200": "the address of a cloud metadata service",
    # IPv6 forms of an IPv4 address are judged by the IPv4 address.
    "::ffff:127.0.0.1": "a loopback address",
    "::ffff:10.0.0.1": "a private address",
    "::ffff:169.254.169.254": "the address of a cloud metadata service",
    "64:ff9b::7f00:1": "a loopback address",  # NAT64 of 127.0.0.1
    "2002:7f00:1::": "a loopback address",  # 6to4 of 127.0.0.1
    "2002:a00:1::": "a private address",  # 6to4 of 10.0.0.1
}
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address,reason", REFUSED.items())
def test_addresses_that_are_not_public_are_refused_with_their_kind(address, reason):
    assert refusal_reason(ipaddress.ip_address(address)) == reason
    with pytest.raises(AddressRefused, match=re.escape(f"that is {reason},")):
        AddressPolicy().check("example.com", ipaddress.ip_address(address))


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address):
    assert refusal_reason(ipaddress.ip_address(address)) is None
    AddressPolicy().check("example.com", ipaddress.ip_address(address))


_PRIVATE_V4 = [
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "100.64.0.0/10",
    )
]


@st.composite
def inner_v4(draw) -> ipaddress.IPv4Address:
    network = draw(st.sampled_from(_PRIVATE_V4))
    offset = draw(st.integers(0, network.num_addresses - 1))
    return network[offset]


@given(inner_v4())
def test_every_inner_address_is_refused_in_every_form(address):
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    nat64 = ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(address))
    for form in (address, mapped, nat64):
        assert refusal_reason(form) is not None, form


def test_an_allowed_host_name_may_resolve_anywhere():
    policy = AddressPolicy.from_entries(["wiki.intranet", ".corp.example"])
    policy.check("wiki.intranet", ipaddress.ip_address("10.0.0.7"))
    policy.check("WIKI.intranet.", ipaddress.ip_address("10.0.0.7"))
    policy.check("docs.corp.example", ipaddress.ip_address("192.168.3.4"))
    with pytest.raises(AddressRefused):
        policy.check("corp.example.evil.test", ipaddress.ip_address("192.168.3.4"))
    with pytest.raises(AddressRefused):
        policy.check("other.intranet", ipaddress.ip_address("10.0.0.7"))


def test_an_allowed_network_admits_its_addresses_whatever_the_name():
    policy = AddressPolicy.from_entries(["10.8.0.0/16", "[::1]", "127.0.0.1"])
    policy.check("build.local", ipaddress.ip_address("10.8.44.1"))
    policy.check("localhost", ipaddress.ip_address("::1"))
    policy.check("x", ipaddress.ip_address("::ffff:127.0.0.1"))
    with pytest.raises(AddressRefused, match="10.9.0.1"):
        policy.check("build.local", ipaddress.ip_address("10.9.0.1"))


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "exa mple.com", "http://example.com", "a/b"])
def test_a_bad_allow_list_entry_is_named(entry):
    with pytest.raises(ValueError, match="is neither a host name nor an address"):
        AddressPolicy.from_entries([entry])


@pytest.mark.parametrize(
    ("network", "address"),
    [
        ("100.64.0.0/10", "100.100.100.200"),
        ("169.254.0.0/16", "169.254.169.254"),
        ("0.0.0.0/0", "169.254.169.254"),
        ("0.0.0.0/0", "169.254.170.2"),
        ("fd00::/8", "fd00:ec2::254"),
        ("::/0", "::ffff:169.254.169.254"),
        ("192.0.0.0/24", "192.0.0.192"),
    ],
)
def test_ro12_a_metadata_address_never_passes_through_an_allowed_network(network, address):
    """RO.12, RO.13: a network that contains a metadata address allows its neighbours, not
    the credentials service; neither does a host name or a wildcard."""
    policy = AddressPolicy.from_entries([network, "metadata.google.internal", ".internal"])
    for host in (address, "metadata.google.internal", "x.internal"):
        with pytest.raises(AddressRefused, match="metadata service.*exactly this address"):
            policy.check(host, ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("entry", "address"),
    [
        ("169.254.169.254", "169.254.169.254"),
        ("169.254.169.254/32", "::ffff:169.254.169.254"),
        ("[fd00:ec2::254]", "fd00:ec2::254"),
    ],
)
def test_ro12_an_entry_naming_exactly_a_metadata_address_allows_it(entry, address):
    AddressPolicy.from_entries([entry]).check("metadata", ipaddress.ip_address(address))
    with pytest.raises(AddressRefused):
        AddressPolicy.from_entries([entry]).check("x", ipaddress.ip_address("169.254.170.2"))
