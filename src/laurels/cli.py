"""The `laurels` command (docs/contract.md, CLI). Options fall back to LAURELS_* variables."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from secrets import token_urlsafe
from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from urllib.parse import unquote, urlsplit

import typer

from laurels.datadir import (
    POSTGRES_PASSWORD,
    SECRET_NAMES,
    VALKEY_PASSWORD,
    SecretsProposal,
    own_data_dir,
    propose_secrets,
    read_stored,
    resolve_secrets,
    stored_name,
    stored_secret,
)
from laurels.settings import ConfigError, Secrets, Settings, load_settings

if TYPE_CHECKING:  # the CLI imports the service graph only in the commands that need it
    from laurels.embedded import Servers
    from laurels.runtime import Runtime

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


def _secrets(settings: Settings, announce: bool = True) -> Secrets:
    try:
        return resolve_secrets(settings, announce=announce)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise fail(f"cannot read or write secrets in {settings.data_dir}: {exc}") from None


def _proposal(settings: Settings) -> SecretsProposal:
    """The secrets a serve or projector would run with, none saved yet."""
    try:
        return propose_secrets(settings)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise fail(f"cannot read or write secrets in {settings.data_dir}: {exc}") from None


async def _join(db: Any, settings: Settings, proposal: SecretsProposal, kind: str,
                process_id: str | None = None) -> Any:
    """This serve or projector among the deployment's processes: it never
    generates a secret the deployment has (it asks for it instead), and
    with settings other than the running processes' it stops (one line);
    then the secrets it generated, if any, are saved and printed."""
    from laurels import deployment

    has = await deployment.recorded_secrets(db)
    missing = [n for n in proposal.generated if n in has]
    if missing:
        name = stored_name(missing[0])
        raise deployment.DeploymentConflict(
            f"{name} is not set and {settings.data_dir} has none, but the deployment has "
            f"one: give this process the deployment's secrets ({name}, or its secrets.json; "
            "docs/operations.md, Several processes)")
    membership = deployment.Membership(db, kind, process_id)  # type: ignore[arg-type]
    await membership.join(settings, proposal.secrets)
    proposal.save()
    return membership


SEASON_HELP = ("a season of a configured period: 2026-W49, 2026-11-30, 2026-11, all; "
               "or current, current-day, current-month")


def _season(text: str, settings: Settings, configured: bool = True) -> str:
    """Any period's season name or alias (current, current-day, current-month,
    all), of a configured period (or, `configured` off, of any: a season
    checked before a one-shot command has taken the deployment's periods)."""
    from laurels.seasons import PERIODS, BadSeason, PeriodOff, configured_season

    periods = settings.periods if configured else PERIODS
    try:
        return configured_season(text, periods, zone=settings.time_zone).name
    except (BadSeason, PeriodOff) as exc:
        raise fail(str(exc)) from None


BOARD_HELP = "global (the whole board) or a tag kind:value of a defined board kind"


async def _board_season(rt: Any, text: str, board: str, settings: Settings) -> Any:
    """A season (`_season`'s forms) on a board: `global`, or a board of a
    defined kind, in its zone with its periods."""
    from laurels.errors import DomainError
    from laurels.kind_rules import check_board
    from laurels.seasons import GLOBAL, BadSeason, PeriodOff, configured_season, parse_season

    if board == GLOBAL:
        return parse_season(_season(text, settings), zone=settings.time_zone)
    try:
        kind = await rt.board_kinds.find(check_board(board).partition(":")[0])
        if kind is None:
            raise fail(f"no board kind {board.partition(':')[0]} is defined")
        return configured_season(text, kind.periods, zone=kind.time_zone).on(board, kind.metric)
    except (DomainError, BadSeason, PeriodOff) as exc:
        raise fail(getattr(exc, "detail", None) or str(exc)) from None


def _start_servers(settings: Settings, secrets: Secrets) -> Any:
    from laurels import embedded

    try:
        return embedded.start(settings, secrets.valkey_password, secrets.postgres_password)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:  # any start failure becomes one clear line
        raise fail(f"cannot start the embedded servers: {exc}") from None


def _logging() -> None:
    from laurels import logs

    logs.configure()


SECRET_PARAMS = {"password", "pass", "passwd", "sslpassword", "requirepass"}  # in a URL's query


def _shown(url: str) -> str:
    """A store's URL to print: any password replaced by ***, the rest as
    given (the embedded PostgreSQL's unix-socket `host=` readable)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.partition("://")[0] + "://(unparsable URL)"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        netloc = f"{user}{':***' if password else ''}@{hostport}"
    query = []
    for item in parts.query.split("&") if parts.query else []:
        name, eq, value = item.partition("=")
        if unquote(name).lower() in SECRET_PARAMS:
            query.append(f"{name}=***")
        else:
            query.append(f"{unquote(name)}{eq}{unquote(value)}")
    shown = f"{parts.scheme}://{netloc}{parts.path}"
    return shown + ("?" + "&".join(query) if query else "")


def _using(settings: Settings, servers: Servers) -> None:
    """Which data dir and stores a one-shot command uses: on stderr (stdout
    is the command's answer, which scripts parse), never a secret."""
    def how(kind: str) -> str:
        state = servers.embedded.get(kind)
        return f" (embedded, {state})" if state else ""

    typer.echo(f"laurels: using data dir {settings.data_dir}", err=True)
    typer.echo(f"laurels: using database {_shown(servers.database_url)}{how('database')}, "
               f"Redis {_shown(servers.redis_url)}{how('redis')}", err=True)


def _stored_secrets(settings: Settings) -> dict[str, str]:
    """The secrets file of the data dir ({} without one), read, never written."""
    try:
        own_data_dir(settings.data_dir, create=False)
        stored = read_stored(settings.data_dir / "secrets.json")
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except (OSError, ValueError) as exc:
        raise fail(f"cannot read secrets in {settings.data_dir}: {exc}") from None
    return {k: v for k, v in stored.items() if isinstance(v, str)}


def _known_secrets(settings: Settings) -> tuple[Secrets, set[str]]:
    """The deployment's secrets as far as the environment and the data dir
    know them, never generated nor saved, and the names of those known. A
    one-shot command other than `token` uses none of them (it serves no API
    and sends no webhook), so an unknown one is a throwaway value that no
    token matches (and that the deployment's check leaves out)."""
    stored = _stored_secrets(settings)
    values, known = {}, set()
    for name in SECRET_NAMES:
        env = getattr(settings, name)
        value = env.get_secret_value() if env is not None else stored_secret(stored, name)
        if value is not None:
            known.add(name)
        values[name] = value or token_urlsafe(32)
    return Secrets(**values, valkey_password=stored.get(VALKEY_PASSWORD, ""),
                   postgres_password=stored.get(POSTGRES_PASSWORD, "")), known


def _require_served(settings: Settings) -> None:
    """A one-shot command joins (or restarts) the embedded servers of a data
    dir where `laurels serve` ran; it never starts fresh ones: that would
    answer from an empty database, not the deployment's."""
    from laurels import embedded

    absent = embedded.never_started(settings)
    if not absent:
        return
    names = {"PostgreSQL": "LAURELS_DATABASE_URL", "Valkey": "LAURELS_REDIS_URL"}
    raise fail(f"no laurels serve has run in {settings.data_dir} (no embedded "
               f"{' or '.join(absent)} there): set LAURELS_DATA_DIR to the data dir of your "
               f"laurels serve, or {' and '.join(names[a] for a in absent)} to its servers")


# A long-running process (serve, projector) started while PostgreSQL does not
# answer (restarting, failing over, started after it by a deploy) waits this
# long for it before it stops; a one-shot command stops at once.
START_WAIT_SECONDS = 60.0
log = logging.getLogger("laurels.cli")


def _patiently(start: Callable[[], T], started: Callable[[], bool] = lambda: False) -> T:
    """A long-running process's start-up step, tried again while PostgreSQL
    does not answer (db/outage.py), with backoff and a line on stderr each
    time, for START_WAIT_SECONDS: a store restarting while a process starts
    is no reason to stop, and a supervisor need not restart it. Then what
    the step raised. Once `started()`, an error is the step's own."""
    from laurels.backoff import jittered_seconds
    from laurels.db.outage import answers_later

    deadline = time.monotonic() + START_WAIT_SECONDS  # (between tries: a try may take longer)
    attempt = 0
    while True:
        try:
            return start()
        except Exception as exc:
            left = deadline - time.monotonic()
            if started() or not answers_later(exc) or left <= 0:
                raise
            delay = min(left, jittered_seconds(attempt, base_seconds=0.5, cap_seconds=5.0))
            log.warning("PostgreSQL does not answer yet (%s); trying again in %.1f s",
                        " ".join(str(exc).split()), delay)
            time.sleep(delay)
            attempt += 1


def _with_runtime(settings: Settings, work: Callable[[Runtime], Awaitable[T]],
                  one_shot: bool = True) -> T:
    """Start (or join) the stores, open a Runtime, run `work(runtime)`, clean
    up. A one-shot command (every one but serve, projector and demo) starts
    embedded servers only where a serve ran, generates no secret, and says
    on stderr which data dir and stores it uses."""
    from laurels import deployment
    from laurels.runtime import Runtime

    if one_shot:
        _require_served(settings)
        secrets, known = _known_secrets(settings)
    else:
        proposal = _proposal(settings)
        secrets = proposal.secrets
    servers = _start_servers(settings, secrets)
    if one_shot:
        _using(settings, servers)

    joined = False  # (a long-running process: its start-up is over)

    async def main() -> T:
        nonlocal joined
        if one_shot:
            await _adopt_recorded(settings, servers.database_url)
        rt = Runtime(settings, secrets, servers.database_url, servers.redis_url)
        membership = None
        try:
            await rt.open()
            if one_shot:  # compares, never records; the settings hold while it runs
                async with deployment.one_shot(rt.db, settings, secrets, known):
                    await rt.until_proven()  # a Redis restarted since: repaired first
                    return await work(rt)
            membership = await _join(rt.db, settings, proposal, "projector")
            joined = True
            rt.membership = membership  # its beats are among its background loops
            return await work(rt)
        finally:
            if membership is not None:
                await membership.leave()
            await rt.close()

    from laurels.board.connection import UnsupportedRedis
    from laurels.errors import StoreUnavailable

    try:
        if one_shot:
            return asyncio.run(main())
        # (stopped while it waits for PostgreSQL: a normal exit, the embedded servers stopped)
        signal.signal(signal.SIGTERM, _exit_on_signal)
        return _patiently(lambda: asyncio.run(main()), lambda: joined)
    except (UnsupportedRedis, deployment.DeploymentConflict) as exc:
        raise fail(str(exc)) from None
    except (StoreUnavailable, OSError) as exc:
        raise fail(f"cannot reach PostgreSQL or Redis: {exc}") from None
    finally:
        servers.stop()


async def _adopt_recorded(settings: Settings, database_url: str) -> None:
    """A one-shot command takes the deployment's recorded value of each shared
    setting its environment leaves unset (deployment.unset_recorded), in the
    one settings object of the command, so every part of it reads them."""
    from laurels import deployment
    from laurels.db import Database, migrate

    await migrate(database_url)
    db = Database(database_url, min_size=1, max_size=1)
    await db.open()
    try:
        taken = await deployment.unset_recorded(db, settings)
    finally:
        await db.close()
    for field, value in taken.items():
        setattr(settings, field, value)


def _check_redis(settings: Settings, url: str) -> None:
    """Refuse an unsupported Redis before serving (one line, exit 2)."""
    from laurels.board.connection import REDIS_DOWN, UnsupportedRedis, connect, require_supported

    async def check() -> None:
        client = connect(url, settings.redis_cluster)
        try:
            await require_supported(client)
        finally:
            await client.aclose()

    try:
        asyncio.run(check())
    except UnsupportedRedis as exc:
        raise fail(str(exc)) from None
    except REDIS_DOWN as exc:
        # Not reachable yet: serve anyway; /readyz says so until it is.
        logging.getLogger("laurels").warning("cannot check the Redis version yet: %s", exc)


def _exit_on_signal(signum: int, _frame: Any) -> None:
    raise SystemExit(0)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="listen address [env LAURELS_HOST, "
                                             "default 127.0.0.1]")] = None,
    port: Annotated[int | None, typer.Option(help="listen port [env LAURELS_PORT, "
                                             "default 8000]")] = None,
    workers: Annotated[int, typer.Option(help="processes serving the one port (they share "
                                         "the stores, embedded ones included)", min=1,
                                         max=64)] = 1,
    no_projector: Annotated[bool, typer.Option("--no-projector",
                                               help="do not run the projector here")] = False,
) -> None:
    """Run the API, the web page and (unless --no-projector) the projector."""
    import uvicorn

    from laurels import logs
    from laurels.api import server
    from laurels.db import migrate
    from laurels.errors import StoreUnavailable

    settings = _settings(host=host, port=port)
    _logging()
    proposal = _proposal(settings)
    secrets = proposal.secrets
    servers = _start_servers(settings, secrets)
    process_id = str(uuid.uuid4())  # this serve among the deployment's processes
    joined = False  # (one that never joined has nothing to leave)
    # SIGTERM is a normal exit, so the embedded servers stop: while it waits for
    # PostgreSQL, and after uvicorn, which re-raises the signal that stopped it
    # once it has shut down gracefully (and restores this handler first).
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        try:
            _patiently(lambda: asyncio.run(migrate(servers.database_url)))
        except Exception as exc:  # unreachable or broken database: one line
            raise fail(f"cannot migrate the database: {exc}") from None
        _check_redis(settings, servers.redis_url)
        try:
            _patiently(lambda: _serve_join(settings, proposal, servers.database_url, process_id))
        except StoreUnavailable as exc:
            raise fail(f"cannot reach PostgreSQL: {exc}") from None
        joined = True
        # Every worker builds its own service graph from these (api.worker_app).
        os.environ.update({
            "LAURELS_PROCESS_ID": process_id,
            "LAURELS_SERVE_PID": str(os.getpid()),
            "LAURELS_DATABASE_URL": servers.database_url,
            "LAURELS_REDIS_URL": servers.redis_url,
            "LAURELS_INGEST_TOKEN": secrets.ingest_token,
            "LAURELS_ADMIN_TOKEN": secrets.admin_token,
            "LAURELS_USER_TOKEN_SECRET": secrets.user_token_secret,
            "LAURELS_RUN_PROJECTOR": "false" if no_projector else "true",
            "LAURELS_REDIS_EMBEDDED": "true" if settings.redis_url is None else "false"})
        typer.echo(f"laurels: serving on http://{settings.host}:{settings.port}/"
                   + (f" with {workers} workers" if workers > 1 else ""))
        config = uvicorn.Config("laurels.api:worker_app", factory=True, host=settings.host,
                                port=settings.port, workers=workers, log_level="info",
                                **server.options(settings))
        logs.protect()  # uvicorn configured its handlers just now
        if workers > 1:
            from uvicorn.supervisors import Multiprocess

            sock = config.bind_socket()
            Multiprocess(config, sockets=[sock]).run()
        else:
            uvicorn.Server(config).run()
    finally:
        if joined:
            _serve_leave(servers.database_url, process_id)
        servers.stop()


