"""`?board=`: which board a read names (CONTRACT.md, "Boards of a course, a
track or a skill"). `global` (the default) is the whole platform's board,
in LAURELS_TIME_ZONE with LAURELS_PERIODS; a tag `kind:value` is a board of
that kind, in the kind's zone with the kind's periods, ranking by its metric.
A malformed board is 422; a board whose kind is not defined, or a period
its kind does not have, is 404."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from laurels.api.params import path_season, query_value
from laurels.api.problems import Problem
from laurels.api.state import RouteServices
from laurels.core.errors import DomainError
from laurels.core.seasons import GLOBAL, PERIODS, Season
from laurels.lifecycle.kind_rules import check_board

BoardQuery = Annotated[str, Query(
    description="`global` (the whole platform's board) or a tag `kind:value` of a defined "
                "board kind", examples=["global", "course:python-101"],
    json_schema_extra={"pattern": "^(global|[a-z][a-z0-9_-]{0,31}:[A-Za-z0-9._-]{1,64})$"})]


async def board_season(svc: RouteServices, season: str, board: str | None) -> Season:
    """The season a read names, on the board it names (None: `global`)."""
    if board is None or board == GLOBAL:
        return path_season(season, svc.settings.periods, svc.settings.time_zone)
    try:
        check_board(board)
    except DomainError as exc:
        raise Problem("validation_error", exc.detail) from None
    path_season(season, PERIODS, "UTC")  # a malformed season is 422 before any 404
    kind = await svc.board_kinds.find(board.partition(":")[0])
    if kind is None:
        raise Problem("not_found", f"no board kind {board.partition(':')[0]} is defined")
    named = path_season(season, PERIODS, kind.time_zone)
    if named.period not in kind.periods:
        raise Problem("not_found", f"board kind {kind.kind} has no {named.period} boards")
    return named.on(board, kind.metric)


async def query_board_season(svc: RouteServices, season: str, query: bytes) -> Season:
    """`board_season` of the fast lane's query string."""
    return await board_season(svc, season, query_value(query, "board"))
