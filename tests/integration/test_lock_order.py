"""The lock order every writer follows (docs/concurrency.md), checked on
what each writer does, not on what its comments say.

Every named query that takes a lock says which in a `-- locks:` line
(laurels.db.LOCKS); a test below finds the ones that do not, from the
statements' text and from the SQL functions of the migrations they call.
Every writer then runs once with the database's observer recording each
transaction's statements: the locks each transaction takes must follow
laurels.db.LOCK_ORDER, and each writer must take the locks the table in
docs/concurrency.md gives it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from psycopg.pq import TransactionStatus

from laurels.core.seasons import Season, parse_season
from laurels.core.validation import GroupIn, MembersIn, ProfileIn
from laurels.db import LOCK_ORDER, LOCKS, QUERIES, Conn, migrations
from laurels.live.webhooks import store_settings
from laurels.runtime import Runtime, Services
from tests.helpers import receiving

LOCKING = re.compile(r"\bFOR (?:NO KEY )?UPDATE\b|\bFOR (?:KEY )?SHARE\b|pg_(?:try_)?advisory"
                     r"|\bLOCK TABLE\b", re.I)


def _code(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def locking_functions() -> set[str]:
    """The SQL functions of the migrations (their last definition) that take
    a lock, directly or through another of them."""
    bodies: dict[str, str] = {}
    for _, _, text in migrations():
        for m in re.finditer(r"CREATE (?:OR REPLACE )?FUNCTION (\w+)\(.*?\$\$(.*?)\$\$",
                             text, flags=re.S):
            bodies[m.group(1)] = _code(m.group(2))
    found = {name for name, body in bodies.items() if LOCKING.search(body)}
    while True:
        more = {name for name, body in bodies.items() if name not in found
                and any(re.search(rf"\b{f}\(", body) for f in found)}
        if not more:
            return found
        found |= more


def test_every_locking_statement_says_which_lock_it_takes() -> None:
    functions = locking_functions()
    assert {"laurels_ingest", "laurels_retire_month"} <= functions
    silent = []
    for name, sql in QUERIES.items():
        code = _code(sql)
        takes = LOCKING.search(code) or any(re.search(rf"\b{f}\(", code) for f in functions)
        if takes and name not in LOCKS:
            silent.append(name)
    assert not silent, f"queries that lock without a `-- locks:` line: {silent}"
    unknown = {k for kinds in LOCKS.values() for k in kinds} - set(LOCK_ORDER)
    assert not unknown, f"locks outside LOCK_ORDER: {unknown}"


class LockTrace:
    """The locks each transaction took, in order, by the names of its
    statements (laurels.db.Database.observer)."""

    def __init__(self) -> None:
        self.open: dict[int, list[tuple[str, str]]] = {}
        self.done: list[list[tuple[str, str]]] = []

    def __call__(self, name: str, conn: Conn) -> None:
        key = id(conn)
        if name == "BEGIN" or conn.info.transaction_status == TransactionStatus.IDLE:
            if key in self.open:
                self.done.append(self.open.pop(key))
            if name == "BEGIN":
                self.open[key] = []
                return
            self.done.append([(name, k) for k in LOCKS.get(name, ())])  # a statement alone
            return
        self.open.setdefault(key, []).extend((name, k) for k in LOCKS.get(name, ()))

    def taken(self) -> list[list[tuple[str, str]]]:
        """Every transaction since the last call (those still open too)."""
        out = [t for t in [*self.done, *self.open.values()] if t]
        self.done, self.open = [], {}
        return out


def out_of_order(locks: list[tuple[str, str]]) -> str | None:
    """The first lock of a transaction taken after one of a later kind. A
    kind taken again after later ones is a re-entry of locks it holds (a
    writer takes a kind's keys together, in key order, and may name them
    again: the archives' locks before any standing is written, then each
    re-rank's), which waits for nothing."""
    rank = {k: i for i, k in enumerate(LOCK_ORDER)}
    taken: set[str] = set()
    last: tuple[str, str] | None = None
    for q, k in locks:
        if k == "none" or k in taken:
            continue
        if last is not None and rank[k] < rank[last[1]]:
            return f"{q} takes {k} after {last[0]} took {last[1]}"
        taken.add(k)
        last = (q, k)
    return None


W40, W47, W48, W49 = (parse_season(f"2026-W{n}", zone="UTC") for n in (40, 47, 48, 49))
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)  # W49


def item(cid: str, uid: int, points: int, season: Season = W49) -> dict[str, Any]:
    at = season.starts_at + timedelta(hours=uid)
    return {"completion_id": cid, "user_id": uid, "points": points,
            "completed_at": at.isoformat()}


# What docs/concurrency.md's table says each writer takes (at least).
EXPECTED: dict[str, set[str]] = {
    "ingest": {"users", "seasons"},
    "group membership": {"users", "group"},
    "profile change": {"kinds", "users", "seasons", "archive"},
    "suspension": {"kinds", "users", "seasons", "archive"},
    "notifier": {"users"},
    "placement": {"league"},
    "zone pass": {"league", "members"},
    "void": {"kinds", "users", "seasons", "completion", "archive", "outbox"},
    "restore": {"kinds", "users", "seasons", "completion", "archive", "outbox"},
    "bulk void": {"kinds", "users", "seasons", "completion", "archive", "outbox"},
    "bulk restore": {"kinds", "users", "seasons", "completion", "archive", "outbox"},
    "projector": {"outbox"},
    "finalize": {"seasons", "archive"},
    "finalize boards": {"seasons", "archive"},
    "decision": {"league", "seasons"},
    "webhook delivery": {"deliveries", "erasure"},
    "erasure": {"kinds", "users", "erasure", "league", "seasons", "archive", "seal",
                "outbox"},
    "retention": {"partitions", "seal", "outbox"},
    "seal": {"seal"},
    "rebuild": set(),
    "kind definition": {"kinds"},
}


