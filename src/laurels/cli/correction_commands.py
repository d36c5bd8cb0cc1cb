"""Corrections: a completion, or a learner's, voided or restored (audited),
and the audit log: `laurels void`, `restore`, `audit`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from laurels.cli.common import BOARD_HELP, JsonOpt, _board_season, _print, _settings, app, fail
from laurels.cli.stores import _admin, _with_runtime


def _correct(completion_id: str, reason: str | None, voided: bool, as_json: bool = False
             ) -> None:
    """`void` and `restore`: as the admin endpoints (audited, projected at once)."""
    from laurels.core.errors import DomainError
    from laurels.core.validation import Invalid, parse_completion_id, validate_reason

    try:
        cid = parse_completion_id(completion_id)
        why = validate_reason({"reason": reason} if reason is not None else None,
                              required=voided).reason
    except Invalid as exc:
        raise fail(str(exc)) from None
    settings = _settings()

    async def work(rt: Any) -> Any:
        return await rt.corrections.correct(cid, voided, (why or "") if voided else why)

    try:
        body, changed = _with_runtime(settings, work)
    except DomainError as exc:
        raise fail(exc.detail, 1) from None
    if as_json:
        typer.echo(json.dumps({**body, "changed": changed}))
        return
    where = f"(seq {body['seq']}, {body['season']})"
    if changed:
        typer.echo(f"laurels: {body['completion_id']} {where} is {body['status']}")
    elif voided:
        typer.echo(f"laurels: completion {body['completion_id']} {where} was already voided; "
                   "nothing changed")
    else:
        typer.echo(f"laurels: completion {body['completion_id']} {where} already counts; "
                   "nothing changed")


def _learner_correction(user: int, season: str | None, reason: str | None, voided: bool,
                        as_json: bool, board: str = "global") -> None:
    """`void --user` and `restore --user`: a learner's completions together."""
    from laurels.core.validation import Invalid, validate_reason

    try:
        why = validate_reason({} if reason is None else {"reason": reason}, required=voided).reason
    except Invalid as exc:
        raise fail(f"--{exc}") from None
    settings = _settings()

    async def work(rt: Any) -> Any:
        from laurels.api.params import path_season
        from laurels.core.seasons import GLOBAL, PERIODS

        if board == GLOBAL:
            named = path_season(season, PERIODS, settings.time_zone) if season else None
        else:  # that board's season, in its zone; a board of a kind not defined: refused
            on_board = await _board_season(rt, season or "current", board, settings)
            named = on_board if season else None
        return await rt.corrections.correct_learner(user, voided, why, named, board)

    body = _admin(work)
    n = body.get("voided", body.get("restored", 0))
    where = (f" of {season}" if season else "") + (f" on {board}" if board != "global" else "")
    _print(body, as_json, line=f"{n} completion{'s' if n != 1 else ''}{where} of learner "
                               f"{user} {'voided' if voided else 'restored'}")


@app.command()
def void(completion_id: Annotated[str | None, typer.Argument(
             help="the completion to void (or --user)")] = None,
         reason: Annotated[str | None, typer.Option("--reason", help="why (1 to 500 characters)")]
         = None,
         user: Annotated[int | None, typer.Option("--user", min=1,
                                                  help="void every counted completion of "
                                                       "this learner (of --season)")] = None,
         season: Annotated[str | None, typer.Option("--season", help="with --user: one "
                                                    "season's (any period's name)")] = None,
         board: Annotated[str, typer.Option("--board", help="with --user: " + BOARD_HELP
                                            + " (its completions, its season)")] = "global",
         as_json: JsonOpt = False) -> None:
    """Void a completion, or a learner's (--user): they stop counting on every board (audited)."""
    if (completion_id is None) == (user is None):
        raise fail("name a completion, or a learner with --user")
    if user is not None:
        _learner_correction(user, season, reason, True, as_json, board)
        return
    if board != "global":
        raise fail("--board goes with --user (a completion is voided on every board)")
    if reason is None:
        raise fail("--reason: required, 1 to 500 characters")
    _correct(completion_id or "", reason, voided=True, as_json=as_json)


@app.command()
def restore(completion_id: Annotated[str | None, typer.Argument(
                help="the completion to restore (or --user)")] = None,
            reason: Annotated[str | None, typer.Option("--reason", help="why (optional)")]
            = None,
            user: Annotated[int | None, typer.Option("--user", min=1,
                                                     help="restore every voided completion "
                                                          "of this learner (of --season)")]
            = None,
            season: Annotated[str | None, typer.Option("--season", help="with --user: one "
                                                       "season's")] = None,
            board: Annotated[str, typer.Option("--board", help="with --user: " + BOARD_HELP
                                               + " (its completions, its season)")] = "global",
            as_json: JsonOpt = False) -> None:
    """Restore a voided completion, or a learner's (--user): they count again (audited)."""
    if (completion_id is None) == (user is None):
        raise fail("name a completion, or a learner with --user")
    if user is not None:
        _learner_correction(user, season, reason, False, as_json, board)
        return
    if board != "global":
        raise fail("--board goes with --user (a completion is restored on every board)")
    _correct(completion_id or "", reason, voided=False, as_json=as_json)


@app.command()
def audit(limit: Annotated[int, typer.Option("--limit", min=1, max=1000,
                                             help="entries, newest first")] = 100,
          as_json: JsonOpt = False) -> None:
    """The audit log, newest first (GET /v1/admin/audit)."""

    async def work(rt: Any) -> Any:
        return (await rt.corrections.audit_page(limit, None))[0]

    body = _admin(work)
    _print(body, as_json, ("id", "at", "action", "target", "reason"),
           [(e["id"], e["at"], e["action"], e["target"], e["reason"])
            for e in body["entries"]])
