"""Webhook deliveries listed, and one sent again: `laurels webhooks`,
`laurels webhooks retry`."""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from laurels.cli.common import JsonOpt, _print, app, fail
from laurels.cli.stores import _admin

webhooks_app = typer.Typer(no_args_is_help=False, invoke_without_command=True,
                           rich_markup_mode=None,
                           help="Webhook deliveries: list them (no subcommand), or retry one.")
app.add_typer(webhooks_app, name="webhooks")


@webhooks_app.callback()
def webhooks(ctx: typer.Context,
             status: Annotated[str | None, typer.Option(
                 "--status", help="pending, delivered or failed")] = None,
             limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 100,
             as_json: JsonOpt = False) -> None:
    """Webhook deliveries, newest first (GET /v1/admin/webhooks/deliveries)."""
    if ctx.invoked_subcommand is not None:
        return
    if status not in (None, "pending", "delivered", "failed"):
        raise fail("--status: pending, delivered or failed")

    async def work(rt: Any) -> Any:
        return (await rt.deliveries.page(status, limit, None))[0]

    body = _admin(work)
    _print(body, as_json, ("id", "type", "status", "attempts", "last error", "next attempt"),
           [(d["id"], d["type"], delivery_state(d), d["attempts"], d["last_error"],
             d["next_attempt_at"]) for d in body["deliveries"]])


def delivery_state(d: dict[str, Any]) -> str:
    """A delivery's status for people: a pending one is either waiting for
    its first attempt (a notification's waits for the coalescing window) or
    retrying after failed attempts, which is what an operator looks for."""
    if d["status"] != "pending":
        return str(d["status"])
    return "pending: retrying" if d["attempts"] else "pending: waiting"


@webhooks_app.command("retry")
def retry_delivery(delivery_id: Annotated[str, typer.Argument(help="the delivery's id")],
                   as_json: JsonOpt = False) -> None:
    """Send a delivery again at once (POST /v1/admin/webhooks/deliveries/ID/retry)."""
    from laurels.core.validation import UUID_RE

    if not re.fullmatch(UUID_RE, delivery_id):
        raise fail("a delivery id is a UUID, as `laurels webhooks` lists it")

    async def work(rt: Any) -> bool:
        return bool(await rt.deliveries.retry(delivery_id))

    if not _admin(work):
        raise fail(f"no delivery {delivery_id}", 1)
    _print({"id": delivery_id, "retried": True}, as_json,
           line=f"delivery {delivery_id} is sent again now")
