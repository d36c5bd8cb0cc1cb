"""Issue 39, at the HTTP edge: what one client, with no token or a learner
token, can no longer do (docs/security.md)."""

from __future__ import annotations

from tests.api.conftest import ApiFactory
from tests.helpers import ADMIN, INGEST, assert_problem, completion, token_for


async def test_metrics_need_the_admin_or_the_metrics_token(serve: ApiFactory) -> None:
    api = await serve(metrics_token="scraper-token")
    assert_problem(await api.get("/metrics"), 401, "unauthorized")
    assert_problem(await api.client(INGEST).get("/metrics"), 403, "forbidden")
    assert_problem(await api.client(token_for(api.env, 1)).get("/metrics"), 403, "forbidden")
    assert_problem(await api.client("nonsense").get("/metrics"), 401, "unauthorized")
    for token in (ADMIN, "scraper-token"):
        resp = await api.client(token).get("/metrics")
        assert resp.status_code == 200 and "# TYPE laurels_" in resp.text


async def test_no_metric_tells_an_erasure_from_turning_hidden(serve: ApiFactory) -> None:
    """An erasure leaves the public board as a learner turning hidden does:
    no series counts erasures, and the erasure's own request is timed
    nowhere (its method and route would say what it was), while the
    visibility change's is."""
    api = await serve()
    c, admin = api.client(INGEST), api.client(ADMIN)
    for uid in (1, 2, 3):
        await c.post("/v1/completions", json=completion(f"m{uid}", uid, uid))
    await c.put("/v1/users/1", json={"visibility": "hidden"})
    assert (await admin.delete("/v1/users/2")).status_code == 204
    # the platform sends a completion of the erased learner: refused, and the
    # refusal counted under no code that names an erasure
    resp = await c.post("/v1/completions", json=completion("m2b", 2, 1))
    assert resp.status_code == 410
    text = (await admin.get("/metrics")).text
    assert 'laurels_completions_total{outcome="rejected"}' in text
    # No series is about erasures. (A label may name the background loop that
    # finishes them, `loop="erasures"`, in every process, whatever happened.)
    names = {line.split("{")[0].split(" ")[0] for line in text.splitlines()
             if line and not line.startswith("#")}
    assert names and not [n for n in names if "eras" in n.lower()]
    assert not [line for line in text.splitlines()
                if "eras" in line.lower() and 'loop="erasures"' not in line]
    requests = [line for line in text.splitlines()
                if line.startswith("laurels_http_request_duration_seconds_count")]
    assert any('method="PUT",route="/v1/users/{user_id}"' in r for r in requests)
    assert not any('method="DELETE",route="/v1/users/{user_id}"' in r for r in requests)


# -- bodies: depth and size ------------------------------------------------------------


def nested(depth: int, pad: int = 0) -> bytes:
    """A JSON object `depth` levels deep (arrays inside), padded to `pad` bytes."""
    inner = b'"' + b"x" * max(0, pad - 2 * depth - 40) + b'"'
    return b'{"user_ids": ' + b"[" * (depth - 1) + inner + b"]" * (depth - 1) + b"}"


async def test_a_body_nested_deeper_than_32_levels_is_refused(serve: ApiFactory) -> None:
    api = await serve()
    c = api.client(INGEST)
    headers = {"content-type": "application/json"}
    for path, method in (("/v1/completions", "POST"), ("/v1/completions/batch", "POST"),
                         ("/v1/groups/g/members", "POST"), ("/v1/users/1", "PUT")):
        for depth in (33, 1000):
            resp = await c.request(method, path, content=nested(depth), headers=headers)
            problem = assert_problem(resp, 422, "validation_error")
            assert "deeper than 32 levels" in problem["detail"], (path, depth)
        resp = await c.request(method, path, content=nested(32), headers=headers)
        assert "deeper" not in resp.text, path
    # Past orjson's own limit (1,024), the same answer.
    resp = await c.post("/v1/completions", content=nested(5000), headers=headers)
    assert "deeper than 32 levels" in assert_problem(resp, 422, "validation_error")["detail"]


