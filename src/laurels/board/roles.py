"""What each caller of the board uses of it, one small interface per role.

The `Board` is one object (every Redis command of laurels runs in it), but
no caller needs all of it: ingest's projector applies, reads read, a
rebuild builds, the notifier consumes rank events. Each service takes the
role it uses, so its tests can run against a fake of only that (and a
reader of the service sees at once what it may do to Redis). mypy checks
that the Board is every role where `wire()` hands it out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Protocol

from laurels.board.hints import Hint
from laurels.board.inspection import BoardState
from laurels.board.keys import Keys
from laurels.board.streams import RankEvent
from laurels.board.teams import TeamKindKey, TeamRow, TeamsOf, TeamState
from laurels.board.trust import Trust
from laurels.board.values import Around, Delta, Profile, Scored, Standing, Top
from laurels.board.windows import WindowMarker
from laurels.core.ranking import Position, TiePolicy
from laurels.core.seasons import Season
from laurels.core.states import ApplyResult


class Hinting(Protocol):
    """Telling every process's caches and live streams that something changed."""

    async def publish_hint(self, hint: Hint) -> None: ...


class GroupHinting(Protocol):
    async def publish_group_change(self, group_id: str) -> None: ...


class Applier(Hinting, Protocol):
    """The projector's: applying completions and corrections (apply.lua)."""

    policy: TiePolicy

    async def apply(self, deltas: list[Delta], only_version: str | None = None
                    ) -> list[ApplyResult]: ...

    async def mark_ties(self, season: Season, user_ids: list[int]) -> list[str]: ...


class Reader(Protocol):
    """Reads': the top of a board and a learner's neighbourhood."""

    async def top(self, season: Season, limit: int, after: Position | None = None
                  ) -> Top: ...

    async def around(self, season: Season, user_id: int, radius: int
                     ) -> Around | None: ...


class TeamReader(Protocol):
    """Team boards' reads (reads/teams.py; board/teams.py)."""

    async def team_top(self, season: Season, version: str, kind: str, offset: int,
                       limit: int) -> tuple[int, list[TeamRow]] | None: ...

    async def team_of(self, season: Season, version: str, kind: str, user_id: int
                      ) -> TeamsOf | None: ...


class MemberReader(GroupHinting, Protocol):
    """Groups' and leagues' boards: some learners' standings, group changes."""

    async def standings_of(self, season: Season, user_ids: list[int],
                           board_rank: bool = False) -> list[Scored]: ...


class WindowMarking(Protocol):
    """A rolling window's marker (board/windows.py, window.lua)."""

    async def window(self, season: Season, op: str = "state", day: str = ""
                     ) -> WindowMarker: ...


class WindowMover(Applier, WindowMarking, Protocol):
    """lifecycle/windows.py's: the days leaving a window taken out of it."""

    async def forget_left(self, season: Season, version: str, seqs: Sequence[int]
                          ) -> None: ...


class TeamKeeper(GroupHinting, Protocol):
    """lifecycle/teams.py's: team boards filled, moved, dropped (board/teams.py)."""

    policy: TiePolicy

    async def team_state(self, season: Season, kind: TeamKindKey) -> TeamState: ...

    async def team_begin(self, season: Season, version: str, kind: TeamKindKey,
                         applied: int) -> bool: ...

    async def team_finish(self, season: Season, version: str, kind: TeamKindKey,
                          applied: int) -> bool: ...

    async def team_drop(self, season: Season, version: str, kind: str) -> None: ...

    async def team_members(self, season: Season, version: str, kind: TeamKindKey, op: str,
                           groups: Sequence[tuple[int, str]], expected: int = 0,
                           applied: int = 0) -> str: ...

    async def team_boards(self, kind: str | None = None) -> list[tuple[str, Season]]: ...

    async def forget_team_board(self, kind: str, season: Season) -> None: ...


