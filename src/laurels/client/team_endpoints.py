"""The calls of team boards (docs/contract.md, Team boards: groups of a team
kind ranked by their members' scores), written once as the functions that
build their requests: `Endpoints` (endpoints.py) takes them in, for both
clients. A group joins a team kind with `put_group(..., team=...)`
(endpoints.py)."""

from __future__ import annotations

from laurels.client.calls import Call
from laurels.client.team_types import (
    LearnerTeams,
    TeamBoard,
    TeamKind,
    TeamKindDefinition,
    TeamKinds,
)
from laurels.client.transport import Request
from laurels.client.wire import on, page, seg


class TeamEndpoints:
    """The calls of team boards (`Endpoints` takes them in)."""

    # -- team kinds (the admin token) -------------------------------------------------------

    @Call
    def team_kinds() -> Request[TeamKinds]:
        """Every team kind, by name: `GET /v1/admin/team-kinds` (admin
        token). Returns `TeamKinds`."""
        return Request("GET", "/v1/admin/team-kinds")

    @Call
    def define_team_kind(team: str, definition: TeamKindDefinition | None = None
                         ) -> Request[TeamKind]:
        """Define a team kind, or give it another title (a field left out
        keeps what the kind has; a new kind's defaults: its name capitalized
        as title, `sum`): `PUT /v1/admin/team-kinds/{team}` (admin token).
        Returns the `TeamKind`. Raises `KindConflict` (another `aggregate`
        or `top`: delete it first), `ValidationError`."""
        return Request("PUT", f"/v1/admin/team-kinds/{seg(team)}",
                       json=dict(definition or {}))

    @Call
    def delete_team_kind(team: str) -> Request[None]:
        """Delete a team kind: its groups are in no team kind any more, its
        boards are gone: `DELETE /v1/admin/team-kinds/{team}` (admin token).
        Returns None. Raises `NotFound`."""
        return Request("DELETE", f"/v1/admin/team-kinds/{seg(team)}")

    # -- read -------------------------------------------------------------------------------

    @Call
    def team_board(team: str, season: str = "current", limit: int = 100,
                   after: str | None = None, board: str = "global") -> Request[TeamBoard]:
        """One page of a team kind's board: its groups ranked by the aggregate
        of their members' scores on `board` and `season` (ties share a rank):
        `GET /v1/teams/{team}/leaderboards/{season}` (no token; a learner's
        token or ingest/admin names the members-only groups they may read).
        Returns a `TeamBoard`. Raises `NotFound` (no such team kind, a board
        kind not defined), `Rebuilding`."""
        return Request("GET", f"/v1/teams/{seg(team)}/leaderboards/{seg(season)}",
                       {**page(limit, after), **on(board)})

    @Call
    def user_teams(user_id: int, season: str = "current", board: str = "global"
                   ) -> Request[LearnerTeams]:
        """A learner's teams on `board` and `season`: each one's rank, score
        and count, and what the learner's points add to it:
        `GET /v1/users/{user_id}/teams` (their learner token, or admin).
        Returns `LearnerTeams`."""
        return Request("GET", f"/v1/users/{user_id}/teams", {"season": season, **on(board)})
