"""HTTP routes of board kinds (CONTRACT.md, "Boards of a course, a track or
a skill"): an operator defines, lists and deletes the kinds whose tags put
completions on boards of their own (lifecycle/board_kinds.py holds the rules)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from laurels.api import schemas as s
from laurels.api.boards import board_season
from laurels.api.dependencies import admin_token, small_json_body
from laurels.api.params import Limit
from laurels.api.problems import JSONResponse, Problem
from laurels.api.state import services
from laurels.lifecycle.kind_rules import BoardKind, check_kind
from laurels.reads.boards import iso

KindPath = Annotated[str, Path(
    description="the kind's name, the part of its tags before the colon",
    examples=["course"], json_schema_extra={"pattern": "^[a-z][a-z0-9_-]{0,31}$"})]

router = APIRouter()


def kind_body(kind: BoardKind) -> dict[str, Any]:
    return {"kind": kind.kind, "title": kind.title, "metric": kind.metric,
            "periods": list(kind.periods), "time_zone": kind.time_zone,
            "notify": kind.notify, "created_at": iso(kind.created_at)}


@router.put("/v1/admin/board-kinds/{kind}", tags=["admin"],
            dependencies=[Depends(admin_token)], openapi_extra=s.body_schema(s.BoardKindIn),
            responses={200: {"model": s.BoardKindOut}, 201: {"model": s.BoardKindOut},
                       **s.problems(401, 403, 409, 413, 415, 422, 503)})
async def put_kind(request: Request, kind: KindPath) -> Response:
    """Define a board kind (`201`), or give an existing one another title
    (`200`); any other change is `409 kind_conflict`. Its boards count every
    kept completion tagged with it, from the start."""
    body = await small_json_body(request)
    if not isinstance(body, dict):
        raise Problem("validation_error", "the body must be a JSON object")
    defined, created = await services(request).board_kinds.define(kind, body)
    return JSONResponse(kind_body(defined), status_code=201 if created else 200)


@router.get("/v1/admin/board-kinds", tags=["admin"], dependencies=[Depends(admin_token)],
            responses={200: {"model": s.BoardKindsOut}, **s.problems(401, 403, 503)})
async def get_kinds(request: Request) -> Response:
    """Every board kind, by name."""
    kinds = await services(request).board_kinds.all()
    return JSONResponse({"kinds": [kind_body(k) for k in kinds]})


@router.delete("/v1/admin/board-kinds/{kind}", tags=["admin"], status_code=204,
               dependencies=[Depends(admin_token)],
               responses={**s.problems(401, 403, 422, 503)})
async def delete_kind(request: Request, kind: KindPath) -> Response:
    """Delete a board kind: its boards are gone from every read and from
    Redis; the tags stay on the completions, so defining it again brings
    its boards back. Deleting a kind that is not defined changes nothing
    (`204` all the same)."""
    await services(request).board_kinds.delete(kind)
    return Response(status_code=204)


@router.get("/v1/admin/board-kinds/{kind}/boards", tags=["admin"],
            dependencies=[Depends(admin_token)],
            responses={200: {"model": s.KindBoardsOut}, **s.problems(401, 403, 404, 422, 503)})
async def get_kind_boards(
        request: Request, kind: KindPath,
        season: Annotated[str, Query(description="a season of the kind (`current`, a week, ...), "
                                                 "in its time zone")] = "current",
        search: Annotated[str | None, Query(min_length=1, max_length=64,
                                            description="part of the board's name")] = None,
        limit: Limit = 100,
        after: Annotated[str | None, Query(max_length=100,
                                           description="the `next` of the last page")] = None,
        ) -> Response:
    """The boards of a kind with a counted completion in one of its seasons
    (the operator console's Boards): by name, those whose name holds
    `search`, with how many learners each."""
    svc = services(request)
    check_kind(kind)  # a malformed one: 422
    found = await svc.board_kinds.find(kind)
    if found is None:
        raise Problem("not_found", f"no board kind {kind} is defined")
    named = await board_season(svc, season, f"{kind}:x")
    rows = await svc.board_kinds.boards(found, named, search, after or "", limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    return JSONResponse({"kind": kind, "season": named.label,
                         "boards": [{"board": r["board"], "learners": r["learners"]}
                                    for r in rows],
                         "next": rows[-1]["board"] if more else None})
