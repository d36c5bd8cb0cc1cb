"""A league cohort's board as the API shows it (CONTRACT.md, Leagues), pure:
rows ranked by the week's board or by the decision (leagues/cohorts.py), shown to a
caller, whose own row carries `"self": true` and their real name."""

from __future__ import annotations

from laurels.board.values import Entry
from laurels.core import shapes
from laurels.core.registry import Zone
from laurels.reads.boards import public_entry

# A cohort's board: its entries, by learner each one's standing, and `n`,
# how many entries its zones are scaled by (LeagueRules.scaled).
CohortRows = tuple[list[shapes.LeagueEntry], dict[int, shapes.LeagueSelf], int]

OUTCOME_ZONES: dict[str, Zone | None] = {"promoted": "promotion", "demoted": "demotion",
                                         "stayed": None}


def board_rows(shown: list[tuple[Entry, Zone | None, str | None]], caller: int | None,
               n: int) -> CohortRows:
    """A cohort board's rows (entry, zone, outcome once decided): the
    caller's own with their real name (an anonymous learner finds
    themselves), every other as the public sees it; by learner, each one's
    standing; and `n`."""
    entries: list[shapes.LeagueEntry] = []
    standings: dict[int, shapes.LeagueSelf] = {}
    for entry, zone, outcome in shown:
        mine = entry.user_id == caller
        public = public_entry(entry) if not mine else None
        row: shapes.LeagueEntry = {
            "rank": entry.rank, "user_id": public["user_id"] if public else entry.user_id,
            "display_name": public["display_name"] if public else entry.display_name,
            "score": entry.score, "zone": zone, "self": mine}
        if outcome is not None:
            row["outcome"] = shapes.league_outcome(outcome)
        entries.append(row)
        standings[entry.user_id] = {"rank": entry.rank, "score": entry.score, "zone": zone}
    return entries, standings, n
