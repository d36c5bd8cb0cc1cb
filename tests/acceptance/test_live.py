"""Hints over SSE and durable notifications, over HTTP against `laurels serve`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from laurels.core.seasons import season_of
from tests.acceptance.test_browser import CHROMIUM, browser_page
from tests.helpers import (
    ADMIN,
    ADMIN_AUTH,
    INGEST,
    Events,
    completion,
    free_port,
    laurels_bin,
    metric,
    token_for,
    wait_until,
)


def test_hints_are_hints_coalesced_and_rebuilt(serve: Any) -> None:
    server = serve()
    c = server.client(INGEST)
    c.put("/v1/users/2", json={"visibility": "anonymous"})
    stream = Events(f"{server.url}/v1/leaderboards/current/events")
    try:
        c.post("/v1/completions", json=completion("h1", 1, 5))
        first = wait_until(lambda: stream.named("changed"))
        assert first[0]["user_id"] == 1 and set(first[0]) == {"season", "user_id"}
        time.sleep(0.5)
        c.post("/v1/completions", json=completion("h2", 2, 5))
        wait_until(lambda: len(stream.named("changed")) >= 2)
        assert stream.named("changed")[1]["user_id"] is None  # anonymous: no id
        # A storm of 200 completions over ~2 s: at most 4 changed a second.
        start = time.monotonic()
        for i in range(0, 200, 20):
            c.post("/v1/completions/batch", json={"completions": [
                completion(f"storm{i + j}", 10 + j, 1) for j in range(20)]})
        posted = time.monotonic()
        # The hint of the storm's last completion has come once a changed
        # event arrives after the last post (a coalesced one is sent at the
        # end of its quarter second).
        wait_until(lambda: [t for e, _, t in stream.events if e == "changed" and t > posted])
        storm = [t for e, _, t in stream.events if e == "changed" and t >= start]
        seconds = max(1.0, time.monotonic() - start)
        assert 1 <= len(storm) <= 4 * seconds + 1
        assert any("user_id" not in d for d in stream.named("changed"))  # coalesced
        for data in stream.named("changed"):
            assert set(data) <= {"season", "user_id"}  # never a score
        season = first[0]["season"]
        resp = server.client(ADMIN).post(f"/v1/admin/leaderboards/{season}/rebuild")
        assert resp.status_code == 202
        wait_until(lambda: stream.named("rebuilt"))
    finally:
        stream.close()


@pytest.mark.slow
def test_comment_line_at_least_every_15_seconds(serve: Any) -> None:
    server = serve()
    stream = Events(f"{server.url}/v1/leaderboards/current/events")
    try:
        wait_until(lambda: stream.comments, seconds=17)
    finally:
        stream.close()


@pytest.mark.slow
def test_many_connections_opened_and_dropped_leak_nothing(serve: Any) -> None:
    server = serve()
    gauge = "laurels_sse_connections{"
    assert metric(server.url, gauge) == 0
    streams = [Events(f"{server.url}/v1/leaderboards/current/events") for _ in range(60)]
    assert wait_until(lambda: metric(server.url, gauge) == 60)
    proc = psutil.Process(server.process.pid)
    fds_open = proc.num_fds()
    for s in streams:
        s.close()
    # The server sees each disconnect (at the latest at its next write).
    server.client(INGEST).post("/v1/completions", json=completion("wake", 1, 1))
    assert wait_until(lambda: metric(server.url, gauge) == 0, seconds=40)
    assert proc.num_fds() < fds_open
    # And again: the count returns to zero every time.
    again = [Events(f"{server.url}/v1/leaderboards/current/events") for _ in range(20)]
    assert wait_until(lambda: metric(server.url, gauge) == 20)
    for s in again:
        s.close()
    server.client(INGEST).post("/v1/completions", json=completion("wake2", 1, 1))
    assert wait_until(lambda: metric(server.url, gauge) == 0, seconds=40)


def test_durable_notifications(serve: Any) -> None:
    server = serve()
    c = server.client(INGEST)
    c.put("/v1/users/3", json={"display_name": "Hal", "visibility": "hidden"})
    c.put("/v1/users/4", json={"display_name": "Ann", "visibility": "anonymous"})
    c.put("/v1/users/5", json={"display_name": "Pat"})
    for uid, pts in [(1, 50), (2, 40), (3, 1), (4, 1), (5, 1)]:
        c.post("/v1/completions", json=completion(f"n{uid}", uid, pts))
    t1 = token_for(server.env, 1)
    me = server.client(t1)
    live = Events(f"{server.url}/v1/users/1/notifications/events?access_token={t1}")
    try:
        first = wait_until(lambda: me.get("/v1/users/1/notifications").json()["notifications"])
        assert [n["kind"] for n in first] == ["top10"] and first[0]["data"]["rank"] == 1
        # Passed by an anonymous learner, then by a public one: ONE unread overtaken.
        c.post("/v1/completions", json=completion("a1", 4, 100))
        wait_until(lambda: any(n["kind"] == "overtaken" for n in
                               me.get("/v1/users/1/notifications").json()["notifications"]))
        c.post("/v1/completions", json=completion("p1", 5, 200))
        c.post("/v1/completions", json=completion("h1", 3, 500))  # hidden: passes nobody

        def overtaken() -> list[dict[str, Any]]:
            items = me.get("/v1/users/1/notifications").json()["notifications"]
            found = [n for n in items if n["kind"] == "overtaken"]
            return found if found and found[0]["data"]["by_display_name"] == "Pat" else []

        [note] = wait_until(overtaken)
        assert note["data"]["by_user_id"] == 5 and not note["read"]
        live_notes = wait_until(lambda: live.named("notification"))
        assert {n["kind"] for n in live_notes} <= {"overtaken", "top10"}
        body = json.dumps(me.get("/v1/users/1/notifications").json())
        assert "Hal" not in body and "Ann" not in body and '"by_user_id": 4' not in body
        # Replaying completions duplicates nothing.
        for cid, uid, pts in [("a1", 4, 100), ("p1", 5, 200), ("n1", 1, 50)]:
            assert c.post("/v1/completions", json=completion(cid, uid, pts)).status_code == 200
        # A fresh completion that passes learner 1 refreshes their unread
        # "overtaken" (rank events are consumed in order): once it shows, all
        # that came before it has been through the pipeline.
        assert c.post("/v1/completions", json=completion("late7", 7, 60)).status_code == 201
        wait_until(lambda: [n for n in me.get("/v1/users/1/notifications").json()[
            "notifications"] if n["kind"] == "overtaken" and n["data"]["by_user_id"] == 7])
        items = me.get("/v1/users/1/notifications").json()["notifications"]
        assert sorted(n["kind"] for n in items) == ["overtaken", "top10"]
        # Mark read; only the learner's own ids count.
        resp = me.post("/v1/users/1/notifications/read", json={"ids": [note["id"], 999999]})
        assert resp.status_code == 200 and resp.json() == {"read": [note["id"]]}
        assert all(n["read"] for n in me.get("/v1/users/1/notifications").json()["notifications"]
                   if n["id"] == note["id"])
        assert server.client(token_for(server.env, 2)).get(
            "/v1/users/1/notifications").status_code == 403
        bad = httpx.get(f"{server.url}/v1/users/1/notifications/events?access_token=nope")
        assert bad.status_code == 401
        assert httpx.get(f"{server.url}/v1/users/1/notifications?access_token={t1}"
                         ).status_code == 401  # only the events stream takes it
    finally:
        live.close()


def test_metrics_names(serve: Any) -> None:
    server = serve()
    server.client(INGEST).post("/v1/completions", json=completion("m1", 1, 1))
    text = httpx.get(f"{server.url}/metrics", headers=ADMIN_AUTH).text
    for name in ("laurels_completions_total", "laurels_apply_lag_seconds",
                 "laurels_outbox_depth", "laurels_sse_connections", "laurels_hints_received_total",
                 "laurels_hints_coalesced_total", "laurels_http_request_duration_seconds"):
        assert name in text, name
    assert re.search(r'laurels_completions_total\{outcome="recorded"\} 1\.0', text)


def demo_learner_is_active(base: str, token: str) -> None:
    """The learner the demo links to opens on every feature: a rank this
    week, a class, a cohort of a league (last week decided, so one tier up),
    the day, month and all-time boards; in a browser, the League tab."""
    import jwt

    uid = jwt.decode(token, options={"verify_signature": False})["sub"]
    me = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"})

    def with_company() -> dict[str, Any] | None:
        """The league once its cohort's board shows others (their completions
        reach the week's board in Redis a moment after they commit)."""
        resp = me.get(f"/v1/users/{uid}/league")
        league: dict[str, Any] = resp.json()
        placed = resp.status_code == 200 and league["status"] == "placed"
        return league if placed and len(league["entries"]) > 1 else None

    with me:
        wait_until(lambda: me.get(f"/v1/leaderboards/current/users/{uid}").status_code == 200,
                   30, "the demo learner's rank this week")
        assert me.get(f"/v1/users/{uid}/groups").json()["groups"]
        league = wait_until(with_company, 30, "the demo learner's cohort to show others")
        assert league["tier"] == "silver", league
        history = me.get(f"/v1/users/{uid}/league/history").json()["results"]
        assert history and history[0]["outcome"] == "promoted", history
    assert '<meta name="laurels-periods" content="week,day,month,all">' in httpx.get(base).text
    if shutil.which(CHROMIUM) is None:
        return
    from playwright.sync_api import expect

    with browser_page(f"{base}/#token={token}") as (page, errors):
        page.get_by_role("button", name="League").click()
        expect(page.locator("#league-tier")).to_have_text("Silver league")
        expect(page.locator("#league-board tr.me")).to_contain_text("(you)")
        expect(page.locator("#league-last")).to_contain_text("▲ promoted to Silver")
        assert errors == []


