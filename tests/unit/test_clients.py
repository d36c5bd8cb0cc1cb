"""Who a request comes from (api/clients.py): the peer, or behind trusted
proxies the rightmost forwarded address that is not one of them."""

from __future__ import annotations

import ipaddress

import pytest

from laurels.api.clients import client_of

pytestmark = pytest.mark.once

PROXIES = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::1/128"))


def scope(peer: str | None, forwarded: str | None = None) -> dict[str, object]:
    headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded is not None else []
    return {"client": (peer, 1234) if peer else None, "headers": headers}


@pytest.mark.parametrize(("peer", "forwarded", "client"), [
    ("198.51.100.7", None, "198.51.100.7"),
    ("198.51.100.7", "1.2.3.4", "198.51.100.7"),       # an untrusted peer's header: ignored
    ("10.1.2.3", "203.0.113.9", "203.0.113.9"),         # a trusted proxy names the client
    ("10.1.2.3", "1.1.1.1, 203.0.113.9, 10.9.9.9", "203.0.113.9"),  # left of it: forgeable
    ("::1", "2001:db8::5", "2001:db8::/64"),             # an IPv6 client: its /64
    ("10.1.2.3", "10.2.2.2", "10.2.2.2"),               # only proxies: the leftmost
    ("10.1.2.3", None, "10.1.2.3"),
    (None, None, "unknown"),
])
def test_client_of(peer: str | None, forwarded: str | None, client: str) -> None:
    assert client_of(scope(peer, forwarded), PROXIES) == client


@pytest.mark.parametrize(("written", "client"), [
    ("198.51.100.7", "198.51.100.7"),
    ("::ffff:198.51.100.7", "198.51.100.7"),      # one IPv4 client, however written
    ("::ffff:c633:6407", "198.51.100.7"),
    ("0:0:0:0:0:ffff:c633:6407", "198.51.100.7"),
    ("2001:db8:1:2::5", "2001:db8:1:2::/64"),     # one home connection: its /64
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
    ("2001:DB8:1:2:0:0:0:9", "2001:db8:1:2::/64"),
    ("[2001:db8:1:3::1]", "2001:db8:1:3::/64"),
    ("fe80::1%eth0", "fe80::/64"),
    ("unknown", "unknown"),
])
def test_one_client_one_name(written: str, client: str) -> None:
    """Issue 64, point 2: limits per client count a client once, however
    its address is written; an IPv6 client by its /64."""
    assert client_of(scope(written), ()) == client
    assert client_of(scope("10.1.2.3", written), PROXIES) == client  # forwarded alike


def test_the_ipv6_prefix_is_configurable() -> None:
    assert client_of(scope("2001:db8:1:2::5"), (), v6_prefix=128) == "2001:db8:1:2::5/128"
    assert client_of(scope("2001:db8:1:2::5"), (), v6_prefix=48) == "2001:db8:1::/48"
