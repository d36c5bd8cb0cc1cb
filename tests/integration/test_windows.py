"""Rolling windows (CONTRACT.md, "Rolling windows"; lifecycle/windows.py):
the last 7 or 30 local days, today included, moving at each local midnight
by taking the day leaving out (never a rebuild), under both tie policies,
on every metric, in any time zone; voids, late completions, rebuilds and
verify agree with it; reads answer while it moves."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.core import failpoints
from laurels.core.seasons import Season, parse_season
from laurels.lifecycle.windows import Windows
from laurels.process.settings import Settings
from laurels.runtime import Runtime, Services
from tests.conftest import opened_runtime

NOW = datetime(2026, 12, 9, 12, tzinfo=UTC)  # a Wednesday; its window starts on the 3rd
WEEK = parse_season("last-7d", zone="UTC")


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def done(cid: str, uid: int, points: int, at: datetime, **extra: Any) -> dict[str, Any]:
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat(), **extra}


async def record(svc: Services, clock: Clock, *completions: dict[str, Any]) -> None:
    """Each completion recorded a minute after it happened (a closed week
    takes none), the clock left where it was."""
    was = clock.now
    for c in completions:
        clock.now = datetime.fromisoformat(c["completed_at"]) + timedelta(minutes=1)
        outcome, = await svc.ingestor.record([c])
        assert outcome.status == "recorded", outcome
        await svc.projector.drain(min_age_seconds=0)
        await svc.windows.tick()  # (the loop's, every second)
    clock.now = was
    await svc.windows.tick()


async def standings(svc: Services, season: Season = WEEK) -> list[tuple[int | None, int]]:
    await svc.projector.drain(min_age_seconds=0)
    body = await svc.reads.top(season, 100)
    return [(e["user_id"], e["score"]) for e in body["entries"]]


async def consistent(svc: Services, season: Season = WEEK) -> None:
    verdict = await svc.verifier.verify(season)
    assert verdict.consistent, verdict.body()


def windowed(rt: Runtime, clock: Callable[[], datetime], policy: str = "shared") -> Services:
    return rt.derive(clock=clock, tie_policy=policy, periods=("week", "day", "7d", "30d"))


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_a_window_holds_its_last_days_and_sheds_one_each_midnight(
        rt: Runtime, policy: str) -> None:
    clock = Clock(NOW)
    svc = windowed(rt, clock, policy)
    day = datetime(2026, 12, 3, 10, tzinfo=UTC)  # the window's first day
    await record(svc, clock,
                 done("old", 1, 50, day - timedelta(days=1)),  # the 2nd: out already
                 done("a1", 1, 5, day), done("c1", 3, 4, day),
                 done("b1", 2, 10, day + timedelta(days=1)),
                 done("a2", 1, 7, day + timedelta(days=3)))
    assert await standings(svc) == [(1, 12), (2, 10), (3, 4)]
    month = parse_season("last-30d", zone="UTC")
    assert await standings(svc, month) == [(1, 62), (2, 10), (3, 4)]
    info = (await svc.reads.top(WEEK, 1))
    assert (info["period"], info["season"], info["starts_at"], info["ends_at"]) == (
        "7d", "last-7d", "2026-12-03T00:00:00Z", "2026-12-10T00:00:00Z")
    await consistent(svc)

    clock.now = datetime(2026, 12, 10, 0, 0, 1, tzinfo=UTC)  # the 3rd leaves
    await svc.windows.tick()
    assert await standings(svc) == [(2, 10), (1, 7)]  # learner 3 had only the 3rd
    assert await standings(svc, month) == [(1, 62), (2, 10), (3, 4)]  # 30 days: all still in
    await consistent(svc)
    await consistent(svc, month)
    # A completion of today counts.
    clock.now = datetime(2026, 12, 10, 0, 0, 2, tzinfo=UTC)
    await svc.ingestor.record([done("now", 3, 1, clock.now)])
    assert await standings(svc) == [(2, 10), (1, 7), (3, 1)]
    # Voiding a completion that left changes nothing; one still in moves it.
    await svc.corrections.void("a1", "copied")
    await svc.corrections.void("b1", "copied")
    assert await standings(svc) == [(1, 7), (3, 1)]
    await svc.corrections.restore("a1", "fine")
    assert await standings(svc) == [(1, 7), (3, 1)]
    await consistent(svc)
    # A rebuild from PostgreSQL makes the board kept live.
    live = await standings(svc)
    await svc.rebuilder.run(WEEK)
    assert await standings(svc) == live
    # A week later everything recorded has left; the window is empty.
    clock.now = datetime(2026, 12, 17, 0, 0, 1, tzinfo=UTC)
    await svc.windows.tick()
    assert await standings(svc) == []
    await consistent(svc)


async def test_a_window_moves_past_days_its_process_slept_through(rt: Runtime) -> None:
    clock = Clock(NOW)
    svc = windowed(rt, clock)
    await record(svc, clock, *[done(f"d{i}", 1, 1 + i, NOW - timedelta(days=i))
                               for i in reversed(range(7))])
    assert await standings(svc) == [(1, sum(range(1, 8)))]
    clock.now = NOW + timedelta(days=4)  # four days leave at once (7..4 days ago)
    await svc.windows.tick()
    assert await standings(svc) == [(1, 1 + 2 + 3)]
    await consistent(svc)


async def test_a_best_window_falls_back_to_the_best_of_the_days_left(rt: Runtime) -> None:
    clock = Clock(NOW)
    svc = rt.derive(clock=clock, tie_policy="first")
    await svc.board_kinds.define("course", {"metric": "best", "periods": ["week", "7d"]})
    board = WEEK.on("course:sql", "best")
    tag = {"tags": ["course:sql"]}
    await record(svc, clock,
                 done("a1", 1, 9, datetime(2026, 12, 3, 8, tzinfo=UTC), **tag),
                 done("b1", 2, 6, datetime(2026, 12, 4, 8, tzinfo=UTC), **tag),
                 done("a2", 1, 6, datetime(2026, 12, 5, 8, tzinfo=UTC), **tag),
                 done("b2", 2, 1, datetime(2026, 12, 5, 9, tzinfo=UTC)),  # untagged: not here
                 done("a3", 1, 6, datetime(2026, 12, 6, 8, tzinfo=UTC), **tag))
    assert await standings(svc, board) == [(1, 9), (2, 6)]
    clock.now = datetime(2026, 12, 10, 1, tzinfo=UTC)
    await svc.windows.tick()
    # Learner 1's 9 left: their best is 6, first reached on the 5th, after
    # learner 2's 6 on the 4th (the `first` policy's tie time on `best`).
    assert await standings(svc, board) == [(2, 6), (1, 6)]
    await consistent(svc, board)
    clock.now = datetime(2026, 12, 11, 1, tzinfo=UTC)  # the 4th leaves: learner 2 has nothing
    await svc.windows.tick()
    assert await standings(svc, board) == [(1, 6)]
    await consistent(svc, board)


async def test_a_window_across_a_clock_change_holds_seven_local_days(
        settings: Settings) -> None:
    """Paris leaves summer time on 2026-10-25 (a 25-hour day): on the 28th
    the window holds the 22nd to the 28th, local, whatever their hours."""
    async for rt in opened_runtime(settings.model_copy(update={"time_zone": "Europe/Paris"})):
        await in_paris(rt)


async def in_paris(rt: Runtime) -> None:
    clock = Clock(datetime(2026, 10, 28, 11, tzinfo=UTC))
    svc = windowed(rt, clock)
    paris = parse_season("last-7d", zone="Europe/Paris")
    await record(svc, clock,
                 done("out", 2, 1, datetime(2026, 10, 21, 21, 30, tzinfo=UTC)),  # 23:30, 21st
                 done("in", 1, 1, datetime(2026, 10, 21, 22, 30, tzinfo=UTC)))  # 00:30, 22nd
    assert await standings(svc, paris) == [(1, 1)]
    body = await svc.reads.top(paris, 1)
    assert (body["starts_at"], body["ends_at"]) == ("2026-10-21T22:00:00Z",
                                                    "2026-10-28T23:00:00Z")
    clock.now = datetime(2026, 10, 28, 23, 0, 1, tzinfo=UTC)  # 00:00:01 on the 29th in Paris
    await svc.windows.tick()
    assert await standings(svc, paris) == []
    await consistent(svc, paris)


async def test_reads_answer_while_a_window_moves(rt: Runtime) -> None:
    clock = Clock(NOW)
    svc = windowed(rt, clock)
    day = datetime(2026, 12, 3, 10, tzinfo=UTC)
    await record(svc, clock, *[done(f"c{u}", u, u, day) for u in range(1, 6)],
                 done("stay", 9, 3, NOW - timedelta(minutes=5)))
    assert len(await standings(svc)) == 6
    clock.now = datetime(2026, 12, 10, 0, 0, 1, tzinfo=UTC)
    with failpoints.hold("window_batch_left") as held:
        moving = asyncio.ensure_future(svc.windows.tick())
        await held.reached()
        # The marker moved and the day's completions are out, the move not
        # recorded as done yet: a read answers, from the board as it is.
        assert await standings(svc) == [(9, 3)]
    await moving
    assert await standings(svc) == [(9, 3)]
    await consistent(svc)


async def test_a_late_completion_of_a_day_gone_counts_on_its_week_not_on_the_window(
        rt: Runtime) -> None:
    """Monday 14 December 00:00:02: Monday the 7th has left the 7 days; its
    week (W50, the 7th to the 13th) still takes a late completion within the
    grace, which counts on the week and on the 30 days, never on the 7."""
    clock = Clock(datetime(2026, 12, 13, 20, tzinfo=UTC))  # Sunday the 13th
    svc = rt.derive(clock=clock, periods=("week", "7d", "30d"), late_grace_seconds=86_400)
    monday = datetime(2026, 12, 7, 10, tzinfo=UTC)
    await record(svc, clock, done("in", 1, 3, monday))
    assert await standings(svc) == [(1, 3)]
    clock.now = datetime(2026, 12, 14, 0, 0, 2, tzinfo=UTC)  # the 7th leaves
    await svc.windows.tick()
    assert await standings(svc) == []
    late = await svc.ingestor.record([done("late", 2, 100, monday),
                                      done("late2", 2, 50, monday + timedelta(days=1))])
    assert [o.status for o in late] == ["recorded", "recorded"], late
    assert await standings(svc) == [(2, 50)]  # the 8th is in; the 7th is not
    assert await standings(svc, parse_season("last-30d", zone="UTC")) == [(2, 150), (1, 3)]
    await consistent(svc)


async def test_why_my_score_on_a_window_lists_what_it_holds(rt: Runtime) -> None:
    clock = Clock(NOW)
    svc = windowed(rt, clock)
    await record(svc, clock, done("old", 1, 50, NOW - timedelta(days=8)),
                 done("new", 1, 5, NOW - timedelta(hours=1)))
    body, _ = await svc.reads.completions(WEEK, 1, 50, None)
    assert (body["score"], [c["completion_id"] for c in body["completions"]]) == (5, ["new"])


async def test_two_moves_at_once_take_a_day_out_once(rt: Runtime) -> None:
    """One mover stands between two calls of a day's completions while
    another takes the whole day out, records it and drops its marks; the
    first's next calls change nothing (the day is done)."""
    clock = Clock(NOW)
    svc = windowed(rt, clock)
    day = datetime(2026, 12, 3, 10, tzinfo=UTC)
    await record(svc, clock, *[done(f"c{i}", 1 + i % 3, 1, day + timedelta(seconds=i))
                               for i in range(150)],
                 *[done(f"s{u}", u, 20 + u, NOW - timedelta(hours=1)) for u in (1, 2, 3)])
    assert await standings(svc) == [(3, 73), (2, 72), (1, 71)]
    clock.now = datetime(2026, 12, 10, 0, 0, 1, tzinfo=UTC)
    with failpoints.hold("window_batch_left") as held:
        first = asyncio.ensure_future(svc.windows.move(WEEK, clock.now))
        await held.reached()
        second = Windows(svc.db, svc.board, svc.settings.periods,
                                          svc.board_kinds, clock)
        assert await second.move(WEEK, clock.now)
    assert await first
    assert await standings(svc) == [(3, 23), (2, 22), (1, 21)]
    await consistent(svc)