@contextlib.contextmanager
def running_demo(data_dir: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """`laurels demo` on its own data dir, its output on a pipe; killed on
    the way out if the test did not stop it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAURELS_")}
    env["LAURELS_DATA_DIR"] = str(data_dir)
    proc = subprocess.Popen([laurels_bin(), "demo", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()


def demo_link(proc: subprocess.Popen[str]) -> str:
    """The featured learner's link the demo prints once it is ready."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if "#token=" in line:
            return line.split(" at ", 1)[1].strip()
    raise AssertionError("the demo printed no link")


@pytest.mark.slow
def test_demo_runs_and_stops_cleanly(data_dir: Path) -> None:
    port = free_port()
    with running_demo(data_dir, "--port", str(port), "--learners", "60", "--rate",
                      "20") as proc:
        url = demo_link(proc)
        assert url.startswith(f"http://127.0.0.1:{port}/#token=")
        board = f"http://127.0.0.1:{port}/v1/leaderboards/current"

        def shaped() -> dict[str, Any] | None:
            resp = httpx.get(board)
            body: dict[str, Any] = resp.json()
            return body if resp.status_code == 200 and body["total"] > 10 else None

        first = wait_until(shaped, 30, "the demo's board to have a shape")
        assert first["entries"][0]["display_name"] != ""
        token = url.split("#token=", 1)[1]
        assert proc.stdout is not None  # issue 65: where the tokens are, and the console
        console = proc.stdout.readline()
        assert f"the operator console is at http://127.0.0.1:{port}/admin" in console, console
        assert str(data_dir / "demo" / "secrets.json") in console
        demo_learner_is_active(f"http://127.0.0.1:{port}", token)
        # Courses and tracks: the featured learner counts on boards of both kinds.
        import base64
        import json as json_mod
        claims = token.split(".")[1]
        who = json_mod.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["sub"]

        def kinds_of_boards() -> set[str] | None:
            resp = httpx.get(f"http://127.0.0.1:{port}/v1/users/{who}/boards",
                             headers={"Authorization": f"Bearer {token}"})
            found = {b["kind"] for b in resp.json()["boards"]} if resp.status_code == 200 else set()
            return found if {"global", "course", "track"} <= found else None

        wait_until(kinds_of_boards, 30, "the featured learner's courses and tracks")
        wait_until(lambda: httpx.get(board).json() != first)  # it keeps moving
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) in (0, 130)
    assert not [p for p in psutil.process_iter(["cmdline"])
                if p.info["cmdline"] and str(data_dir) in " ".join(p.info["cmdline"])]


