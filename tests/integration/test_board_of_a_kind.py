"""A board of a kind built from PostgreSQL (docs/design.md, "Boards of a
kind"): its tagged completions, in its own zone, by its metric; the same
rebuild and verify as the whole board, which stays as it was."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from laurels.board import BoardMissing
from laurels.core.errors import DomainError, StoreUnavailable
from laurels.core.registry import Metric
from laurels.core.seasons import Season, parse_season
from laurels.core.validation import ProfileIn
from laurels.projection.filling import RebuildFailed
from laurels.runtime import Runtime
from tests.invariants import check_erased_everywhere, check_hidden_nowhere

PARIS = "Europe/Paris"
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
WEEK = parse_season("2026-W49", zone=PARIS)  # Mon 30 Nov 2026 00:00 Paris = Sun 29 23:00 UTC


def items(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        # From an hour before the Paris week to the middle of it: the first
        # hour is W48 in UTC but W49 in Paris.
        at = WEEK.starts_at + timedelta(seconds=rnd.randint(-3600, 2 * 86400))
        tags = rnd.sample(["course:python-101", "course:sql", "track:data"], rnd.randint(0, 2))
        out.append({"completion_id": f"c{i}", "user_id": rnd.randint(1, 30),
                    "points": rnd.randint(1, 20), "completed_at": at.isoformat(),
                    "tags": tags})
    return out


def expected(work: list[dict[str, Any]], board: str, season: Season,
             metric: Metric) -> dict[int, int]:
    scores: dict[int, int] = {}
    for it in work:
        at = datetime.fromisoformat(it["completed_at"])
        if board in it["tags"] and season.contains(at):
            value = 1 if metric == "completions" else it["points"]
            u = it["user_id"]
            scores[u] = max(scores.get(u, 0), value) if metric == "best" else (
                scores.get(u, 0) + value)
    return scores


@pytest.mark.parametrize("metric", ["points", "completions", "best"])
async def test_a_board_is_rebuilt_from_its_tagged_completions(rt: Runtime,
                                                              metric: Metric) -> None:
    work = items(400)
    for kind in ("course", "track"):
        await rt.board_kinds.define(kind, {"metric": metric, "time_zone": PARIS})
    outcomes = await rt.derive(clock=lambda: NOW).ingestor.record(work)
    # W48 (UTC) is closed by NOW: its items are refused, whatever their tags
    # (acceptance depends on the whole board's week alone).
    assert {o.status for o in outcomes} == {"recorded", "rejected"}
    work = [it for it, o in zip(work, outcomes, strict=True) if o.status == "recorded"]
    for board in ("course:python-101", "track:data"):
        season = WEEK.on(board, metric)
        want = expected(work, board, season, metric)
        assert len(want) > 10
        await rt.rebuilder.run(season)
        top = await rt.board.top(season, 1000)
        assert {e.user_id: e.score for e in top.entries} == want
        assert top.total == len(want)
        verdict = await rt.verifier.verify(season)
        assert verdict.consistent, verdict
    # The whole board is every completion's, in the deployment's zone (UTC).
    whole = parse_season("2026-W49", zone="UTC")
    top = await rt.board.top(whole, 1000)
    assert {e.user_id: e.score for e in top.entries} == expected(
        [{**it, "tags": ["all"]} for it in work], "all", whole, "points")


@pytest.mark.parametrize("metric", ["points", "completions", "best"])
async def test_a_kind_defined_late_counts_from_the_start_then_live(rt: Runtime,
                                                                   metric: Metric) -> None:
    ing = rt.derive(clock=lambda: NOW).ingestor
    work = items(300, seed=1)
    before, after = work[:150], work[150:]
    outcomes = await ing.record(before)
    await rt.board_kinds.define("course", {"metric": metric, "time_zone": PARIS,
                                           "periods": ["week", "all"]})
    outcomes += await ing.record(after)  # the first apply finds no board: it is built
    recorded = [it for it, o in zip(work, outcomes, strict=True) if o.status == "recorded"]
    assert len(recorded) < len(work)  # W48 (UTC) is closed: refused, on every board
    await rt.projector.drain(min_age_seconds=0)
    for board in ("course:python-101", "course:sql"):
        for season in (WEEK.on(board, metric), parse_season("all", zone=PARIS).on(board, metric)):
            top = await rt.board.top(season, 1000)
            got = {e.user_id: e.score for e in top.entries}
            assert got == expected(recorded, board, season, metric), season.name
            assert (await rt.verifier.verify(season)).consistent
    # Tags of a kind not defined count nowhere but on the whole board.
    with pytest.raises(BoardMissing):
        await rt.board.top(WEEK.on("track:data", metric), 10)


async def test_hidden_and_erased_learners_are_on_no_board_of_a_kind(rt: Runtime) -> None:
    """Every board of a kind, built before or after the change, as the
    whole board: a hidden learner on none of its public reads, an erased
    one in no table and no key (enumerated: tests/invariants.py)."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.board_kinds.define("course", {"time_zone": PARIS, "periods": ["week", "day", "all"]})
    work = items(300, seed=2)
    await svc.ingestor.record(work)
    await svc.projector.drain(min_age_seconds=0)
    victims = sorted({it["user_id"] for it in work if "course:sql" in it["tags"]})[:2]
    hidden, erased = victims
    await svc.learners.update(hidden, ProfileIn(visibility="hidden"))
    await svc.learners.erase(erased)
    # A kind defined after the erasure builds its boards without them too.
    await svc.board_kinds.define("track", {"metric": "completions"})
    await svc.ingestor.record([{"completion_id": "late", "user_id": 99, "points": 3,
                                "completed_at": "2026-12-01T10:00:00Z",
                                "tags": ["track:data", "course:sql"]}])
    await svc.projector.drain(min_age_seconds=0)
    built = {r["season"] for r in await svc.db.fetch("part_seasons", pattern="%:%",
                                                          first="a", last="z")}
    assert {WEEK.on("course:sql", "points").name, "track:data/completions/UTC/2026-W49",
            "course:sql/points/UTC/all"} <= built  # the invariants read these too
    sql = WEEK.on("course:sql", "points")
    top = await svc.reads.top(sql, 1000)
    assert hidden not in {e["user_id"] for e in top["entries"]}
    assert erased not in {e["user_id"] for e in top["entries"]}
    assert (await svc.verifier.verify(sql)).consistent
    await check_erased_everywhere(svc, {erased})
    await check_hidden_nowhere(svc, {hidden, erased})


