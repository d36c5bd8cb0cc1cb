"""How a command reaches the stores: the secrets it runs with, the embedded
servers started (or joined), the deployment joined by a long-running
process, a PostgreSQL that does not answer yet waited for, and a Runtime
opened around the command's work."""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from laurels.cli.common import T, _exit_on_signal, _settings, fail
from laurels.cli.one_shot import _adopt_recorded, _known_secrets, _require_served, _using
from laurels.process.datadir import SecretsProposal, propose_secrets, resolve_secrets, stored_name
from laurels.process.settings import ConfigError, Secrets, Settings

if TYPE_CHECKING:  # the CLI imports the service graph only in the commands that need it
    from laurels.runtime import Runtime


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
    from laurels.process import deployment

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


def _start_servers(settings: Settings, secrets: Secrets) -> Any:
    from laurels.process import embedded

    try:
        return embedded.start(settings, secrets.valkey_password, secrets.postgres_password)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except Exception as exc:  # any start failure becomes one clear line
        raise fail(f"cannot start the embedded servers: {exc}") from None


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
    from laurels.core.backoff import jittered_seconds
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
    from laurels.process import deployment
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
    from laurels.core.errors import StoreUnavailable

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


def _admin(work: Callable[[Any], Awaitable[T]]) -> T:
    """Run an admin action as its endpoint would: its refusals (unknown,
    erased, malformed, a season that is not one) one line on stderr, exit 1."""
    from laurels.api.problems import Problem
    from laurels.core.errors import DomainError

    settings = _settings()
    try:
        return _with_runtime(settings, work)
    except (DomainError, Problem) as exc:
        raise fail(exc.detail, 1) from None