@pytest.mark.slow
def test_demo_plays_past_weeks(data_dir: Path) -> None:
    """`laurels demo --weeks 3` (issue 44): three past weeks played oldest
    first, each closed (its archive written) and its leagues decided, so
    the featured learner, best of each, has climbed from bronze to gold
    and has three results in their history."""
    with running_demo(data_dir, "--port", str(free_port()), "--learners", "60", "--rate",
                      "5", "--weeks", "3") as proc:
        base, token = demo_link(proc).split("/#token=", 1)
        import base64
        import json as json_mod
        claims = token.split(".")[1]
        who = json_mod.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["sub"]
        auth = {"Authorization": f"Bearer {token}"}
        history = httpx.get(f"{base}/v1/users/{who}/league/history", headers=auth
                            ).json()["results"]
        now = datetime.now(UTC)
        weeks = [season_of(now - timedelta(days=7 * back), "week", zone="UTC").name
                 for back in (1, 2, 3)]
        assert [(r["season"], r["tier"], r["rank"]) for r in history] == [
            (weeks[0], "gold", 1), (weeks[1], "silver", 1), (weeks[2], "bronze", 1)], history
        assert httpx.get(f"{base}/v1/users/{who}/league", headers=auth).json()["tier"] == "gold"
        for week in weeks:  # each week's board; closed once its late grace (2 days) is over
            body = httpx.get(f"{base}/v1/leaderboards/{week}").json()
            assert body["total"] > 10 and body["entries"][0]["user_id"] == int(who), body
            over = datetime.fromisoformat(body["ends_at"]) + timedelta(days=2) <= now
            assert body["status"] == ("closed" if over else "open"), body
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) in (0, 130)