@pytest.mark.parametrize("metric", ["points", "completions", "best"])
async def test_a_void_and_a_restore_reach_every_board_of_the_completion(
        rt: Runtime, metric: Metric) -> None:
    svc = rt.derive(clock=lambda: NOW)
    await svc.board_kinds.define("course", {"metric": metric, "periods": ["week", "all"]})
    work = [it for it in items(200, seed=3) if it["completed_at"] >= "2026-11-30"]
    outcomes = await svc.ingestor.record(work)
    work = [it for it, o in zip(work, outcomes, strict=True) if o.status == "recorded"]
    await svc.projector.drain(min_age_seconds=0)
    victims = [it for it in work if "course:sql" in it["tags"]][:5]
    for it in victims:
        await svc.corrections.void(it["completion_id"], "cheat")
    await svc.corrections.restore(victims[0]["completion_id"])
    kept = [it for it in work if it not in victims[1:]]
    week = parse_season("2026-W49", zone="UTC")
    for season in (week.on("course:sql", metric), parse_season("all", zone="UTC").on(
            "course:sql", metric), week):
        board = season.board if season.board != "global" else "all"
        want = expected([{**it, "tags": [*it["tags"], "all"]} for it in kept], board, season,
                        season.metric)
        top = await svc.board.top(season, 1000)
        assert {e.user_id: e.score for e in top.entries} == want, season.name
        assert (await svc.verifier.verify(season)).consistent


async def test_a_board_is_built_only_while_its_kind_is_defined(rt: Runtime) -> None:
    """A deleted kind's board is never built again by a heal or a late
    rebuild (its keys would outlive the deletion), nor is a season of a
    kind's board under another metric or zone than the kind has now."""
    await rt.derive(clock=lambda: NOW).ingestor.record(items(50, seed=4))
    await rt.board_kinds.define("course", {"time_zone": PARIS})
    season = WEEK.on("course:sql", "points")
    await rt.rebuilder.run(season)
    for other in (WEEK.on("course:sql", "completions"), WEEK.on("track:data", "points"),
                  parse_season("2026-W49", zone="UTC").on("course:sql", "points")):
        with pytest.raises(RebuildFailed):
            await rt.rebuilder.run(other)
    assert await rt.board_kinds.delete("course")
    with pytest.raises(BoardMissing):
        await rt.board.top(season, 10)
    with pytest.raises(RebuildFailed):
        await rt.rebuilder.run(season)


