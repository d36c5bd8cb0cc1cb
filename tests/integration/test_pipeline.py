"""The pipeline never fails silently (issue: NOTIFY, supervised loops, errors
after commit, overflowing instants, leaked locks, notifications)."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.exceptions import RedisClusterException

from laurels.api import create_app
from laurels.api.problems import outcome_status
from laurels.core import failpoints
from laurels.core.errors import StoreUnavailable
from laurels.core.seasons import Season, parse_season
from laurels.live.notifications import utc
from laurels.live.notifier import RankMove
from laurels.process.supervisor import Supervisor, every
from laurels.projection.rebuild import lock_key
from laurels.runtime import Runtime
from tests import deadlines
from tests.helpers import ADMIN_AUTH, eventually

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
W49 = parse_season("2026-W49", zone="UTC")


def item(cid: str, uid: int, points: int, minutes: int = 60) -> dict[str, Any]:
    at = W49.starts_at + timedelta(minutes=minutes)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


async def on_board(rt: Runtime, uid: int) -> int | None:
    top = await rt.board.top(W49, 1000)
    return next((e.score for e in top.entries if e.user_id == uid), None)


# -- NOTIFY wakes the projector -------------------------------------------------------


async def test_notify_wakes_the_projector_long_before_its_poll(rt: Runtime,
                                                               monkeypatch: Any) -> None:
    """The fast path is off; the projector polls once a minute. The ingest
    transaction's NOTIFY (a trigger on outbox) must wake it within moments."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.rebuilder.run(W49)
    svc.projector.poll_seconds = 60
    monkeypatch.setattr(svc.ingestor, "apply_fast_path", _nothing)
    stop = asyncio.Event()
    loop = asyncio.create_task(svc.projector.run(stop))
    try:
        await eventually(lambda: _listening(rt), what="the projector to LISTEN")
        [out] = await svc.ingestor.record([item("n1", 4, 6)])
        assert out.status == "recorded"

        async def applied() -> bool:
            return await on_board(rt, 4) == 6

        await eventually(applied, 5, "the NOTIFY to wake the projector")
    finally:
        stop.set()
        await asyncio.wait_for(loop, 10)


async def _nothing(*_: Any) -> None:
    return None


async def _listening(rt: Runtime) -> bool:
    async with rt.db.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM pg_stat_activity"
                                 " WHERE datname = current_database() AND query LIKE 'LISTEN%%'")
        row = await cur.fetchone()
        return bool(row and row["n"])


# -- errors after commit ---------------------------------------------------------------


@pytest.mark.parametrize("error", [RuntimeError("board versions kept changing"),
                                   RedisClusterException("cluster down"),
                                   ValueError("anything at all")])
async def test_an_error_after_commit_never_reaches_the_client(rt: Runtime, monkeypatch: Any,
                                                              error: Exception) -> None:
    svc = rt.derive(clock=lambda: NOW)

    async def broken(*_: Any) -> None:
        raise error

    monkeypatch.setattr(svc.projector, "apply_now", broken)
    [out] = await svc.ingestor.record([item("e1", 5, 3)])
    assert (out.status, outcome_status(out)) == ("recorded", 201)
    assert await svc.projector.drain(min_age_seconds=0) == 1  # the projector finishes it
    assert await on_board(rt, 5) == 3


# -- instants out of range ---------------------------------------------------------------


async def test_an_instant_before_year_one_is_422_for_that_item_alone(rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    bad = {"completion_id": "old", "user_id": 1, "points": 1,
           "completed_at": "0001-01-01T00:30:00+01:00"}
    outcomes = await svc.ingestor.record([item("ok1", 1, 2), bad, item("ok2", 2, 3)])
    assert [(o.status, o.code) for o in outcomes] == [
        ("recorded", None), ("rejected", "validation_error"), ("recorded", None)]
    assert "out of range" in (outcomes[1].detail or "")


json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)
instants = st.sampled_from([
    "0001-01-01T00:30:00+01:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00",
    "9999-12-31T23:59:59Z", "2026-11-30T10:00:00.123456789Z", "2026-11-30 10:00:00+14:00",
    "2026-02-29T10:00:00Z", "2026-11-30T24:00:00Z", "2026-11-30T10:00:00", "", "now"])