@pytest.mark.slow
def test_a_stuck_client_does_not_hold_up_the_others(serve: Any) -> None:
    import socket
    server = serve()
    host, port = server.url.removeprefix("http://").split(":")
    stuck = socket.create_connection((host, int(port)))
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.sendall(b"GET /v1/leaderboards/current/events HTTP/1.1\r\nHost: x\r\n\r\n")
    healthy = Events(f"{server.url}/v1/leaderboards/current/events")
    try:
        c = server.client(INGEST)
        for i in range(40):  # the stuck one never reads a byte
            c.post("/v1/completions", json=completion(f"k{i}", 1 + i % 5, 1))
            time.sleep(0.05)
        assert wait_until(lambda: len(healthy.named("changed")) >= 4)
        assert httpx.get(f"{server.url}/v1/leaderboards/current").status_code == 200
    finally:
        stuck.close()
        healthy.close()


def test_shutdown_with_open_streams_is_clean(serve: Any) -> None:
    """SIGTERM while SSE clients are connected: every stream ends cleanly, the
    process exits 0 and logs no error."""
    server = serve()
    streams = [Events(f"{server.url}/v1/leaderboards/current/events") for _ in range(5)]
    t1 = token_for(server.env, 1)
    streams.append(Events(f"{server.url}/v1/users/1/notifications/events?access_token={t1}"))
    server.stop()
    for s in streams:
        s.thread.join(15)
        assert not s.thread.is_alive(), "a stream outlived the server"
    assert server.process.returncode == 0
    log = server.log.read_text()
    assert "ERROR" not in log and "Traceback" not in log, log[-3000:]


def test_a_change_right_after_ready_is_hinted(serve: Any) -> None:
    """`ready` means every later change is hinted: a completion posted the
    moment it arrives (for a season nobody listened to before) gets its
    `changed`. On a cluster this needs the season's SSUBSCRIBE confirmed first."""
    server = serve(LAURELS_CLOSE_SEASONS="false")
    c = server.client(INGEST)
    for n, season_day in enumerate(["2026-11-17", "2026-11-10", "2026-11-03"]):
        season = {0: "2026-W47", 1: "2026-W46", 2: "2026-W45"}[n]
        assert c.post("/v1/completions", json=completion(
            f"seed{n}", 1, 1, f"{season_day}T10:00:00Z")).status_code == 201
        hints = Events(f"{server.url}/v1/leaderboards/{season}/events")
        try:
            assert c.post("/v1/completions", json=completion(
                f"now{n}", 2, 5, f"{season_day}T11:00:00Z")).status_code == 201
            assert wait_until(lambda h=hints: h.named("changed"), seconds=5), season
        finally:
            hints.close()


