"""Signed webhooks (issue 16; docs/contract.md, Webhooks), in process against
the real stores, to the suite's receiver on a loopback port
(tests/webhook_receiver.py) that answers 500, times out and redirects in
turn before it takes each event."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from laurels.core.seasons import parse_season, season_of
from laurels.live.webhooks import signature, standard_signature
from tests.api.conftest import Api, ApiFactory
from tests.api.test_corrections import audit, restore, void
from tests.api.test_periods import post
from tests.helpers import ADMIN, INGEST, WEBHOOK_SECRET, eventually, token_for
from tests.webhook_receiver import FAIL, PATH, REDIRECT, SLOW, Receiver, standard_key, verify

ITEMS = [("h1", 1, 10, "2025-12-01T10:00:00Z"), ("h2", 2, 12, "2025-12-01T11:00:00Z")]


def test_a_rotating_secret_signs_with_both_values() -> None:
    """While LAURELS_WEBHOOK_SECRET is `new,old` (or `old,new`), a receiver
    that knows either value verifies the request; `new` alone: only new."""
    body, now = b'{"id": "x"}', int(time.time())
    for value in ("new-secret,old-secret", "old-secret,new-secret"):
        header = signature(value, now, body)
        assert header.count("v1=") == 2 and header.startswith(f"t={now},")
        assert verify("new-secret", header, body) and verify("old-secret", header, body)
        assert not verify("other", header, body)
        # a receiver that keeps one v1 (the last) reads the current value's
        last = dict(p.split("=", 1) for p in header.split(","))["v1"]
        current = value.split(",")[0]
        assert last == hmac.new(current.encode(), f"{now}.".encode() + body,
                                hashlib.sha256).hexdigest()
    header = signature("new-secret", now, body)
    assert header.count("v1=") == 1
    assert verify("new-secret", header, body) and not verify("old-secret", header, body)


@pytest.mark.parametrize("secret", ["plain-secret", "whsec_" + base64.b64encode(
    b"thirty-two bytes of a random key").decode()])
def test_the_standard_signature_verifies_with_the_specifications_library(secret: str) -> None:
    body, now = b'{"id": "e1", "type": "user.erased"}', int(time.time())
    headers = {"webhook-id": "e1", "webhook-timestamp": str(now),
               "webhook-signature": standard_signature(secret, "e1", now, body)}
    assert Webhook(standard_key(secret)).verify(body, headers) == orjson.loads(body)
    for forged in ({**headers, "webhook-id": "e2"},
                   {**headers, "webhook-timestamp": str(now + 1)}):
        with pytest.raises(WebhookVerificationError):
            Webhook(standard_key(secret)).verify(body, forged)
    with pytest.raises(WebhookVerificationError):
        Webhook(standard_key(secret)).verify(body + b" ", headers)
    # While the secret rotates (`new,old`), both values verify, the current last.
    rotating = standard_signature(f"new-key,{secret}", "e1", now, body)
    assert rotating.count("v1,") == 2
    for value in ("new-key", secret):
        Webhook(standard_key(value)).verify(body, {**headers, "webhook-signature": rotating})


async def deliveries(api: Api, **params: Any) -> list[dict[str, Any]]:
    resp = await api.client(ADMIN).get("/v1/admin/webhooks/deliveries", params=params)
    assert resp.status_code == 200, resp.text
    return list(resp.json()["deliveries"])


async def settled(api: Api, seconds: float = 30) -> list[dict[str, Any]]:
    """Every delivery, once none is pending."""

    async def none_pending() -> bool:
        return not await deliveries(api, status="pending")

    await eventually(none_pending, seconds, "no delivery to be pending")
    return await deliveries(api)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver([FAIL, SLOW, REDIRECT], secret=WEBHOOK_SECRET) as r:
        yield r


async def test_every_event_arrives_signed_after_failures(
        serve: ApiFactory, receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="laurels.webhooks")
    api = await serve(close_seasons=False, webhook_url=receiver.url,
                      webhook_timeout_seconds=0.5)
    c, admin = api.client(INGEST), api.client(ADMIN)
    await post(c, ITEMS)
    await void(api, "h1")
    await restore(api, "h1")
    assert (await admin.delete("/v1/users/2")).status_code == 204
    await api.close_seasons()
    assert parse_season("2025-W49", zone="UTC") in await api.runtime.lifecycle.finalize_due(
        datetime(2025, 12, 20, tzinfo=UTC))
    await api.runtime.notifier.consume()
    done = await settled(api)
    types = Counter(d["type"] for d in done)
    assert types["completion.voided"] == types["completion.restored"] == 1
    assert types["user.erased"] == types["season.finalized"] == 1
    assert types["notification.created"] >= 1  # learner 1's season_final
    assert {d["status"] for d in done} == {"delivered"}
    assert all(d["attempts"] == 4 for d in done), done  # 500, timeout, redirect, then 204
    for d in done:  # every failed attempt's error stays, delivered or not
        assert [(e["attempt"], e["error"]) for e in d["errors"]] == [
            (1, "HTTP 500"), (2, "no answer within 0.5 s"), (3, "HTTP 302")], d
        assert d["last_error"] == "HTTP 302"
        logged = [r.getMessage() for r in caplog.records if r.name == "laurels.webhooks"
                  and r.levelname == "INFO" and r.getMessage().startswith(f"webhook {d['id']} ")]
        assert [line.split(" failed: ")[0].rsplit(" ", 1)[-1] for line in logged] == [
            "1", "2", "3"], logged  # each failed attempt at INFO, with its number
        assert "HTTP 500" in logged[0] and "HTTP 302" in logged[2]
    assert receiver.bad_signatures == 0
    assert {d.path for d in receiver.deliveries} == {PATH}  # no redirect followed
    assert set(receiver.received) == {d["id"] for d in done}
    events = {e["type"]: e for e in receiver.received.values()}
    assert events["user.erased"]["data"] == {"user_id": 2}
    assert events["completion.voided"]["data"]["completion_id"] == "h1"
    assert events["season.finalized"]["data"] == {"season": "2025-W49", "period": "week",
                                                    "board": "global"}
    final = [e for e in receiver.received.values() if e["type"] == "notification.created"]
    assert {e["data"]["user_id"] for e in final} == {1}  # erased 2 got none sent
    assert set(final[0]["data"]) == {"id", "user_id", "kind", "season", "data", "created_at",
                                     "updated_at", "read"}
    assert final[0]["data"]["kind"] == "season_final"
    assert set(events["user.erased"]) == {"id", "type", "created_at", "data"}
    # The audit and the deliveries agree; paging walks every delivery once.
    assert [e["action"] for e in (await audit(api))["entries"]][:3] == [
        "erase", "restore", "void"]
    paged, after = [], None
    while True:
        resp = (await admin.get("/v1/admin/webhooks/deliveries",
                                params={"limit": 2, **({"after": after} if after else {})}
                                )).json()
        paged += resp["deliveries"]
        after = resp["next"]
        if after is None:
            break
    assert [d["id"] for d in paged] == [d["id"] for d in done]
    # Erasing learner 1 takes their events along, sent or not: PostgreSQL
    # keeps nothing of theirs but the erasure's own event.
    assert (await admin.delete("/v1/users/1")).status_code == 204
    async with api.runtime.db.connection() as conn:
        rows = await (await conn.execute(
            "SELECT type, body FROM webhook_deliveries WHERE body::text LIKE '%%\"user_id\": 1%%'"
            " OR body::text LIKE '%%by_user_id\": 1%%'")).fetchall()
    assert [(r["type"], r["body"]["data"]) for r in rows] == [("user.erased", {"user_id": 1})]


async def test_a_failed_delivery_and_its_retry(serve: ApiFactory) -> None:
    async with Receiver([FAIL] * 3, secret=WEBHOOK_SECRET) as receiver:
        api = await serve(close_seasons=False, webhook_url=receiver.url,
                          webhook_timeout_seconds=0.5)
        await post(api.client(INGEST), ITEMS)
        await void(api, "h2")
        # Its 24 hours are over: the next failure is final.
        async with api.runtime.db.connection() as conn:
            await conn.execute("UPDATE webhook_deliveries SET give_up_at = now()")
        [failed] = await settled(api)
        assert failed["status"] == "failed" and failed["last_error"] == "HTTP 500"
        assert failed["next_attempt_at"] is None
        admin = api.client(ADMIN)
        resp = await admin.post(f"/v1/admin/webhooks/deliveries/{failed['id']}/retry")
        assert resp.status_code == 202
        [again] = await settled(api)
        assert again["status"] == "delivered" and again["attempts"] >= 3
        assert (await admin.post("/v1/admin/webhooks/deliveries/"
                                 "00000000-0000-0000-0000-000000000000/retry")).status_code == 404
        assert (await admin.post("/v1/admin/webhooks/deliveries/nope/retry")).status_code == 422
        assert (await api.client(INGEST).get("/v1/admin/webhooks/deliveries")).status_code == 403


async def test_no_webhooks_without_a_url(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    await post(api.client(INGEST), ITEMS)
    await void(api, "h1")
    assert await deliveries(api) == []


async def test_only_the_events_asked_for_are_sent(serve: ApiFactory) -> None:
    """LAURELS_WEBHOOK_EVENTS: event types and notification kinds; the
    others are not recorded at all."""
    async with Receiver(secret=WEBHOOK_SECRET) as receiver:
        api = await serve(close_seasons=False, webhook_url=receiver.url,
                          webhook_events=("completion.voided", "notification.top10"))
        c = api.client(INGEST)
        await post(c, ITEMS)
        await void(api, "h1")
        await restore(api, "h1")
        assert (await api.client(ADMIN).delete("/v1/users/2")).status_code == 204
        await api.close_seasons()
        await api.runtime.lifecycle.finalize_due(datetime(2025, 12, 20, tzinfo=UTC))
        await api.runtime.notifier.consume()  # learner 1's season_final: not asked for
        done = await settled(api)
        assert [d["type"] for d in done] == ["completion.voided"]
        assert [e["data"]["completion_id"] for e in receiver.received.values()] == ["h1"]


async def waiting(api: Api) -> int:
    """Learner 1's `overtaken` deliveries not delivered yet."""
    async with api.runtime.db.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM webhook_deliveries WHERE user_id = 1"
            " AND kind = 'overtaken' AND status <> 'delivered'")
        row = await cur.fetchone()
        assert row is not None
        return int(row["n"])


