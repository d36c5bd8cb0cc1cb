"""One handler per operation, and /openapi.json describes every one.

The fast lane (api/fast.py) serves the hottest operations without FastAPI's
per-request machinery; FastAPI's router holds the same handlers (for 405s
and redirects), never a twin of them. The OpenAPI document describes the
lane's operations from the lane's own table, and FastAPI's from its routes.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import Route

from laurels.api import fast
from tests.api.conftest import ApiFactory
from tests.helpers import INGEST, assert_problem, completion

pytestmark = pytest.mark.once

# Every endpoint of docs/contract.md that laurels serves.
CONTRACT = {
    ("POST", "/v1/completions"), ("POST", "/v1/completions/batch"),
    ("PUT", "/v1/users/{user_id}"), ("DELETE", "/v1/users/{user_id}"),
    ("GET", "/v1/leaderboards/{season}"), ("GET", "/v1/leaderboards/{season}/users/{user_id}"),
    ("POST", "/v1/leaderboards/{season}/ranks"),
    ("GET", "/v1/leaderboards/{season}/users/{user_id}/completions"),
    ("GET", "/v1/leaderboards/{season}/events"),
    ("GET", "/v1/users/{user_id}/notifications"),
    ("POST", "/v1/users/{user_id}/notifications/read"),
    ("GET", "/v1/users/{user_id}/notifications/events"),
    ("GET", "/"), ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"),
    ("PUT", "/v1/groups/{group_id}"), ("GET", "/v1/groups/{group_id}"),
    ("DELETE", "/v1/groups/{group_id}"), ("POST", "/v1/groups/{group_id}/members"),
    ("GET", "/v1/users/{user_id}/groups"), ("GET", "/v1/groups/{group_id}/leaderboards/{season}"),
    ("GET", "/v1/groups/{group_id}/leaderboards/{season}/users/{user_id}"),
    ("GET", "/v1/groups/{group_id}/leaderboards/{season}/events"),
    ("POST", "/v1/admin/completions/{completion_id}/void"),
    ("POST", "/v1/admin/completions/{completion_id}/restore"),
    ("POST", "/v1/admin/users/{user_id}/suspend"), ("POST", "/v1/admin/users/{user_id}/unsuspend"),
    ("GET", "/v1/admin/audit"), ("POST", "/v1/admin/leaderboards/{season}/rebuild"),
    ("GET", "/v1/admin/rebuilds/{rebuild_id}"), ("GET", "/v1/admin/leaderboards/{season}/verify"),
    ("GET", "/v1/admin/webhooks/deliveries"),
    ("POST", "/v1/admin/webhooks/deliveries/{delivery_id}/retry"),
    ("GET", "/v1/users/{user_id}/league"), ("GET", "/v1/leagues/{season}/cohorts/{cohort_id}"),
    ("GET", "/v1/leagues/{season}/cohorts/{cohort_id}/events"),
    ("GET", "/v1/users/{user_id}/league/history"), ("GET", "/v1/admin/leagues/{season}"),
}
Operation = tuple[str, str]  # (method, path)


def handlers(app: FastAPI) -> tuple[dict[Operation, list[Any]], set[Operation]]:
    """Every operation routed, with the handlers that serve it: FastAPI's
    routes (their endpoints; the lane's routes there, their operation's
    handler) and the fast lane's dispatch table; and those FastAPI's own
    routes (APIRoute) document."""
    out: dict[Operation, list[Any]] = defaultdict(list)
    documented: set[Operation] = set()
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            handler = route.endpoint
            if route.include_in_schema:
                documented |= {(m, route.path_format) for m in route.methods}
        elif isinstance(route, Route) and isinstance(route.endpoint, fast.Endpoint):
            handler = route.endpoint.operation.handler
        else:
            continue  # FastAPI's own: /openapi.json, /docs
        for method in route.methods or ():
            out[(method, route.path_format)].append(handler)
    lane = fast.FastLane(app, app.state)
    table = [*lane.exact.values(), *(op for ops in lane.patterns.values() for _, op in ops)]
    assert sorted(op.path for op in table) == sorted(op.path for op in fast.OPERATIONS)
    for op in table:
        out[(op.method, op.path)].append(op.handler)
    return out, documented


async def test_every_operation_has_one_handler_and_is_described(serve: ApiFactory) -> None:
    api = await serve()
    app = api.transport.app.app  # type: ignore[attr-defined]  # the FastAPI app behind the lane
    served, documented = handlers(app)
    paths = (await api.get("/openapi.json")).json()["paths"]
    described = {(method.upper(), path) for path, item in paths.items() for method in item}

    assert {op: hs for op, hs in served.items() if len(set(hs)) != 1} == {}
    assert described <= set(served)  # nothing described that nobody serves
    lane = {(op.method, op.path) for op in fast.OPERATIONS}
    assert described == documented | lane  # every documented route and lane operation
    assert documented.isdisjoint(lane)  # no FastAPI twin of a lane operation
    assert CONTRACT <= described, sorted(CONTRACT - described)
    for method, path in lane:  # described as the other operations are
        operation = paths[path][method.lower()]
        assert operation["description"] and operation["responses"], path


async def test_the_lane_serves_its_operations_and_the_router_knows_their_paths(
        serve: ApiFactory) -> None:
    """The lane answers its operations itself; a wrong method or a trailing
    slash on their paths gets what every other path gets (405, a redirect)."""
    api = await serve()
    c = api.client()
    assert (await c.get("/healthz")).json() == {"status": "ok"}
    refused = await c.delete("/healthz")
    assert (refused.status_code, refused.headers["allow"]) == (405, "GET")
    assert refused.json()["code"] == "method_not_allowed"
    head = await c.head("/v1/leaderboards/current")
    assert (head.status_code, head.headers["allow"]) == (405, "GET")
    assert (await c.get("/v1/completions")).headers["allow"] == "POST"
    moved = await c.get("/v1/leaderboards/current/")
    assert moved.status_code == 307
    assert moved.headers["location"].endswith("/v1/leaderboards/current")


async def test_errors_are_described_as_the_service_sends_them(serve: ApiFactory) -> None:
    """Every 4xx and 5xx response of /openapi.json is application/problem+json
    with the problem's schema, never application/json (issue 40)."""
    api = await serve()
    spec = (await api.get("/openapi.json")).json()
    errors = [(path, status, r) for path, item in spec["paths"].items()
              for op in item.values() for status, r in op.get("responses", {}).items()
              if status[:1] in ("4", "5")]
    assert len(errors) > 100
    for path, status, response in errors:
        assert list(response.get("content", {})) in ([], ["application/problem+json"]), (
            path, status, response)


async def test_too_far_in_the_future_says_the_limit(serve: ApiFactory) -> None:
    from datetime import UTC, datetime, timedelta

    api = await serve(max_future_skew_seconds=120)
    at = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    resp = await api.client(INGEST).post("/v1/completions", json=completion("f1", 1, 1, at))
    detail = assert_problem(resp, 422, "validation_error")["detail"]
    assert "120 s" in detail and "LAURELS_MAX_FUTURE_SKEW_SECONDS" in detail
