"""The admin calls of the API (the admin token), written once as the
functions that build their requests: `Endpoints` (endpoints.py) takes them
in, for both clients."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from laurels.client.calls import Call
from laurels.client.league_types import CohortList, LeagueSummary
from laurels.client.transport import Request
from laurels.client.types import (
    AuditLog,
    BoardKind,
    BoardKinds,
    Correction,
    Deliveries,
    DeliveryStatus,
    KindBoards,
    LearnerRestored,
    LearnerVoided,
    Metric,
    Rebuild,
    RebuildStarted,
    Suspension,
    VerifyResult,
)
from laurels.client.wire import on, page, seg


def correction(reason: str | None, season: str | None, board: str) -> dict[str, Any]:
    """A learner's bulk correction's body: what is given (the whole board: no `board`)."""
    body = {k: v for k, v in (("reason", reason), ("season", season)) if v is not None}
    return body if board == "global" else {**body, "board": board}


class AdminEndpoints:
    """The calls of the admin token (`Endpoints` takes them in)."""

    # -- admin (the admin token) ------------------------------------------------------------

    @Call
    def erase_user(user_id: int) -> Request[None]:
        """Erase a learner for good (completions, name, notifications, every
        board and group): `DELETE /v1/users/{user_id}` (admin token). Returns
        None."""
        return Request("DELETE", f"/v1/users/{user_id}")

    @Call
    def void(completion_id: str, reason: str) -> Request[Correction]:
        """Void a completion (`reason` 1 to 500 characters): it stops counting
        on every board: `POST /v1/admin/completions/{completion_id}/void`
        (admin token). Voiding twice answers the same. Returns a `Correction`
        (`status: "voided"`). Raises `NotFound`."""
        return Request("POST", f"/v1/admin/completions/{seg(completion_id)}/void",
                        json={"reason": reason})

    @Call
    def restore(completion_id: str, reason: str | None = None) -> Request[Correction]:
        """Restore a voided completion: it counts again:
        `POST /v1/admin/completions/{completion_id}/restore` (admin token).
        Returns a `Correction` (`status: "recorded"`). Raises `NotFound`."""
        return Request("POST", f"/v1/admin/completions/{seg(completion_id)}/restore",
                        json={"reason": reason} if reason else {})

    @Call
    def void_user(user_id: int, reason: str, season: str | None = None,
                  board: str = "global") -> Request[LearnerVoided]:
        """Void every counted completion of a learner in `season`, or every
        one, all or none; on a board of a kind, that board's season (in its
        zone) and its completions only: `POST /v1/admin/users/{user_id}/void`
        (admin). Returns a `LearnerVoided`. Raises
        `UserErased`, `NotFound` (a kind not defined)."""
        return Request("POST", f"/v1/admin/users/{user_id}/void",
                       json=correction(reason, season, board))

    @Call
    def restore_user(user_id: int, reason: str | None = None, season: str | None = None,
                     board: str = "global") -> Request[LearnerRestored]:
        """Restore every voided completion of a learner in `season`, or every
        one (on `board`, as `void_user`): `POST /v1/admin/users/{user_id}/restore`
        (admin). Returns a `LearnerRestored`. Raises
        `UserErased`, `NotFound`."""
        return Request("POST", f"/v1/admin/users/{user_id}/restore",
                       json=correction(reason, season, board))

    @Call
    def suspend(user_id: int, reason: str) -> Request[Suspension]:
        """Suspend a learner (off every public board, like a hidden one):
        `POST /v1/admin/users/{user_id}/suspend` (admin token). Returns a
        `Suspension`. Raises `UserErased`."""
        return Request("POST", f"/v1/admin/users/{user_id}/suspend", json={"reason": reason})

    @Call
    def unsuspend(user_id: int, reason: str | None = None) -> Request[Suspension]:
        """Unsuspend a learner: `POST /v1/admin/users/{user_id}/unsuspend`
        (admin token). Returns a `Suspension`. Raises `UserErased`."""
        return Request("POST", f"/v1/admin/users/{user_id}/unsuspend",
                        json={"reason": reason} if reason else {})

    @Call
    def audit(limit: int = 100, after: str | None = None) -> Request[AuditLog]:
        """One page of the audit log, newest first: `GET /v1/admin/audit`
        (admin token). Returns an `AuditLog`."""
        return Request("GET", "/v1/admin/audit", page(limit, after))

    @Call
    def rebuild(season: str, board: str = "global") -> Request[RebuildStarted]:
        """Rebuild a season's board from PostgreSQL in the background:
        `POST /v1/admin/leaderboards/{season}/rebuild` (admin token). Returns
        `RebuildStarted` (follow it with `rebuild_status`). Raises
        `NotFound`, `Rebuilding` (one is starting: retried)."""
        return Request("POST", f"/v1/admin/leaderboards/{seg(season)}/rebuild", on(board))

    @Call
    def rebuild_status(rebuild_id: str) -> Request[Rebuild]:
        """A rebuild's state: `GET /v1/admin/rebuilds/{rebuild_id}` (admin
        token). Returns a `Rebuild`. Raises `NotFound`."""
        return Request("GET", f"/v1/admin/rebuilds/{seg(rebuild_id)}")

    @Call
    def verify(season: str, board: str = "global") -> Request[VerifyResult]:
        """Compare a season's board in Redis with the sums in PostgreSQL:
        `GET /v1/admin/leaderboards/{season}/verify` (admin token). Returns a
        `VerifyResult`. Raises `NotFound`."""
        return Request("GET", f"/v1/admin/leaderboards/{seg(season)}/verify", on(board))

    @Call
    def league_summary(season: str) -> Request[LeagueSummary]:
        """A week's leagues by tier (cohorts, members, promoted, demoted):
        `GET /v1/admin/leagues/{season}` (admin token). Returns a
        `LeagueSummary`. Raises `NotFound` (leagues are off)."""
        return Request("GET", f"/v1/admin/leagues/{seg(season)}")

    @Call
    def league_cohorts(season: str, tier: str | None = None, limit: int = 100,
                       after: str | None = None) -> Request[CohortList]:
        """A page of a week's cohorts by tier then cohort (one `tier`'s, or
        all): `GET /v1/admin/leagues/{season}/cohorts` (admin). Returns a
        `CohortList`. Raises `NotFound` (leagues off), `ValidationError`."""
        params = {**page(limit, after), **({"tier": tier} if tier is not None else {})}
        return Request("GET", f"/v1/admin/leagues/{seg(season)}/cohorts", params)

    @Call
    def deliveries(status: DeliveryStatus | None = None, limit: int = 100,
                   after: str | None = None) -> Request[Deliveries]:
        """One page of webhook deliveries, newest first, of one `status` or
        all: `GET /v1/admin/webhooks/deliveries` (admin token). Returns
        `Deliveries`."""
        params = page(limit, after)
        if status is not None:
            params["status"] = status
        return Request("GET", "/v1/admin/webhooks/deliveries", params)

    @Call
    def retry_delivery(delivery_id: str) -> Request[None]:
        """Send a webhook delivery again at once (a failed one gets another
        24 hours): `POST /v1/admin/webhooks/deliveries/{id}/retry` (admin
        token). Returns None. Raises `NotFound`."""
        return Request("POST", f"/v1/admin/webhooks/deliveries/{seg(delivery_id)}/retry",
                        bodiless=True)

    # -- board kinds (the admin token) -------------------------------------------------------

    @Call
    def board_kinds() -> Request[BoardKinds]:
        """Every board kind, by name: `GET /v1/admin/board-kinds` (admin
        token). Returns `BoardKinds`."""
        return Request("GET", "/v1/admin/board-kinds")

    @Call
    def define_kind(kind: str, title: str | None = None, metric: Metric | None = None,
                    periods: Iterable[str] | None = None, time_zone: str | None = None,
                    notify: bool | None = None) -> Request[BoardKind]:
        """Define a board kind, or give it another title (a field left out
        keeps what the kind has): `PUT /v1/admin/board-kinds/{kind}` (admin
        token). Returns the `BoardKind`. Raises `KindConflict` (another
        metric, periods, zone or notify), `ValidationError`."""
        given = {"title": title, "metric": metric, "time_zone": time_zone, "notify": notify,
                 "periods": list(periods) if periods is not None else None}
        return Request("PUT", f"/v1/admin/board-kinds/{seg(kind)}",
                       json={k: v for k, v in given.items() if v is not None})

    @Call
    def delete_kind(kind: str) -> Request[None]:
        """Delete a board kind: its boards go from every read and from Redis
        (the tags stay on the completions): `DELETE /v1/admin/board-kinds/{kind}`
        (admin token). Returns None, whether it was defined or not."""
        return Request("DELETE", f"/v1/admin/board-kinds/{seg(kind)}")

    @Call
    def kind_boards(kind: str, season: str = "current", search: str | None = None,
                    limit: int = 100, after: str | None = None) -> Request[KindBoards]:
        """One page of a kind's boards with a counted completion in one of its
        seasons, by name, those whose name holds `search`:
        `GET /v1/admin/board-kinds/{kind}/boards` (admin token). Returns
        `KindBoards`. Raises `NotFound` (no such kind)."""
        params = {"season": season, **page(limit, after),
                  **({"search": search} if search else {})}
        return Request("GET", f"/v1/admin/board-kinds/{seg(kind)}/boards", params)