async def test_a_refreshed_notification_is_sent_once_per_window_with_its_latest_state(
        serve: ApiFactory) -> None:
    """Learner 1 is passed by four learners in a row: one unread
    `overtaken`, refreshed three times. The first is sent at once; the
    refreshes within LAURELS_WEBHOOK_COALESCE_SECONDS make one more
    delivery, sent when the window has passed, carrying the latest state
    (who passed them last)."""
    async with Receiver(secret=WEBHOOK_SECRET) as receiver:
        api = await serve(webhook_url=receiver.url, webhook_coalesce_seconds=2)
        rt = api.runtime
        c = api.client(INGEST)
        # live: rank events
        await rt.rebuilder.run(season_of(datetime.now(UTC), "week", zone="UTC"))
        for uid, points in ((1, 5), (2, 6), (3, 7), (4, 8), (5, 9)):
            resp = await c.post("/v1/completions", json={
                "completion_id": f"o{uid}", "user_id": uid, "points": points})
            assert resp.status_code == 201, resp.text
            await rt.notifier.consume()
        reader = api.client(token_for(api.env, 1))

        async def refreshed(rt: Any = rt, reader: Any = reader) -> dict[str, Any] | None:
            # The process's own notifier loop may hold the last event a moment
            # (a consumer group hands each event to one consumer).
            await rt.notifier.consume()
            notes = (await reader.get("/v1/users/1/notifications")).json()["notifications"]
            [note] = [n for n in notes if n["kind"] == "overtaken"]
            return note if note["data"]["by_user_id"] == 5 else None

        latest = await eventually(refreshed, 20, "the last refresh to be written")

        async def all_sent(api: Api = api) -> list[dict[str, Any]] | None:
            sent = [e["data"] for e in receiver.received.values()
                    if e["data"].get("kind") == "overtaken" and e["data"]["user_id"] == 1]
            if sent and sent[-1]["data"]["by_user_id"] == 5 and not await waiting(api):
                return sent
            return None

        sent = await eventually(all_sent, 20, "every delivery of it to go out")
        # The first (unless the refreshes came before it went out: then it
        # carried them), then at most one for the window's refreshes.
        assert 1 <= len(sent) <= 2, sent
        assert {s["id"] for s in sent} == {latest["id"]}


