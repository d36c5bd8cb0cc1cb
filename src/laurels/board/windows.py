"""A rolling window's marker in Redis (keys.SeasonKeys.window; apply.lua,
"Windows"): the first local day the window holds, and how far the days
before it have been taken out. lifecycle/windows.py moves it; a rebuild sets
it where there is none (projection/rebuild.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from laurels.board.base import BoardBase
from laurels.board.lua_args import WindowArgs
from laurels.core.seasons import Season


class WindowMarker(NamedTuple):
    """A window's marker as window.lua answers it ('' for absent)."""

    busy: bool  # an advance refused (a version being built, or no board)
    current: str
    building: str
    first: str  # `from`: the first local day it holds
    done: str  # the first day not yet taken out
    forgot: str  # the first day whose leaving marks are not yet dropped


class Windowing(BoardBase):
    async def window(self, season: Season, op: str = "state", day: str = "") -> WindowMarker:
        """window.lua's `op` on the season's marker: its state after it."""
        sk = self.season_keys(season)
        reply = await self.scripts["window"](keys=[sk.current, sk.building, sk.window],
                                             args=list(WindowArgs(op, day)))
        status, *rest = (str(v) for v in reply)
        return WindowMarker(status == "BUSY", *rest)

    async def forget_left(self, season: Season, version: str, seqs: Sequence[int]) -> None:
        """The leaving marks of completions whose day the window no longer
        holds (apply.lua ignores those days, marks or not) dropped from the
        version's corrections hash, so it does not grow with every day."""
        if seqs:
            await self.redis.hdel(self.season_keys(season).version(version).corrections,
                                  *map(str, seqs))
