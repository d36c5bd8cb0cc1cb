"""A team kind as a value (CONTRACT.md, "Team boards"): groups of one team
kind are ranked against each other by an aggregate of their members' scores
(pure: lifecycle/teams.py keeps them; lua/_common.lua, "Teams", computes
them in Redis; db/queries/lifecycle/teams.sql in PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from laurels.board.teams import TeamRow
from laurels.core.errors import DomainError
from laurels.core.validation import unknown_field
from laurels.lifecycle.kind_rules import KIND, TITLE_MAX

Aggregate = Literal["sum", "mean", "top"]
AGGREGATES: tuple[Aggregate, ...] = get_args(Aggregate)
TOP_MAX = 100


@dataclass(frozen=True)
class TeamKind:
    """`aggregate`: `sum` of the members' scores; `mean` over every member
    (a member without points counts 0); `top`: the sum of the `top` best."""

    team: str
    title: str
    aggregate: Aggregate
    top: int | None
    members_version: int  # PostgreSQL's count of its membership changes (migration 041)
    created_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> TeamKind:
        return cls(row["team"], row["title"], row["aggregate"], row["top"],
                   int(row["members_version"]), row["created_at"])

    def same_as(self, other: TeamKind) -> bool:
        """Whether `other` ranks the same way (all but the title)."""
        return (self.aggregate, self.top) == (other.aggregate, other.top)

    def score(self, points: list[int]) -> float:
        """The aggregate of members' points (each member's, zero included)."""
        if self.aggregate == "top":
            return sum(sorted(points, reverse=True)[:self.top or 0])
        if self.aggregate == "mean":
            total = sum(points) / len(points) if points else 0
            return int(total) if float(total).is_integer() else total
        return sum(points)

    def contribution(self, points: int, members: int, counted: bool) -> float:
        """What a member's points add to their team's score."""
        if self.aggregate == "mean":
            share = points / members if members else 0
            return int(share) if float(share).is_integer() else share
        return points if counted else 0


def check_team(team: str) -> str:
    if not KIND.fullmatch(team):
        raise DomainError("validation_error", f"team must match ^{KIND.pattern}$")
    return team


def parse_team_kind(team: str, body: dict[str, Any], was: TeamKind | None,
                    now: datetime) -> TeamKind:
    """What a PUT's body makes of the team kind: the fields given, checked;
    the others as the kind has them (`was`), or their defaults (`sum`)."""
    unknown = sorted(set(body) - {"title", "aggregate", "top"})
    if unknown:
        raise DomainError("validation_error", unknown_field(unknown[0]))
    title = body.get("title", was.title if was else team.capitalize())
    if not isinstance(title, str) or not 1 <= len(title.strip()) <= TITLE_MAX:
        raise DomainError("validation_error", f"title must be 1 to {TITLE_MAX} characters")
    aggregate = body.get("aggregate", was.aggregate if was else "sum")
    if aggregate not in AGGREGATES:
        raise DomainError("validation_error", "aggregate must be sum, mean or top")
    top = body.get("top", was.top if was and "aggregate" not in body else None)
    if aggregate == "top":
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= TOP_MAX:
            raise DomainError("validation_error",
                              f'top must be 1 to {TOP_MAX} with "aggregate": "top"')
    elif top is not None:
        raise DomainError("validation_error", 'top is given only with "aggregate": "top"')
    return TeamKind(team, title.strip(), aggregate, top,
                    was.members_version if was else 0, was.created_at if was else now)


def ranked(kind: TeamKind, rows: Sequence[Any]) -> list[TeamRow]:
    """Teams from their members' sums (team_standings_*), ranked: ties share
    a rank, then by group id."""
    scored = []
    for r in rows:
        total, members = int(r["total"]), int(r["members"])
        score: float = (int(r["best"]) if kind.aggregate == "top"
                        else total / members if kind.aggregate == "mean" else total)
        scored.append((int(score) if float(score).is_integer() else score,
                       str(r["group_id"]), members))
    scored.sort(key=lambda t: (-t[0], t[1]))
    out: list[TeamRow] = []
    for i, (score, group_id, members) in enumerate(scored):
        rank = out[-1].rank if out and out[-1].score == score else i + 1
        out.append(TeamRow(group_id, score, members, rank))
    return out
