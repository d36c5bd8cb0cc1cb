"""HTTP routes (docs/contract.md, HTTP API): parse, authorize, call the domain, answer."""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Path, Query, Request, Security
from fastapi.responses import HTMLResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError

from laurels.api import schemas as s
from laurels.api.auth import Auth, Writer
from laurels.api.bodies import check_headers, read_json
from laurels.api.caches import board_body, board_cursor_owner, seal_next
from laurels.api.cursors import Cursors
from laurels.api.fast import not_modified
from laurels.api.params import Cursor, Limit, Radius, path_season, path_user_id, path_uuid
from laurels.api.problems import JSONResponse, Problem, outcome_status
from laurels.api.sse import EventStream, event
from laurels.hub import CHANGED_PER_SECOND, Hub
from laurels.metrics import STREAMS_REFUSED
from laurels.ratelimit import RateLimiter
from laurels.runtime import Runtime
from laurels.seasons import Period
from laurels.settings import Settings
from laurels.validation import (
    USER_ID_MAX,
    UUID_RE,
    BatchIn,
    CompletionIn,
    Invalid,
    ReadIn,
    UserIn,
    describe,
    validate_user,
)

# Documented in /openapi.json; checked by the handlers, which word the errors.
SeasonPath = Annotated[str, Path(
    description="a season of a configured period, in UTC: a week `YYYY-Www`, a day "
                "`YYYY-MM-DD`, a month `YYYY-MM`, `all`; or `current` (this week), "
                "`current-day`, `current-month`",
    examples=["current", "2026-W49", "2026-11-30", "2026-11", "all"],
    json_schema_extra={"pattern": "^([0-9]{4}-W[0-9]{2}|[0-9]{4}-[0-9]{2}(-[0-9]{2})?|all|"
                                  "current|current-day|current-month)$"})]
UserIdPath = Annotated[str, Path(
    description=f"learner id, 1 to {USER_ID_MAX}", examples=["42"],
    json_schema_extra={"pattern": "^[1-9][0-9]{0,18}$"})]
RebuildIdPath = Annotated[str, Path(description="a rebuild id (UUID)",
                                    json_schema_extra={"format": "uuid", "pattern": UUID_RE})]

router = APIRouter()
_bearer = HTTPBearer(auto_error=False, description="ingest, admin or learner token")


def runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


async def auth(request: Request) -> Auth:
    # Every dependency is async: FastAPI runs a plain `def` dependency in a
    # thread pool, which cost more than the whole request (measured).
    a: Auth = request.app.state.auth
    return a


async def token(credentials: HTTPAuthorizationCredentials | None = Security(_bearer)) -> str:
    if credentials is None or not credentials.credentials:
        raise Problem("unauthorized", "missing bearer token")
    return credentials.credentials


def _limit_writes(request: Request, writer: Writer) -> None:
    if request.method in ("POST", "PUT", "DELETE", "PATCH"):
        limiter: RateLimiter = request.app.state.limiter
        limiter.check(writer)


async def ingest_token(request: Request, tok: str = Depends(token),
                       a: Auth = Depends(auth)) -> None:
    _limit_writes(request, a.require_ingest(tok))


async def admin_token(request: Request, tok: str = Depends(token), a: Auth = Depends(auth)) -> None:
    _limit_writes(request, a.require_admin(tok))


async def learner_token(request: Request, tok: str = Depends(token),
                        a: Auth = Depends(auth)) -> int:
    user_id = path_user_id(request.path_params["user_id"])
    a.require_learner(tok, user_id)
    return user_id


async def learner_token_or_query(request: Request,
                           credentials: HTTPAuthorizationCredentials | None = Security(_bearer),
                           access_token: str | None = Query(
                               None, description="the learner token, for EventSource")
                           ) -> int:
    """Browsers' EventSource cannot send headers: this endpoint alone takes
    the token as ?access_token= too."""
    tok = credentials.credentials if credentials and credentials.credentials else access_token
    if not tok:
        raise Problem("unauthorized", "missing bearer token")
    user_id = path_user_id(request.path_params["user_id"])
    (await auth(request)).require_learner(tok, user_id)
    return user_id


def periods(request: Request) -> tuple[Period, ...]:
    return runtime(request).settings.periods


