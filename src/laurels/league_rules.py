"""The rules of weekly leagues (docs/contract.md, Leagues), pure.

Tiers are numbered from 0 (the lowest). A cohort is the `cohort`-th group
of `size` learners of a tier in a week; its id is opaque to clients
(`2026-W49.2.17`: week, tier, cohort). Zones on a cohort's board of `n`
entries: `promotion` when `rank <= promote` and the tier is not the highest;
`demotion` when `rank > max(promote, n - demote)` and the tier is not the
lowest; else none. The decision's outcome follows the zone of the final
rank (the same rule, in SQL: db/queries/leagues.sql, decide_league_week).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from laurels.kinds import Zone
from laurels.seasons import Season, parse_season, shifted
from laurels.settings import Settings, per_tier

Outcome = Literal["promoted", "demoted", "stayed"]
COHORT_ID = re.compile(r"([0-9]{4}-W[0-9]{2})\.([0-9]{1,2})\.([0-9]{1,7})")


@dataclass(frozen=True)
class Cohort:
    season: str
    tier: int
    number: int

    @property
    def id(self) -> str:
        return f"{self.season}.{self.tier}.{self.number}"

    @property
    def stream_id(self) -> str:
        """The id its live stream rides on among the group streams: one no
        group can have ("/" is not in a group id's alphabet)."""
        return "league/" + self.id


def parse_cohort_id(text: str) -> Cohort | None:
    """The cohort an id names, or None when it names none."""
    m = COHORT_ID.fullmatch(text)
    if m is None:
        return None
    cohort = Cohort(m.group(1), int(m.group(2)), int(m.group(3)))
    return cohort if cohort.id == text else None  # one id per cohort (no leading zeros)


@dataclass(frozen=True)
class LeagueRules:
    tiers: tuple[str, ...]
    size: int
    promote: tuple[int, ...]  # per tier, lowest first
    demote: tuple[int, ...]
    grace_seconds: int
    time_zone: str  # the calendar of its weeks (LAURELS_TIME_ZONE)

    @classmethod
    def of(cls, settings: Settings) -> LeagueRules:
        n = len(settings.league_tiers)
        return cls(settings.league_tiers, settings.league_size,
                   tuple(per_tier(settings.league_promote, t) for t in range(n)),
                   tuple(per_tier(settings.league_demote, t) for t in range(n)),
                   settings.league_grace_seconds, settings.time_zone)

    @property
    def top(self) -> int:
        return len(self.tiers) - 1

    def tier_name(self, tier: int) -> str:
        return self.tiers[min(tier, self.top)]

    def zone(self, tier: int, rank: int | None, n: int) -> Zone | None:
        """The zone of `rank` on a cohort board of `n` entries of a tier."""
        if rank is None:
            return None
        promote, demote = self.promote[tier], self.demote[tier]
        if rank <= promote and tier < self.top:
            return "promotion"
        if rank > max(promote, n - demote) and tier > 0:
            return "demotion"
        return None

    def outcome(self, tier: int, rank: int | None, n: int) -> tuple[Outcome, int]:
        """The outcome of a final rank, and the tier it leads to."""
        zone = self.zone(tier, rank, n)
        if zone == "promotion":
            return "promoted", tier + 1
        if zone == "demotion":
            return "demoted", tier - 1
        return "stayed", tier

    def decides_at(self, week: Season) -> datetime:
        """When a week's leagues are decided: its end plus the league grace."""
        return shifted(week.ends_at, timedelta(seconds=self.grace_seconds))

    def due(self, season: str, now: datetime) -> bool:
        return now >= self.decides_at(parse_season(season, zone=self.time_zone))