def _serve_join(settings: Settings, proposal: SecretsProposal, database_url: str,
                process_id: str) -> None:
    """A serve joins the deployment before it serves (its workers then say,
    every 2 s, that it runs: LAURELS_PROCESS_ID); one line if it may not."""
    from laurels import deployment
    from laurels.db import Database

    async def join() -> None:
        db = Database(database_url, min_size=1, max_size=2)
        await db.open()
        try:
            await _join(db, settings, proposal, "serve", process_id)
        finally:
            await db.close()

    try:
        asyncio.run(join())
    except deployment.DeploymentConflict as exc:
        raise fail(str(exc)) from None


def _serve_leave(database_url: str, process_id: str) -> None:
    """A serve stopped cleanly leaves the deployment at once."""
    from laurels.db import Database
    from laurels.deployment import Membership

    async def leave() -> None:
        db = Database(database_url, min_size=1, max_size=1)
        await db.open()
        try:
            await Membership(db, "serve", process_id).leave()
        finally:
            await db.close()

    with contextlib.suppress(Exception):  # killed stores: it is forgotten in 10 s
        asyncio.run(leave())


@app.command()
def projector() -> None:
    """Run the projector and its housekeeping alone (scale out with several)."""
    settings = _settings()
    _logging()

    async def work(rt: Any) -> None:
        from laurels.runtime import background_loops
        from laurels.supervisor import Supervisor

        supervisor = Supervisor()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, supervisor.stop.set)
        loops = background_loops(rt, hints=False)
        for name, work in loops.items():
            supervisor.start(name, work)
        typer.echo(f"laurels: projector running (pid {os.getpid()}): applying completions to "
                   f"the boards, with {len(loops) - 1} housekeeping loops; Ctrl-C stops it")
        await supervisor.stop.wait()
        await supervisor.shutdown()
        typer.echo("laurels: projector stopped")

    _with_runtime(settings, work, one_shot=False)