async def json_body(request: Request) -> Any:
    """The JSON body: 415 unless JSON, 413 over 1 MiB, 422 if malformed."""
    check_headers(request.headers.get("content-type", ""),
                  request.headers.get("content-length"))
    return await read_json(request.stream())


def _json(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status)


# -- writes -------------------------------------------------------------------

@router.post("/v1/completions", tags=["writes"], dependencies=[Depends(ingest_token)],
             status_code=201, openapi_extra=s.body_schema(CompletionIn),
             responses={200: {"model": s.CompletionOut}, 201: {"model": s.CompletionOut},
                        **s.problems(401, 403, 409, 410, 413, 415, 422, 503)})
async def post_completion(request: Request) -> Response:
    """Record one completion (idempotent on `completion_id`)."""
    body = await json_body(request)
    [outcome] = await runtime(request).ingestor.record([body])
    if outcome.status == "rejected":
        raise Problem(outcome.code or "validation_error", outcome.detail or "rejected")
    return _json(outcome.body(), outcome_status(outcome))


@router.post("/v1/completions/batch", tags=["writes"], dependencies=[Depends(ingest_token)],
             openapi_extra=s.batch_schema(),
             responses={200: {"model": s.BatchOut},
                        **s.problems(401, 403, 413, 415, 422, 503)})
async def post_batch(request: Request) -> Response:
    """Record 1 to 1000 completions; one independent result per item, in order."""
    body = await json_body(request)
    if not isinstance(body, dict):
        raise Problem("validation_error", "body must be {\"completions\": [...]}")
    try:
        batch = BatchIn.model_validate(body)
    except ValidationError as exc:
        raise Problem("validation_error", describe(exc)) from None
    outcomes = await runtime(request).ingestor.record(batch.completions)
    return _json({"results": [o.body() for o in outcomes]})


@router.put("/v1/users/{user_id}", tags=["writes"], dependencies=[Depends(ingest_token)],
            openapi_extra=s.body_schema(UserIn),
            responses={200: {"model": s.UserOut}, **s.problems(401, 403, 410, 415, 422, 503)})
async def put_user(user_id: UserIdPath, request: Request) -> Response:
    """Set a learner's display name and/or visibility."""
    uid = path_user_id(user_id)
    raw = await json_body(request)
    try:
        body = validate_user(raw)
    except Invalid as exc:
        raise Problem("validation_error", str(exc)) from None
    learner = await runtime(request).learners.update(uid, body)
    return _json(learner.body())


@router.delete("/v1/users/{user_id}", tags=["writes"], status_code=204,
               dependencies=[Depends(admin_token)],
               responses=s.problems(401, 403, 422, 503))
async def delete_user(request: Request, user_id: UserIdPath) -> Response:
    """Erase a learner: completions, name and notifications, from every board."""
    await runtime(request).learners.erase(path_user_id(user_id))
    return Response(status_code=204)


# -- reads --------------------------------------------------------------------

@router.get("/v1/leaderboards/{season}", tags=["reads"],
            responses={200: {"model": s.BoardOut}, **s.problems(404, 422, 503)})
async def get_board(request: Request, season: SeasonPath, limit: Limit = 100,
                    after: Cursor = None) -> Response:
    """A season's public board (`current` = this week), from the top or after
    a cursor; `next` pages on (null after the last page). The answer carries
    an `ETag`; `If-None-Match` with it gets `304` while the board is
    unchanged. (The first page is served by the fast lane in `laurels serve`.)"""
    if after is not None:
        the_season = path_season(season, periods(request))
        cursors: Cursors = request.app.state.cursors
        position = cursors.decode(board_cursor_owner(the_season), after)
        body = await request.app.state.reads.top(the_season, limit, position)
        seal_next(body, cursors, the_season)
        return _json(body)
    cached = await board_body(request.app.state.reads, request.app.state.board_cache, season,
                              limit)
    headers = {"ETag": cached.etag.decode()}
    if not_modified(request.scope, cached.etag):
        return Response(status_code=304, headers=headers)
    return Response(cached.body, media_type="application/json", headers=headers)


