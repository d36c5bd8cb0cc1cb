"""The `laurels` command (docs/contract.md, CLI). Options fall back to LAURELS_* variables.

A module of commands per concern, each adding its commands to the one `app`
(common.py, with the errors, settings and output they share):
process_commands (serve, projector, demo, migrate), season_commands
(rebuild, rebuild-status, verify), correction_commands (void, restore,
audit), learner_commands (token, erase, suspend, unsuspend),
league_commands (leagues), webhook_commands (webhooks), kind_commands
(kinds), challenge_commands (challenges), team_commands (teams). How a
command reaches the stores is stores.py; what a one-shot command may use,
one_shot.py."""

from __future__ import annotations

import sys

import typer
import typer.main

from laurels.cli import (  # noqa: F401 (each adds its commands to `app` as it is imported)
    challenge_commands,
    correction_commands,
    kind_commands,
    league_commands,
    learner_commands,
    process_commands,
    season_commands,
    team_commands,
    webhook_commands,
)
from laurels.cli.common import app

__all__ = ["app", "main"]

# `laurels --help` lists the commands in this order, whatever the order the
# modules above register them in (typer lists the groups after the commands).
# A command not named here comes last, in the order it was registered.
ORDER = ("serve", "projector", "migrate", "token", "rebuild", "verify", "void", "restore",
         "rebuild-status", "erase", "suspend", "unsuspend", "audit", "leagues", "demo",
         "webhooks", "kinds", "challenges", "teams")


def _place(name: str | None) -> int:
    return ORDER.index(name) if name in ORDER else len(ORDER)


app.registered_commands.sort(key=lambda c: _place(  # (named as typer names them)
    c.name or (typer.main.get_command_name(c.callback.__name__) if c.callback else None)))
app.registered_groups.sort(key=lambda g: _place(g.name))


def main() -> None:
    try:  # typer vendors its click (0.29); older ones use the package
        from typer._click import exceptions as click
    except ImportError:  # pragma: no cover
        from click import exceptions as click  # type: ignore[no-redef]

    try:
        code = app(standalone_mode=False)
    except KeyboardInterrupt:
        sys.exit(130)
    except click.UsageError as exc:  # a missing or bad argument: one line, like every error
        where = exc.ctx.command_path if exc.ctx else "laurels"
        typer.echo(f"laurels: {' '.join(exc.format_message().split())} (see {where} --help)",
                   err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        typer.echo(f"laurels: {' '.join(exc.format_message().split())}", err=True)
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