@app.command()
def migrate() -> None:
    """Create or upgrade the PostgreSQL schema."""
    settings = _settings()

    async def work(rt: Any) -> None:
        return None  # Runtime.open() migrates

    _with_runtime(settings, work)
    typer.echo("laurels: schema is up to date")


@app.command()
def token(
    user: Annotated[int, typer.Option("--user", help="the learner's user id")],
    ttl_seconds: Annotated[int, typer.Option(help="lifetime of the token")] = 86400,
) -> None:
    """Print a learner token (JWT, HS256) signed with LAURELS_USER_TOKEN_SECRET."""
    from laurels.api.auth import mint
    from laurels.validation import USER_ID_MAX

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
    from laurels import embedded

    everything = settings.model_copy(update={"database_url": None, "redis_url": None})
    if len(embedded.never_started(everything)) == 2:  # no trace of a serve at all
        return (f"no laurels serve has run in {settings.data_dir} (no secrets there): set "
                f"LAURELS_DATA_DIR to the data dir of your laurels serve, or "
                f"LAURELS_USER_TOKEN_SECRET to the secret it uses")
    return (f"no user token secret in {settings.data_dir / 'secrets.json'} (the laurels serve "
            f"there took it from the environment?): set LAURELS_USER_TOKEN_SECRET to the "
            f"secret it uses")


