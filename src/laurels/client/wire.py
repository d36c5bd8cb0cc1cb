"""How a call's arguments go on the wire: a path segment, a page, a board, a
field left out."""

from __future__ import annotations

from enum import Enum
from typing import Any, Final
from urllib.parse import quote


class Unchanged(Enum):
    """The default of an argument whose None means something (`put_group`'s
    `team`: None takes the group out of its team kind): left out of the
    body, so the field stays as it is."""

    UNCHANGED = "UNCHANGED"

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Final = Unchanged.UNCHANGED


def seg(value: object) -> str:
    return quote(str(value), safe="")


def page(limit: int, after: str | None) -> dict[str, Any]:
    return {"limit": limit, **({"after": after} if after else {})}


def on(board: str) -> dict[str, Any]:
    """`?board=`: a board of a kind (`course:python-101`); none for `global`."""
    return {} if board == "global" else {"board": board}
