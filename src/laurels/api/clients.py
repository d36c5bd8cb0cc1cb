"""Who a request comes from: its peer's address, or, when the peer is a
proxy the operator trusts (LAURELS_TRUSTED_PROXIES), the address its
`X-Forwarded-For` names. Limits per client (event streams) count by this."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from laurels.settings import IPNetwork

UNKNOWN = "unknown"  # no peer address (a test transport, a unix socket)


def _trusted(address: str, proxies: Sequence[IPNetwork]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_of(scope: Any, proxies: Sequence[IPNetwork]) -> str:
    """The client's address. Behind trusted proxies, the rightmost address
    of `X-Forwarded-For` that is not one of them (each proxy appends the
    address it heard from; what lies left of an untrusted one may be
    forged). A forwarded header from an untrusted peer counts for nothing."""
    peer = scope.get("client")
    address = str(peer[0]) if peer else UNKNOWN
    if not proxies or not _trusted(address, proxies):
        return address
    forwarded: list[str] = []
    for name, value in scope.get("headers", ()):
        if name == b"x-forwarded-for":
            forwarded += [a.strip() for a in bytes(value).decode("latin-1").split(",")]
    for hop in reversed([a for a in forwarded if a]):
        if not _trusted(hop, proxies):
            return hop
    return forwarded[0] if forwarded and forwarded[0] else address
