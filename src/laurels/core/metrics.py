"""Prometheus metrics of the service (exposed at /metrics)."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# Only the samples that mean something: no `<counter>_created` timestamps
# next to every `<counter>_total`.
disable_created_metrics()  # type: ignore[no-untyped-call]

COMPLETIONS = Counter("laurels_completions_total", "Completions received, by outcome "
                      "(recorded, duplicate or rejected; rejections are not split by error "
                      "code)", ["outcome"])
APPLY_LAG = Histogram("laurels_apply_lag_seconds",
                      "From commit in PostgreSQL to applied in Redis", ["path"],
                      buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
                               5, 10, 30, 60))
OUTBOX_DEPTH = Gauge("laurels_outbox_depth", "Completions committed but not yet applied")
OUTBOX_AGE = Gauge("laurels_outbox_oldest_seconds", "Age of the oldest outbox row")
LOOP_UP = Gauge("laurels_loop_up", "1 while a background loop runs, 0 while it is down",
                ["loop"])
LOOP_RESTARTS = Counter("laurels_loop_restarts_total",
                        "Background loop restarts after a crash or an outage", ["loop"])
POOL_WAIT = Histogram("laurels_pool_wait_seconds",
                      "Time spent waiting for a pooled connection, by store", ["store"],
                      buckets=(0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
                               5, 10))
CONNECTIONS_CLOSED = Counter("laurels_connections_closed_total",
                             "Connections the server closed itself, by reason (over_limit, "
                             "header_timeout, slow_body, header_limit)", ["reason"])
STREAMS_REFUSED = Counter("laurels_streams_refused_total",
                          "Event streams answered 503: the process's stream budget was full")
REQUESTS = Histogram("laurels_http_request_duration_seconds",
                     "Time to the start of the response, by route", ["method", "route", "status"])


SEASONS_FINALIZED = Counter("laurels_seasons_finalized_total", "Seasons finalized and archived")
# No count of erasures: beside the boards' totals it would tell a learner's
# erasure from their turning hidden (both leave the public board). For the
# same reason COMPLETIONS does not split rejections by code (user_erased).
SSE_CONNECTIONS = Gauge("laurels_sse_connections", "Open server-sent event connections",
                        ["stream"])
HINTS_RECEIVED = Counter("laurels_hints_received_total", "Hints received from Pub/Sub")
HINTS_COALESCED = Counter("laurels_hints_coalesced_total",
                          "Hints merged into a pending one for a client (not sent alone)")
HINTS_SENT = Counter("laurels_hints_sent_total", "changed/rebuilt events sent to clients")
NOTIFICATIONS_WRITTEN = Counter("laurels_notifications_written_total",
                                "Durable notifications written", ["kind"])
NOTIFICATIONS_DROPPED = Counter("laurels_notifications_dropped_total",
                                "Live notification pushes dropped for a slow client")
WEBHOOK_DELIVERIES = Gauge("laurels_webhook_deliveries",
                           "Webhook deliveries in PostgreSQL by status", ["status"])
WEBHOOK_ATTEMPTS = Counter("laurels_webhook_attempts_total",
                           "Webhook delivery attempts by result", ["result"])
WEBHOOK_ATTEMPT_SECONDS = Histogram("laurels_webhook_attempt_seconds",
                                    "Time of one webhook delivery attempt")

# An erasure leaves the public board as a learner turning hidden does: no
# series may count it (the audit log, an operator's, does), so its request
# is timed nowhere.
UNCOUNTED = ("DELETE", "/v1/users/{user_id}")


class RequestMetrics:
    """Pure ASGI middleware: latency to the response start (streams stay open)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()

        async def timed_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                path = getattr(scope.get("route"), "path", "unmatched")
                if (scope["method"], path) != UNCOUNTED:
                    REQUESTS.labels(scope["method"], path, str(message["status"])).observe(
                        time.perf_counter() - start)
            await send(message)

        await self.app(scope, receive, timed_send)