@app.command()
def rebuild(season: Annotated[str, typer.Option("--season", help=SEASON_HELP)],
            board: Annotated[str, typer.Option("--board", help=BOARD_HELP)] = "global"
            ) -> None:
    """Rebuild a season's board from PostgreSQL and switch to it atomically."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from laurels.filling import RebuildFailed
    from laurels.rebuild import RebuildRunning

    settings = _settings()
    _season(season, settings, configured=False)  # a malformed one: before any server starts
    name = f"{season} of {board}"

    async def work(rt: Any) -> Any:
        nonlocal name
        named = (await _board_season(rt, season, board, settings)).name
        name = named if board == "global" else name
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
    exit 0 if consistent, 1 if not. --all walks every season of every board."""
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
        named = (await _board_season(rt, season, board, settings)).name
        name = named if board == "global" else name
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

    from laurels.seasons import parse_season

    async def work(rt: Any) -> list[tuple[str, bool, Any]]:
        seasons = await rt.verifier.every_season()
        done = []
        columns = (TextColumn("verify {task.description}"), BarColumn(),
                   MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, transient=False) as bar:
            task = bar.add_task("every board", total=len(seasons))
            for name, closed in seasons:
                done.append((parse_season(name, zone=settings.time_zone).shown, closed,
                             await rt.verifier.verify(name)))
                bar.advance(task)
        return done

    results = _with_runtime(settings, work)
    differ = [(shown, r) for shown, _, r in results if not r.consistent]
    closed = sum(1 for _, c, _ in results if c)
    typer.echo(f"laurels: {len(results)} seasons verified ({closed} closed, their archives "
               f"included): {len(results) - len(differ)} consistent, {len(differ)} NOT")
    for shown, r in differ:
        typer.echo(f"{shown}: {r.mismatch_count} of {r.players_checked} learners differ")
        for m in r.mismatches[:5]:
            typer.echo(f"  {m.user_id}\t{m.difference}")
    if differ:
        raise typer.Exit(1)


