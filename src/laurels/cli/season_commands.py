"""A season's board rebuilt from PostgreSQL, a rebuild's state, and boards
verified against PostgreSQL: `laurels rebuild`, `rebuild-status`, `verify`."""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

import typer

from laurels.cli.common import (
    BOARD_HELP,
    SEASON_HELP,
    JsonOpt,
    _board_season,
    _print,
    _season,
    _settings,
    app,
    fail,
)
from laurels.cli.stores import _admin, _with_runtime
from laurels.process.settings import Settings


@app.command()
def rebuild(season: Annotated[str, typer.Option("--season", help=SEASON_HELP)],
            board: Annotated[str, typer.Option("--board", help=BOARD_HELP)] = "global"
            ) -> None:
    """Rebuild a season's board from PostgreSQL and switch to it atomically."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from laurels.projection.filling import RebuildFailed
    from laurels.projection.rebuild import RebuildRunning

    settings = _settings()
    _season(season, settings, configured=False)  # a malformed one: before any server starts
    name = f"{season} of {board}"

    async def work(rt: Any) -> Any:
        nonlocal name
        named = await _board_season(rt, season, board, settings)
        name = named.name if board == "global" else name
        columns = (TextColumn("rebuild {task.description}"), BarColumn(),
                   MofNCompleteColumn(), TextColumn("{task.fields[rate]} events/s"),
                   TimeElapsedColumn())
        with Progress(*columns, transient=False) as bar:
            task = bar.add_task(name, total=None, rate="-")
            started = time.monotonic()

            def progress(done: int, total: int) -> None:
                elapsed = time.monotonic() - started
                rate = f"{done / elapsed:,.0f}" if elapsed > 0 and done else "-"
                bar.update(task, completed=done, total=total, rate=rate)

            return await rt.rebuilder.run(named, progress=progress, audited=True)

    try:
        result = _with_runtime(settings, work)
    except RebuildRunning:
        raise fail(f"a rebuild of {name} is already running", 1) from None
    except RebuildFailed as exc:
        raise fail(f"rebuild of {name} failed: {exc}", 1) from None
    typer.echo(f"laurels: {name} rebuilt from {result.events} events and switched "
               f"(rebuild {result.rebuild_id})")


@app.command()
def verify(season: Annotated[str | None, typer.Option("--season", help=SEASON_HELP)] = None,
           board: Annotated[str, typer.Option("--board", help=BOARD_HELP)] = "global",
           every: Annotated[bool, typer.Option(
               "--all", help="every open and closed season of every board, archives "
               "included")] = False
           ) -> None:
    """Compare a board in Redis (and a closed season's archive) with PostgreSQL:
    exit 0 if consistent, 1 if not. --all walks every season of every board,
    and checks every challenge against its rules."""
    if every == (season is not None):
        raise fail("say which: --season S (with --board B), or --all")
    settings = _settings()
    if season is None:  # --all
        _verify_all(settings)
        return
    _season(season, settings, configured=False)  # a malformed one: before any server starts
    name = f"{season} of {board}"

    async def work(rt: Any) -> Any:
        nonlocal name
        named = await _board_season(rt, season, board, settings)
        name = named.name if board == "global" else name
        return await rt.verifier.verify(named)

    result = _with_runtime(settings, work)
    if result.consistent:
        typer.echo(f"laurels: {name} is consistent ({result.players_checked} learners checked)")
        return
    typer.echo(f"laurels: {name} is NOT consistent: {result.mismatch_count} of "
               f"{result.players_checked} learners differ")
    typer.echo("user_id\tdifference")
    for m in result.mismatches:
        typer.echo(f"{m.user_id}\t{m.difference}")
    raise typer.Exit(1)


def _verify_all(settings: Settings) -> None:
    """`verify --all`: every season, a progress bar, a summary; exit 1 on any
    difference (each listed with its first differences)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    async def work(rt: Any) -> list[tuple[str, bool, Any]]:
        seasons = await rt.verifier.every_season()
        challenges = await rt.challenge_checker.every()
        teams = await rt.team_checker.every()
        done = []
        columns = (TextColumn("verify {task.description}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, transient=False) as bar:
            task = bar.add_task("every board",
                                total=len(seasons) + len(challenges) + len(teams))
            for each, closed in seasons:
                done.append((each.shown, closed, await rt.verifier.verify(each)))
                bar.advance(task)
            for cid in challenges:  # checked against their rules (challenges/verify.py)
                done.append((f"challenge {cid}", False, await rt.challenge_checker.verify(cid)))
                bar.advance(task)
            for team, each in teams:  # team boards (projection/team_verify.py)
                done.append((f"teams {team} of {each.shown}", False,
                             await rt.team_checker.verify(team, each)))
                bar.advance(task)
        return done

    results = _with_runtime(settings, work)
    differ = [(shown, r) for shown, _, r in results if not r.consistent]
    closed = sum(1 for _, c, _ in results if c)
    typer.echo(f"laurels: {len(results)} seasons, challenges and team boards verified "
               f"({closed} closed, "
               f"their archives included): {len(results) - len(differ)} consistent, "
               f"{len(differ)} NOT")
    for shown, r in differ:
        typer.echo(f"{shown}: {r.mismatch_count} of {r.players_checked} learners differ")
        for m in r.mismatches[:5]:
            typer.echo(f"  {m.user_id}\t{m.difference}")
    if differ:
        raise typer.Exit(1)


@app.command("rebuild-status")
def rebuild_status(rebuild_id: Annotated[str, typer.Argument(help="the rebuild's id")],
                   as_json: JsonOpt = False) -> None:
    """A rebuild's state, as the API started it (GET /v1/admin/rebuilds/ID)."""
    from laurels.core.validation import UUID_RE

    if not re.fullmatch(UUID_RE, rebuild_id):
        raise fail("a rebuild id is a UUID, as the rebuild's answer gave it")

    async def work(rt: Any) -> Any:
        return await rt.rebuilder.status(rebuild_id)

    body = _admin(work)
    if body is None:
        raise fail(f"no rebuild {rebuild_id}", 1)
    _print(body, as_json, line=f"rebuild {rebuild_id} of {body['season']}: {body['status']}, "
                               f"{body['events']} events"
                               + (f" ({body['error']})" if body.get("error") else ""))
