"""HTTP routes of challenges (CONTRACT.md, "Challenges: boards with a start
and an end"): an operator defines and deletes them; learners (or the
platform for them) join; anyone lists them and reads their boards and
hints; a learner reads their neighbourhood and their challenges. Parse,
authorize, call challenges/, answer."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from laurels.api import challenge_schemas as cs
from laurels.api import schemas as s
from laurels.api.clients import client_of
from laurels.api.dependencies import (
    admin_token,
    auth,
    learner_or_platform_token,
    learner_token,
    small_json_body,
    token,
)
from laurels.api.params import Cursor, Limit, Radius, UserIdPath
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import api_state, services
from laurels.api.streams import challenge_stream
from laurels.challenges.rules import CHALLENGE_ID, check_status
from laurels.core.validation import Invalid, parse_user_id, unknown_field

ChallengePath = Annotated[str, Path(
    description="the challenge's id", examples=["december-sql-sprint"],
    json_schema_extra={"pattern": f"^{CHALLENGE_ID.pattern}$"})]
StatusQuery = Annotated[str | None, Query(
    description="upcoming, active or ended (at the service's clock)",
    json_schema_extra={"enum": ["upcoming", "active", "ended"]})]

router = APIRouter(tags=["challenges"])


@router.put("/v1/admin/challenges/{challenge_id}", tags=["admin"],
            dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(cs.ChallengeIn),
            responses={200: {"model": cs.ChallengeOut}, 201: {"model": cs.ChallengeOut},
                       **s.problems(401, 403, 409, 413, 415, 422, 503)})
async def put_challenge(request: Request, challenge_id: ChallengePath) -> Response:
    """Define a challenge (`201`), or change one (`200`): before its start
    anything; after, only `title`, `rewards` and a later `ends_at` (before
    it ends); anything else is `409 challenge_conflict`."""
    body = await small_json_body(request)
    if not isinstance(body, dict):
        raise Problem("validation_error", "the body must be a JSON object")
    shown, created = await services(request).challenges.define(challenge_id, body)
    return JSONResponse(shown, status_code=201 if created else 200)


@router.delete("/v1/admin/challenges/{challenge_id}", tags=["admin"], status_code=204,
               dependencies=[Depends(admin_token)],
               responses={**s.problems(401, 403, 404, 422, 503)})
async def delete_challenge(request: Request, challenge_id: ChallengePath) -> Response:
    """Delete a challenge: its board, joins and results are gone."""
    await services(request).challenges.delete(challenge_id)
    return Response(status_code=204)


@router.get("/v1/challenges", responses={200: {"model": cs.ChallengesOut},
                                         **s.problems(422, 503)})
async def list_challenges(request: Request, status: StatusQuery = None, limit: Limit = 50,
                          after: Cursor = None) -> Response:
    """The challenges, by id (of one status: `upcoming`, `active`, `ended`)."""
    body = await services(request).challenges.page(check_status(status), limit, after)
    return JSONResponse(body)


@router.get("/v1/challenges/{challenge_id}", responses={200: {"model": cs.ChallengeOut},
                                                        **s.problems(404, 422, 503)})
async def get_challenge(request: Request, challenge_id: ChallengePath) -> Response:
    """One challenge."""
    return JSONResponse(await services(request).challenges.get(challenge_id))


async def _joiner(request: Request, tok: str) -> int:
    """Whose join: the learner's own token, or the ingest token with a body
    naming them."""
    a = await auth(request)
    if a.is_ingest(tok):
        api_state(request).limiter.check(a.require_ingest(tok))
        body = await small_json_body(request)
        if not isinstance(body, dict):
            raise Problem("validation_error", 'with the ingest token the body is {"user_id"}')
        if unknown := sorted(set(body) - {"user_id"}):
            raise Problem("validation_error", unknown_field(unknown[0]))
        if "user_id" not in body:
            raise Problem("validation_error", 'with the ingest token the body is {"user_id"}')
        raw = body["user_id"]
        try:
            if isinstance(raw, bool) or not isinstance(raw, int):
                raise Invalid("user_id must be an integer")
            return parse_user_id(str(raw))
        except Invalid as exc:
            raise Problem("validation_error", str(exc)) from None
    uid = a.learner_sub(tok)
    if uid is None:
        if a.is_admin(tok):  # a valid token, not one that joins
            raise Problem("forbidden", "a join takes the learner's own token, or the ingest "
                                       "token with {\"user_id\"}")
        raise Problem("unauthorized", a.refusal(tok))
    return uid


@router.post("/v1/challenges/{challenge_id}/join", openapi_extra={"requestBody": {
                 "required": False, "content": {"application/json": {
                     "schema": cs.JoinIn.model_json_schema()}}}},
             responses={200: {"model": cs.JoinedOut},
                        **s.problems(401, 403, 404, 409, 413, 415, 422, 429, 503)})
async def join_challenge(request: Request, challenge_id: ChallengePath,
                         tok: str = Depends(token)) -> Response:
    """Join a challenge, with the learner's own token (no body), or the
    ingest token and `{"user_id"}`. Joining again answers the first
    `joined_at`; an open challenge needs no join (`joined_at` null)."""
    uid = await _joiner(request, tok)
    return JSONResponse(await services(request).challenges.join(challenge_id, uid))


@router.get("/v1/challenges/{challenge_id}/leaderboard",
            responses={200: {"model": cs.ChallengeBoardOut}, **s.problems(404, 422, 503)})
async def get_challenge_board(request: Request, challenge_id: ChallengePath,
                              limit: Limit = 100, after: Cursor = None) -> Response:
    """The challenge's board: live while it runs, its decided standings
    (with each entry's reward) once decided; `total` 0 before the start."""
    svc, state = services(request), api_state(request)
    challenge = await svc.challenges.find(challenge_id)
    sealed_to = svc.challenge_standings.cursor_board(challenge)
    position = state.cursors.decode(sealed_to, after) if after else None
    body, nxt = await svc.challenge_standings.board(challenge_id, limit, position)
    body["next"] = state.cursors.encode(sealed_to, nxt) if nxt else None
    return JSONResponse(body)


@router.get("/v1/challenges/{challenge_id}/users/{user_id}",
            responses={200: {"model": cs.ChallengeAroundOut},
                       **s.problems(401, 403, 404, 422, 503)})
async def get_challenge_around(request: Request, challenge_id: ChallengePath,
                               user_id: UserIdPath, radius: Radius = 5,
                               uid: int = Depends(learner_token)) -> Response:
    """A learner's neighbourhood on a challenge (`404 not_ranked` without a
    counted completion on it)."""
    return JSONResponse(await services(request).challenge_standings.around(
        challenge_id, uid, radius))


@router.get("/v1/challenges/{challenge_id}/events", response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}},
                       **s.problems(404, 422, 429, 503)})
async def challenge_events(request: Request, challenge_id: ChallengePath) -> Response:
    """Server-sent hints of the challenge's board: `ready`, then `changed`
    (`{"challenge_id"}`); refetch the board on each."""
    svc = services(request)
    challenge = await svc.challenges.find(challenge_id)
    client = client_of(request.scope, svc.settings.trusted_proxies,
                       svc.settings.client_ipv6_prefix)
    return challenge_stream(svc, challenge, client)


@router.get("/v1/users/{user_id}/challenges",
            responses={200: {"model": cs.LearnerChallengesOut},
                       **s.problems(401, 403, 422, 503)})
async def get_learner_challenges(request: Request, user_id: UserIdPath,
                                 status: StatusQuery = None,
                                 uid: int = Depends(learner_or_platform_token)) -> Response:
    """The challenges a learner joined or took part in, with their rank and
    score, and once decided their reward."""
    return JSONResponse(await services(request).challenge_standings.of_learner(uid, status))