def _correct(completion_id: str, reason: str | None, voided: bool, as_json: bool = False
             ) -> None:
    """`void` and `restore`: as the admin endpoints (audited, projected at once)."""
    from laurels.errors import DomainError
    from laurels.validation import Invalid, parse_completion_id, validate_reason

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


def _admin(work: Callable[[Any], Awaitable[T]]) -> T:
    """Run an admin action as its endpoint would: its refusals (unknown,
    erased, malformed, a season that is not one) one line on stderr, exit 1."""
    from laurels.api.problems import Problem
    from laurels.errors import DomainError

    settings = _settings()
    try:
        return _with_runtime(settings, work)
    except (DomainError, Problem) as exc:
        raise fail(exc.detail, 1) from None


def _learner_correction(user: int, season: str | None, reason: str | None, voided: bool,
                        as_json: bool, board: str = "global") -> None:
    """`void --user` and `restore --user`: a learner's completions together."""
    from laurels.validation import Invalid, validate_reason

    try:
        why = validate_reason({} if reason is None else {"reason": reason}, required=voided).reason
    except Invalid as exc:
        raise fail(f"--{exc}") from None
    settings = _settings()

    async def work(rt: Any) -> Any:
        from laurels.api.params import path_season
        from laurels.seasons import GLOBAL, PERIODS

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


