"""Learners: a learner's token signed, a learner erased for good, suspended
or unsuspended: `laurels token`, `erase`, `suspend`, `unsuspend`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from laurels.cli.common import JsonOpt, UserArg, _print, _settings, app, fail
from laurels.cli.one_shot import _stored_secrets
from laurels.cli.stores import _admin
from laurels.process.datadir import stored_secret
from laurels.process.settings import Settings


@app.command()
def token(
    user: Annotated[int, typer.Option("--user", help="the learner's user id")],
    ttl_seconds: Annotated[int, typer.Option(help="lifetime of the token")] = 86400,
) -> None:
    """Print a learner token (JWT, HS256) signed with LAURELS_USER_TOKEN_SECRET."""
    from laurels.api.auth import mint
    from laurels.core.validation import USER_ID_MAX

    if not 1 <= user <= USER_ID_MAX:
        raise fail(f"--user must be from 1 to {USER_ID_MAX}")
    if ttl_seconds < 1:
        raise fail("--ttl-seconds must be positive")
    settings = _settings()
    if settings.user_token_secret is not None:
        secret, source = settings.user_token_secret.get_secret_value(), \
            "LAURELS_USER_TOKEN_SECRET"
    else:
        stored = stored_secret(_stored_secrets(settings), "user_token_secret")
        if not stored:
            raise fail(_no_token_secret(settings))
        secret, source = stored, str(settings.data_dir / "secrets.json")
    # On stderr: stdout is the token alone, for scripts.
    typer.echo(f"laurels: using data dir {settings.data_dir}; signing with the user token "
               f"secret from {source}", err=True)
    typer.echo(mint(secret, user, ttl_seconds))


def _no_token_secret(settings: Settings) -> str:
    """Why `token` refuses to sign (a fresh secret would sign tokens the
    server refuses)."""
    from laurels.process import embedded

    everything = settings.model_copy(update={"database_url": None, "redis_url": None})
    if len(embedded.never_started(everything)) == 2:  # no trace of a serve at all
        return (f"no laurels serve has run in {settings.data_dir} (no secrets there): set "
                f"LAURELS_DATA_DIR to the data dir of your laurels serve, or "
                f"LAURELS_USER_TOKEN_SECRET to the secret it uses")
    return (f"no user token secret in {settings.data_dir / 'secrets.json'} (the laurels serve "
            f"there took it from the environment?): set LAURELS_USER_TOKEN_SECRET to the "
            f"secret it uses")


@app.command()
def erase(user: UserArg, as_json: JsonOpt = False) -> None:
    """Erase a learner for good: completions, name, every board (DELETE /v1/users/ID)."""

    async def work(rt: Any) -> bool:
        return bool(await rt.learners.erase(user))

    first = _admin(work)
    _print({"user_id": user, "erased": True}, as_json,
           line=f"learner {user} erased" if first else f"learner {user} was erased already")


def _suspension(user: int, suspended: bool, reason: str | None, as_json: bool) -> None:
    from laurels.core.validation import Invalid, validate_reason

    try:
        why = validate_reason({} if reason is None else {"reason": reason},
                              required=suspended).reason
    except Invalid as exc:
        raise fail(f"--{exc}") from None

    async def work(rt: Any) -> Any:
        return await rt.learners.suspend(user, suspended, why)

    body = _admin(work)
    _print(body, as_json, line=f"learner {user} {'suspended' if suspended else 'unsuspended'}")


@app.command()
def suspend(user: UserArg,
            reason: Annotated[str, typer.Option("--reason", help="why (1 to 500 characters)")],
            as_json: JsonOpt = False) -> None:
    """Suspend a learner: off every public board and hint, like a hidden one (audited)."""
    _suspension(user, True, reason, as_json)


@app.command()
def unsuspend(user: UserArg,
              reason: Annotated[str | None, typer.Option("--reason", help="why (optional)")]
              = None, as_json: JsonOpt = False) -> None:
    """Unsuspend a learner: shown as they chose again (audited)."""
    _suspension(user, False, reason, as_json)
