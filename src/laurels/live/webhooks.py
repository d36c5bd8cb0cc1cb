"""Signed webhooks, delivered at least once (docs/webhooks.md).

Events are written to `webhook_deliveries` in the transaction of what causes
them (migrations 008 and 011: a notification, a finalize, a void or restore,
an erasure), so none is lost and none is sent for something rolled back.
Whether one is written is the deployment's choice, not the writer's: the
serving process stores the webhook settings in PostgreSQL (`store_settings`)
and every transaction reads them, whatever process it runs in (a CLI void,
a projector started alone). This loop, in every process that has
`LAURELS_WEBHOOK_URL`, sends them:

- it leases due deliveries (`claim_deliveries`: the lease is the next
  attempt time, the timeout plus a few seconds, so a process killed
  mid-delivery leaves them to be sent again: at least once, a receiver
  deduplicates by `id`), at most LAURELS_WEBHOOK_CONCURRENCY (32) in flight
  per process: workers of BATCH deliveries each, side by side, each worker
  taking its next batch as soon as its receiver has answered the last one
  (the receiver's answers set the pace, not a tick; a slow answer holds up
  its own worker's batch only, at most the timeout);
- builds each body when it sends it: a notification as it is then (its
  latest state, the learner it names as they are then, live/notifications.py);
- POSTs it with `Laurels-Event-Id` and `Laurels-Signature: t=<unix
  seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, and the Standard Webhooks
  headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), a 10 s
  timeout, no redirects followed (the target comes from configuration only);
- a 2xx delivers it; anything else is retried with exponential backoff and
  jitter for 24 hours (across restarts: the schedule is in PostgreSQL), then
  it is `failed`, until an operator retries it. Every failed attempt's
  error is kept on the delivery and logged (INFO).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
import orjson
from standardwebhooks.webhooks import Webhook

from laurels.core import failpoints, shapes
from laurels.core.backoff import jittered_seconds
from laurels.core.metrics import WEBHOOK_ATTEMPT_SECONDS, WEBHOOK_ATTEMPTS, WEBHOOK_DELIVERIES
from laurels.db import Database, Row, Tx
from laurels.live.notifications import (
    NotificationCreated,
    Notifications,
    WebhookEvent,
    named_ids,
    shown,
)
from laurels.process.settings import Settings, accepted
from laurels.reads.boards import iso

log = logging.getLogger("laurels.webhooks")

LEASE_SLACK_SECONDS = 5.0  # a lease outlives an attempt's timeout by this much
# Deliveries one worker sends side by side, in one transaction (one pooled
# connection): a process runs LAURELS_WEBHOOK_CONCURRENCY / BATCH workers, so
# a receiver sees at most that many concurrent requests from each process
# that has LAURELS_WEBHOOK_URL (docs/webhooks.md).
BATCH = 8
IDLE_SECONDS = 0.5
ANSWER_READ_MAX = 4096  # bytes of a receiver's answer read at most (only its status counts)
MAX_DELAY_SECONDS = 3600.0
GONE = "the notification no longer exists"


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The `Laurels-Signature` header of a body sent at `timestamp`: one
    `v1` per value the secret holds, the current one last. While it
    rotates (`new,old`), every process signs with both, so a receiver that
    knows either verifies every delivery, whichever process sent it
    (docs/webhooks.md: a request is genuine when any `v1` matches); one
    that reads a single `v1` (the last) reads the current value's."""
    signed = str(timestamp).encode() + b"." + body
    macs = [hmac.new(key.encode(), signed, hashlib.sha256).hexdigest()
            for key in reversed(accepted(secret))]
    return f"t={timestamp}," + ",".join(f"v1={mac}" for mac in macs)


def standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header of the Standard Webhooks specification
    (signed by its own library): `v1,<base64>` per value the secret holds,
    space-separated, the current one last. A value `whsec_<base64>` is that
    key; any other value's key is its UTF-8 bytes (a receiver gives `whsec_`
    and their base64: docs/webhooks.md)."""
    at = datetime.fromtimestamp(timestamp, UTC)
    return " ".join(
        Webhook(key if key.startswith("whsec_") else key.encode()).sign(msg_id, at, body)
        for key in reversed(accepted(secret)) if key.removeprefix("whsec_"))


def backoff(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` ones: 1, 2, 4, ...
    up to an hour, with jitter."""
    return jittered_seconds(attempts - 1, base_seconds=1.0, cap_seconds=MAX_DELAY_SECONDS)