def test_a_group_board_streams_its_season_s_hints(serve: Any) -> None:
    """GET /v1/groups/{id}/leaderboards/{season}/events: `ready`, then a
    `changed` hint when a member scores; a members group's stream takes a
    member's token."""
    server = serve()
    c = server.client(INGEST)
    assert c.put("/v1/groups/team", json={}).status_code == 200
    assert c.post("/v1/groups/team/members", json={"add": [1, 2]}).status_code == 200
    token = token_for(server.env, 2)
    stream = Events(f"{server.url}/v1/groups/team/leaderboards/current/events",
                    {"Authorization": f"Bearer {token}"})
    try:
        assert stream.status == 200
        assert c.post("/v1/completions", json=completion("g1", 1, 5)).status_code == 201
        [hint] = wait_until(lambda: stream.named("changed"))
        assert hint["user_id"] == 1
        board = server.client(token).get("/v1/groups/team/leaderboards/current").json()
        assert [(e["rank"], e["user_id"], e["score"]) for e in board["entries"]] == [(1, 1, 5)]
        # Hints are routed by member: a learner in no group wakes no group stream.
        season = Events(f"{server.url}/v1/leaderboards/current/events")
        try:
            assert c.post("/v1/completions", json=completion("g3", 3, 5)).status_code == 201
            wait_until(lambda: any(h.get("user_id") == 3 for h in season.named("changed")))
            assert c.post("/v1/completions", json=completion("g2", 2, 5)).status_code == 201
            wait_until(lambda: any(h.get("user_id") == 2 for h in stream.named("changed")))
            assert [h.get("user_id") for h in stream.named("changed")] == [1, 2]
            # A membership change is a change of the group's board.
            assert c.post("/v1/groups/team/members", json={"add": [3]}).status_code == 200
            wait_until(lambda: len(stream.named("changed")) == 3)
            assert c.post("/v1/completions", json=completion("g3b", 3, 5)).status_code == 201
            wait_until(lambda: stream.named("changed")[-1].get("user_id") == 3)
        finally:
            season.close()
    finally:
        stream.close()


def test_a_challenge_streams_hints_naming_no_learner(serve: Any) -> None:
    """GET /v1/challenges/{id}/events: `ready` with the challenge's id, then
    `changed` carrying the challenge's id and nothing of who moved (a hint:
    the client refetches the challenge's board), and one when it is decided;
    an unknown challenge 404."""
    server = serve()
    now = datetime.now(UTC)
    admin, c = server.client(ADMIN), server.client(INGEST)
    assert admin.put("/v1/admin/challenges/live", json={
        "title": "Live", "starts_at": (now - timedelta(hours=1)).isoformat(),
        "ends_at": (now + timedelta(seconds=4)).isoformat()}).status_code == 201
    assert server.client().get("/v1/challenges/nope/events").status_code == 404
    stream = Events(f"{server.url}/v1/challenges/live/events")
    try:
        assert stream.named("ready") == [{"challenge_id": "live"}]
        assert c.post("/v1/completions", json=completion("ch1", 7, 5)).status_code == 201
        hints = wait_until(lambda: stream.named("changed"))
        assert hints[0] == {"challenge_id": "live"}
        board = server.client().get("/v1/challenges/live/leaderboard").json()
        assert [(e["user_id"], e["score"]) for e in board["entries"]] == [(7, 5)]
        # Decided by the server's `challenges` loop once it ends (nothing else
        # changes meanwhile): hinted too.
        before = len(stream.named("changed"))
        assert not server.client().get("/v1/challenges/live").json()["decided"]
        wait_until(lambda: len(stream.named("changed")) > before, seconds=20)
        assert server.client().get("/v1/challenges/live").json()["decided"]
        assert stream.named("changed")[-1] == {"challenge_id": "live"}
    finally:
        stream.close()
