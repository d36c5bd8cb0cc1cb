"""Board kinds listed, defined or deleted: `laurels kinds`, `kinds define`,
`kinds delete`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from laurels.cli.common import JSON_HELP, _settings, app, fail
from laurels.cli.stores import _with_runtime

kinds_app = typer.Typer(no_args_is_help=False, invoke_without_command=True,
                        rich_markup_mode=None,
                        help="Board kinds: list (no subcommand), define or delete them.")
app.add_typer(kinds_app, name="kinds")


def _kind_rows(kinds: list[Any]) -> list[dict[str, Any]]:
    return [{"kind": k.kind, "title": k.title, "metric": k.metric,
             "periods": list(k.periods), "time_zone": k.time_zone, "notify": k.notify,
             "created_at": k.created_at.isoformat()} for k in kinds]


def _print_kinds(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({"kinds": rows}))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("kind", "title", "metric", "periods", "time zone", "notify")
    for r in rows:
        table.add_row(r["kind"], r["title"], r["metric"], ",".join(r["periods"]),
                      r["time_zone"], "yes" if r["notify"] else "no")
    Console().print(table)


@kinds_app.callback()
def kinds(ctx: typer.Context,
          as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False) -> None:
    """The board kinds (GET /v1/admin/board-kinds)."""
    if ctx.invoked_subcommand is not None:
        return
    settings = _settings()

    async def work(rt: Any) -> Any:
        return _kind_rows(await rt.board_kinds.all())

    _print_kinds(_with_runtime(settings, work), as_json)


@kinds_app.command("define")
def define_kind(
    kind: Annotated[str, typer.Argument(help="the kind, as in its tags (course)")],
    title: Annotated[str | None, typer.Option(help="its title")] = None,
    metric: Annotated[str | None, typer.Option(help="points, completions or best")] = None,
    periods: Annotated[str | None, typer.Option(help="comma list: week,day,month,all")] = None,
    time_zone: Annotated[str | None, typer.Option(help="an IANA time zone")] = None,
    notify: Annotated[bool | None, typer.Option("--notify/--no-notify",
                                                help="rank notifications")] = None,
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Define a board kind, or retitle one (PUT /v1/admin/board-kinds/KIND)."""
    from laurels.core.errors import DomainError

    body: dict[str, Any] = {k: v for k, v in (("title", title), ("metric", metric),
                                              ("time_zone", time_zone), ("notify", notify))
                            if v is not None}
    if periods is not None:
        body["periods"] = [p.strip() for p in periods.split(",") if p.strip()]
    settings = _settings()

    async def work(rt: Any) -> Any:
        return await rt.board_kinds.define(kind, body)

    try:
        defined, created = _with_runtime(settings, work)
    except DomainError as exc:
        raise fail(exc.detail, 1) from None
    if as_json:
        typer.echo(json.dumps(_kind_rows([defined])[0]))
        return
    typer.echo(f"laurels: board kind {kind} {'defined' if created else 'unchanged but its title'}")


@kinds_app.command("delete")
def delete_kind(kind: Annotated[str, typer.Argument(help="the kind to delete")],
                as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False
                ) -> None:
    """Delete a board kind: its boards go (DELETE /v1/admin/board-kinds/KIND)."""
    from laurels.core.errors import DomainError

    settings = _settings()

    async def work(rt: Any) -> Any:
        return await rt.board_kinds.delete(kind)

    try:
        deleted = _with_runtime(settings, work)
    except DomainError as exc:
        raise fail(exc.detail, 1) from None
    if as_json:
        typer.echo(json.dumps({"kind": kind, "deleted": deleted}))
        return
    typer.echo(f"laurels: board kind {kind} {'deleted' if deleted else 'was not defined'}")