async def store_settings(db: Database, settings: Settings) -> None:
    """The deployment's webhook settings, for every writer (migration 011):
    on with a URL, the events wanted, the coalescing window. Stored by the
    serving process at start."""
    await db.run("store_webhook_settings", enabled=settings.webhook_url is not None,
                 events=list(settings.webhook_events) or None,
                 coalesce_seconds=settings.webhook_coalesce_seconds)


def notification_of(row: Row) -> int | None:
    """The id of the notification a delivery announces (None for other events)."""
    if row["type"] != "notification.created":
        return None
    return int(row["notification_id"] or row["body"]["data"]["id"])


START_AT = datetime.fromisoformat("0001-01-01T00:00:00+00:00")
START_ID = uuid.UUID(int=0)


@dataclass
class Cursor:
    """Where a worker's next claim starts: after the (due time, id) its last
    claim ended at. From the start, claims stepped over every delivery
    already leased or delivered (dead index entries until vacuum): with
    200,000 waiting, three processes sent 254 a second together."""

    due_at: datetime = START_AT
    id: uuid.UUID = START_ID

    def moved(self, claimed: list[Row], limit: int) -> None:
        """After a claim: past its last row, or back to the start when it
        came back short (the backlog is drained; retries due behind wait
        for that pass)."""
        if len(claimed) < limit:
            self.due_at, self.id = START_AT, START_ID
        else:
            last = max(claimed, key=lambda r: (r["due_at"], r["id"]))
            self.due_at, self.id = last["due_at"], last["id"]


class Outgoing:
    """A batch of leased deliveries as they are now, the notifications they
    announce as they are now, and the bodies to send."""

    def __init__(self, rows: list[Row], notes: dict[int, Row]) -> None:
        self.rows = rows
        self.notes = notes

    def named(self) -> set[int]:
        """Every learner the batch concerns: the deliveries' owners, the
        learners their notifications name, and those a `challenge.decided`
        event rewards."""
        out = {r["user_id"] for r in self.rows if r["user_id"] is not None}
        for r in self.rows:
            if r["type"] == "challenge.decided":
                out |= {int(e["user_id"]) for e in r["body"]["data"].get("rewarded", [])}
        return out | set(named_ids(n["data"] for n in self.notes.values()))

    def body(self, row: Row, names: dict[int, str], titles: Mapping[str, str]
             ) -> WebhookEvent | None:
        """The body sent for `row`: a notification as it is now (None when it
        is gone), every other event as it was written."""
        body: WebhookEvent = row["body"]
        nid = notification_of(row)
        if nid is None:
            return body
        note = self.notes.get(nid)
        if note is None:
            return None
        data: NotificationCreated = {**shown(note, names, titles), "user_id": note["user_id"]}
        return {"id": body["id"], "type": body["type"], "created_at": body["created_at"],
                "data": data}


