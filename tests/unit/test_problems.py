"""The edge maps errors to problem+json: a refusal keeps its code, a store
that cannot be reached is a 503, and anything else (a bug) is a 500. What
"cannot be reached" is, db/ and board/ decide (StoreUnavailable): each error
here goes through its store's door first, as it would in the service."""

from __future__ import annotations

import logging

import orjson
import psycopg
import pytest
from redis import exceptions as redis_exceptions

from laurels.api.problems import STATUS, Problem, response_for
from laurels.board.connection import unavailable_when_down
from laurels.core.errors import DomainError
from laurels.db import _answering

pytestmark = pytest.mark.once


async def through_the_doors(exc: Exception) -> Exception:
    """`exc` as db/ (a psycopg error) or board/ (a redis-py one) lets it out."""

    @unavailable_when_down
    async def redis_call() -> None:
        raise exc

    try:
        if isinstance(exc, psycopg.Error):
            with _answering():
                raise exc
        elif isinstance(exc, redis_exceptions.RedisError):
            await redis_call()
        else:
            raise exc
    except Exception as out:
        return out
    raise AssertionError("unreachable")


@pytest.mark.parametrize(("exc", "status", "code"), [
    (DomainError("not_ranked", "learner 9 has no completions"), 404, "not_ranked"),
    (DomainError("rate_limited", "slow down", retry_after=3), 429, "rate_limited"),
    (Problem("payload_too_large", "the body is larger than 1 MiB"), 413, "payload_too_large"),
    (psycopg.OperationalError("connection refused"), 503, "unavailable"),
    (redis_exceptions.ConnectionError("Error 111 connecting"), 503, "unavailable"),
    (redis_exceptions.TimeoutError("Timeout reading from socket"), 503, "unavailable"),
    (redis_exceptions.BusyLoadingError("LOADING"), 503, "unavailable"),
    (psycopg.errors.DeadlockDetected("deadlock detected"), 503, "unavailable"),
    (psycopg.ProgrammingError('syntax error at or near "SELEC"'), 500, "internal_error"),
    (redis_exceptions.ResponseError("ERR user_script:1: Script attempted to access"),
     500, "internal_error"),
    (RuntimeError("a bug"), 500, "internal_error"),
])
async def test_each_error_gets_its_status(exc: Exception, status: int, code: str,
                                          caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="laurels.api"):
        resp = response_for(await through_the_doors(exc))
    body = orjson.loads(bytes(resp.body))
    assert (resp.status_code, body["code"], body["status"]) == (status, code, status)
    assert "SELEC" not in str(body) and "user_script" not in str(body)  # nothing internal
    if status == 500:  # a bug is logged with its traceback, for the operator
        assert any(r.exc_info for r in caplog.records)
    if status == 503:
        assert resp.headers["Retry-After"] == "2"
        assert any(type(exc).__name__ in r.getMessage() for r in caplog.records)


def test_every_code_has_a_status() -> None:
    """Every code of the contract has its status: the domain's (core/errors.py)
    and those only the HTTP edge gives (api/problems.py), apart."""
    from typing import get_args

    from laurels.api.problems import HttpCode
    from laurels.core.errors import ErrorCode

    domain, edge = set(get_args(ErrorCode)), set(get_args(HttpCode))
    assert domain.isdisjoint(edge)
    assert domain | edge == set(STATUS)