async def test_league_notifications_reach_the_platform(serve: ApiFactory) -> None:
    """league_zone and league_result are notifications like any other: each
    reaches the receiver as notification.created, signed, carrying its kind
    and data as the API shows them, and LAURELS_WEBHOOK_EVENTS chooses them
    by kind."""
    async with Receiver(secret=WEBHOOK_SECRET) as receiver:
        api = await serve(close_seasons=False, late_grace_seconds=10**9,
                          league_grace_seconds=10**9, webhook_url=receiver.url,
                          league_tiers=("bronze", "silver"), league_size=5,
                          league_promote=(2,), league_demote=(1,),
                          webhook_events=("notification.league_zone",
                                          "notification.league_result"))
        week = parse_season("2026-W40", zone="UTC")
        start = season_of(datetime(2026, 10, 1, tzinfo=UTC), "week", zone="UTC").starts_at
        await post(api.client(INGEST), [(f"lz{u}", u, u, start.replace(hour=u).isoformat())
                                        for u in range(1, 6)])
        rt = api.runtime
        await rt.leagues.place(week)
        await rt.projector.drain(min_age_seconds=0)
        await rt.leagues.zones(week)
        assert await rt.leagues.decide(week)
        done = await settled(api)
        assert {d["status"] for d in done} == {"delivered"} and receiver.bad_signatures == 0
        sent = [e["data"] for e in receiver.received.values()]
        assert {e["type"] for e in receiver.received.values()} == {"notification.created"}
        zones = sorted((n["user_id"], n["data"]["zone"]) for n in sent
                       if n["kind"] == "league_zone")
        assert zones == [(4, "promotion"), (5, "promotion")]
        results = {n["user_id"]: n["data"] for n in sent if n["kind"] == "league_result"}
        assert sorted(results) == [1, 2, 3, 4, 5]
        assert results[5] == {"tier": "bronze", "cohort_id": f"{week}.0.0", "rank": 1,
                              "outcome": "promoted", "new_tier": "silver"}
        listed = (await api.client(token_for(api.env, 5)).get(
            "/v1/users/5/notifications")).json()["notifications"]
        assert {n["id"] for n in listed} == {n["id"] for n in sent if n["user_id"] == 5}
