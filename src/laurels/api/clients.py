"""Who a request comes from: its peer's address, or, when the peer is a
proxy the operator trusts (LAURELS_TRUSTED_PROXIES), the address its
`X-Forwarded-For` names. Limits per client (event streams) count by this."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from laurels.process.settings import IPNetwork

UNKNOWN = "unknown"  # no peer address (a test transport, a unix socket)


def trusted(address: str, proxies: Sequence[IPNetwork]) -> bool:
    """Whether `address` is one of the trusted proxies."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_of(scope: Any, proxies: Sequence[IPNetwork], v6_prefix: int = 64) -> str:
    """The client, as limits count it (`normalized`). Its address: behind
    trusted proxies, the rightmost address of `X-Forwarded-For` that is not
    one of them (each proxy appends the address it heard from; what lies
    left of an untrusted one may be forged). A forwarded header from an
    untrusted peer counts for nothing."""
    return normalized(_address_of(scope, proxies), v6_prefix)


def normalized(address: str, v6_prefix: int = 64) -> str:
    """One client, one name (issue 64): an IPv4 address however written (an
    IPv6-mapped one too: `::ffff:198.51.100.7`, `::ffff:c633:6407`) as
    its dotted form; an IPv6 address as its /`v6_prefix` network (one home
    connection holds a whole /64); anything else as it is."""
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]").partition("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, v6_prefix), strict=False))
    return str(ip)


def _address_of(scope: Any, proxies: Sequence[IPNetwork]) -> str:
    peer = scope.get("client")
    address = str(peer[0]) if peer else UNKNOWN
    if not proxies or not trusted(address, proxies):
        return address
    forwarded: list[str] = []
    for name, value in scope.get("headers", ()):
        if name == b"x-forwarded-for":
            forwarded += [a.strip() for a in bytes(value).decode("latin-1").split(",")]
    for hop in reversed([a for a in forwarded if a]):
        if not trusted(hop, proxies):
            return hop
    return forwarded[0] if forwarded and forwarded[0] else address


def share_of(peer: object, proxies: Sequence[IPNetwork], v6_prefix: int = 64) -> str | None:
    """Whom a connection's share of a process's connections is counted
    against (api/server.py): its peer, normalized; None for a trusted
    proxy's own (they carry many clients) or a peer with no address."""
    if not isinstance(peer, tuple) or not peer:
        return None
    address = str(peer[0])
    if proxies and trusted(address, proxies):
        return None
    return normalized(address, v6_prefix)


class ClientShares:
    """The connections each client holds in one server, so that one cannot
    take them all (issue 64)."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held: dict[str, int] = {}

    def take(self, client: str, most: int) -> bool:
        """One more for `client`, unless it holds `most` already."""
        held = self.held.get(client, 0)
        if held >= most:
            return False
        self.held[client] = held + 1
        return True

    def give(self, client: str) -> None:
        left = self.held.get(client, 1) - 1
        if left > 0:
            self.held[client] = left
        else:
            self.held.pop(client, None)
