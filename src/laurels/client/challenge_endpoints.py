"""The calls of challenges (docs/contract.md, Challenges: boards with a
start and an end), written once as the functions that build their requests:
`Endpoints` (endpoints.py) takes them in, for both clients. A challenge's
live hints (`/v1/challenges/{challenge_id}/events`) are server-sent events,
which the client does not read, as the other streams."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from laurels.client.calls import Call
from laurels.client.challenge_types import (
    Challenge,
    ChallengeAround,
    ChallengeBoard,
    ChallengeDefinition,
    Challenges,
    ChallengeStatus,
    Joined,
    LearnerChallenges,
)
from laurels.client.transport import Request
from laurels.client.wire import page, seg


def definition_body(definition: ChallengeDefinition) -> dict[str, Any]:
    """A definition as JSON: its instants as RFC 3339 text."""
    body: dict[str, Any] = dict(definition)
    for key in ("starts_at", "ends_at"):
        if isinstance(body.get(key), datetime):
            body[key] = body[key].isoformat()
    return body


def status_of(status: ChallengeStatus | None) -> dict[str, Any]:
    return {} if status is None else {"status": status}


class ChallengeEndpoints:
    """The calls of challenges (`Endpoints` takes them in)."""

    # -- defined and deleted (the admin token) ----------------------------------------------

    @Call
    def define_challenge(challenge_id: str, definition: ChallengeDefinition
                         ) -> Request[Challenge]:
        """Define a challenge, or change one (the whole definition: a field
        left out takes its default): `PUT /v1/admin/challenges/{challenge_id}`
        (admin token). Once it has started only `title`, `rewards` and a
        later `ends_at` may change. Returns the `Challenge`. Raises
        `ChallengeConflict`, `ValidationError` (a malformed definition, an
        `ends_at` past at creation)."""
        return Request("PUT", f"/v1/admin/challenges/{seg(challenge_id)}",
                       json=definition_body(definition))

    @Call
    def delete_challenge(challenge_id: str) -> Request[None]:
        """Delete a challenge: its board, joins and results are gone:
        `DELETE /v1/admin/challenges/{challenge_id}` (admin token). Returns
        None. Raises `NotFound`."""
        return Request("DELETE", f"/v1/admin/challenges/{seg(challenge_id)}")

    # -- read and joined --------------------------------------------------------------------

    @Call
    def challenges(status: ChallengeStatus | None = None, limit: int = 50,
                   after: str | None = None) -> Request[Challenges]:
        """One page of the challenges by id, of one `status` (`upcoming`,
        `active`, `ended`) or all: `GET /v1/challenges` (no token). Returns
        `Challenges`."""
        return Request("GET", "/v1/challenges", {**page(limit, after), **status_of(status)})

    @Call
    def challenge(challenge_id: str) -> Request[Challenge]:
        """One challenge: `GET /v1/challenges/{challenge_id}` (no token).
        Returns the `Challenge`. Raises `NotFound`."""
        return Request("GET", f"/v1/challenges/{seg(challenge_id)}")

    @Call
    def join_challenge(challenge_id: str, user_id: int | None = None) -> Request[Joined]:
        """Join a challenge: `POST /v1/challenges/{challenge_id}/join` (the
        learner's own token, `user_id` None; or the ingest token naming
        `user_id`). Joining again answers the first `joined_at`; an open
        challenge needs no join (`joined_at` None). Returns `Joined`. Raises
        `ChallengeFull`, `ChallengeEnded`, `NotFound` (no such challenge, an
        erased learner)."""
        return Request("POST", f"/v1/challenges/{seg(challenge_id)}/join",
                       json=None if user_id is None else {"user_id": user_id})

    @Call
    def challenge_board(challenge_id: str, limit: int = 100, after: str | None = None
                        ) -> Request[ChallengeBoard]:
        """One page of a challenge's board: live while it runs, its decided
        standings with each entry's `reward` once decided, `total` 0 before
        the start: `GET /v1/challenges/{challenge_id}/leaderboard` (no
        token). Returns a `ChallengeBoard`. Raises `NotFound`."""
        return Request("GET", f"/v1/challenges/{seg(challenge_id)}/leaderboard",
                       page(limit, after))

    @Call
    def challenge_around(challenge_id: str, user_id: int, radius: int = 5
                         ) -> Request[ChallengeAround]:
        """A learner's standing on a challenge and the `radius` ranks around
        it: `GET /v1/challenges/{challenge_id}/users/{user_id}` (their learner
        token, or admin). Returns a `ChallengeAround`. Raises `NotRanked` (no
        counted completion on it), `NotFound`."""
        return Request("GET", f"/v1/challenges/{seg(challenge_id)}/users/{user_id}",
                       {"radius": radius})

    @Call
    def learner_challenges(user_id: int, status: ChallengeStatus | None = None
                           ) -> Request[LearnerChallenges]:
        """The challenges a learner joined or took part in (of one `status`,
        or all), with their rank and score, and once decided their reward:
        `GET /v1/users/{user_id}/challenges` (their learner token, admin, or
        ingest). Returns `LearnerChallenges`."""
        return Request("GET", f"/v1/users/{user_id}/challenges", status_of(status))
