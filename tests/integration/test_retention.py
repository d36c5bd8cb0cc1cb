"""Retention (issue 29; LAURELS_RETAIN_COMPLETIONS_DAYS): a month of
completions is dropped once every season it touches is closed and archived,
and every board, archive read, notification, league result and all-time
score stays as it was; "why my score" for a retired season says so."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from laurels.core.seasons import parse_season
from laurels.lifecycle import closing as lifecycle
from laurels.runtime import Runtime, Services

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)  # W49
OLD = ["2026-W40", "2026-W41", "2026-W42"]  # Sep 28 .. Oct 18: September and October


def item(cid: str, uid: int, points: int, week: str, hours: int = 30) -> dict[str, Any]:
    at = parse_season(week, zone="UTC").starts_at + timedelta(hours=hours)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


async def setup(rt: Runtime) -> Services:
    svc = rt.derive(clock=lambda: NOW, periods=("week", "month", "all"), close_seasons=False,
                    retain_completions_days=30, league_tiers=("bronze", "silver"),
                    league_size=5, league_promote=(1,), league_demote=(1,))
    await svc.leagues.store_settings()
    for n, week in enumerate([*OLD, "2026-W49"]):
        await svc.ingestor.record([item(f"{week}-{u}", u, u + n, week) for u in (1, 2, 3)])
    closing = rt.derive(clock=lambda: NOW, periods=("week", "month", "all"),
                        retain_completions_days=30, league_tiers=("bronze", "silver"),
                        league_size=5, league_promote=(1,), league_demote=(1,))
    await closing.lifecycle.finalize_due(NOW)
    for week in OLD:
        await closing.leagues.decide(parse_season(week, zone="UTC"))
    await closing.rebuilder.run(parse_season("all", zone="UTC"))
    return closing


async def everything(svc: Services) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for season in [*OLD, "2026-09", "2026-10", "2026-W49", "all"]:
        out[season] = (await svc.reads.top(parse_season(season, zone="UTC"), 100))["entries"]
    out["notes"] = [(await svc.notifications.newest(u))["notifications"] for u in (1, 2, 3)]
    w41 = parse_season("2026-W41", zone="UTC")
    out["league"] = [await svc.leagues.learner(u, w41) for u in (1, 2, 3)]
    return out


@pytest.mark.alone  # sealing waits for every transaction of the server
@pytest.mark.parametrize("sealed", [False, True], ids=["ids-open", "ids-sealed"])
async def test_retention_drops_old_months_and_changes_no_board(rt: Runtime,
                                                               sealed: bool) -> None:
    """Also once the old weeks' ids were sealed (migration 020): their ids
    go with their months, from whichever partition holds them."""
    svc = await setup(rt)
    if sealed:
        staged, _ = await svc.partitions.seal()
        assert staged == 9 and await svc.partitions.seal() == (0, 9)
    before = await everything(svc)
    dropped = await svc.partitions.retire(NOW, 30)
    assert dropped == [date(2026, 9, 1), date(2026, 10, 1)]
    assert await svc.partitions.retire(NOW, 30) == []  # once
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM completions"
                                 " WHERE completed_at < '2026-11-01'")
        row = await cur.fetchone()
        cur = await conn.execute("SELECT count(*) AS n FROM completion_ids"
                                 " WHERE completed_at < '2026-11-01'")
        ids = await cur.fetchone()
    assert row is not None and row["n"] == 0
    assert ids is not None and ids["n"] == 0
    assert await everything(svc) == before
    # The all-time board and a retired week's, rebuilt: from their archives.
    for name in ("all", "2026-W41"):
        season = parse_season(name, zone="UTC")
        await svc.rebuilder.run(season)
        top = await svc.reads.top(season, 100)
        assert top["entries"] == before[name]
        assert (await svc.verifier.verify(season)).consistent
    why, _ = await svc.reads.completions(parse_season("2026-W41", zone="UTC"), 2, 50, None)
    assert why == {"season": "2026-W41", "board": "global", "metric": "points", "user_id": 2,
                   "score": 3, "retired": True, "completions": [], "next": None}
    why_all, _ = await svc.reads.completions(parse_season("all", zone="UTC"), 2, 50, None)
    assert why_all["retired"] is True and why_all["score"] == 2 + 3 + 4 + 5


async def test_a_month_with_a_season_still_open_is_kept(rt: Runtime) -> None:
    svc = await setup(rt)
    # November holds W49's neighbour W48 (open): kept whatever its age.
    assert date(2026, 11, 1) not in await svc.partitions.retire(
        NOW + timedelta(days=45), 30)
    # Without a retention setting nothing is ever dropped.
    assert await svc.partitions.retire(NOW + timedelta(days=400), None) == []


@pytest.mark.parametrize("chunk", [1_000, 2])
async def test_boards_of_kinds_stand_on_their_archives_once_their_months_go(
        rt: Runtime, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """Every season of a board of a kind touching a retired month is
    archived first (lifecycle.archive_boards_of), built or not: a retired
    week's board reads its archive, and a kind's all-time board rebuilt
    after the retirement stands on its archived weeks (lifecycle/history.py), so it
    counts what it counted before. Seasons archived this way send no
    `season_final` (they closed long ago); FINALIZE_BOARDS a transaction."""
    monkeypatch.setattr(lifecycle, "FINALIZE_BOARDS", chunk)
    svc = rt.derive(clock=lambda: NOW, periods=("week", "month", "all"), close_seasons=False,
                    retain_completions_days=30)
    await svc.board_kinds.define("course", {"periods": ["week", "month", "all"],
                                            "time_zone": "Europe/Paris", "notify": True})
    await svc.board_kinds.define("track", {"metric": "best", "periods": ["week", "all"]})
    for n, week in enumerate([*OLD, "2026-W49"]):
        await svc.ingestor.record([
            {**item(f"{week}-{u}", u, u + n, week, hours=0 if u == 1 else 30),
             "tags": ["course:sql", "track:data"] if u != 3 else ["course:go"]}
            for u in (1, 2, 3)])
    await svc.projector.drain(min_age_seconds=0)
    closing = rt.derive(clock=lambda: NOW, periods=("week", "month", "all"),
                        retain_completions_days=30)
    # Built before: course:sql's all-time board and one of its weeks; the
    # track's boards and course:go's weeks are never built before the months go.
    paris_all = parse_season("all", zone="Europe/Paris")
    boards = {"sql-all": paris_all.on("course:sql", "points"),
              "go-all": paris_all.on("course:go", "points"),
              "track-all": parse_season("all", zone="UTC").on("track:data", "best"),
              "sql-w41": parse_season("2026-W41", zone="Europe/Paris").on("course:sql", "points"),
              "go-w40": parse_season("2026-W40", zone="Europe/Paris").on("course:go", "points"),
              "track-w42": parse_season("2026-W42", zone="UTC").on("track:data", "best"),
              "sql-oct": parse_season("2026-10", zone="Europe/Paris").on("course:sql", "points")}
    for name in ("sql-all", "sql-w41"):
        await closing.rebuilder.run(boards[name])
    await closing.lifecycle.finalize_due(NOW)
    before = {}
    for name, season in boards.items():
        await closing.rebuilder.run(season)  # (an archive's read needs none)
        before[name] = (await closing.reads.top(season, 100))["entries"]
    assert before["sql-all"] == [
        {"rank": 1, "user_id": 2, "display_name": "Learner 2", "score": 2 + 3 + 4 + 5},
        {"rank": 2, "user_id": 1, "display_name": "Learner 1", "score": 1 + 2 + 3 + 4}]
    assert before["track-all"][0]["score"] == 5 and before["go-w40"][0]["score"] == 3
    finals = await closing.db.fetch("season_final_of", user_id=3, kind="season_final",
                                    season=boards["go-w40"].name)
    # October goes once every season of a kind touching it can take no
    # completion: the Paris November holds its last hour, and takes the
    # completions of 30 November (the whole board's W49) until W49 is
    # finalized (as finalize_due would not close it before).
    assert await closing.partitions.retire(NOW, 30) == [date(2026, 9, 1)]
    assert await closing.partitions.retire(NOW + timedelta(days=2), 30) == []
    later = NOW + timedelta(days=8)
    await rt.derive(clock=lambda: later, periods=("week", "month", "all"),
                    retain_completions_days=30).lifecycle.finalize_due(later)
    assert await closing.partitions.retire(later, 30) == [date(2026, 10, 1)]
    # Nothing archived by the retirement told anyone.
    assert await closing.db.fetch("season_final_of", user_id=3, kind="season_final",
                                  season=boards["go-w40"].name) == finals
    for name, season in boards.items():
        await closing.rebuilder.run(season)
        assert (await closing.reads.top(season, 100))["entries"] == before[name], name
        assert (await closing.verifier.verify(season)).consistent, name


async def test_a_month_waits_for_its_empty_weeks_which_then_take_no_completion(
        rt: Runtime) -> None:
    """A week of the month no completion reached (no row in PostgreSQL)
    takes completions until it closes by the clock: the month waits for it.
    Once it has closed, the month goes and the week is recorded closed and
    empty, so a completion sent for it later (a replay moved into it, a
    process whose clock runs behind) is refused, not counted in a range whose
    completions are gone (the model found it: such a replay counted twice on
    the all-time board)."""
    early = datetime(2026, 11, 24, 12, tzinfo=UTC)  # W48; W47 in its grace
    svc = rt.derive(clock=lambda: early, periods=("week", "all"), retain_completions_days=1)
    first = item("c1", 1, 1, "2026-W48")
    assert [o.status for o in await svc.ingestor.record([first])] == ["recorded"]
    await svc.lifecycle.finalize(parse_season("2026-W48", zone="UTC"))
    await svc.rebuilder.run(parse_season("all", zone="UTC"))
    # W49 (30 November - 6 December) touches November and closes on 9 December.
    assert await svc.partitions.retire(datetime(2026, 12, 8, tzinfo=UTC), 1) == []
    assert await svc.db.fetch("seasons_touching", seasons=["2026-W47", "2026-W49"]) == []
    assert await svc.partitions.retire(datetime(2026, 12, 10, tzinfo=UTC), 1) == [
        date(2026, 11, 1)]
    closed = await svc.db.fetch("seasons_touching", seasons=["2026-W47", "2026-W49"])
    assert {r["season"]: r["finalized"] for r in closed} == {"2026-W47": True,
                                                             "2026-W49": True}
    moved = {**first, "completed_at": "2026-11-18T01:00:00+00:00"}  # into W47
    late = {**first, "completion_id": "c2", "completed_at": "2026-11-30T01:00:00+00:00"}
    open_w49 = rt.derive(clock=lambda: datetime(2026, 12, 5, tzinfo=UTC), periods=("week", "all"),
                         retain_completions_days=1)
    outcomes = [*await svc.ingestor.record([moved]), *await open_w49.ingestor.record([late])]
    assert [(o.status, o.code) for o in outcomes] == [("rejected", "season_closed")] * 2
    verdict = await svc.verifier.verify(parse_season("all", zone="UTC"))
    assert verdict.consistent, verdict.body()
    top = await svc.reads.top(parse_season("all", zone="UTC"), 10)
    assert [(e["user_id"], e["score"]) for e in top["entries"]] == [(1, 1)]


async def test_a_month_an_undecided_challenge_reads_stays_until_it_is_decided(
        rt: Runtime) -> None:
    """Issue 67: a running (or ended, undecided) challenge reads its window's
    completions, so retention keeps the months it reaches into until its
    decision; then they go, and its decided board stays."""
    svc = await setup(rt)
    early = rt.derive(clock=lambda: datetime(2026, 10, 1, tzinfo=UTC))
    await early.challenges.define("autumn", {
        "title": "Autumn", "starts_at": "2026-10-05T00:00:00Z",
        "ends_at": "2026-10-12T00:00:00Z"})  # W41, in October
    assert await svc.partitions.retire(NOW, 30) == [date(2026, 9, 1)]
    before, _ = await svc.challenge_standings.board("autumn", 100, None)
    assert [e["user_id"] for e in before["entries"]] == [3, 2, 1]
    assert await svc.decider.decide("autumn")
    assert await svc.partitions.retire(NOW, 30) == [date(2026, 10, 1)]
    after, _ = await svc.challenge_standings.board("autumn", 100, None)
    assert [(e["user_id"], e["score"]) for e in after["entries"]] == [
        (e["user_id"], e["score"]) for e in before["entries"]]
