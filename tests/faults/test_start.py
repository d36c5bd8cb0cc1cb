"""A long-running process started while PostgreSQL does not answer.

A deploy may start `laurels projector` or `laurels serve` while PostgreSQL
restarts or fails over (the fault suite does: a projector started just
before PostgreSQL stopped used to exit with "cannot reach", and with no
projector the outbox rows the fast path left were never applied). Such a
process waits for PostgreSQL, saying so on stderr, and then starts; one
that PostgreSQL refuses (a database that does not exist) still stops at
once with one line. PostgreSQL is reached through a door on a loopback port
that opens when the test says: before that, connections are refused.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from tests.faults.proxy import Proxy
from tests.helpers import free_port, laurels_bin, server_env, wait_until

pytestmark = pytest.mark.slow

WAITING = "PostgreSQL does not answer yet"


class Door(Proxy):
    """PostgreSQL's way in, shut (connections refused) until `open()`."""

    def __init__(self, database_url: str) -> None:
        info = conninfo_to_dict(database_url)
        host, port = str(info.get("host") or "127.0.0.1"), str(info.get("port") or 5432)
        super().__init__(f"{host}/.s.PGSQL.{port}" if host.startswith("/") else int(port),
                         opened=False)
        password = f":{info['password']}" if info.get("password") else ""
        self.url = (f"postgresql://{info.get('user', 'postgres')}{password}@127.0.0.1:"
                    f"{self.port}/{info['dbname']}")


@pytest.fixture
def door(database_url: str) -> Iterator[Door]:
    d = Door(database_url)
    yield d
    d.close()


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([laurels_bin(), *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def said(proc: subprocess.Popen[bytes], log: Path, text: str) -> bool:
    assert proc.poll() is None, f"it exited ({proc.returncode}): {log.read_text()[-2000:]}"
    return text in log.read_text(errors="replace")


def test_a_projector_started_before_postgresql_answers_waits_for_it(
        door: Door, database_url: str, redis_url: str, key_prefix: str, data_dir: Path,
        tmp_path: Path) -> None:
    log = tmp_path / "projector.log"
    proc = spawn(["projector"], server_env(door.url, redis_url, key_prefix, data_dir), log)
    try:
        wait_until(lambda: said(proc, log, WAITING), 60, "the projector to wait for PostgreSQL")
        door.open()

        def joined() -> bool:
            assert proc.poll() is None, log.read_text()[-2000:]
            with psycopg.connect(database_url) as conn:
                return conn.execute("SELECT count(*) FROM deployment_processes"
                                    " WHERE kind = 'projector'").fetchone() == (1,)

        wait_until(joined, 60, "the projector to join the deployment")
    finally:
        stop(proc)
    text = log.read_text(errors="replace")
    assert "cannot reach" not in text and "Traceback" not in text, text[-2000:]


def test_a_serve_started_before_postgresql_answers_waits_for_it(
        door: Door, redis_url: str, key_prefix: str, data_dir: Path, tmp_path: Path) -> None:
    log, port = tmp_path / "serve.log", free_port()
    env = {**server_env(door.url, redis_url, key_prefix, data_dir), "LAURELS_PORT": str(port)}
    proc = spawn(["serve", "--no-projector"], env, log)
    try:
        wait_until(lambda: said(proc, log, WAITING), 60, "serve to wait for PostgreSQL")
        door.open()

        def ready() -> bool:
            assert proc.poll() is None, log.read_text()[-2000:]
            try:
                return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, 60, "serve to be ready")
    finally:
        stop(proc)
    assert "Traceback" not in log.read_text(errors="replace")


@pytest.mark.parametrize("command", [["projector"], ["serve", "--no-projector"]])
def test_a_database_that_does_not_exist_stops_a_process_at_once(
        command: list[str], door: Door, redis_url: str, key_prefix: str, data_dir: Path,
        tmp_path: Path) -> None:
    door.open()
    log = tmp_path / "process.log"
    env = {**server_env(door.url.rsplit("/", 1)[0] + "/laurels_no_such_db", redis_url,
                        key_prefix, data_dir), "LAURELS_PORT": str(free_port())}
    proc = spawn(command, env, log)
    try:
        assert proc.wait(30) != 0
    finally:
        stop(proc)
    lines = [line for line in log.read_text(errors="replace").splitlines()
             if line.startswith("laurels: ")]
    assert any("laurels_no_such_db" in line and "does not exist" in line for line in lines), lines
    assert WAITING not in log.read_text(errors="replace")


@pytest.mark.parametrize("command", [["projector"], ["serve", "--no-projector"]])
def test_a_process_waiting_for_postgresql_stops_cleanly_on_sigterm(
        command: list[str], door: Door, redis_url: str, key_prefix: str, data_dir: Path,
        tmp_path: Path) -> None:
    log = tmp_path / "process.log"
    env = {**server_env(door.url, redis_url, key_prefix, data_dir),
           "LAURELS_PORT": str(free_port())}
    proc = spawn(command, env, log)
    try:
        wait_until(lambda: said(proc, log, WAITING), 60, "the process to wait for PostgreSQL")
        proc.terminate()
        assert proc.wait(20) == 0, log.read_text()[-2000:]
    finally:
        stop(proc)
    assert "Traceback" not in log.read_text(errors="replace")