class Builder(Hinting, WindowMarking, Protocol):
    """A rebuild's: a new version built beside the current one, then switched."""

    policy: TiePolicy
    keys: Keys

    async def begin_build(self, season: Season, parts: Sequence[str] = ()
                          ) -> tuple[str, str, list[str]]: ...

    async def switch(self, season: Season, version: str) -> str: ...

    async def abort_build(self, season: Season, version: str) -> None: ...

    async def drop_version(self, season: Season, version: str) -> None: ...

    async def drop_season(self, season: Season) -> int: ...

    async def expire(self, season: Season, at: datetime) -> int: ...

    async def merge_bits(self, season: Season, version: str, chunk: int, bits: bytes
                         ) -> list[int]: ...

    async def merge_fields(self, season: Season, version: str, fields: list[tuple[int, bytes]]
                           ) -> list[int]: ...

    async def load_erased(self, season: Season, version: str, current: str,
                          user_ids: Sequence[int]) -> None: ...

    async def load_corrections(self, season: Season, version: str,
                               corrected: Iterable[tuple[int, int, bool]]) -> None: ...

    async def load_standings(self, season: Season, version: str,
                             standings: Sequence[Standing]) -> int: ...


class Announcer(Protocol):
    """The notifier's: rank events in, notifications announced."""

    async def rank_events(self, season: Season, consumer: str, count: int, create: bool = True,
                          idle_ms: int = 30_000) -> list[RankEvent]: ...

    async def done_with(self, season: Season, entry_id: str) -> None: ...

    async def publish_notification(self, user_id: int, notification_id: int) -> None: ...

    async def announce_final(self, season: Season) -> None: ...


class LeagueAnnouncer(GroupHinting, Protocol):
    """Leagues': a cohort's members told of zones and results."""

    async def publish_notification(self, user_id: int, notification_id: int) -> None: ...

    async def announce_league_result(self, season: Season) -> None: ...


class ChallengeAnnouncer(Protocol):
    """The challenges': their notifications told to the live streams, and a
    decision hinted to their boards' streams."""

    async def publish_hint(self, hint: Hint) -> None: ...

    async def publish_notification(self, user_id: int, notification_id: int) -> None: ...

    async def announce_challenge_result(self, label: str) -> None: ...


class Profiles(Hinting, Protocol):
    """Learners': a profile projected onto a season's board."""

    async def set_profile(self, season: Season, user_id: int, profile: Profile) -> bool: ...


class Keeper(Hinting, GroupHinting, Protocol):
    """The lifecycle's: erasures, expiry of closed seasons, private files."""

    async def erase(self, season: Season, user_id: int, tombstone_until: datetime) -> bool: ...

    async def expire(self, season: Season, at: datetime) -> int: ...

    async def expire_many(self, seasons: dict[Season, datetime]) -> int: ...

    async def rewrite_files(self) -> bool: ...


class Dropper(Hinting, Protocol):
    """Board kinds': the boards of a deleted kind dropped, and those Redis
    holds of no kind defined (found by a scan)."""

    async def expire(self, season: Season, at: datetime) -> int: ...

    async def drop_season(self, season: Season) -> int: ...

    async def held_boards(self, kind: str | None = None) -> dict[Season, list[str]]: ...

    async def unlink_keys(self, keys: Sequence[str]) -> int: ...


class Presence(Protocol):
    """The healer's: whether a season has a board (yet)."""

    async def present(self, season: Season) -> bool: ...

    async def wait_present(self, season: Season, timeout_seconds: float) -> bool: ...


class Inspector(Hinting, Protocol):
    """A catch-up's: a version as it stands, and what it lacks (and a hint
    once it changed what readers see)."""

    async def board_state(self, season: Season) -> BoardState | None: ...

    async def missing(self, season: Season, version: str, seqs: list[int]) -> list[int]: ...

    async def corrections_of(self, season: Season, version: str
                             ) -> dict[int, tuple[int, bool]]: ...

    async def parts_of(self, season: Season, version: str) -> set[str]: ...

    async def learners(self, season: Season, version: str, most: int) -> list[int] | None: ...

    async def profile_versions(self, season: Season, user_ids: list[int]) -> dict[int, int]: ...

    async def set_profile(self, season: Season, user_id: int, profile: Profile) -> bool: ...

    async def erase(self, season: Season, user_id: int, tombstone_until: datetime) -> bool: ...


class Scanner(Protocol):
    """Verify's: every scored learner, and their scores."""

    policy: TiePolicy

    def scan_scored(self, season: Season, count: int = 2000) -> AsyncIterator[list[int]]: ...

    async def scores(self, season: Season, user_ids: list[int]
                     ) -> dict[int, tuple[int | None, str, str, int | None]]: ...


class Epochs(Presence, Protocol):
    """The epoch watch's: the server's run, and whether boards are there."""

    keys: Keys
    trust: Trust

    async def fingerprint(self) -> str: ...