class Webhooks:
    def __init__(self, db: Database, notifications: Notifications, url: str, secret: str,
                 timeout_seconds: float = 10.0, concurrency: int = 32) -> None:
        self.db = db
        self.notifications = notifications
        self.url = url
        self.secret = secret
        self.timeout_seconds = timeout_seconds
        self.concurrency = concurrency  # deliveries in flight at most (LAURELS_WEBHOOK_CONCURRENCY)

    async def run(self, stop: asyncio.Event) -> None:
        workers = -(-self.concurrency // BATCH)
        await asyncio.gather(*(self._work(stop) for _ in range(workers)))

    def client(self) -> aiohttp.ClientSession:
        """A worker's HTTP client, its connections kept alive for its batches
        (aiohttp's: measured, httpx's pool cost most of the sender's time,
        looking at every connection it holds for every request)."""
        connector = aiohttp.TCPConnector(limit=BATCH, ttl_dns_cache=300)
        return aiohttp.ClientSession(
            connector=connector, trust_env=False,
            timeout=aiohttp.ClientTimeout(total=self.timeout_seconds))

    async def _work(self, stop: asyncio.Event) -> None:
        """One worker: its next batch as soon as the last one is answered."""
        cursor = Cursor()
        async with self.client() as http:
            while not stop.is_set():
                if not await self.deliver_due(http, cursor):
                    try:
                        await asyncio.wait_for(stop.wait(), IDLE_SECONDS)
                    except TimeoutError:
                        pass

    async def deliver_due(self, http: aiohttp.ClientSession, cursor: Cursor | None = None
                          ) -> int:
        """Send what is due now (a batch, side by side); how many were tried.
        The claim starts after `cursor` (the worker's last claim's end) and
        moves it; a short claim sends the next one from the start again, so
        a retry that came due behind the cursor is found on the next pass."""
        cursor = cursor or Cursor()
        limit = min(BATCH, self.concurrency)
        rows = await self.db.fetch("claim_deliveries", limit=limit,
                                   lease_seconds=self.timeout_seconds + LEASE_SLACK_SECONDS,
                                   after_at=cursor.due_at, after_id=cursor.id)
        cursor.moved(rows, limit)
        if rows:
            await failpoints.pause("webhook_claimed")
            await self._send(http, rows)
        return len(rows)

    async def _read(self, tx: Tx, ids: list[Any]) -> Outgoing:
        rows = await self.db.fetch("leased_deliveries", tx, ids=ids)
        wanted = sorted({n for r in rows if (n := notification_of(r)) is not None})
        notes = await self.db.fetch("notifications_by_id", tx, ids=wanted) if wanted else []
        return Outgoing(rows, {n["id"]: n for n in notes})

    async def _send(self, http: aiohttp.ClientSession, claimed: list[Row]) -> None:
        """Send leased deliveries, in one transaction that holds, for every
        learner they concern, the shared side of that learner's erasure lock
        (docs/concurrency.md): an erasure either committed before (the rows
        and notifications read here are then deleted or scrubbed, and nothing
        of the learner goes out) or waits until these requests are answered.
        Bodies are built now, from the notifications and profiles as they
        are."""
        ids = [row["id"] for row in claimed]
        async with self.db.transaction() as tx:
            locked: set[int] = set()
            out = await self._read(tx, ids)
            while out.named() - locked:  # a refresh may name someone new: lock, read again
                locked |= out.named()
                await self.db.fetch("share_erasure_locks", tx, user_ids=sorted(locked))
                out = await self._read(tx, ids)
            names = await self.notifications.public_names(
                named_ids(n["data"] for n in out.notes.values()), tx)
            await failpoints.pause("webhook_locked")
            titles = await self.notifications.titles()
            bodies = [out.body(row, names, titles) for row in out.rows]
            errors = await asyncio.gather(*(self._post(http, r, b) for r, b in
                                            zip(out.rows, bodies, strict=True) if b is not None))
            sent, delivered = iter(errors), []
            for row, body in zip(out.rows, bodies, strict=True):
                if body is None:
                    await self.db.run("delivery_dropped", tx, id=row["id"], error=GONE)
                elif (error := next(sent)) is None:
                    delivered.append(row["id"])
                else:
                    await self._failed(tx, row, error)
            if delivered:
                await self.db.run("deliveries_done", tx, ids=delivered)

    async def _post(self, http: aiohttp.ClientSession, row: Row, body_json: WebhookEvent
                    ) -> str | None:
        """One attempt; None when delivered, else what went wrong."""
        body = orjson.dumps(body_json)
        now = int(time.time())
        event_id = str(row["id"])
        headers = {"Content-Type": "application/json", "Laurels-Event-Id": event_id,
                   "Laurels-Signature": signature(self.secret, now, body),
                   "User-Agent": "laurels-webhooks"}
        if standard := standard_signature(self.secret, event_id, now, body):
            headers |= {"webhook-id": event_id, "webhook-timestamp": str(now),
                        "webhook-signature": standard}
        started = time.perf_counter()
        error: str | None
        try:
            async with http.post(self.url, data=body, headers=headers,
                                 allow_redirects=False) as resp:
                await _skim(resp)
                error = None if 200 <= resp.status < 300 else f"HTTP {resp.status}"
        except TimeoutError:
            error = f"no answer within {self.timeout_seconds:g} s"
        except (aiohttp.ClientError, ValueError) as exc:
            # What went wrong, without the URL (it may carry a receiver's secret).
            detail = str(exc).replace(self.url, "<webhook URL>")
            error = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        WEBHOOK_ATTEMPT_SECONDS.observe(time.perf_counter() - started)
        WEBHOOK_ATTEMPTS.labels("delivered" if error is None else "failed").inc()
        return error

    async def _failed(self, tx: Tx, row: Row, error: str) -> None:
        delay = backoff(int(row["attempts"]))
        out = await self.db.fetch_one("delivery_failed_attempt", tx, id=row["id"],
                                      error=error, delay=delay)
        if out and out["status"] == "failed":
            log.warning("webhook %s (%s) failed for good after %s attempts: %s",
                        row["id"], row["type"], row["attempts"], error)
        else:
            log.info("webhook %s (%s) attempt %s failed: %s; next attempt in %.0f s",
                     row["id"], row["type"], row["attempts"], error, delay)

    async def measure(self) -> None:
        """The deliveries by status (laurels_webhook_deliveries)."""
        counts = {r["status"]: int(r["n"]) for r in await self.db.fetch("delivery_counts")}
        for status in ("pending", "delivered", "failed"):
            WEBHOOK_DELIVERIES.labels(status).set(counts.get(status, 0))


async def _skim(resp: aiohttp.ClientResponse) -> None:
    """Read at most ANSWER_READ_MAX bytes of a receiver's answer (only its
    status counts): a short one to its end, so the connection is kept; a
    longer one is left unread, and its connection closed with it (a
    receiver answering 400 MB once took the sender from 203 MB to 1,373)."""
    got = 0
    while got <= ANSWER_READ_MAX:
        chunk = await resp.content.read(ANSWER_READ_MAX + 1 - got)
        if not chunk:
            return
        got += len(chunk)


class Deliveries:
    """The deliveries as an operator sees them (the admin listing and retry),
    and the deployment's webhook settings: built in every process, with or
    without LAURELS_WEBHOOK_URL, so the listing works without one."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    holds = "erasure"  # an erasure (erasure.Forgets), before the league locks

    async def hold(self, tx: Tx, user_id: int) -> None:
        """The learner's erasure lock: deliveries in flight that concern them
        are sent first (Webhooks._send); none goes out unscrubbed after."""
        await self.db.fetch("erase_lock", tx, user_id=user_id)

    async def forget(self, tx: Tx, user_id: int) -> list[str]:
        """Their events (sent or not) go, and others' stop naming them."""
        await self.db.run("delete_deliveries_of", tx, user_id=user_id)
        await self.db.run("scrub_deliveries_about", tx, user_id=str(user_id))
        return []

    async def store_settings(self) -> None:
        """This deployment's webhook settings, for every writer (`store_settings`)."""
        await store_settings(self.db, self.settings)

    async def page(self, status: str | None, limit: int, after: tuple[Any, str] | None
                   ) -> tuple[shapes.Deliveries, tuple[Any, str] | None]:
        """The deliveries, newest first, `limit` after a (created_at, id) position."""
        rows = await self.db.fetch("list_deliveries", status=status, limit=limit + 1,
                                   after_at=after[0] if after else None,
                                   after_id=after[1] if after else None)
        shown = rows[:limit]
        body: shapes.Deliveries = {"deliveries": [
            {"id": str(r["id"]), "type": r["type"], "status": r["status"],
             "attempts": r["attempts"], "last_error": r["last_error"], "errors": r["errors"],
             "next_attempt_at": iso(r["next_attempt_at"]) if r["status"] == "pending"
             else None}
            for r in shown], "next": None}
        last = shown[-1] if len(rows) > limit else None
        return body, ((last["created_at"], str(last["id"])) if last else None)

    async def retry(self, delivery_id: str) -> bool:
        """Send a delivery again at once (a failed one gets another 24 hours);
        False if there is no such delivery."""
        return await self.db.fetch_one("retry_delivery", id=delivery_id) is not None
