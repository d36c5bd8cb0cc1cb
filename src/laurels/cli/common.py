"""What every command of `laurels` shares: the typer app, its one-line
errors, the settings, the output (a table, a line or JSON), the season and
board arguments."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, TypeVar

import typer

from laurels.process.settings import ConfigError, Settings, load_settings

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None,  # help is plain text: "[/cohorts]" is no markup
                  help="laurels: weekly leaderboards and live notifications.")
T = TypeVar("T")


def fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"laurels: {' '.join(message.split())}", err=True)  # always one line
    return typer.Exit(code)


def _settings(**overrides: Any) -> Settings:
    try:
        settings = load_settings()
    except ConfigError as exc:
        raise fail(str(exc)) from None
    return settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})


def _logging() -> None:
    from laurels.core import logs

    logs.configure()


def _exit_on_signal(signum: int, _frame: Any) -> None:
    raise SystemExit(0)


SEASON_HELP = ("a season of a configured period: 2026-W49, 2026-11-30, 2026-11, all; "
               "or current, current-day, current-month")


def _season(text: str, settings: Settings, configured: bool = True) -> str:
    """Any period's season name or alias (current, current-day, current-month,
    all), of a configured period (or, `configured` off, of any: a season
    checked before a one-shot command has taken the deployment's periods)."""
    from laurels.core.seasons import PERIODS, BadSeason, PeriodOff, configured_season

    periods = settings.periods if configured else PERIODS
    try:
        return configured_season(text, periods, zone=settings.time_zone).name
    except (BadSeason, PeriodOff) as exc:
        raise fail(str(exc)) from None


BOARD_HELP = "global (the whole board) or a tag kind:value of a defined board kind"


async def _board_season(rt: Any, text: str, board: str, settings: Settings) -> Any:
    """A season (`_season`'s forms) on a board: `global`, or a board of a
    defined kind, in its zone with its periods."""
    from laurels.core.errors import DomainError
    from laurels.core.seasons import GLOBAL, BadSeason, PeriodOff, configured_season, parse_season
    from laurels.lifecycle.kind_rules import check_board

    if board == GLOBAL:
        return parse_season(_season(text, settings), zone=settings.time_zone)
    try:
        kind = await rt.board_kinds.find(check_board(board).partition(":")[0])
        if kind is None:
            raise fail(f"no board kind {board.partition(':')[0]} is defined")
        return configured_season(text, kind.periods, zone=kind.time_zone).on(board, kind.metric)
    except (DomainError, BadSeason, PeriodOff) as exc:
        raise fail(getattr(exc, "detail", None) or str(exc)) from None


JSON_HELP = "print JSON for scripts instead of a table"
UserArg = Annotated[int, typer.Argument(help="the learner's user id", min=1)]
JsonOpt = Annotated[bool, typer.Option("--json", help=JSON_HELP)]


def _print(payload: Any, as_json: bool, headers: tuple[str, ...] = (),
           rows: list[tuple[Any, ...]] | None = None, line: str | None = None) -> None:
    """What a command found: `payload` as JSON for scripts, else a table of
    `rows` under `headers` (rich), or one line."""
    if as_json:
        typer.echo(json.dumps(payload))
        return
    if line is not None:
        typer.echo(f"laurels: {line}")
    if rows is not None:
        from rich.console import Console
        from rich.table import Table

        table = Table()
        for n, header in enumerate(headers):  # an id is never cut (`webhooks retry`)
            whole = max((len(str(r[n])) for r in rows), default=0) if header == "id" else None
            table.add_column(header, no_wrap=header == "id", min_width=whole)
        for r in rows:
            table.add_row(*("" if v is None else str(v) for v in r))
        # A terminal's width; piped (to a file, grep), wide enough to cut nothing.
        Console(width=None if sys.stdout.isatty() else 250).print(table)
