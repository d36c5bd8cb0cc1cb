"""Every call of the API (`Endpoints`, the base of both clients), each
written once as the function that builds its request, and `Completion`, the
item a completion is posted as."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from laurels.client.admin_endpoints import AdminEndpoints
from laurels.client.calls import Call
from laurels.client.challenge_endpoints import ChallengeEndpoints
from laurels.client.league_types import (
    CohortBoard,
    League,
    LeagueHistory,
)
from laurels.client.team_endpoints import TeamEndpoints
from laurels.client.transport import Request
from laurels.client.types import (
    Access,
    Board,
    CompletionResult,
    FriendsBoard,
    Group,
    GroupBoard,
    GroupNeighbourhood,
    LearnerBoards,
    MarkedRead,
    Membership,
    Neighbourhood,
    Notifications,
    User,
    UserCompletions,
    UserGroups,
    Visibility,
)
from laurels.client.wire import UNCHANGED, Unchanged, on, page, seg


@dataclass(frozen=True)
class Completion:
    """One completed tutorial, as the platform posts it."""

    completion_id: str
    user_id: int
    points: int
    completed_at: datetime | str | None = None  # RFC 3339 with an offset; None: now
    tags: tuple[str, ...] = ()  # `kind:value`: the boards of a course, a track, a skill

    def body(self) -> dict[str, Any]:
        """The JSON item of `POST /v1/completions` (and of a batch)."""
        out: dict[str, Any] = {"completion_id": self.completion_id, "user_id": self.user_id,
                               "points": self.points}
        if self.completed_at is not None:
            at = self.completed_at
            out["completed_at"] = at.isoformat() if isinstance(at, datetime) else at
        if self.tags:
            out["tags"] = list(self.tags)
        return out


class Endpoints(ChallengeEndpoints, TeamEndpoints, AdminEndpoints):
    """Every call of the API, written once. Each builds its request;
    `Client._run` and `AsyncClient._run` send it. Besides what each lists,
    every call raises `Unauthorized`/`Forbidden` (token), `RateLimited`,
    `Unavailable` (unreachable or 503, after the retries) and `ValidationError`
    (a malformed argument)."""

    # -- writes (the ingest token) ----------------------------------------------------------

    @Call
    def post_completion(completion_id: str, user_id: int, points: int,
                        completed_at: datetime | str | None = None,
                        tags: Iterable[str] = ()) -> Request[CompletionResult]:
        """Record one completion: `POST /v1/completions` (ingest token).
        Idempotent on `completion_id`: a replay answers `status: "duplicate"`.
        `completed_at`: an aware datetime or RFC 3339 text; None: now.
        `tags`: `kind:value` strings (`course:python-101`), part of the payload.
        Returns a `CompletionResult`. Raises `CompletionConflict` (same id,
        other payload), `SeasonClosed`, `UserErased`, `ValidationError`."""
        if isinstance(tags, str):  # (a string is an iterable of characters)
            raise TypeError("tags: give a list of `kind:value` strings, not one string")
        body = Completion(completion_id, user_id, points, completed_at, tuple(tags)).body()
        return Request("POST", "/v1/completions", json=body)

    @Call
    def put_user(user_id: int, display_name: str | None = None,
                 visibility: Visibility | None = None) -> Request[User]:
        """Set a learner's display name and/or visibility (None: unchanged):
        `PUT /v1/users/{user_id}` (ingest token). Returns the stored `User`.
        Raises `UserErased`, `ValidationError` (a name that is blank, too
        long, "Anonymous", or has control or format characters)."""
        body = {k: v for k, v in (("display_name", display_name), ("visibility", visibility))
                if v is not None}
        return Request("PUT", f"/v1/users/{user_id}", json=body)

    # -- groups (writes: the ingest token) ---------------------------------------------------

    @Call
    def put_group(group_id: str, name: str | None = None, access: Access | None = None,
                  team: str | Unchanged | None = UNCHANGED) -> Request[Group]:
        """Create a group, or change its name or access (None: unchanged, or
        the defaults of a new group: its id, "members"), or its team kind
        (`team`: a defined team kind, None for none; left out: unchanged):
        `PUT /v1/groups/{group_id}` (ingest token). Returns the `Group`.
        Raises `ValidationError` (a team kind not defined)."""
        body: dict[str, Any] = {k: v for k, v in (("name", name), ("access", access))
                                if v is not None}
        if team is not UNCHANGED:
            body["team"] = team
        return Request("PUT", f"/v1/groups/{seg(group_id)}", json=body)

    @Call
    def get_group(group_id: str) -> Request[Group]:
        """A group: `GET /v1/groups/{group_id}` (ingest token). Returns the
        `Group`. Raises `NotFound`."""
        return Request("GET", f"/v1/groups/{seg(group_id)}")

    @Call
    def delete_group(group_id: str) -> Request[None]:
        """Delete a group; its boards are gone: `DELETE /v1/groups/{group_id}`
        (ingest token). Returns None. Raises `NotFound`."""
        return Request("DELETE", f"/v1/groups/{seg(group_id)}")

    @Call
    def change_members(group_id: str, add: Iterable[int] = (), remove: Iterable[int] = ()
                       ) -> Request[Membership]:
        """Add and remove members (up to 10,000 ids in all; idempotent):
        `POST /v1/groups/{group_id}/members` (ingest token). Returns a
        `Membership` (erased learners are `refused`). Raises `NotFound`."""
        return Request("POST", f"/v1/groups/{seg(group_id)}/members",
                        json={"add": list(add), "remove": list(remove)})

    @Call
    def group_board(group_id: str, season: str = "current", limit: int = 100,
                    after: str | None = None, board: str = "global") -> Request[GroupBoard]:
        """One page of a group's board, its members ranked among themselves:
        `GET /v1/groups/{group_id}/leaderboards/{season}` (a `public` group:
        no token; a `members` one: a member's learner token, or ingest/admin).
        Returns a `GroupBoard`. Raises `NotFound` (no such group, or one the
        learner may not read), `Rebuilding`."""
        return Request("GET", f"/v1/groups/{seg(group_id)}/leaderboards/{seg(season)}",
                        {**page(limit, after), **on(board)})

    @Call
    def group_around(group_id: str, season: str, user_id: int, radius: int = 5,
                     board: str = "global") -> Request[GroupNeighbourhood]:
        """A member's neighbourhood within a group:
        `GET /v1/groups/{group_id}/leaderboards/{season}/users/{user_id}`
        (that member's learner token, or admin). Returns a `GroupNeighbourhood`
        (with `group_id`). Raises `NotFound` (not a member), `NotRanked`."""
        return Request(
            "GET", f"/v1/groups/{seg(group_id)}/leaderboards/{seg(season)}/users/{user_id}",
            {"radius": radius, **on(board)})

    @Call
    def user_groups(user_id: int) -> Request[UserGroups]:
        """The groups a learner is in: `GET /v1/users/{user_id}/groups` (their
        learner token, or admin). Returns `UserGroups`."""
        return Request("GET", f"/v1/users/{user_id}/groups")

    # -- reads ------------------------------------------------------------------------------

    @Call
    def board(season: str = "current", limit: int = 100, after: str | None = None,
              board: str = "global") -> Request[Board]:
        """One page of a season's public board (`limit` 1 to 1000, `after` the
        previous page's `next`): `GET /v1/leaderboards/{season}` (no token).
        `season`: `2026-W49`, `2026-11-30`, `2026-11`, `all`, `current`,
        `current-day`, `current-month`. `board`: `global` (the whole board)
        or a board of a kind (`course:python-101`), every read alike. Returns
        a `Board`. Raises `NotFound` (a period not configured, a kind not
        defined), `ValidationError` (a malformed season, board or cursor),
        `Rebuilding`."""
        return Request("GET", f"/v1/leaderboards/{seg(season)}",
                        {**page(limit, after), **on(board)})

    @Call
    def around(season: str, user_id: int, radius: int = 5, board: str = "global"
               ) -> Request[Neighbourhood]:
        """A learner's rank and the `radius` (0 to 50) ranks around it:
        `GET /v1/leaderboards/{season}/users/{user_id}` (their learner token,
        or admin). Returns a `Neighbourhood`. Raises `NotRanked` (no
        completions this season), `Rebuilding`."""
        return Request("GET", f"/v1/leaderboards/{seg(season)}/users/{user_id}",
                        {"radius": radius, **on(board)})

    @Call
    def learner_boards(user_id: int, season: str = "current") -> Request[LearnerBoards]:
        """Every board on which a learner has a completion that counts in a
        week (`current`, or `2026-W49`; each board's week in its own zone):
        `GET /v1/users/{user_id}/boards` (their learner token, or admin).
        Returns `LearnerBoards`, the whole board first."""
        return Request("GET", f"/v1/users/{user_id}/boards", {"season": season})

    @Call
    def friends(season: str, user_ids: Iterable[int], board: str = "global"
                ) -> Request[FriendsBoard]:
        """A friends board of 1 to 1000 learners, ranked among themselves:
        `POST /v1/leaderboards/{season}/ranks` (any learner token, or
        ingest). Hidden and anonymous learners are left out, but for the
        caller (`self`). Returns a `FriendsBoard`. Raises `Rebuilding`."""
        return Request("POST", f"/v1/leaderboards/{seg(season)}/ranks", on(board),
                        json={"user_ids": list(user_ids)})

    @Call
    def completions(season: str, user_id: int, limit: int = 50, after: str | None = None,
                    board: str = "global") -> Request[UserCompletions]:
        """Why a learner's score is what it is: their completions in the
        season, newest first, counted or voided, one page:
        `GET /v1/leaderboards/{season}/users/{user_id}/completions` (their
        learner token, or admin). Returns `UserCompletions`."""
        return Request("GET", f"/v1/leaderboards/{seg(season)}/users/{user_id}/completions",
                        {**page(limit, after), **on(board)})

    # -- leagues (LAURELS_LEAGUE_TIERS; else every call raises NotFound) --------------------

    @Call
    def league(user_id: int, season: str = "current") -> Request[League]:
        """A learner's league of a week (`current`, or `2026-W49`):
        `GET /v1/users/{user_id}/league` (their learner token, admin, or
        ingest: the platform's own app).
        Returns a `League`: `status` none, pending or placed, with their
        cohort's board when placed and the `result` once decided. Raises
        `NotFound` (leagues are off), `ValidationError` (not a week)."""
        return Request("GET", f"/v1/users/{user_id}/league", {"season": season})

    @Call
    def cohort(season: str, cohort_id: str) -> Request[CohortBoard]:
        """A league cohort's board, a `zone` on each entry:
        `GET /v1/leagues/{season}/cohorts/{cohort_id}` (a member's learner
        token, or ingest or admin). Returns a `CohortBoard`. Raises
        `NotFound` (no such cohort, or leagues are off), `Forbidden` (a
        learner who is not a member)."""
        return Request("GET", f"/v1/leagues/{seg(season)}/cohorts/{seg(cohort_id)}")

    @Call
    def league_history(user_id: int, limit: int = 20, after: str | None = None
                       ) -> Request[LeagueHistory]:
        """One page of a learner's decided weeks, newest first:
        `GET /v1/users/{user_id}/league/history` (their learner token,
        admin, or ingest). Returns a `LeagueHistory`. Raises `NotFound` (leagues are
        off)."""
        return Request("GET", f"/v1/users/{user_id}/league/history", page(limit, after))

    # -- notifications (the learner's token, or admin) --------------------------------------

    @Call
    def notifications(user_id: int) -> Request[Notifications]:
        """A learner's durable notifications, newest first:
        `GET /v1/users/{user_id}/notifications` (their learner token, or
        admin). Returns `Notifications`."""
        return Request("GET", f"/v1/users/{user_id}/notifications")

    @Call
    def mark_read(user_id: int, ids: Iterable[int]) -> Request[MarkedRead]:
        """Mark some of a learner's notifications read:
        `POST /v1/users/{user_id}/notifications/read` (their learner token, or
        admin). Returns `MarkedRead`."""
        return Request("POST", f"/v1/users/{user_id}/notifications/read",
                        json={"ids": list(ids)})