async def test_a_closed_board_of_a_kind_is_archived_in_its_own_zone(rt: Runtime) -> None:
    """A board's week closes at its end (in its kind's zone) plus the
    grace, is archived by its metric, read from its archive, re-ranked by
    a void, and tells the platform with `season.finalized` naming the board;
    no learner is notified of a board of a kind (a kind's `notify` aside)."""
    svc = rt.derive(clock=lambda: NOW)
    # The deployment sends webhooks (as a serve with LAURELS_WEBHOOK_URL records).
    await svc.db.run("store_webhook_settings", enabled=True, events=None, coalesce_seconds=60)
    await svc.board_kinds.define("course", {"metric": "completions", "time_zone": PARIS})
    work = [it for it in items(200, seed=5) if it["completed_at"] >= "2026-11-30"]
    outcomes = await svc.ingestor.record(work)
    work = [it for it, o in zip(work, outcomes, strict=True) if o.status == "recorded"]
    season = WEEK.on("course:sql", "completions")
    await svc.rebuilder.run(season)
    grace = timedelta(seconds=svc.settings.late_grace_seconds)
    still_open = season.ends_at + grace - timedelta(minutes=1)
    assert season not in await svc.lifecycle.finalize_due(still_open)
    # Its own end (Sunday 23:00 UTC) is not enough: the whole board's W49
    # (UTC), which still accepts completions it holds, closes first.
    whole = parse_season("2026-W49", zone="UTC")
    assert season not in await svc.lifecycle.finalize_due(season.ends_at + grace)
    done = await svc.lifecycle.finalize_due(whole.ends_at + grace + timedelta(seconds=1))
    assert done.index(whole) < done.index(season)
    assert season in await svc.lifecycle.finalized([season])  # read from its archive
    top = await svc.reads.top(season, 1000)
    want = expected(work, "course:sql", season, "completions")
    assert {e["user_id"]: e["score"] for e in top["entries"]} == want
    victim = next(it for it in work if "course:sql" in it["tags"])
    await svc.corrections.void(victim["completion_id"], "cheat")
    want[victim["user_id"]] -= 1
    top = await svc.reads.top(season, 1000)
    assert {e["user_id"]: e["score"] for e in top["entries"]} == {
        u: n for u, n in want.items() if n}
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT body FROM webhook_deliveries"
                                 " WHERE type = 'season.finalized'")
        finals = [r["body"] for r in await cur.fetchall()]
        cur = await conn.execute("SELECT count(*) AS n FROM notifications"
                                 " WHERE season LIKE '%/%'")
        notes = (await cur.fetchone())["n"]
    assert {"season": "2026-W49", "period": "week", "board": "course:sql"} in [
        f.get("data", f) for f in finals]
    assert notes == 0


