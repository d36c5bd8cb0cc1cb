"""Signed webhooks, delivered at least once (docs/webhooks.md).

Events are written to `webhook_deliveries` in the transaction of what causes
them (migration 008: a notification, a finalize, a void or restore, an
erasure), so none is lost and none is sent for something rolled back. This
loop sends them to `LAURELS_WEBHOOK_URL`:

- it leases due deliveries (`claim_deliveries`: the lease is the next
  attempt time, the timeout plus a few seconds, so a process killed
  mid-delivery leaves them to be sent again: at least once, a receiver
  deduplicates by `id`);
- POSTs each body with `Laurels-Event-Id` and `Laurels-Signature:
  t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, a 10 s timeout,
  no redirects followed (the target comes from configuration only);
- a 2xx delivers it; anything else is retried with exponential backoff and
  jitter for 24 hours (across restarts: the schedule is in PostgreSQL), then
  it is `failed`, until an operator retries it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import random
import time
from typing import Any

import httpx
import orjson

from laurels import failpoints
from laurels.db import Conn, Database, Row
from laurels.metrics import WEBHOOK_ATTEMPT_SECONDS, WEBHOOK_ATTEMPTS, WEBHOOK_DELIVERIES
from laurels.notifications import Notifications, named_ids, with_names
from laurels.reads import iso

log = logging.getLogger("laurels.webhooks")

LEASE_SLACK_SECONDS = 5.0  # a lease outlives an attempt's timeout by this much
BATCH = 20
IDLE_SECONDS = 0.5
MAX_DELAY_SECONDS = 3600.0


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The `Laurels-Signature` header of a body sent at `timestamp`."""
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def backoff(attempts: int) -> float:
    """Seconds before the next attempt after `attempts` ones: 1, 2, 4, ...
    up to an hour, with jitter."""
    base = min(MAX_DELAY_SECONDS, 2.0 ** (attempts - 1))
    return base / 2 + random.uniform(0, base / 2)  # noqa: S311 (jitter, not secrecy)


def named_in(row: Row) -> list[int]:
    """The learners a delivery concerns: its owner, and for a notification
    the learner it names (who passed them)."""
    out = [row["user_id"]] if row["user_id"] is not None else []
    if row["type"] == "notification.created":
        out += named_ids([row["body"]["data"]["data"]])
    return out


def rendered(row: Row, names: dict[int, str]) -> dict[str, Any]:
    """The body sent: a notification names another learner as they are now
    (notifications.py); every other body as it was written."""
    body: dict[str, Any] = row["body"]
    if row["type"] != "notification.created":
        return body
    note = body["data"]
    return {**body, "data": {**note, "data": with_names(note["kind"], note["data"], names)}}


class Webhooks:
    def __init__(self, db: Database, notifications: Notifications, url: str, secret: str,
                 timeout_seconds: float = 10.0) -> None:
        self.db = db
        self.notifications = notifications
        self.url = url
        self.secret = secret
        self.timeout_seconds = timeout_seconds

    async def run(self, stop: asyncio.Event) -> None:
        async with httpx.AsyncClient(timeout=self.timeout_seconds, follow_redirects=False,
                                     trust_env=False) as http:
            while not stop.is_set():
                if not await self.deliver_due(http):
                    try:
                        await asyncio.wait_for(stop.wait(), IDLE_SECONDS)
                    except TimeoutError:
                        pass

    async def deliver_due(self, http: httpx.AsyncClient) -> int:
        """Send what is due now (a batch, side by side); how many were tried."""
        rows = await self.db.fetch("claim_deliveries", limit=BATCH,
                                   lease_seconds=self.timeout_seconds + LEASE_SLACK_SECONDS)
        if rows:
            await failpoints.pause("webhook_claimed")
            await self._send(http, rows)
        return len(rows)

    async def _send(self, http: httpx.AsyncClient, claimed: list[Row]) -> None:
        """Send leased deliveries, in one transaction that holds, for every
        learner they concern, the shared side of that learner's erasure lock
        (docs/concurrency.md): an erasure either committed before (the rows
        read here are then deleted or scrubbed, and nothing of the learner
        goes out) or waits until these requests are answered. Names are
        resolved now, from the profiles as they are."""
        async with self.db.transaction() as conn:
            await self.db.fetch("share_erasure_locks", conn, user_ids=sorted(
                {uid for row in claimed for uid in named_in(row)}))
            rows = await self.db.fetch("leased_deliveries", conn,
                                       ids=[row["id"] for row in claimed])
            names = await self.notifications.public_names(
                named_ids(r["body"]["data"]["data"] for r in rows
                          if r["type"] == "notification.created"), conn)
            await failpoints.pause("webhook_locked")
            errors = await asyncio.gather(*(self._post(http, r, rendered(r, names))
                                            for r in rows))
            for row, error in zip(rows, errors, strict=True):
                await self._record(conn, row, error)

    async def _post(self, http: httpx.AsyncClient, row: Row, body_json: dict[str, Any]
                    ) -> str | None:
        """One attempt; None when delivered, else what went wrong."""
        body = orjson.dumps(body_json)
        now = int(time.time())
        headers = {"Content-Type": "application/json", "Laurels-Event-Id": str(row["id"]),
                   "Laurels-Signature": signature(self.secret, now, body),
                   "User-Agent": "laurels-webhooks"}
        started = time.perf_counter()
        error: str | None
        try:
            resp = await http.post(self.url, content=body, headers=headers)
            error = None if 200 <= resp.status_code < 300 else f"HTTP {resp.status_code}"
        except httpx.TimeoutException:
            error = f"no answer within {self.timeout_seconds:g} s"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}"
        WEBHOOK_ATTEMPT_SECONDS.observe(time.perf_counter() - started)
        WEBHOOK_ATTEMPTS.labels("delivered" if error is None else "failed").inc()
        return error

    async def _record(self, conn: Conn, row: Row, error: str | None) -> None:
        if error is None:
            await self.db.run("delivery_done", conn, id=row["id"])
            return
        out = await self.db.fetch_one("delivery_failed_attempt", conn, id=row["id"],
                                      error=error, delay=backoff(int(row["attempts"])))
        if out and out["status"] == "failed":
            log.warning("webhook %s (%s) failed for good after %s attempts: %s",
                        row["id"], row["type"], row["attempts"], error)

    async def measure(self) -> None:
        """The deliveries by status (laurels_webhook_deliveries)."""
        counts = {r["status"]: int(r["n"]) for r in await self.db.fetch("delivery_counts")}
        for status in ("pending", "delivered", "failed"):
            WEBHOOK_DELIVERIES.labels(status).set(counts.get(status, 0))


async def deliveries_page(db: Database, status: str | None, limit: int,
                          after: tuple[Any, str] | None
                          ) -> tuple[dict[str, Any], tuple[Any, str] | None]:
    """The deliveries, newest first, `limit` after a (created_at, id) position."""
    rows = await db.fetch("list_deliveries", status=status, limit=limit + 1,
                          after_at=after[0] if after else None,
                          after_id=after[1] if after else None)
    shown = rows[:limit]
    body = {"deliveries": [
        {"id": str(r["id"]), "type": r["type"], "status": r["status"], "attempts": r["attempts"],
         "last_error": r["last_error"],
         "next_attempt_at": iso(r["next_attempt_at"]) if r["status"] == "pending" else None}
        for r in shown], "next": None}
    last = shown[-1] if len(rows) > limit else None
    return body, ((last["created_at"], str(last["id"])) if last else None)
