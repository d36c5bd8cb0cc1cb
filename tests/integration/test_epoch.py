"""The Redis epoch watch (epoch.py): a first start records the run id
quietly (nothing changed); a real change is a WARNING and a repair."""

from __future__ import annotations

import logging

import pytest

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
