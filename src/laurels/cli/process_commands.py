"""The long-running processes and the schema: `laurels serve`, `projector`,
`demo`, and `migrate`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import uuid
from typing import TYPE_CHECKING, Annotated, Any

import typer

from laurels.cli.common import _exit_on_signal, _logging, _settings, app, fail
from laurels.cli.stores import (
    _join,
    _patiently,
    _proposal,
    _secrets,
    _start_servers,
    _with_runtime,
)
from laurels.process.datadir import SecretsProposal
from laurels.process.settings import Secrets, Settings

if TYPE_CHECKING:  # the CLI imports the service graph only in the commands that need it
    from laurels.process.embedded import Servers


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
    settings = _settings(host=host, port=port)
    _logging()
    proposal = _proposal(settings)
    servers = _start_servers(settings, proposal.secrets)
    process_id = str(uuid.uuid4())  # this serve among the deployment's processes
    joined = False  # (one that never joined has nothing to leave)
    # SIGTERM is a normal exit, so the embedded servers stop: while it waits for
    # PostgreSQL, and after uvicorn, which re-raises the signal that stopped it
    # once it has shut down gracefully (and restores this handler first).
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        _serve_start(settings, proposal, servers, process_id)
        joined = True
        _worker_environment(settings, proposal.secrets, servers, process_id, no_projector)
        typer.echo(f"laurels: serving on http://{settings.host}:{settings.port}/"
                   + (f" with {workers} workers" if workers > 1 else ""))
        _run_workers(settings, workers)
    finally:
        if joined:
            _serve_leave(servers.database_url, process_id)
        servers.stop()


def _serve_start(settings: Settings, proposal: SecretsProposal, servers: Servers,
                 process_id: str) -> None:
    """What a serve does before it serves, each step waiting for a PostgreSQL
    that does not answer yet: the schema migrated, the Redis checked, the
    deployment joined."""
    from laurels.core.errors import StoreUnavailable
    from laurels.db import migrate

    try:
        _patiently(lambda: asyncio.run(migrate(servers.database_url)))
    except Exception as exc:  # unreachable or broken database: one line
        raise fail(f"cannot migrate the database: {exc}") from None
    _check_redis(settings, servers.redis_url)
    try:
        _patiently(lambda: _serve_join(settings, proposal, servers.database_url, process_id))
    except StoreUnavailable as exc:
        raise fail(f"cannot reach PostgreSQL: {exc}") from None


def _worker_environment(settings: Settings, secrets: Secrets, servers: Servers,
                        process_id: str, no_projector: bool) -> None:
    """Every worker builds its own service graph from these (api.worker_app)."""
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


def _run_workers(settings: Settings, workers: int) -> None:
    """uvicorn serving the API with `workers` processes, until it stops."""
    import uvicorn

    from laurels.api import server
    from laurels.core import logs

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


def _serve_join(settings: Settings, proposal: SecretsProposal, database_url: str,
                process_id: str) -> None:
    """A serve joins the deployment before it serves (its workers then say,
    every 2 s, that it runs: LAURELS_PROCESS_ID); one line if it may not."""
    from laurels.db import Database
    from laurels.process import deployment

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
    from laurels.process.deployment import Membership

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
        from laurels.process.supervisor import Supervisor
        from laurels.runtime import background_loops

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

    from laurels.cli.demo import Plan, run_demo

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
