"""The rules of weekly leagues (docs/contract.md, Leagues), pure.

Tiers are numbered from 0 (the lowest). A cohort is the `cohort`-th group
of `size` learners of a tier in a week; its id is opaque to clients
(`2026-W49.2.17`: week, tier, cohort). Zones on a cohort's board of `n`
entries scale with `n` (`LeagueRules.cutoffs`, the one place the rule is
written): `p = ceil(PROMOTE * n / SIZE)` ranks promote and `d = floor(DEMOTE
* n / SIZE)` demote, so a small newest cohort promotes few; `promotion` when
`rank <= p` and the tier is not the highest, `demotion` when `rank >
max(p, n - d)` and the tier is not the lowest, else none. The zone pass,
the cohort board and the decision all take their zones from `cutoffs` (the
decision as a table of them: db/queries/leagues.sql, decide_league_week).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from laurels.core.registry import Zone
from laurels.core.seasons import Season, shifted
from laurels.process.settings import Settings, per_tier

Outcome = Literal["promoted", "demoted", "stayed"]
# The most members a cohort can hold: LAURELS_LEAGUE_SIZE's bound (a size
# lowered later leaves earlier weeks' cohorts as they were).
MAX_COHORT = 100
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

    def scaled(self, tier: int, n: int) -> tuple[int, int]:
        """(p, d): how many ranks of a cohort board of `n` entries of a tier
        promote and demote (CONTRACT.md, Leagues): PROMOTE and DEMOTE scaled
        to its size (in integers: `ceil` and `floor` exactly), so a full
        cohort has PROMOTE and DEMOTE and a smaller one proportionally fewer."""
        return -(-self.promote[tier] * n // self.size), self.demote[tier] * n // self.size

    def cutoffs(self, tier: int, n: int) -> tuple[int, int]:
        """The zones of a cohort board of `n` entries of a tier, as two ranks:
        ranks up to the first are in the promotion zone (0 in the highest
        tier), ranks past the second in the demotion zone (`n` in the
        lowest). The one rule: `zone`, and through it the zone pass and the
        cohort board, and the decision (`cutoff_table`) use it."""
        p, d = self.scaled(tier, n)
        return (p if tier < self.top else 0, max(p, n - d) if tier > 0 else n)

    def cutoff_table(self) -> dict[str, list[int]]:
        """`cutoffs` of every tier and every size a cohort board can have, as
        the decision's statement takes them (one row per tier and `n`)."""
        rows = [(t, n, *self.cutoffs(t, n)) for t in range(len(self.tiers))
                for n in range(MAX_COHORT + 1)]
        return {"cut_tiers": [r[0] for r in rows], "cut_sizes": [r[1] for r in rows],
                "cut_promote": [r[2] for r in rows], "cut_demote": [r[3] for r in rows]}

    def zone(self, tier: int, rank: int | None, n: int) -> Zone | None:
        """The zone of `rank` on a cohort board of `n` entries of a tier."""
        if rank is None:
            return None
        promote_through, demote_after = self.cutoffs(tier, n)
        if rank <= promote_through:
            return "promotion"
        if rank > demote_after:
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

    def due(self, week: Season, now: datetime) -> bool:
        return now >= self.decides_at(week)