async def test_a_kind_that_notifies_sends_rank_notifications_naming_its_board(
        rt: Runtime) -> None:
    """`notify: true`: the kind's weekly boards send `top10`, `overtaken` and
    `season_final`, shown by the week's name with `"board"` in their data;
    a kind without it, and a notifying kind's other periods, send none."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.board_kinds.define("course", {"notify": True, "periods": ["week", "all"]})
    await svc.board_kinds.define("track", {})
    week = parse_season("2026-W49", zone="UTC")

    def item(cid: str, uid: int, points: int) -> dict[str, Any]:
        return {"completion_id": cid, "user_id": uid, "points": points, "tags":
                ["course:sql", "track:data"], "completed_at": "2026-12-01T10:00:00Z"}

    await svc.ingestor.record([item("n0", 9, 1)])  # its boards are built (no events)
    await svc.projector.drain(min_age_seconds=0)
    await svc.ingestor.record([item("n1", 1, 5)])  # enters the top 10
    await svc.ingestor.record([item("n2", 2, 9)])  # passes learner 1 on course:sql
    await svc.projector.drain(min_age_seconds=0)
    for _ in range(3):
        await svc.notifier.consume()
    shown = (await svc.notifications.newest(1))["notifications"]
    on_board = [(n["kind"], n["season"], n["data"].get("board")) for n in shown
                if n["data"].get("board")]
    assert ("top10", "2026-W49", "course:sql") in on_board
    assert ("overtaken", "2026-W49", "course:sql") in on_board
    overtaken = next(n for n in shown if n["kind"] == "overtaken" and n["data"].get("board"))
    assert overtaken["data"]["season"] == "2026-W49"
    assert overtaken["data"]["by_user_id"] == 2
    # Issue 65, point 5: named as the page names the board, with its metric.
    assert (overtaken["data"]["board_title"], overtaken["data"]["metric"]) == (
        "Course · sql", "points")
    await svc.board_kinds.define("course", {"title": "SQL courses"})
    await svc.notifications.kinds.live()  # (the reads' copy, re-read within 10 s anyway)
    retitled = (await svc.notifications.newest(1))["notifications"]
    assert {n["data"]["board_title"] for n in retitled if n["data"].get("board")} == {
        "SQL courses · sql"}
    assert all("board_title" not in n["data"] for n in retitled if not n["data"].get("board"))
    assert {b for _, _, b in on_board} == {"course:sql"}  # track notifies nobody; nor `all`
    # The week closes: everyone's final rank on the board, naming it.
    grace = timedelta(seconds=svc.settings.late_grace_seconds)
    await svc.lifecycle.finalize_due(week.ends_at + grace + timedelta(seconds=1))
    finals = [n for n in (await svc.notifications.newest(2))["notifications"]
              if n["kind"] == "season_final"]
    assert sorted((n["season"], n["data"].get("board", ""), n["data"]["rank"]) for n in finals
                  ) == [("2026-W49", "", 1), ("2026-W49", "course:sql", 1)]
    assert {n["data"]["board"] for n in (await svc.notifications.newest(9))["notifications"]
            if n["kind"] == "season_final" and "board" in n["data"]} == {"course:sql"}
    async with svc.db.connection() as conn:
        cur = await conn.execute("SELECT DISTINCT season FROM notifications WHERE season LIKE"
                                 " '%/%'")
        stored = {r["season"] for r in await cur.fetchall()}
    assert stored == {week.on("course:sql", "points").name}


async def test_the_notifier_reads_a_board_only_once_told_it_changed(rt: Runtime) -> None:
    """10,000 boards of a notifying kind cost no stream read a pass while
    nothing happens: after the first pass (which sweeps every board), a
    board's stream is read only once a hint named it."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.board_kinds.define("course", {"notify": True})
    for i, course in enumerate(["course:a", "course:b", "course:c"]):
        await svc.ingestor.record([{"completion_id": f"w{i}", "user_id": 9, "points": 1,
                                    "tags": [course], "completed_at": "2026-12-01T10:00:00Z"}])
    await svc.projector.drain(min_age_seconds=0)
    read: list[str] = []
    rank_events = svc.notifier.board.rank_events

    async def counting(season: Season, *args: Any, **kwargs: Any) -> Any:
        read.append(season.name)
        return await rank_events(season, *args, **kwargs)

    svc.notifier.board.rank_events = counting  # type: ignore[method-assign]
    await svc.notifier.consume()  # the first pass sweeps
    week = parse_season("2026-W49", zone="UTC")
    assert sorted(s for s in read if "/" in s) == [
        week.on(c, "points").name for c in ("course:a", "course:b", "course:c")]
    read.clear()
    for _ in range(3):
        await svc.notifier.consume()
    assert [s for s in read if "/" in s] == []  # idle: no board read
    await svc.ingestor.record([{"completion_id": "x1", "user_id": 1, "points": 5,
                                "tags": ["course:b"], "completed_at": "2026-12-01T11:00:00Z"}])
    await svc.notifier.consume()
    assert [s for s in read if "/" in s] == ["course:b/points/UTC/2026-W49"]
    shown = (await svc.notifications.newest(1))["notifications"]
    assert sorted((n["kind"], n["data"].get("board", "")) for n in shown) == [
        ("top10", ""), ("top10", "course:b")]


