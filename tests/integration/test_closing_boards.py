"""Closing the boards of a kind together (lifecycle.finalize_boards, issue
42): the boards of one period of a kind are archived, ranked and marked in
one transaction of a few statements, FINALIZE_BOARDS at a time; each
archive is what the board showed, as finalizing it alone gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from laurels.core.registry import Metric
from laurels.core.validation import ProfileIn
from laurels.lifecycle import closing as lifecycle
from laurels.runtime import Runtime
from tests.integration.test_board_of_a_kind import NOW, PARIS, WEEK, items

BOARDS = ("course:python-101", "course:sql", "course:go")


@pytest.mark.parametrize(("metric", "policy", "chunk"), [
    ("points", "shared", 1_000), ("best", "first", 1), ("completions", "first", 2)])
async def test_boards_closed_together_archive_what_each_board_showed(
        rt: Runtime, monkeypatch: pytest.MonkeyPatch, metric: Metric, policy: str,
        chunk: int) -> None:
    monkeypatch.setattr(lifecycle, "FINALIZE_BOARDS", chunk)
    svc = rt.derive(clock=lambda: NOW, tie_policy=policy, close_seasons=True)
    await svc.board_kinds.define("course", {"metric": metric, "time_zone": PARIS})
    await svc.board_kinds.define("track", {"metric": metric, "time_zone": PARIS})
    work = items(500, seed=3)
    for i, it in enumerate(work):  # a third course, and many ties
        if i % 3 == 0:
            it["tags"] = [*it["tags"], "course:go"]
        it["points"] = 1 + it["points"] % 4
    outcomes = await svc.ingestor.record(work)
    await svc.projector.drain(min_age_seconds=0)
    seasons = [WEEK.on(b, metric) for b in (*BOARDS, "track:data")]
    for season in seasons:
        await svc.rebuilder.run(season)
    recorded = [it for it, o in zip(work, outcomes, strict=True) if o.status == "recorded"]
    hidden = next(it["user_id"] for it in recorded if "course:sql" in it["tags"])
    await svc.learners.update(hidden, ProfileIn(visibility="hidden"))
    await svc.projector.drain(min_age_seconds=0)
    shown = {s.name: await svc.reads.top(s, 1000) for s in seasons}
    assert all(len(page["entries"]) > 10 for page in shown.values())
    assert hidden not in {e["user_id"] for e in shown[WEEK.on("course:sql", metric).name]
                          ["entries"]}
    # One board closed alone first (`finalize`), the others together.
    # (Past the UTC week's close too: the Paris week closes once the whole
    # board's weeks it spans are finalized.)
    closing = WEEK.closes_at(svc.settings.late_grace_seconds) + timedelta(hours=2)
    assert await svc.lifecycle.finalize(seasons[-1])
    done = await svc.lifecycle.finalize_due(closing)  # the whole board's weeks, then these
    assert sorted(d.name for d in done if "/" in d.name) == sorted(s.name for s in seasons[:-1])
    assert await svc.lifecycle.finalize_due(closing) == []  # once
    # Every key of the boards expired now: each is read from its archive.
    # (An instant long past, whatever this process's clock says against Redis's.)
    gone = datetime(2000, 1, 1, tzinfo=UTC)
    assert await svc.board.expire_many({s: gone for s in seasons}) > 0
    for s in seasons:
        assert not await rt.redis.exists(svc.keys.season(s.name).current)
        archived = await svc.reads.top(s, 1000)
        assert archived["entries"] == shown[s.name]["entries"], s.name
        assert archived["total"] == shown[s.name]["total"]
