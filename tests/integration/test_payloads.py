"""Every payload the service writes is its declared type, field by field
(as Zulip's test_events.py holds every event it sends to its schema).

Each writer is driven for real, on the real stores: the notifier (`top10`,
`overtaken`, on the whole board and on a board of a kind that notifies),
the challenges (`top10`, `overtaken` and `challenge_result`, on the whole
board and on a board of a kind; `challenge.decided`), the leagues
(`league_zone`, `league_result`), the corrections (one and a
learner's), an erasure, the finalizing of a week (`season.finalized`,
`season_final`), and the webhook sender. Then every notification row is
held to its kind's type (notifications.DATA), every notification as the
API shows it to shapes.Notification (its data to its kind's type and what
showing adds), every webhook event sent to notifications.WebhookEvent (its
data to its type's notifications.WEBHOOK_DATA), every rank event read to
kinds.RankEvent, and every Pub/Sub hint to board.hints.Hint. A field
missing or not declared fails, naming the payload and the field. The
kinds and types are enumerated from their registries: one not written
here fails until a writer of it is driven."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from laurels.board.hints import Hint
from laurels.core import registry as kinds
from laurels.core import shapes
from laurels.core.seasons import parse_season
from laurels.live.notifications import DATA, SHOWN, WEBHOOK_DATA, BoardShown, WebhookEvent
from laurels.live.notifier import RankMove
from laurels.live.webhooks import store_settings
from laurels.runtime import Runtime, Services
from tests.helpers import receiving
from tests.polling import eventually
from tests.typed_checks import keys_of, problems

W49 = parse_season("2026-W49", zone="UTC")
BOARD = "course:sql"
NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)  # W49, open
LEAGUES: dict[str, Any] = {"league_tiers": ("bronze", "silver"), "league_size": 5,
                           "league_promote": (2,), "league_demote": (1,)}


def item(cid: str, uid: int, points: int) -> dict[str, Any]:
    at = W49.starts_at + timedelta(hours=uid)
    return {"completion_id": cid, "user_id": uid, "points": points, "tags": [BOARD],
            "completed_at": at.isoformat()}


class Seen:
    """What the test saw written, and every problem found in it."""

    def __init__(self) -> None:
        self.kinds: set[tuple[str, bool]] = set()  # (notification kind, from a board)
        self.types: set[str] = set()  # webhook event types sent
        self.rank_events = 0
        self.scrubbed = False  # an overtaken whose mover was erased
        self.problems: list[str] = []


async def check_rows(svc: Services, seen: Seen) -> None:
    """Every notification row: its data is its kind's type, with `board`
    exactly when it comes from a board of a kind (CONTRACT.md)."""
    async with svc.db.connection() as conn:
        rows = await (await conn.execute(
            "SELECT id, kind, season, data FROM notifications ORDER BY id")).fetchall()
    for r in rows:
        where = f"notification {r['id']} ({r['kind']} of {r['season']})"
        seen.problems += problems(r["data"], DATA[r["kind"]], f"{where} data")
        from_board = "/" in r["season"] or (  # (a challenge on a board of a kind's)
            r["season"].startswith("challenge:") and "metric" in r["data"])
        if from_board != ("board" in r["data"]):
            seen.problems.append(f"{where} data.board: {'missing' if from_board else 'extra'}")
        seen.kinds.add((r["kind"], from_board))
        seen.scrubbed |= r["kind"] == "overtaken" and "by_user_id" not in r["data"]


def shown_problems(note: Mapping[str, Any], where: str) -> list[str]:
    """A notification as the API shows it (a page, a webhook): its data is
    its kind's as shown, and what showing a board's adds (BoardShown)."""
    data, kind = note.get("data"), note.get("kind")
    if not isinstance(data, dict) or kind not in SHOWN:
        return [f"{where}: no kind or data to check"]
    out = problems({k: v for k, v in data.items() if k not in keys_of(BoardShown)},
                   SHOWN[kind], f"{where}.data")
    if "board" in data:
        out += problems({k: data.get(k) for k in keys_of(BoardShown)}, BoardShown,
                        f"{where}.data")
    else:
        out += [f"{where}.data.{k}: without a board" for k in keys_of(BoardShown) if k in data]
    return out


async def check_shown(svc: Services, seen: Seen, user_ids: range) -> None:
    for uid in user_ids:
        for note in (await svc.notifications.newest(uid))["notifications"]:
            where = f"learner {uid}'s notification {note['id']}"
            seen.problems += problems(note, shapes.Notification, where)
            seen.problems += shown_problems(note, where)


async def deliver(svc: Services, seen: Seen, events: list[dict[str, Any]]) -> None:
    """Send every delivery due, then hold each event sent to its type."""
    assert svc.webhooks is not None
    sent = len(events)
    async with svc.webhooks.client() as http:
        while await svc.webhooks.deliver_due(http):
            pass
    for event in events[sent:]:
        where = f"webhook {event.get('type')} {event.get('id')}"
        seen.problems += problems(event, WebhookEvent, where)
        declared = WEBHOOK_DATA.get(event.get("type"))  # type: ignore[arg-type]
        if declared is None:
            continue
        seen.problems += problems(event["data"], declared, f"{where} data")
        if event["type"] == "notification.created":
            seen.problems += shown_problems(event["data"], f"{where} data")
        seen.types.add(event["type"])


@asynccontextmanager
async def hints_heard(rt: Runtime) -> AsyncIterator[list[dict[str, Any]]]:
    """Every Pub/Sub hint published meanwhile, as it was sent."""
    heard: list[dict[str, Any]] = []
    pubsub: Any = rt.redis.pubsub()
    channels = [rt.board.keys.shard_hint_channel(s) for s in (W49, W49.on(BOARD, "points"))]
    if rt.board.cluster:  # (a season's hints go on its shard's channel)
        await pubsub.ssubscribe(*channels)
    else:
        await pubsub.subscribe(rt.board.keys.hint_channel())

    listened = channels if rt.board.cluster else [rt.board.keys.hint_channel()]
    ends: set[str] = set()  # the channels whose end marker came back

    async def listen() -> None:
        while True:
            message = await (pubsub.get_sharded_message(timeout=0.1) if rt.board.cluster
                             else pubsub.get_message(timeout=0.1))
            if message and message["type"] in ("message", "smessage"):
                data = orjson.loads(message["data"])
                if data == {"end": END}:
                    ends.add(str(message["channel"]))
                else:
                    heard.append(data)

    task = asyncio.create_task(listen())
    try:
        yield heard
    finally:
        # Every hint was published before this marker on its channel, and a
        # channel delivers in the order published: once each marker is back,
        # nothing is on its way (no sleep).
        for channel in listened:
            await (rt.redis.spublish(channel, orjson.dumps({"end": END})) if rt.board.cluster
                   else rt.redis.publish(channel, orjson.dumps({"end": END})))
        await eventually(lambda: ends >= set(listened), what="every channel's end marker")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await pubsub.aclose()


END = "test_payloads: every hint before this one is in"



def read_rank_events(svc: Services, seen: Seen) -> None:
    """Hold every rank event the notifier reads to kinds.RankEvent, and its
    decoding (RankMove) to what it read."""
    read = svc.notifier.board.rank_events

    async def checked(*args: Any, **kwargs: Any) -> Any:
        events = await read(*args, **kwargs)
        for entry_id, fields in events:
            where = f"rank event {entry_id}"
            seen.problems += problems(fields, kinds.RankEvent, where)
            move = RankMove.of(fields)
            if (move.user_id, move.rank, move.score) != tuple(
                    int(fields[k]) for k in ("uid", "rank", "score")):
                seen.problems.append(f"{where}: decoded as {move}")
            seen.rank_events += 1
        return events

    svc.notifier.board.rank_events = checked  # type: ignore[method-assign]


async def move_ranks(svc: Services) -> None:
    """top10 and overtaken, on the whole board and on a board of a kind."""
    await svc.board_kinds.define("course", {"notify": True})
    await svc.ingestor.record([item("n0", 9, 1)])  # its boards are built (no events)
    await svc.projector.drain(min_age_seconds=0)
    for uid in range(1, 6):  # each enters the top 10, and passes those before
        await svc.ingestor.record([item(f"n{uid}", uid, uid + 1)])
        await svc.projector.drain(min_age_seconds=0)
    for _ in range(3):
        await svc.notifier.consume()


async def correct_and_erase(svc: Services) -> None:
    """completion.voided and .restored (one, and a learner's); user.erased,
    and the others' notifications that named the erased learner (5, who
    passed them all) scrubbed."""
    await svc.corrections.correct("n1", True, "a test")
    await svc.corrections.correct("n1", False, None)
    await svc.corrections.correct_learner(2, True, "a test", None)
    await svc.corrections.correct_learner(2, False, None, None)
    await svc.projector.drain(min_age_seconds=0)
    assert await svc.erasure.erase(5)


async def end_the_week(svc: Services) -> None:
    """league_zone while it runs; season.finalized, season_final (the whole
    board's and the course's) and league_result once it is over."""
    await svc.leagues.place(W49)
    await svc.projector.drain(min_age_seconds=0)
    await svc.leagues.zones(W49)
    grace = timedelta(seconds=svc.settings.late_grace_seconds)
    await svc.lifecycle.finalize_due(W49.ends_at + grace + timedelta(seconds=1))
    assert await svc.leagues.decide(W49)


async def run_challenges(svc: Services) -> None:
    """top10 and overtaken from a challenge that notifies (on a board of a
    kind); challenge_result from one on the whole board and one on a board
    of a kind; challenge.decided."""
    early = svc.derive(clock=lambda: W49.starts_at - timedelta(days=1))
    window = {"starts_at": W49.starts_at.isoformat(), "ends_at": NOW.isoformat(),
              "rewards": [{"from": 1, "to": 1, "reward": "gold"}]}
    await early.challenges.define("whole", {"title": "Whole", **window})
    await early.challenges.define("sql", {"title": "SQL", "board": BOARD, "metric": "best",
                                          "notify": True, **window})
    during = svc.derive(clock=lambda: NOW - timedelta(hours=1))
    await during.decider.watch()
    await svc.ingestor.record([{**item("cx", 3, 9), "tags": [BOARD]}])  # 3 passes the others
    await during.decider.watch()
    after = svc.derive(clock=lambda: NOW + timedelta(seconds=1))
    assert sorted(await after.decider.decide_due()) == ["sql", "whole"]


def check_hints(heard: list[dict[str, Any]], seen: Seen) -> None:
    for i, hint in enumerate(heard):
        seen.problems += problems(hint, Hint, f"hint {i} {hint}")


async def test_every_payload_written_is_its_declared_type(rt: Runtime) -> None:
    seen, phases = Seen(), (move_ranks, run_challenges, correct_and_erase, end_the_week)
    async with receiving() as receiver, hints_heard(rt) as heard:
        svc = rt.derive(clock=lambda: NOW, webhook_url=receiver.url,
                        webhook_coalesce_seconds=0, **LEAGUES)
        await svc.leagues.store_settings()
        await store_settings(svc.db, svc.settings)
        read_rank_events(svc, seen)
        for phase in phases:
            await phase(svc)
            await check_rows(svc, seen)
            await check_shown(svc, seen, range(1, 10))
            await deliver(svc, seen, receiver.events)
    check_hints(heard, seen)
    assert not seen.problems, "\n".join(seen.problems)
    # Every kind and type of the registries was written (and checked).
    assert set(DATA) == set(kinds.NOTIFICATION_KINDS)
    boards = {k for k, t in DATA.items() if "board" in keys_of(t)}  # a board of a kind's too
    assert seen.kinds == {(k, False) for k in DATA} | {(k, True) for k in boards}, seen.kinds
    # (CONTRACT.md: a kind's boards that notify send these three, with "board")
    assert boards == {"overtaken", "top10", "season_final", "challenge_result"}
    assert set(WEBHOOK_DATA) == set(kinds.WEBHOOK_TYPES) == seen.types
    assert seen.rank_events and heard and seen.scrubbed


def test_a_missing_or_undeclared_field_is_named() -> None:
    """The check itself, on payloads that are not their type."""
    assert problems({"rank": 1}, DATA["top10"], "top10") == [
        "top10.score: missing (Ranked requires it)"]
    assert problems({"rank": 1, "score": 2, "boards": "x"}, DATA["top10"], "top10") == [
        "top10.boards: not declared by Ranked"]
    assert problems({"user_id": "7"}, WEBHOOK_DATA["user.erased"], "e") == [
        "e.user_id: '7' is no int"]
    assert problems({"season": "2026-W49"}, DATA["overtaken"], "o") == []  # (mover erased)
    assert shown_problems({"kind": "overtaken", "data": {"season": "2026-W49"}}, "o") == [
        "o.data.by_user_id: missing (OvertakenShown requires it)",
        "o.data.by_display_name: missing (OvertakenShown requires it)"]
    assert problems({"season": "s", "user_id": None}, Hint, "h") == []
    assert shown_problems({"kind": "top10", "data": {"rank": 1, "score": 2,
                                                     "board_title": "x"}}, "n") == [
        "n.data.board_title: without a board"]
    assert shown_problems({"kind": "top10", "data": {"rank": 1, "score": 2, "board": "b",
                                                     "board_title": "x"}}, "n") == [
        "n.data.metric: None is none of ['points', 'completions', 'best']"]