@router.get("/v1/leaderboards/{season}/users/{user_id}", tags=["reads"],
            responses={200: {"model": s.AroundOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_around(request: Request, season: SeasonPath, user_id: UserIdPath,
                     uid: int = Depends(learner_token), radius: Radius = 5) -> Response:
    """A learner's rank and neighbourhood (learner token of that user, or admin)."""
    the_season = path_season(season, periods(request))
    return _json(await request.app.state.reads.around(the_season, uid, radius))


@router.get("/v1/leaderboards/{season}/events", tags=["reads"],
            response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}},
                       **s.problems(404, 422, 503)})
async def board_events(request: Request, season: SeasonPath) -> Response:
    """Refresh hints as server-sent events: `ready`, then `changed` (at most 4 a
    second) and `rebuilt`; a comment line at least every 15 s. Refetch on each.
    (Served by the app's fast lane, `board_stream`, without FastAPI's
    per-request machinery; this route documents it and serves it elsewhere.)"""
    return board_stream(request.app.state.hub, runtime(request).settings, season)


def board_stream(hub: Hub, settings: Settings, season: str) -> Response:
    """The response of a season's event stream (or a Problem)."""
    name = path_season(season, settings.periods).name
    stream_budget(hub, settings)
    listener = hub.listen_board(name)

    async def ready() -> bytes:
        await hub.hinted(name)  # `ready` means: every later change is hinted here
        return event("ready", orjson.dumps({"season": name}))

    async def due() -> list[bytes]:
        return [event(e["event"], e["data"]) for e in listener.take()]

    return EventStream(listener, ready, due, lambda: hub.unlisten_board(listener),
                       min_gap_seconds=1 / CHANGED_PER_SECOND)


def stream_budget(hub: Hub, settings: Settings) -> None:
    """Streams have a budget of their own (LAURELS_MAX_STREAMS per process), so
    live viewers never take every connection from ordinary requests."""
    if hub.stream_count() >= settings.max_streams:
        STREAMS_REFUSED.inc()
        raise Problem("unavailable", "too many live streams on this server; retry shortly",
                      retry_after=5)


@router.get("/v1/users/{user_id}/notifications", tags=["notifications"],
            responses={200: {"model": s.NotificationsOut}, **s.problems(401, 403, 422)})
async def get_notifications(request: Request, user_id: UserIdPath,
                            uid: int = Depends(learner_token)) -> Response:
    """A learner's durable notifications, newest first (at most 100)."""
    return _json(await runtime(request).notifications.newest(uid))


@router.post("/v1/users/{user_id}/notifications/read", tags=["notifications"],
             openapi_extra=s.body_schema(ReadIn),
             responses={200: {"model": s.ReadOut}, **s.problems(401, 403, 415, 422)})
async def post_notifications_read(request: Request, user_id: UserIdPath,
                                  uid: int = Depends(learner_token)) -> Response:
    """Mark some of the learner's notifications read."""
    raw = await json_body(request)
    try:
        body = ReadIn.model_validate(raw)
    except ValidationError as exc:
        raise Problem("validation_error", describe(exc)) from None
    return _json(await runtime(request).notifications.mark_read(uid, body.ids))


@router.get("/v1/users/{user_id}/notifications/events", tags=["notifications"],
            response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}},
                       **s.problems(401, 403, 422, 503)})
async def notification_events(request: Request, user_id: UserIdPath,
                              uid: int = Depends(learner_token_or_query)
                              ) -> Response:
    """The learner's new notifications as server-sent events (`notification`)."""
    hub: Hub = request.app.state.hub
    notifications = runtime(request).notifications
    stream_budget(hub, runtime(request).settings)
    listener = hub.listen_learner(uid)

    async def ready() -> bytes:
        await hub.connected.wait()  # the notification channel is subscribed
        return event("ready", orjson.dumps({"user_id": uid}))

    async def due() -> list[bytes]:
        ids = list(listener.ids)
        listener.ids.clear()
        finals, listener.finals = listener.finals, []
        return [event("notification", orjson.dumps(body))
                for body in await notifications.by_id(uid, ids, finals)]

    return EventStream(listener, ready, due, lambda: hub.unlisten_learner(listener))


# -- admin --------------------------------------------------------------------

@router.post("/v1/admin/leaderboards/{season}/rebuild", tags=["admin"], status_code=202,
             dependencies=[Depends(admin_token)],
             responses={202: {"model": s.RebuildOut}, **s.problems(401, 403, 404, 422, 503)})
