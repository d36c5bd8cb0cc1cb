"""The Redis projection of PostgreSQL completions: the one door to Redis.

Every Redis command of laurels runs here, as SQL runs only in `db/`; the
modules above ask for operations by name (`board.apply(deltas)`,
`board.switch(season, version)`), never for a client. What each part holds:

| module | what |
|---|---|
| `base.py` | the client, the registered Lua scripts, the versions this process believes current |
| `values.py` | the values: a `Delta` to apply, an `Entry` read, a stored profile |
| `apply.py` | applying deltas, profiles and erasures (lua/apply.lua, set_profile, erase) |
| `read.py` | reading the top, a neighbourhood, standings by id |
| `build.py` | building a version from PostgreSQL, switching, dropping, expiring |
| `inspection.py` | reading a version as it stands (its bits, corrections, profiles) to compare |
| `hints.py` | refresh hints and the messages published to every process |
| `subscribe.py` | the one Pub/Sub subscription of a process |
| `streams.py` | the seasons' rank-event streams, read by the notifier |
| `connection.py` | connecting, and refusing a server too old |
| `trust.py` | a connection untrusted until proven: no board read from a server in repair |
| `teams.py` | team boards: each team's score kept from its members' points and groups |
| `windows.py` | a rolling window's marker: the first day it holds, the days taken out |
| `keys.py` | every Redis key and channel name, and what each holds of learners |
| `roles.py` | what each caller uses of the board, one Protocol per role |
| `memory.py`, `memory_state.py`, `memory_read.py` | the roles in memory (the fast tier) |
| `lua/` | every script, each with its KEYS and ARGV written at its top |
"""

from __future__ import annotations

from laurels.board.apply import Applying
from laurels.board.base import CLUSTER_IN_FLIGHT, gather_bounded
from laurels.board.build import BuildGone, Building
from laurels.board.connection import raising_unavailable
from laurels.board.hints import Hint, Publishing, hint_of
from laurels.board.inspection import BoardState, Inspecting
from laurels.board.read import Reading
from laurels.board.streams import RankEvent, RankStreams
from laurels.board.subscribe import HintSubscription
from laurels.board.teams import Teaming, TeamKindKey, TeamRow, TeamsOf, TeamState
from laurels.board.values import (
    Around,
    BoardMissing,
    Delta,
    Entry,
    Profile,
    Scored,
    StoredProfile,
    Top,
    beside,
    default_name,
)
from laurels.board.windows import Windowing, WindowMarker


@raising_unavailable
class Board(Applying, Reading, Building, Publishing, RankStreams, Inspecting, Windowing,
            Teaming):
    """A season's boards in Redis, every operation the service needs of them.
    Each raises StoreUnavailable when Redis does not answer (connection.py)."""


__all__ = [
    "CLUSTER_IN_FLIGHT",
    "Around",
    "Board",
    "BoardMissing",
    "BoardState",
    "BuildGone",
    "Delta",
    "Entry",
    "Hint",
    "HintSubscription",
    "Profile",
    "RankEvent",
    "Scored",
    "StoredProfile",
    "TeamKindKey",
    "TeamRow",
    "TeamState",
    "TeamsOf",
    "Top",
    "WindowMarker",
    "beside",
    "default_name",
    "gather_bounded",
    "hint_of",
]
