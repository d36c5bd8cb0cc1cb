"""Which failures of PostgreSQL a starting process waits for (db/outage.py)."""

from __future__ import annotations

import psycopg
import pytest

from laurels.core.errors import StoreUnavailable
from laurels.db.outage import answers_later

REFUSED = ('connection failed: connection to server at "127.0.0.1", port 5 failed: '
           "Connection refused")
AT = 'connection failed: connection to server at "127.0.0.1", port 5432 failed: FATAL:  '


def down(cause: BaseException) -> StoreUnavailable:
    try:
        raise StoreUnavailable("postgresql", cause) from cause
    except StoreUnavailable as exc:
        return exc


@pytest.mark.parametrize(("said", "later"), [
    (REFUSED, True),
    ("couldn't get a connection after 30.00 sec", True),  # (a pool's timeout)
    (AT + "the database system is starting up", True),
    (AT + "the database system is shutting down", True),
    (AT + "sorry, too many clients already", True),
    (AT + "remaining connection slots are reserved for roles with the SUPERUSER attribute",
     True),
    (AT + 'too many connections for role "laurels"', True),
    ('connection failed: connection to server on socket "/tmp/x/.s.PGSQL.5432" failed: '
     "No such file or directory", True),
    (AT + 'database "nope" does not exist', False),
    (AT + 'password authentication failed for user "laurels"', False),
    (AT + 'role "nobody" does not exist', False),
    ("connection failed: fe_sendauth: no password supplied", False),
    ("connection failed: server does not support SSL, but SSL was required", False),
    ('connection is bad: invalid sslmode value: "sometimes"', False),
    (AT + 'la base de données « nope » n\'existe pas', False),  # (not English: its word)
])
def test_a_connection_failure_is_waited_for_only_when_postgresql_does_not_answer_yet(
        said: str, later: bool) -> None:
    assert answers_later(down(psycopg.OperationalError(said))) is later
    assert answers_later(psycopg.OperationalError(said)) is later


def test_a_socket_error_is_an_outage_and_anything_else_is_not() -> None:
    assert answers_later(down(ConnectionRefusedError(111, "Connection refused")))
    assert answers_later(down(TimeoutError("timed out")))
    assert not answers_later(PermissionError(13, "Permission denied"))  # (a data dir's file)
    assert not answers_later(ValueError("a bug"))
    assert not answers_later(psycopg.errors.UndefinedTable("no such table"))
    assert not answers_later(psycopg.ProgrammingError("Connection refused"))


@pytest.mark.parametrize(("state", "later"), [
    ("08006", True), ("57P01", True), ("57P03", True), ("53300", True),
    ("57014", False), ("53100", False), ("28P01", False), ("3D000", False)])
def test_an_error_with_a_sqlstate_is_read_by_it(state: str, later: bool) -> None:
    assert answers_later(down(psycopg.errors.lookup(state)("said"))) is later
