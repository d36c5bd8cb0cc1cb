"""The Redis epoch watch (projection/epoch.py): a first start records the run id
quietly (nothing changed); a real change is a WARNING and a repair."""

from __future__ import annotations

import logging

import pytest

from laurels.core.seasons import week
from laurels.runtime import Runtime


async def test_a_first_start_records_the_run_id_without_a_warning(
        rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    now = await rt.board.fingerprint()
    with caplog.at_level(logging.INFO, logger="laurels.epoch"):
        assert await rt.epoch.check()  # recorded (and every board it holds checked)
    epoch = [r for r in caplog.records if r.name == "laurels.epoch"]
    assert [r.levelno for r in epoch] == [logging.INFO], [r.getMessage() for r in epoch]
    assert "Redis changed" not in caplog.text and "unknown" not in caplog.text
    async with rt.db.connection() as conn:
        cur = await conn.execute("SELECT fingerprint FROM redis_epochs WHERE key_prefix = %s",
                                 (rt.keys.prefix,))
        row = await cur.fetchone()
    assert row is not None and row["fingerprint"] == now
    caplog.clear()
    assert not await rt.epoch.check()  # the same run: nothing to say
    assert not caplog.records


async def test_a_change_that_lost_nothing_is_said_without_a_warning(
        rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    """A restart of a Redis that lost nothing (the embedded Valkey's, from its
    append-only file): every board is caught up with nothing to apply, and
    the log says so at INFO (a WARNING, and a rebuild, at every start was
    issue 40's complaint; tests/integration/test_catchup.py has the losses)."""
    await rt.epoch.check()
    await rt.db.run("set_redis_epoch", key_prefix=rt.keys.prefix, fingerprint="an-older-run")
    rt.epoch.seen = ""  # as a process that has not looked yet
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="laurels.epoch"):
        assert await rt.epoch.check()
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "laurels.epoch"]
    assert [level for level, _ in said] == [logging.INFO], said
    assert "Redis changed (run id an-older-run -> " in said[0][1]


async def test_a_redis_that_came_back_empty_is_a_warning(
        rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 65, point 12: a Redis that came back without the boards of open
    seasons (emptied, or a new server) logged only INFO; each board heals on
    first use, but an operator is told, with how many."""
    from datetime import UTC, datetime

    svc = rt.derive(clock=lambda: datetime(2026, 12, 2, 12, tzinfo=UTC))
    await svc.ingestor.record([{"completion_id": "e1", "user_id": 1, "points": 2,
                                "completed_at": "2026-12-01T10:00:00Z"}])
    await svc.projector.drain(min_age_seconds=0)
    await rt.epoch.check()
    assert await rt.board.drop_season(week(2026, 49))  # this test's keys only
    await rt.db.run("set_redis_epoch", key_prefix=rt.keys.prefix, fingerprint="an-older-run")
    rt.epoch.seen = ""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="laurels.epoch"):
        assert await rt.epoch.check()
    warned = [r.getMessage() for r in caplog.records
              if r.name == "laurels.epoch" and r.levelno == logging.WARNING]
    assert len(warned) == 1 and "came back without 1 open boards" in warned[0], warned
