"""Team kinds listed, defined and deleted, and a kind's board read (CONTRACT.md,
"Team boards"): `laurels teams` (or `teams list`), `teams define`, `teams
delete`, `teams board`. Each calls the service its endpoint calls; a table
(or a line) for people, `--json` the endpoint's body for scripts. A group
joins a kind with `"team"` on its PUT (the platform's), not here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from laurels.cli.common import (
    BOARD_HELP,
    SEASON_HELP,
    JsonOpt,
    _board_season,
    _print,
    _settings,
    app,
)
from laurels.cli.stores import _admin

if TYPE_CHECKING:
    from laurels.lifecycle.team_rules import TeamKind

teams_app = typer.Typer(no_args_is_help=False, invoke_without_command=True,
                        rich_markup_mode=None,
                        help="Team kinds: list them (no subcommand, or list), define or delete "
                             "them; read a kind's board.")
app.add_typer(teams_app, name="teams")

TeamArg = Annotated[str, typer.Argument(help="the team kind's name (classes)")]


def _kind_body(kind: TeamKind) -> dict[str, Any]:
    """A team kind as its endpoint answers it (api/team_routes.py)."""
    from laurels.reads.boards import iso

    return {"team": kind.team, "title": kind.title, "aggregate": kind.aggregate,
            "top": kind.top, "created_at": iso(kind.created_at)}


def _ranked_by(aggregate: str, top: int | None) -> str:
    if aggregate == "top":
        return f"the sum of its {top} best members' scores"
    return f"the {aggregate} of its members' scores"


def _list(as_json: bool) -> None:
    async def work(rt: Any) -> Any:
        return {"team_kinds": [_kind_body(k) for k in await rt.teams.all()]}

    body = _admin(work)
    _print(body, as_json, ("team", "title", "aggregate", "top", "created at"),
           [(k["team"], k["title"], k["aggregate"], k["top"], k["created_at"])
            for k in body["team_kinds"]])


@teams_app.callback()
def teams(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """The team kinds, by name (GET /v1/admin/team-kinds)."""
    if ctx.invoked_subcommand is None:
        _list(as_json)


@teams_app.command("list")
def list_kinds(as_json: JsonOpt = False) -> None:
    """The team kinds, by name (GET /v1/admin/team-kinds)."""
    _list(as_json)


@teams_app.command("define")
def define(
    team: TeamArg,
    title: Annotated[str | None, typer.Option(
        help="its title [a new kind's: its name capitalized]")] = None,
    aggregate: Annotated[str | None, typer.Option(
        help="sum (of the members' scores), mean (over every member, 0 for one without "
             "points) or top (the sum of the --top best) [a new kind's: sum]")] = None,
    top: Annotated[int | None, typer.Option(
        help="with --aggregate top: how many best members count, 1 to 100")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Define a team kind, or retitle one (PUT /v1/admin/team-kinds/TEAM): an
    option left out keeps what the kind has; another aggregate or top is
    refused (delete the kind first)."""
    body = {k: v for k, v in (("title", title), ("aggregate", aggregate), ("top", top))
            if v is not None}

    async def work(rt: Any) -> Any:
        return await rt.teams.define(team, body)

    defined, created = _admin(work)
    shown = _kind_body(defined)
    _print(shown, as_json, line=f"team kind {team} {'defined' if created else 'updated'}: "
           f"{shown['title']}, its groups ranked by "
           f"{_ranked_by(shown['aggregate'], shown['top'])}")


@teams_app.command("delete")
def delete(team: TeamArg, as_json: JsonOpt = False) -> None:
    """Delete a team kind: its groups are in no team kind any more (they and
    their members stay), its boards go (DELETE /v1/admin/team-kinds/TEAM)."""
    async def work(rt: Any) -> None:
        await rt.teams.delete(team)

    _admin(work)
    _print({"team": team, "deleted": True}, as_json, line=f"team kind {team} deleted")


@teams_app.command("board")
def board(
    team: TeamArg,
    season: Annotated[str, typer.Option(help=SEASON_HELP)] = "current",
    board: Annotated[str, typer.Option(help=BOARD_HELP)] = "global",
    limit: Annotated[int, typer.Option(min=1, max=1000, help="how many of its top")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """A team kind's top teams on a board and season
    (GET /v1/teams/TEAM/leaderboards/SEASON), every team named (as the admin
    token reads it); --json: the endpoint's body (its `next` null: one page)."""
    settings = _settings()

    async def work(rt: Any) -> Any:
        named = await _board_season(rt, season, board, settings)
        body, _ = await rt.team_reads.page(team, named, 0, limit, "platform")
        return body

    body = _admin(work)
    shown = len(body["entries"])
    _print(body, as_json, ("rank", "group", "name", "score", "members"),
           [(e["rank"], e["group_id"], e["name"], e["score"], e["members"])
            for e in body["entries"]],
           line=f"{body['title']} ({team}) on {body['board']}, {body['season']}: "
                f"{body['total']} teams ranked by {_ranked_by(body['aggregate'], body['top'])}"
                + (f"; the top {shown}" if shown < body["total"] else ""))
