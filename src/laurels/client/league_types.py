"""The bodies of the league calls (docs/contract.md, Leagues), as the client
types them: the league's values (`Literal`s) and bodies (`TypedDict`s),
apart from types.py, which holds the rest of the API's."""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias, TypedDict

from laurels.client.types import Entry

LeagueStatus: TypeAlias = Literal["none", "pending", "placed"]
LeagueZone: TypeAlias = Literal["promotion", "demotion"]
LeagueOutcome: TypeAlias = Literal["promoted", "demoted", "stayed"]
LeagueReason: TypeAlias = Literal["no_completion", "hidden", "suspended"]


class LeagueEntry(Entry):
    """A row of a league cohort's board (as decided, once the week is)."""

    zone: LeagueZone | None  # promotion, demotion, or neither
    self: bool  # the caller's own row: always with their real name
    outcome: NotRequired[LeagueOutcome]  # only once the week is decided


class LeagueStanding(TypedDict):
    """The learner's own row of their cohort's board."""

    rank: int
    score: int
    zone: LeagueZone | None


class LeagueResult(TypedDict):
    """How a decided week ended for the learner."""

    rank: int | None  # null: hidden, suspended or without counted points then
    outcome: LeagueOutcome
    new_tier: str


class League(TypedDict):
    """A learner's league of a week: `GET /v1/users/{user_id}/league`."""

    season: str
    status: LeagueStatus
    tier: str  # the tier they play (or would play) in
    tier_index: int  # 0: the lowest
    cohort_id: str | None  # null unless placed
    ends_at: str
    decides_at: str  # the week's end plus the league grace
    promote: int  # ranks of their cohort that go up (fewer in a small cohort)
    demote: int  # ranks of their cohort that go down
    entries: list[LeagueEntry]  # their cohort's board; empty unless placed
    self: LeagueStanding | None  # null unless on their cohort's board
    result: LeagueResult | None  # null until the week is decided
    reason: LeagueReason | None  # why `none`: null otherwise
    waiting_for: str | None  # the week a `pending` learner waits for: null otherwise


class CohortBoard(TypedDict):
    """A league cohort's board: `GET /v1/leagues/{season}/cohorts/{cohort_id}`."""

    season: str
    tier: str
    cohort_id: str
    decided: bool
    entries: list[LeagueEntry]


class LeagueRecord(TypedDict):
    """One decided week of a learner's leagues."""

    season: str
    tier: str
    cohort_id: str
    rank: int | None
    outcome: LeagueOutcome
    new_tier: str


class LeagueHistory(TypedDict):
    """A learner's decided weeks: `GET /v1/users/{user_id}/league/history`."""

    results: list[LeagueRecord]  # newest first
    next: str | None


class LeagueTier(TypedDict):
    """One tier of a week's leagues."""

    tier: str
    cohorts: int
    members: int
    promoted: int  # 0 until the week is decided
    demoted: int


class CohortRef(TypedDict):
    """One cohort of a week's leagues."""

    cohort_id: str
    tier: str
    members: int
    decided: bool  # the week is decided


class CohortList(TypedDict):
    """A week's cohorts: `GET /v1/admin/leagues/{season}/cohorts`."""

    cohorts: list[CohortRef]  # by tier then cohort
    next: str | None


class LeagueSummary(TypedDict):
    """A week's leagues: `GET /v1/admin/leagues/{season}`."""

    season: str
    decided: bool
    tiers: list[LeagueTier]  # every tier, lowest first
