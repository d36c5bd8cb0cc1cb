"""How a call's arguments go on the wire: a path segment, a page, a board."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote


def seg(value: object) -> str:
    return quote(str(value), safe="")


def page(limit: int, after: str | None) -> dict[str, Any]:
    return {"limit": limit, **({"after": after} if after else {})}


def on(board: str) -> dict[str, Any]:
    """`?board=`: a board of a kind (`course:python-101`); none for `global`."""
    return {} if board == "global" else {"board": board}
