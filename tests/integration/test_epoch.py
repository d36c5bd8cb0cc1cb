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


async def test_a_real_change_is_still_a_warning(rt: Runtime,
                                                caplog: pytest.LogCaptureFixture) -> None:
    await rt.epoch.check()
    await rt.db.run("set_redis_epoch", key_prefix=rt.keys.prefix, fingerprint="an-older-run")
    rt.epoch.seen = ""  # as a process that has not looked yet
    with caplog.at_level(logging.INFO, logger="laurels.epoch"):
        assert await rt.epoch.check()
    warnings = [r.getMessage() for r in caplog.records
                if r.name == "laurels.epoch" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "Redis changed (run id an-older-run -> " in warnings[0]