async def post_rebuild(request: Request, season: SeasonPath) -> Response:
    """Rebuild a season's board from PostgreSQL in the background, then switch.
    While one runs (in any process), a second request joins it: the answer
    names the running rebuild, so two builders never race."""
    name = path_season(season, periods(request)).name
    rebuild_id = await runtime(request).rebuilder.start_or_join(name)
    if rebuild_id is None:
        raise Problem("rebuilding", f"a rebuild of {name} is starting; retry shortly",
                      retry_after=1)
    return _json({"rebuild_id": rebuild_id, "season": name, "status": "running"}, 202)


@router.get("/v1/admin/rebuilds/{rebuild_id}", tags=["admin"],
            dependencies=[Depends(admin_token)],
            responses={200: {"model": s.RebuildOut}, **s.problems(401, 403, 404, 422)})
async def get_rebuild(request: Request, rebuild_id: RebuildIdPath) -> Response:
    """The status of a rebuild."""
    status = await runtime(request).rebuilder.status(path_uuid(rebuild_id, "rebuild_id"))
    if status is None:
        raise Problem("not_found", "no such rebuild")
    return _json(status)


@router.get("/v1/admin/leaderboards/{season}/verify", tags=["admin"],
            dependencies=[Depends(admin_token)],
            responses={200: {"model": s.VerifyOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_verify(request: Request, season: SeasonPath) -> Response:
    """Compare the board in Redis with the sums in PostgreSQL."""
    result = await runtime(request).verifier.verify(path_season(season, periods(request)).name)
    return _json(result.body())


# -- the live page --------------------------------------------------------------

PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; "
                                "connect-src 'self'; img-src 'self'; base-uri 'none'; "
                                "form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
_STATIC = resources.files("laurels.api").joinpath("static")
_ASSETS = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8",
           "icon.svg": "image/svg+xml", "embed.js": "text/javascript; charset=utf-8"}


@router.get("/", tags=["page"], response_class=HTMLResponse)
async def page(request: Request) -> Response:
    """The live board of the current season (`#token=<learner token>` shows your
    rank); the configured periods are named in the page, for its switch."""
    html = _STATIC.joinpath("index.html").read_text().replace(
        '<meta name="laurels-periods" content="week">',
        f'<meta name="laurels-periods" content="{",".join(periods(request))}">')
    return HTMLResponse(html, headers=PAGE_HEADERS)


@router.get("/favicon.ico", tags=["page"], include_in_schema=False)
async def favicon() -> Response:
    return await asset("icon.svg")


@router.get("/embed.js", tags=["page"], response_class=Response,
            responses={200: {"content": {"text/javascript": {}}}})
async def embed() -> Response:
    """The embeddable board: a `<laurels-board>` custom element for a
    platform's own pages (docs/integrating.md); reads need
    `LAURELS_CORS_ORIGINS` to name the page's origin."""
    return await asset("embed.js")


@router.get("/static/{name}", tags=["page"], include_in_schema=False)
async def asset(name: str) -> Response:
    if name not in _ASSETS:
        raise Problem("not_found", "no such file")
    return Response(_STATIC.joinpath(name).read_bytes(), media_type=_ASSETS[name],
                    headers={**PAGE_HEADERS, "Cache-Control": "no-cache"})


# -- operations ---------------------------------------------------------------

@router.get("/healthz", tags=["operations"])
async def healthz() -> Response:
    """200 while the process is up."""
    return _json({"status": "ok"})


@router.get("/readyz", tags=["operations"], responses=s.problems(503))
async def readyz(request: Request) -> Response:
    """200 when PostgreSQL and Redis answer and every background loop runs, else
    503 (naming the loops that are down)."""
    rt = runtime(request)
    try:
        await rt.db.ping()
        await rt.board.ping()
    except Exception:  # any failure of either store means "not ready"
        raise Problem("unavailable", "PostgreSQL or Redis does not answer") from None
    supervisor = getattr(request.app.state, "supervisor", None)
    down = supervisor.problems() if supervisor is not None else {}
    if down:
        names = ", ".join(sorted(down))
        raise Problem("unavailable", f"background loop down: {names}")
    return _json({"status": "ready"})


@router.get("/metrics", tags=["operations"], response_class=Response,
            responses={200: {"content": {CONTENT_TYPE_LATEST: {}},
                             "description": "Prometheus text exposition"}})
async def metrics() -> Response:
    """Prometheus text exposition."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