def test_a_deep_body_costs_what_a_flat_one_of_its_size_does() -> None:
    """1 MiB nested 1,000 deep took the duplicate-key check's slow path:
    about 0.2 s of the event loop (a flat 1 MiB: 0.036 s). Now it is
    refused from orjson's value. A bound, not a benchmark: the best of five
    runs of each, the deep one within twice the flat one and 10 ms."""
    import time

    from laurels.api.bodies import MAX_BODY_BYTES, parse_json
    from laurels.api.problems import Problem

    deep = nested(1000, MAX_BODY_BYTES - 100)
    flat = b'{"user_ids": [' + b",".join([b'"abcdefgh"'] * (MAX_BODY_BYTES // 12)) + b"]}"
    assert abs(len(deep) - len(flat)) < MAX_BODY_BYTES // 10

    def cost(body: bytes) -> float:
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            try:
                parse_json(body)
            except Problem:
                pass
            best = min(best, time.perf_counter() - start)
        return best

    assert cost(deep) <= 2 * cost(flat) + 0.010


async def test_small_bodies_are_refused_over_64_kib(serve: ApiFactory) -> None:
    """Bodies whose largest valid form is small are refused over 64 KiB
    (the friends board's largest is about 20 KB); member lists and batches
    keep their 1 MiB."""
    api = await serve()
    c, admin = api.client(INGEST), api.client(ADMIN)
    await c.post("/v1/completions", json=completion("s1", 1, 1))
    big = {"user_ids": list(range(1, 9000)), "pad": "x" * 30_000}
    assert len(str(big)) > 64 * 1024
    refused = [
        await c.post("/v1/leaderboards/current/ranks", json=big),
        await c.put("/v1/users/1", json={"display_name": "A", "pad": "x" * 70_000}),
        await c.put("/v1/groups/g", json={"name": "G", "pad": "x" * 70_000}),
        await admin.post("/v1/admin/completions/s1/void",
                         json={"reason": "r", "pad": "x" * 70_000}),
        await api.client(token_for(api.env, 1)).post(
            "/v1/users/1/notifications/read", json={"ids": [1], "pad": "x" * 70_000}),
    ]
    for resp in refused:
        assert "64 KiB" in assert_problem(resp, 413, "payload_too_large")["detail"]
    await c.put("/v1/groups/g", json={"name": "G"})
    members = await c.post("/v1/groups/g/members",
                           json={"add": list(range(1, 10_001))})
    assert members.status_code == 200, members.text


# -- streams: a cap per client -------------------------------------------------------------


async def test_one_client_holds_at_most_its_share_of_streams(serve: ApiFactory) -> None:
    """One address opens its 16 streams (of every kind); the 17th is 429
    with Retry-After, while another client still gets one; closing one
    frees a place."""
    import asyncio

    from laurels.api.clients import client_of
    from laurels.api.streams import board_stream, notification_stream, stream_budget
    from laurels.core.seasons import parse_season

    api = await serve(max_streams_per_client=16)
    svc = api.runtime
    current = parse_season("current", zone="UTC")
    held = [stream_budget(svc, "198.51.100.7") for _ in range(15)]
    assert notification_stream(svc, 1, "198.51.100.7") is not None  # the 16th, of a kind
    from laurels.api.problems import Problem

    try:
        board_stream(svc, current, "198.51.100.7")
        raise AssertionError("a 17th stream was opened")
    except Problem as exc:
        assert exc.code == "rate_limited" and exc.retry_after == 5
        assert "LAURELS_MAX_STREAMS_PER_CLIENT" in exc.detail
    board_stream(svc, current, "203.0.113.9")  # another client: served
    held.pop()()  # one closes
    board_stream(svc, current, "198.51.100.7")
    await asyncio.sleep(0)
    scope = {"client": ("10.0.0.2", 5555), "headers": [(b"x-forwarded-for",
                                                        b"1.2.3.4, 198.51.100.7")]}
    assert client_of(scope, ()) == "10.0.0.2"  # a forwarded header from anyone: ignored
