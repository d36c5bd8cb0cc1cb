"""The operator console (`GET /admin`; issue 44, CONTRACT.md "Operator
console") in headless Chromium: sign in with the admin token, find a
learner, void their week and see the board change, retry a failed
webhook delivery, run a rebuild and watch its progress, read the week's
leagues, the audit log and the health figures; a wrong token is refused,
and the token never reaches a URL, a cookie or a log line."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from laurels.core.seasons import season_of
from tests.acceptance.test_browser import CHROMIUM, DOCS_SCREENSHOT, FLAGS
from tests.helpers import ADMIN, INGEST, completion, wait_until

pytestmark = [pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)"),
    pytest.mark.once, pytest.mark.slow]


def given_up_delivery(database_url: str) -> str:
    """One webhook delivery (of the learners' top-10 notices) as one given
    up on after a day of a receiver that answered nothing: its id."""
    def one() -> Any:
        with psycopg.connect(database_url) as conn:
            return conn.execute("UPDATE webhook_deliveries SET status = 'failed',"
                                " last_error = 'connection refused', attempts = 12"
                                " WHERE id = (SELECT id FROM webhook_deliveries ORDER BY id"
                                " LIMIT 1) RETURNING id::text").fetchone()

    row = wait_until(one, 20, "a webhook delivery to give up on")
    return str(row[0])


def waiting_delivery(database_url: str, other: str) -> str:
    """Another delivery as one still waiting for its first attempt (as a
    notification's does for its coalescing window): its id, once a second
    delivery exists (the notifier writes some a moment after the first)."""

    def one() -> Any:
        with psycopg.connect(database_url) as conn:
            return conn.execute(
                "UPDATE webhook_deliveries SET status = 'pending', attempts = 0,"
                " last_error = NULL, next_attempt_at = now() + interval '1 hour'"
                " WHERE id = (SELECT id FROM webhook_deliveries WHERE id <> %s"
                " ORDER BY id LIMIT 1) RETURNING id::text", (other,)).fetchone()

    row = wait_until(one, 20, "a second webhook delivery")
    return str(row[0])


@contextlib.contextmanager
def console(server: Any) -> Iterator[Any]:
    """A Chromium page on the console, signed in with the admin token."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(f"{server.url}/admin")
            signs_in(page)
            yield page
        finally:
            browser.close()


def signs_in(page: Any) -> None:
    """A wrong token refused and nothing of it kept; the right one accepted."""
    from playwright.sync_api import expect

    # A wrong token is refused, and nothing of it is kept.
    page.get_by_label("Admin token").fill("not-the-admin-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signin-error")).to_contain_text("Refused")
    expect(page.locator("#console")).to_be_hidden()
    assert page.evaluate("sessionStorage.length") == 0
    page.get_by_label("Admin token").fill(ADMIN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#console")).to_be_visible()


def rebuilds_and_verifies(page: Any, week: str) -> None:
    from playwright.sync_api import expect

    # The boards: this week's, then a rebuild watched to its end.
    seasons = page.locator("#seasons tbody tr")
    expect(seasons.first).to_contain_text(week)
    seasons.first.get_by_role("button", name="Rebuild").click()
    progress = page.locator("#rebuild-progress")
    expect(progress).to_contain_text(f"Rebuild of {week}: succeeded, 4 events",
                                     timeout=15_000)
    seasons.first.get_by_role("button", name="Verify").click()
    expect(page.locator("#verify-result")).to_contain_text("consistent")
    # Any season of any board, by name: a past week of the whole board.
    page.locator("#any-season").fill("2025-W49")
    page.locator("#any-verify").click()
    expect(page.locator("#verify-result")).to_contain_text("2025-W49: consistent (0 learners")
    page.locator("#any-season").fill("2025-W99")
    page.locator("#any-verify").click()
    expect(page.locator("#problem")).to_contain_text("no ISO week 99")


def voids_a_cheaters_week(page: Any, c: Any, shots: Path) -> None:
    from playwright.sync_api import expect

    # A cheater: found, their week voided in one action (with a reason).
    page.get_by_role("button", name="Learner").click()
    page.locator("#user-id").fill("1")
    page.get_by_role("button", name="Find").click()
    expect(page.locator("#learner-summary")).to_contain_text("Ada L.")
    expect(page.locator("#completions tbody tr")).to_have_count(2)
    page.once("dialog", lambda d: d.accept("copied answers"))
    page.get_by_role("button", name="Void all of this season…").click()
    expect(page.locator("#completions tbody tr td.voided")).to_have_count(2)
    expect(page.locator("#learner-summary")).to_contain_text("not on the board")
    expect(page.locator("#signin")).to_be_hidden()
    expect(page.locator("#problem")).to_be_empty()
    page.screenshot(path=str(shots / "screenshot-console.png"), full_page=True)
    top = c.get("/v1/leaderboards/current").json()["entries"]
    assert [e["user_id"] for e in top] == [2, 3]  # the board changed
    # Erasing asks for a typed confirmation: a wrong one changes nothing.
    page.once("dialog", lambda d: d.accept("erase 2"))
    page.get_by_role("button", name="Erase…").click()
    expect(page.locator("#problem")).to_contain_text("did not match")


def retries_and_reads(page: Any, failed: str, waiting: str) -> None:
    from playwright.sync_api import expect

    # The failed delivery, listed first, retried.
    page.get_by_role("button", name="Webhooks").click()
    row = page.locator(f'#deliveries tr[data-id="{failed}"]')
    expect(page.locator("#deliveries tbody tr").first).to_contain_text("failed")
    expect(row).to_contain_text("connection refused")
    row.get_by_role("button", name="Retry").click()
    expect(row).to_contain_text("retrying")  # pending again, after failed attempts
    # Issue 65, point 10: one waiting for its first attempt (a notification's
    # coalescing window) is told apart from those failing.
    expect(page.locator(f'#deliveries tr[data-id="{waiting}"]')).to_contain_text("waiting")
    # Leagues, the audit log, health.
    page.get_by_role("button", name="Leagues").click()
    expect(page.locator("#tiers tbody tr").first).to_contain_text("bronze")
    page.locator("#cohorts tbody tr").first.get_by_role("button", name="Show").click()
    expect(page.locator("#cohort-board tbody tr")).to_have_count(2)  # 1 voided out
    # Board kinds: defined, listed, and deleted only once confirmed.
    page.get_by_role("button", name="Kinds", exact=True).click()
    page.locator("#kind-name").fill("course")
    page.locator("#kind-periods").fill("week,all")
    page.get_by_role("button", name="Define").click()
    kind = page.locator("#kind-list tbody tr")
    expect(kind).to_have_count(1)
    expect(kind).to_contain_text("week, all")
    page.once("dialog", lambda d: d.accept("delete course"))
    kind.get_by_role("button", name="Delete…").click()
    expect(kind).to_have_count(0)
    page.get_by_role("button", name="Audit").click()
    audit = page.locator("#audit-log tbody tr")
    expect(audit).to_have_count(4)  # kind_delete, kind_define, void, rebuild
    expect(audit.first).to_contain_text("kind_delete")
    expect(audit.nth(2)).to_contain_text("copied answers")
    page.get_by_role("button", name="Health").click()
    expect(page.locator("#health-figures")).to_contain_text("Outbox depth")
    expect(page.locator("#health-figures")).to_contain_text("Webhook deliveries")


@pytest.mark.parametrize("width", [390, 1280], ids=["phone", "desktop"])
def test_an_operators_afternoon_in_the_console(serve: Any, tmp_path: Path,
                                               width: int) -> None:
    from playwright.sync_api import sync_playwright

    refresh = os.environ.get("LAURELS_REFRESH_SCREENSHOT") == "1" and width == 1280
    shots = DOCS_SCREENSHOT.parent if refresh else tmp_path
    server = serve(LAURELS_LEAGUE_TIERS="bronze,silver", LAURELS_LEAGUE_SIZE="5",
                   LAURELS_LEAGUE_PROMOTE="1", LAURELS_LEAGUE_DEMOTE="1",
                   LAURELS_WEBHOOK_URL="http://127.0.0.1:9/hooks",
                   LAURELS_WEBHOOK_SECRET="a-webhook-secret-0123456789abcdef")
    c = server.client(INGEST)
    for uid, name in ((1, "Ada L."), (2, "Alan T."), (3, "Grace H.")):
        assert c.put(f"/v1/users/{uid}", json={"display_name": name}).status_code == 200
    resp = c.post("/v1/completions/batch", json={"completions": [
        completion("cheat-1", 1, 50), completion("cheat-2", 1, 40),
        completion("fair-2", 2, 20), completion("fair-3", 3, 10)]})
    assert resp.status_code == 200, resp.text
    week = season_of(datetime.now(UTC), "week", zone="UTC").name
    wait_until(lambda: c.get("/v1/leaderboards/current").json()["total"] == 3)
    failed = given_up_delivery(server.env["LAURELS_DATABASE_URL"])
    waiting = waiting_delivery(server.env["LAURELS_DATABASE_URL"], failed)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            context = browser.new_context(viewport={"width": width, "height": 900})
            page = context.new_page()
            errors: list[str] = []
            urls: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("request", lambda r: urls.append(r.url))
            page.goto(f"{server.url}/admin")
            signs_in(page)
            rebuilds_and_verifies(page, week)
            voids_a_cheaters_week(page, c, shots)
            retries_and_reads(page, failed, waiting)
            # The token was never in a URL, a cookie or the server's log.
            assert not [u for u in urls if ADMIN in u], urls
            assert context.cookies() == []
            assert ADMIN not in server.log.read_text()
            assert not [e for e in errors if not re.search(r"status of 4\d\d", e)], errors
            # Signing out forgets it.
            page.get_by_role("button", name="Sign out").click()
            assert page.evaluate("sessionStorage.length") == 0
        finally:
            browser.close()


def test_a_learners_boards_are_listed_and_one_is_voided_alone(serve: Any) -> None:
    """Issue 65, point 6: the console's learner view lists the learner's
    boards; on a board of a kind, "Void all of this season" voids that
    board's season, in its zone, and only the completions on it."""
    from playwright.sync_api import expect

    server = serve()
    c = server.client(INGEST)
    assert server.client(ADMIN).put("/v1/admin/board-kinds/course", json={
        "time_zone": "Asia/Tokyo"}).status_code == 201
    assert c.put("/v1/users/1", json={"display_name": "Ada L."}).status_code == 200
    resp = c.post("/v1/completions/batch", json={"completions": [
        {**completion("sql-1", 1, 50), "tags": ["course:sql"]},
        {**completion("sql-2", 1, 30), "tags": ["course:sql"]},
        completion("plain", 1, 5)]})
    assert resp.status_code == 200, resp.text
    wait_until(lambda: c.get("/v1/leaderboards/current").json()["total"] == 1)
    with console(server) as page:
        page.get_by_role("button", name="Learner").click()
        page.locator("#user-id").fill("1")
        page.get_by_role("button", name="Find").click()
        boards = page.locator("#learner-boards button")
        expect(boards).to_have_count(2, timeout=15_000)
        expect(boards.first).to_have_text("Whole board #1")
        page.locator("#learner-boards button[data-board='course:sql']").click()
        expect(page.locator("#learner-summary")).to_contain_text("the board course:sql")
        expect(page.locator("#completions tbody tr")).to_have_count(2)
        page.once("dialog", lambda d: d.accept("copied the course"))
        page.get_by_role("button", name="Void all of this season…").click()
        expect(page.locator("#completions tbody tr td.voided")).to_have_count(2)
        expect(page.locator("#problem")).to_be_empty()
    whole = c.get("/v1/leaderboards/current").json()["entries"]
    assert [(e["user_id"], e["score"]) for e in whole] == [(1, 5)]  # the plain one counts
    course = c.get("/v1/leaderboards/current", params={"board": "course:sql"}).json()
    assert course["total"] == 0


def test_the_boards_of_a_kind_are_listed_and_searched(serve: Any) -> None:
    """Issue 65, point 12: the Boards tab listed only the whole board (an
    operator had to know `course:python-101`). A kind's boards of this week
    are listed, searched by name, and each rebuilt or verified in place."""
    from playwright.sync_api import expect

    server = serve()
    c = server.client(INGEST)
    assert server.client(ADMIN).put("/v1/admin/board-kinds/course", json={
        "title": "Courses"}).status_code == 201
    resp = c.post("/v1/completions/batch", json={"completions": [
        {**completion(f"k{n}", n, 5), "tags": [f"course:{name}"]}
        for n, name in enumerate(["python-101", "python-201", "sql"], start=1)]})
    assert resp.status_code == 200, resp.text
    listed = server.client(ADMIN).get("/v1/admin/board-kinds/course/boards",
                                      params={"search": "PYTHON"}).json()
    assert [b["board"] for b in listed["boards"]] == ["course:python-101", "course:python-201"]
    with console(server) as page:
        expect(page.locator("#boards-kind option")).to_have_text(["Courses (course)"])
        page.locator("#boards-search").fill("python")
        page.locator("#kind-boards").get_by_role("button", name="Find").click()
        seasons = page.locator("#seasons tbody tr")
        expect(seasons).to_have_count(3, timeout=15_000)  # the whole board, two courses
        expect(seasons.nth(1)).to_contain_text("course:python-101")
        seasons.nth(2).get_by_role("button", name="Verify").click()
        expect(page.locator("#verify-result")).to_contain_text("consistent")