async def test_every_writer_takes_its_locks_in_the_order(rt: Runtime) -> None:
    async with receiving() as receiver:
        cfg: dict[str, Any] = {
            "periods": ("week", "day", "month", "all"), "league_tiers": ("bronze", "silver"),
            "league_size": 5, "league_promote": (1,), "league_demote": (1,),
            "webhook_url": receiver.url, "retain_completions_days": 30}
        early = rt.derive(clock=lambda: datetime(2026, 9, 28, 12, tzinfo=UTC), **cfg)
        svc = rt.derive(clock=lambda: NOW, **cfg)
        await svc.leagues.store_settings()
        await store_settings(svc.db, svc.settings)
        recorded = await early.ingestor.record(
            [item(f"old{u}", u, u, W40) for u in (1, 2, 3)])
        assert {r.status for r in recorded} == {"recorded"}, recorded
        trace = LockTrace()
        svc.db.observer = trace
        seen: dict[str, list[list[tuple[str, str]]]] = {}

        async def writer(name: str, work: Callable[[], Awaitable[Any]]) -> None:
            trace.taken()
            await work()
            seen[name] = trace.taken()

        try:
            await run_writers(svc, writer)
        finally:
            svc.db.observer = None
        assert receiver.events, "the webhook writer sent nothing"
    problems = [f"{name}: {bad}" for name, txs in seen.items() for tx in txs
                if (bad := out_of_order(tx))]
    assert not problems, problems
    for name, wanted in EXPECTED.items():
        took = {k for tx in seen[name] for _, k in tx} - {"none"}
        assert wanted <= took, f"{name} took {took}, the table says {wanted}"


async def run_writers(svc: Services, writer: Callable[[str, Callable[[], Awaitable[Any]]],
                                                      Awaitable[None]]) -> None:
    """Each writer of docs/concurrency.md's table, once, on a state where it
    has its whole work to do."""
    async def ingest() -> None:
        await svc.ingestor.record([item(f"c{u}", u, u) for u in (1, 2, 3, 4)])
        await svc.ingestor.record([item("c48", 1, 5, W48), item("d48", 2, 1, W48)])

    await svc.rebuilder.run(W49)  # a live board: its rank events feed the notifier
    await writer("ingest", ingest)
    await writer("group membership", lambda: _group(svc))
    await writer("placement", lambda: svc.leagues.place(W49))
    await writer("finalize", lambda: svc.lifecycle.finalize(W40))
    await writer("kind definition", lambda: svc.board_kinds.define("course", {}))
    # Two boards of the kind (learner 5's alone: no other writer sees them).
    await svc.ingestor.record([{**item("k5", 5, 3), "tags": ["course:a", "course:b"]}])
    await writer("finalize boards", lambda: svc.lifecycle.finalize_boards(
        [W49.on(b, "points") for b in ("course:a", "course:b")]))
    await writer("profile change",
                 lambda: svc.learners.update(2, ProfileIn(visibility="anonymous")))
    await writer("suspension", lambda: svc.learners.suspend(3, True, "test"))
    await writer("notifier", svc.notifier.consume)
    await writer("void", lambda: svc.corrections.void("old1", "test"))
    await writer("restore", lambda: svc.corrections.restore("old1"))
    await writer("bulk void", lambda: svc.corrections.correct_learner(1, True, "test", None))
    await writer("bulk restore", lambda: svc.corrections.correct_learner(1, False, None, None))
    await svc.db.run("insert_outbox", seqs=[
        r["seq"] for r in await svc.db.fetch("find_completions", completion_ids=["c4"])])
    await writer("projector", lambda: svc.projector.drain(min_age_seconds=0))
    await writer("zone pass", lambda: svc.leagues.zones(W49))
    await writer("decision", lambda: svc.leagues.decide(W48))
    await writer("webhook delivery", lambda: _deliver(svc))
    await writer("erasure", lambda: svc.learners.erase(1))
    for season in ("2026-09-28", "2026-09"):  # September's other seasons (W40 is final)
        await svc.lifecycle.finalize(parse_season(season, zone="UTC"))
    await svc.leagues.decide(W40)
    await writer("seal", svc.partitions.seal)

    async def retire() -> None:
        assert date(2026, 9, 1) in await svc.partitions.retire(NOW, 30)

    await writer("retention", retire)
    await writer("rebuild", lambda: svc.rebuilder.run(parse_season("all", zone="UTC")))


async def _group(svc: Services) -> None:
    await svc.groups.put("g", GroupIn(name="G", access="public"))
    await svc.groups.change_members("g", MembersIn(add=[1, 2, 3], remove=[]))


async def _deliver(svc: Services) -> None:
    assert svc.webhooks is not None
    async with svc.webhooks.client() as http:
        while await svc.webhooks.deliver_due(http):
            pass


@pytest.mark.parametrize("locks", [
    [("a", "users"), ("b", "seasons"), ("c", "archive")],
    [("a", "users"), ("b", "none"), ("c", "users"), ("d", "outbox")]])
def test_out_of_order_accepts_the_order(locks: list[tuple[str, str]]) -> None:
    assert out_of_order(locks) is None


def test_out_of_order_finds_a_lock_taken_late() -> None:
    assert out_of_order([("a", "seasons"), ("b", "users")]) == (
        "b takes users after a took seasons")