completion_like = st.fixed_dictionaries({
    "completion_id": st.one_of(st.text(max_size=10), st.from_regex(r"[a-z0-9]{1,12}",
                                                                    fullmatch=True), json_value),
    "user_id": st.one_of(st.integers(), st.sampled_from([0, 1, 2**63 - 1, 2**63, -1]),
                         json_value),
    "points": st.one_of(st.integers(-5, 2_000_000), json_value),
    "completed_at": st.one_of(instants, json_value),
})
anything = st.one_of(json_value, completion_like)
SAFE_CODES = {"validation_error", "season_closed", "completion_conflict", "user_erased"}


@settings(max_examples=60, deadline=deadlines.PIPELINE,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(middle=st.lists(anything, min_size=1, max_size=4))
async def test_arbitrary_items_never_break_their_neighbours(rt: Runtime,
                                                            middle: list[Any]) -> None:
    svc = rt.derive(clock=lambda: NOW)
    tag = next(_batch)
    first, last = item(f"p{tag}a", 7, 1), item(f"p{tag}z", 8, 1)
    outcomes = await svc.ingestor.record([first, *middle, last])
    assert len(outcomes) == len(middle) + 2
    assert outcomes[0].status == outcomes[-1].status == "recorded"
    for out in outcomes[1:-1]:
        assert out.status in ("recorded", "duplicate") or out.code in SAFE_CODES, out


_batch = iter(range(10**9))


# -- the rebuild lock never leaks --------------------------------------------------------


async def _lock_free(url: str, key: int) -> bool:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
        row = await cur.fetchone()
        ok = bool(row and row[0])
        if ok:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return ok


async def test_a_failed_start_releases_the_rebuild_lock(rt: Runtime, monkeypatch: Any,
                                                        database_url: str) -> None:
    key = lock_key(rt.keys.prefix, rt.keys.policy, W49)

    async def no_record(_season: Season, _audited: bool = False) -> str:
        raise StoreUnavailable("postgresql", psycopg.OperationalError("pool timeout"))

    monkeypatch.setattr(rt.rebuilder, "start_record", no_record)
    with pytest.raises(StoreUnavailable):
        await rt.rebuilder.start(W49)
    assert await _lock_free(database_url, key)


async def test_a_cancelled_start_releases_the_rebuild_lock(rt: Runtime,
                                                           database_url: str) -> None:
    key = lock_key(rt.keys.prefix, rt.keys.policy, W49)
    with failpoints.hold("rebuild_locked") as held:
        task = asyncio.create_task(rt.rebuilder.start(W49))
        await held.reached()
        assert not await _lock_free(database_url, key)  # held by the starting rebuild
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert await _lock_free(database_url, key)
    await rt.rebuilder.run(W49)  # and the next rebuild starts normally


async def test_a_dead_rebuild_is_failed_while_another_runs_here(rt: Runtime) -> None:
    """A rebuild whose builder died shows `failed` even while this process
    runs a rebuild of another season."""
    dead = await rt.rebuilder.start_record(
        parse_season("2026-W40", zone="UTC"))  # its builder is gone
    with failpoints.hold("rebuild_snapshot_taken") as held:
        running = asyncio.create_task(rt.rebuilder.run(W49))
        await held.reached()
        status = await rt.rebuilder.status(dead)
        assert status is not None
        assert (status["status"], status["error"]) == ("failed", "interrupted")
    await running


# -- notifications ---------------------------------------------------------------------------


async def test_a_newcomer_overtakes_those_it_lands_above(rt: Runtime) -> None:
    svc = rt.derive(clock=lambda: NOW)
    await svc.rebuilder.run(W49)  # a live board: rank events are computed
    await svc.ingestor.record([item("o1", 1, 5)])
    await svc.ingestor.record([item("o2", 2, 9)])  # new on the board, above learner 1
    await svc.ingestor.record([item("o3", 3, 5)])  # a tie passes nobody
    for _ in range(3):
        await svc.notifier.consume()
    notes = await svc.db.fetch("list_notifications", user_id=1, limit=10)
    overtaken = [n["data"].get("by_user_id") for n in notes if n["kind"] == "overtaken"]
    assert overtaken == [2]


async def test_top10_comes_once_a_season_and_a_refreshed_notice_moves_up(rt: Runtime) -> None:
    """Issue 43, point 5: learner 1 enters the top 10, is pushed out by
    eleven others, and climbs back: one `top10` for the season. Their
    unread `overtaken`, refreshed by a newer pass, keeps its `created_at`
    and comes first again (`updated_at`), above a notice written since."""
    w48 = parse_season("2026-W48", zone="UTC").starts_at + timedelta(hours=1)
    await rt.derive(clock=lambda: w48).ingestor.record([{
        "completion_id": "w48", "user_id": 1, "points": 1, "completed_at": w48.isoformat()}])
    svc = rt.derive(clock=lambda: NOW)
    await svc.rebuilder.run(W49)

    async def notes(uid: int) -> list[dict[str, Any]]:
        for _ in range(3):
            await svc.notifier.consume()
        return list((await svc.notifications.newest(uid))["notifications"])

    await svc.ingestor.record([item("t1", 1, 5)])
    await svc.ingestor.record([item(f"p{u}", u, 10) for u in range(2, 13)])  # 1 is 12th
    await svc.ingestor.record([item("t1b", 1, 100)])  # back at the top
    mine = await notes(1)
    assert [n["kind"] for n in mine] == ["overtaken", "top10"], mine
    overtaken = mine[0]
    assert await svc.lifecycle.finalize(
        parse_season("2026-W48", zone="UTC"))  # a newer notice: W48's final rank
    assert [n["kind"] for n in await notes(1)] == ["season_final", "overtaken", "top10"]
    await svc.ingestor.record([item("p13", 13, 500)])  # passes 1: the unread one refreshed
    again = await notes(1)
    assert [n["kind"] for n in again] == ["overtaken", "season_final", "top10"]
    assert (again[0]["id"], again[0]["created_at"]) == (overtaken["id"],
                                                        overtaken["created_at"])
    assert again[0]["updated_at"] > again[1]["updated_at"] >= again[0]["created_at"]
    assert again[0]["data"]["by_user_id"] == 13
    assert all(n["updated_at"] == n["created_at"] for n in again[1:])


async def test_the_last_notice_of_a_pass_stays_and_a_replay_changes_nothing(rt: Runtime) -> None:
    """Each learner's last `overtaken` of a pass refreshes their unread one
    (one row), an erased mover's events write nothing, and a replayed event
    (handled, then delivered again: a crash before its acknowledgement)
    changes nothing, even once its notice was read and
    another is unread (it failed on the dedup key's unique index, forever)."""

    async def handle(*events: dict[str, str]) -> None:
        for fields in events:
            await svc.notifier._handle(W49, RankMove.of(fields))
    svc = rt.derive(clock=lambda: NOW)
    await svc.ingestor.record([item(f"u{u}", u, u) for u in range(1, 8)])

    def passing(uid: int, seq: int, *passed: int) -> dict[str, str]:
        return {"seq": str(seq), "uid": str(uid), "vis": "public", "rank": "1", "score": "0",
                "top10": "0", "passed": ",".join(map(str, passed))}

    async def unread_of(uid: int) -> list[tuple[int, str]]:
        notes = (await svc.notifications.newest(uid))["notifications"]
        return [(n["data"]["by_user_id"], n["id"]) for n in notes
                if n["kind"] == "overtaken" and not n["read"]]

    first = passing(2, 100, 1)
    await handle(first)
    [(by, read_id)] = await unread_of(1)
    assert by == 2
    await svc.notifications.mark_read(1, [read_id])
    await handle(passing(3, 101, 1))
    assert [by for by, _ in await unread_of(1)] == [3]
    await handle(first)  # a replay: its notice exists (read)
    assert [by for by, _ in await unread_of(1)] == [3]
    await svc.learners.erase(6)
    await handle(passing(4, 102, 1, 2), passing(6, 103, 1, 2), passing(5, 104, 1),
                 passing(6, 105, 3))
    assert [by for by, _ in await unread_of(1)] == [5]  # the last of the pass
    assert [by for by, _ in await unread_of(2)] == [4]  # not the erased mover's
    assert await unread_of(3) == []
    rows = await svc.db.fetch("list_notifications", user_id=1, limit=10)
    assert sorted(r["data"]["by_user_id"] for r in rows) == [2, 5]  # one row refreshed


def test_notification_times_are_utc_whatever_the_session_zone() -> None:
    tokyo = datetime(2026, 11, 30, 21, 0, tzinfo=timezone(timedelta(hours=9)))
    assert utc(tokyo) == "2026-11-30T12:00:00Z"


async def test_season_final_counts_each_notification(rt: Runtime) -> None:
    from laurels.core.metrics import NOTIFICATIONS_WRITTEN

    svc = rt.derive(clock=lambda: datetime(2026, 11, 24, 12, tzinfo=UTC))
    start = parse_season("2026-W47", zone="UTC").starts_at
    await svc.ingestor.record([{"completion_id": f"s{u}", "user_id": u, "points": u,
                                "completed_at": (start + timedelta(hours=u)).isoformat()}
                               for u in (1, 2, 3)])
    before = NOTIFICATIONS_WRITTEN.labels("season_final")._value.get()
    assert await svc.lifecycle.finalize(parse_season("2026-W47", zone="UTC"))
    assert NOTIFICATIONS_WRITTEN.labels("season_final")._value.get() == before + 3


# -- supervised loops, /readyz and /metrics -------------------------------------------------


async def test_a_crashed_loop_is_restarted_and_shown_meanwhile() -> None:
    sup = Supervisor(backoff_first_seconds=0.05)
    crashes = 0
    gate = asyncio.Event()

    async def flaky(stop: asyncio.Event) -> None:
        nonlocal crashes
        if crashes < 2:
            crashes += 1
            await gate.wait()
            raise RuntimeError("boom")
        await stop.wait()

    sup.start("flaky", flaky)
    gate.set()

    async def restarted() -> bool:
        return crashes == 2 and not sup.problems()

    await eventually(restarted, what="the crashed loop to be restarted twice")
    await sup.shutdown()
    assert sup.tasks["flaky"].done() and sup.tasks["flaky"].exception() is None


async def test_one_loop_stops_after_its_pass_and_is_not_a_loop_down() -> None:
    """`stop_loop` lets the pass under way end (nothing cancelled inside it),
    the loop then returns, and it is neither listed nor down; the others
    run on."""
    sup = Supervisor()
    entered, release, passes = asyncio.Event(), asyncio.Event(), []

    async def slow_pass() -> None:
        entered.set()
        await release.wait()
        passes.append("done")

    sup.start("seasons", every(10, slow_pass))
    sup.start("other", every(10, release.wait))
    await entered.wait()  # inside its first pass
    stopping = asyncio.create_task(sup.stop_loop("seasons"))
    release.set()
    await stopping
    # (the pass ran to its end: a cancel inside it would have left none done)
    assert passes == ["done"] and "seasons" not in sup.tasks and sup.problems() == {}
    assert not sup.tasks["other"].done()
    await sup.shutdown()
    assert sup.tasks["other"].done() and sup.tasks["other"].exception() is None


async def test_readyz_and_metrics_show_a_dead_projector(rt: Runtime, monkeypatch: Any) -> None:
    app = create_app(rt, migrate=False)
    broken = {"on": True}
    original = rt.projector.drain

    async def drain(min_age_seconds: float | None = None) -> int:
        if broken["on"]:
            raise RuntimeError("a bug in the projector")
        return await original(min_age_seconds)

    monkeypatch.setattr(rt.projector, "drain", drain)
    monkeypatch.setattr("laurels.process.supervisor.BACKOFF_MAX_SECONDS", 0.2)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=transport, base_url="http://laurels") as client:

        async def down() -> bool:
            resp = await client.get("/readyz")
            return resp.status_code == 503 and "projector" in resp.json()["detail"]

        await eventually(down, what="/readyz to name the dead projector")
        metrics = (await client.get("/metrics", headers=ADMIN_AUTH)).text
        assert 'laurels_loop_up{loop="projector"} 0.0' in metrics
        assert 'laurels_loop_restarts_total{loop="projector"}' in metrics
        assert "_created" not in metrics
        counters = [line.split()[2] for line in metrics.splitlines()
                    if line.startswith("# TYPE") and line.endswith(" counter")]
        assert counters and all(name.endswith("_total") for name in counters), counters
        broken["on"] = False

        async def up() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await eventually(up, what="/readyz to answer 200 again")
        assert app.state.supervisor.problems() == {}


async def test_an_offset_beyond_postgres_range_is_recorded(rt: Runtime) -> None:
    """RFC 3339 allows offsets up to ±23:59; PostgreSQL's input only ±15:59.
    Found by schemathesis: it must be recorded (as the same instant)."""
    svc = rt.derive(clock=lambda: NOW)
    body = {"completion_id": "far-east", "user_id": 3, "points": 2,
            "completed_at": "2026-12-01T08:00:00+22:53"}
    [out] = await svc.ingestor.record([body])
    assert out.status == "recorded"
    [again] = await svc.ingestor.record([{**body, "completed_at": "2026-11-30T09:07:00Z"}])
    assert again.status == "duplicate"