async def test_a_kind_defined_since_the_last_read_notifies_at_once(rt: Runtime) -> None:
    """Found with issue 65, point 5: a process dropped the hints of a kind
    defined after it last read the open weeks (every 10 s), so its boards'
    first notifications waited for the next sweep (a minute)."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.notifier.consume()  # the sweep, and the open weeks read: no kind yet
    await svc.board_kinds.define("skill", {"notify": True, "metric": "best"})
    for cid, uid, points in (("k0", 9, 1), ("k1", 1, 5)):
        await svc.ingestor.record([{"completion_id": cid, "user_id": uid, "points": points,
                                    "tags": ["skill:sql"], "completed_at": "2026-12-01T10:00:00Z"}])
        await svc.projector.drain(min_age_seconds=0)
    await svc.notifier.consume()  # within the minute: by the hints alone
    shown = (await svc.notifications.newest(1))["notifications"]
    assert [(n["kind"], n["data"]["board_title"], n["data"]["metric"]) for n in shown
            if n["data"].get("board")] == [("top10", "Skill · sql", "best")]


async def test_a_deletion_redis_could_not_finish_is_finished_before_a_new_definition(
        rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keys a deletion could not drop (Redis down after its commit) wait
    in board_drops: a board of the kind defined again is never served from
    them (they missed what happened meanwhile: here an erasure), and the
    projector's loop (`drop_pending`) or the next definition drops them."""
    svc = rt.derive(clock=lambda: NOW)
    await svc.board_kinds.define("course", {"time_zone": PARIS})
    work = [it for it in items(120, seed=8) if it["completed_at"] >= "2026-11-30"]
    work = await recorded_of(svc, work)
    season = WEEK.on("course:sql", "points")
    await svc.rebuilder.run(season)
    down = StoreUnavailable("redis", ConnectionError("refused"))

    async def refused(*_args: Any) -> int:
        raise down

    monkeypatch.setattr(svc.board_kinds.board, "drop_season", refused)
    assert await svc.board_kinds.delete("course")  # deleted; its keys wait
    assert await svc.board.present(season)
    pending = await svc.db.fetch("board_drops", pattern="course:%", limit=100)
    assert season.name in {r["season"] for r in pending}
    victim = sorted({it["user_id"] for it in work if "course:sql" in it["tags"]})[0]
    await svc.learners.erase(victim)  # no board of the kind hears of it now
    with pytest.raises(StoreUnavailable):  # Redis still down: nothing recorded
        await svc.board_kinds.define("course", {"time_zone": PARIS})
    assert await svc.board_kinds.get("course") is None
    monkeypatch.undo()
    assert await svc.board_kinds.drop_pending() == len(pending)
    assert not await svc.board.present(season)
    assert await svc.db.fetch("board_drops", pattern="%", limit=100) == []
    await svc.board_kinds.define("course", {"time_zone": PARIS})
    assert await svc.healer.heal({season}, 30)
    top = await svc.board.top(season, 1000)
    kept = [it for it in work if it["user_id"] != victim]
    assert {e.user_id: e.score for e in top.entries} == expected(kept, "course:sql", season,
                                                                 "points")
    await check_erased_everywhere(svc, {victim})


async def recorded_of(svc: Any, work: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcomes = await svc.ingestor.record(work)
    await svc.projector.drain(min_age_seconds=0)
    return [it for it, o in zip(work, outcomes, strict=True) if o.status == "recorded"]


async def test_a_deleted_kind_takes_the_tombstones_of_its_boards_never_built(
        rt: Runtime) -> None:
    """An erasure tombstones every board of a kind the learner counts on,
    built or not; the kind's deletion drops the keys of those never built
    too (recorded in board_tombstones), not only its built boards'."""
    svc = rt.derive(clock=lambda: NOW)
    work = await recorded_of(svc, items(200, seed=10))
    # Defined late: its boards are built as they are read (none here).
    await svc.board_kinds.define("course", {"time_zone": PARIS,
                                            "periods": ["week", "day", "all"]})
    victim = sorted({it["user_id"] for it in work if "course:sql" in it["tags"]})[0]
    await svc.learners.erase(victim)

    async def unbuilt() -> list[str]:
        async with svc.db.connection() as conn:
            cur = await conn.execute("SELECT season FROM board_tombstones ORDER BY season")
            return [r["season"] for r in await cur.fetchall()]

    never = await unbuilt()
    assert len(never) > 3  # their days, week and all time: no board, a tombstone each
    built = {r["season"] for r in await svc.db.fetch("part_seasons", pattern="course:%",
                                                          first="a", last="z")}
    assert not set(never) & built
    for season in never:
        assert await svc.redis.exists(
            svc.board.season_keys(parse_season(season, zone="UTC")).erased), season
    assert await svc.board_kinds.delete("course")
    assert await unbuilt() == []
    left = [key async for key in svc.redis.scan_iter(match=f"{svc.keys.prefix}:*course:*")]
    assert left == []
    await check_erased_everywhere(svc, {victim})


async def test_a_kind_deleted_in_another_process_is_gone_there_at_once(rt: Runtime) -> None:
    """Issue 65, point 7: a process whose copy of the kinds still held a kind
    deleted by another answered its boards `503 rebuilding` for 1-2 s (the
    keys gone, the completions there: a heal), where the contract says 404."""
    deleting, reading = rt.derive(clock=lambda: NOW), rt.derive(clock=lambda: NOW)
    await deleting.board_kinds.define("course", {})
    await deleting.ingestor.record([{"completion_id": "d1", "user_id": 3, "points": 4,
                                     "tags": ["course:sql"],
                                     "completed_at": "2026-12-01T10:00:00Z"}])
    await deleting.projector.drain(min_age_seconds=0)
    sql = parse_season("2026-W49", zone="UTC").on("course:sql", "points")
    assert (await reading.reads.top(sql, 10))["total"] == 1
    await reading.board_kinds.fresh()  # its copy holds the kind
    assert await deleting.board_kinds.delete("course")
    with pytest.raises(DomainError) as gone:
        await reading.reads.top(sql, 10)
    assert gone.value.code == "not_found", gone.value