@app.command("rebuild-status")
def rebuild_status(rebuild_id: Annotated[str, typer.Argument(help="the rebuild's id")],
                   as_json: JsonOpt = False) -> None:
    """A rebuild's state, as the API started it (GET /v1/admin/rebuilds/ID)."""
    from laurels.validation import UUID_RE

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


@app.command()
def erase(user: UserArg, as_json: JsonOpt = False) -> None:
    """Erase a learner for good: completions, name, every board (DELETE /v1/users/ID)."""

    async def work(rt: Any) -> bool:
        return bool(await rt.learners.erase(user))

    first = _admin(work)
    _print({"user_id": user, "erased": True}, as_json,
           line=f"learner {user} erased" if first else f"learner {user} was erased already")


def _suspension(user: int, suspended: bool, reason: str | None, as_json: bool) -> None:
    from laurels.validation import Invalid, validate_reason

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
    from laurels.validation import UUID_RE

    if not re.fullmatch(UUID_RE, delivery_id):
        raise fail("a delivery id is a UUID, as `laurels webhooks` lists it")

    async def work(rt: Any) -> bool:
        return bool(await rt.deliveries.retry(delivery_id))

    if not _admin(work):
        raise fail(f"no delivery {delivery_id}", 1)
    _print({"id": delivery_id, "retried": True}, as_json,
           line=f"delivery {delivery_id} is sent again now")


@app.command()
def leagues(season: Annotated[str, typer.Argument(help="a week (2026-W49) or current")],
            cohorts: Annotated[bool, typer.Option("--cohorts", help="list its cohorts")]
            = False,
            tier: Annotated[str | None, typer.Option("--tier", help="with --cohorts: one "
                                                     "tier's")] = None,
            as_json: JsonOpt = False) -> None:
    """A week's leagues by tier, or its cohorts (GET /v1/admin/leagues/SEASON[/cohorts])."""
    settings = _settings()

    async def work(rt: Any) -> Any:
        from laurels.api.params import path_season
        from laurels.seasons import PERIODS

        week = path_season(season, PERIODS, settings.time_zone)
        if not cohorts:
            return await rt.leagues.summary(week)
        listed: list[Any] = []
        after = None
        while True:  # every page
            page, after = await rt.leagues.cohorts(week, tier, 1000, after)
            listed += page["cohorts"]
            if after is None:
                return {"cohorts": listed}

    body = _admin(work)
    if cohorts:
        _print(body, as_json, ("cohort", "tier", "members", "decided"),
               [(c["cohort_id"], c["tier"], c["members"], "yes" if c["decided"] else "no")
                for c in body["cohorts"]])
        return
    _print(body, as_json, ("tier", "cohorts", "members", "promoted", "demoted"),
           [(t["tier"], t["cohorts"], t["members"], t["promoted"], t["demoted"])
            for t in body["tiers"]],
           line=f"{body['season']}: {'decided' if body['decided'] else 'not decided yet'}")


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
    from laurels.errors import DomainError

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
    from laurels.errors import DomainError

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


@app.command()
def demo(
    port: Annotated[int | None, typer.Option(help="listen port [env LAURELS_PORT, "
                                             "default 8000]")] = None,
    learners: Annotated[int, typer.Option(help="how many named learners")] = 300,
    rate: Annotated[float, typer.Option(help="completions per second")] = 4.0,
    weeks: Annotated[int | None, typer.Option(
        help="first play this many past weeks, oldest first, each closed and its "
             "leagues decided: history, tiers and results show", min=1, max=26)] = None,
) -> None:
    """Start everything embedded with fresh demo data and simulate learners."""
    import shutil

    from laurels.demo import Plan, run_demo

    if learners < 1 or rate <= 0:
        raise fail("--learners and --rate must be positive")
    base = _settings(port=port)
    demo_dir = base.data_dir / "demo"
    shutil.rmtree(demo_dir, ignore_errors=True)  # fresh demo data every time
    demo_dir.mkdir(parents=True)
    settings = base.model_copy(update={"data_dir": demo_dir, "database_url": None,
                                       "redis_url": None})
    _logging()
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    secrets = _secrets(settings, announce=False)
    servers = _start_servers(settings, secrets)

    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        asyncio.run(run_demo(settings, secrets, servers.database_url, servers.redis_url,
                             Plan(learners, rate, weeks), typer.echo))
    finally:
        servers.stop()


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


if __name__ == "__main__":
    main()
