"""Challenges in a real browser (issue 67; CONTRACT.md, "Challenges: boards
with a start and an end"): on the live page a learner sees an upcoming
challenge count down, joins it, watches its board move while it runs, and
reads their result and reward once it is decided; `<laurels-board
view="challenge">` shows a challenge's board on another origin, live, then
decided. At a phone's width and a desktop's.

The server's challenge clock is real time in a subprocess: every window is
set from now (a start seconds away, an end seconds later), and the
decision is the server's own (its `challenges` loop runs every second and
decides a challenge once its end, plus its grace, has passed).
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.acceptance.test_browser import CHROMIUM, FLAGS, host_page
from tests.helpers import ADMIN, INGEST, completion, free_port, token_for

pytestmark = [pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)"),
    pytest.mark.once, pytest.mark.slow]

WIDTHS = pytest.mark.parametrize("width", [390, 1280], ids=["phone", "desktop"])
NAMES = {1: "Ada L.", 2: "Alan T.", 3: "Grace H."}
REWARDS = [{"from": 1, "to": 1, "reward": "gold"}, {"from": 2, "to": 3, "reward": "silver"}]


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def define(server: Any, cid: str, starts: datetime, ends: datetime, **body: Any) -> None:
    resp = server.client(ADMIN).put(f"/v1/admin/challenges/{cid}", json={
        "title": cid.capitalize(), "starts_at": iso(starts), "ends_at": iso(ends), **body})
    assert resp.status_code == 201, resp.text


def learners(server: Any) -> Any:
    c = server.client(INGEST)
    for uid, name in NAMES.items():
        assert c.put(f"/v1/users/{uid}", json={"display_name": name}).status_code == 200
    return c


def fits(page: Any, width: int) -> None:
    """Nothing wider than the screen: no sideways scrolling."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def upcoming_then_joined(page: Any, server: Any, token: str, width: int) -> None:
    """Before its start: a countdown that ticks, the rewards, Join; then joined."""
    from playwright.sync_api import expect

    cards = page.locator("#challenge-list li")
    expect(cards).to_have_count(2)
    card = page.locator('#challenge-list li[data-challenge-id="sprint"]')
    later = page.locator('#challenge-list li[data-challenge-id="later"]')
    expect(card.locator(".badge")).to_have_text("upcoming")
    expect(card.locator(".countdown")).to_contain_text(re.compile(r"Starts in 00:00:0\d"))
    expect(later.locator(".countdown")).to_contain_text("Starts in 1d 0")
    expect(later.get_by_role("button", name=re.compile("^Join"))).to_have_count(0)
    expect(card).to_contain_text("Rewards: 1st: gold · 2nd\u20133rd: silver")
    expect(card.locator(".meta")).to_contain_text("1 of 10 taking part")
    fits(page, width)
    if width >= 1280:  # side by side on a desktop, one under the other on a phone
        boxes = [cards.nth(i).bounding_box() for i in range(2)]
        assert boxes[0] and boxes[1] and boxes[0]["y"] == boxes[1]["y"], boxes
    card.get_by_role("button", name="Join Sprint").click()
    expect(card.get_by_role("button", name=re.compile("^Join"))).to_have_count(0)
    expect(card.locator(".standing")).to_contain_text("You joined")
    expect(card.locator(".meta")).to_contain_text("2 of 10 taking part")
    mine = server.client(token).get("/v1/users/2/challenges").json()["challenges"]
    assert [(m["challenge_id"], m["joined_at"] is not None) for m in mine] == [("sprint", True)]
    card.get_by_role("button", name="Sprint: board").click()
    expect(page.locator("#challenge-empty")).to_contain_text("nothing counts before")


def running_live(page: Any, c: Any) -> None:
    """It starts (the page looks again when its countdown runs out); the
    board moves on its hints, no reload; the challenge notifies."""
    from playwright.sync_api import expect

    card = page.locator('#challenge-list li[data-challenge-id="sprint"]')
    expect(card.locator(".badge")).to_have_text("live", timeout=10_000)
    expect(card.locator(".countdown")).to_contain_text(re.compile(r"Ends in 00:00:0\d"))
    page.evaluate("window.__noReload = true")
    for cid, uid, points in (("s1", 1, 10), ("s2", 2, 30), ("s3", 3, 5)):
        assert c.post("/v1/completions", json=completion(cid, uid, points)).status_code == 201
    rows = page.locator("#challenge-board tbody tr")
    expect(rows).to_have_count(2, timeout=10_000)  # Grace did not join: not on it
    expect(rows.first).to_contain_text("Alan T. (you)")
    expect(rows.first.locator("td.would")).to_have_text("gold")  # if it ended now
    expect(page.locator("#challenge-board tr.me")).to_contain_text("Alan T.")
    # 30, not 37: his completion before the start does not count.
    expect(card.locator(".standing")).to_contain_text("You are 1st with 30 points")
    # Alan's top 10 on the challenge, named by its title.
    inbox = page.locator("#notifications")
    expect(inbox).to_contain_text("You entered the top 10 of the challenge Sprint",
                                  timeout=10_000)
    assert c.post("/v1/completions", json=completion("s4", 1, 50)).status_code == 201
    expect(rows.first).to_contain_text("Ada L.", timeout=10_000)
    expect(card.locator(".standing")).to_contain_text("You are 2nd with 30 points")
    expect(inbox).to_contain_text("Ada L. passed you in the challenge Sprint", timeout=10_000)
    assert page.evaluate("window.__noReload") is True


def decided(page: Any, width: int) -> None:
    """It ends and the server decides it: the result and the reward."""
    from playwright.sync_api import expect

    card = page.locator('#challenge-list li[data-challenge-id="sprint"]')
    rows = page.locator("#challenge-board tbody tr")
    expect(card.locator(".badge")).to_have_text("decided", timeout=20_000)
    expect(card.locator(".standing")).to_have_text("Final 2nd with 30 points · reward: silver")
    expect(card.locator(".countdown")).to_contain_text("decided")
    expect(rows.first.locator("td").nth(2)).to_have_text("gold")
    expect(rows.nth(1).locator("td").nth(2)).to_have_text("silver")
    expect(page.locator("#challenge-board td.would")).to_have_count(0)
    expect(page.locator("#challenge-legend")).to_contain_text("final standings")
    expect(page.locator("#notifications")).to_contain_text(
        "Sprint is over: you finished 2nd with 30 points; your reward: silver.")
    fits(page, width)


@WIDTHS
def test_a_learner_joins_a_challenge_and_reads_their_reward(serve: Any, width: int) -> None:
    from playwright.sync_api import sync_playwright

    server = serve()
    c = learners(server)
    now = datetime.now(UTC)
    # Another, open one a day away: counted down in days, no Join (nothing to join).
    define(server, "later", now + timedelta(days=1, hours=2), now + timedelta(days=3))
    starts = now + timedelta(seconds=5)
    define(server, "sprint", starts, starts + timedelta(seconds=6), join="required",
           max_size=10, rewards=REWARDS, notify=True)
    # Before its start: on the week's board, not on the challenge.
    assert c.post("/v1/completions", json=completion("early", 2, 7)).status_code == 201
    # Ada joins through the platform (the ingest token); Alan, on the page.
    assert c.post("/v1/challenges/sprint/join", json={"user_id": 1}).status_code == 200
    token = token_for(server.env, 2)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{server.url}/#token={token}")
            upcoming_then_joined(page, server, token, width)
            running_live(page, c)
            decided(page, width)
            assert errors == []
        finally:
            browser.close()


@WIDTHS
def test_the_embedded_challenge_board(serve: Any, width: int) -> None:
    """`<laurels-board view="challenge" challenge="...">` on a platform's
    page (another origin, a strict CSP): the challenge's title and
    countdown, its board with what each rank would earn, the learner's own
    row, live; then decided, each entry with its reward. A challenge the
    server does not have says so."""
    from playwright.sync_api import expect, sync_playwright

    host_port = free_port()
    server = serve(LAURELS_CORS_ORIGINS=f"http://127.0.0.1:{host_port}")
    c = learners(server)
    now = datetime.now(UTC)
    # Started an hour ago (a start may be past at creation; its end may not).
    define(server, "duel", now - timedelta(hours=1), now + timedelta(seconds=5),
           rewards=REWARDS, metric="completions")
    for cid, uid in (("d1", 1), ("d2", 1), ("d3", 2), ("d4", 3), ("d5", 3), ("d6", 3)):
        assert c.post("/v1/completions", json=completion(cid, uid, 1)).status_code == 201
    token = token_for(server.env, 2)
    html = (f'<!doctype html><title>platform</title>'
            f'<laurels-board id="duel" view="challenge" challenge="duel" limit="2" '
            f'token="{token}"></laurels-board>'
            f'<laurels-board id="nosuch" view="challenge" challenge="nosuch"></laurels-board>'
            f'<script src="{server.url}/embed.js" defer></script>')
    csp = (f"default-src 'none'; script-src {server.url}; connect-src {server.url}; "
           "style-src 'self'; base-uri 'none'")
    with host_page(host_port, html, csp) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(url)
            board = page.locator("#duel")
            rows = page.locator("#duel tbody tr")
            expect(rows).to_have_count(3)  # the top 2, then the learner's own row
            expect(page.locator("#duel caption")).to_contain_text(
                re.compile(r"^Duel · ends in 00:00:0\d"))
            expect(page.locator("#duel thead th")).to_have_text(
                ["#", "Learner", "Reward", "Completions"])
            expect(rows.first).to_contain_text("Grace H.")
            expect(rows.first.locator("td.would")).to_have_text("gold")
            expect(page.locator("#duel tr.me")).to_contain_text("Alan T.")
            expect(page.locator("#duel tr.me td.would")).to_have_text("silver")
            expect(page.locator("#nosuch p.note")).to_contain_text("no such challenge")
            # Live: Alan climbs to the top.
            for cid in ("d7", "d8", "d9"):
                assert c.post("/v1/completions", json=completion(cid, 2, 1)).status_code == 201
            expect(rows.first).to_contain_text("Alan T.", timeout=10_000)
            expect(rows).to_have_count(2)  # now among the top 2
            # Decided by the server once it ends: rewards, no longer "would".
            expect(board).to_have_attribute("data-status", "decided", timeout=20_000)
            expect(page.locator("#duel caption")).to_contain_text("ended, decided")
            expect(page.locator("#duel td.reward:not(.would)")).to_have_text(["gold", "silver"])
            expect(page.locator("#duel p.note")).to_have_text("The final standings.")
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            # The missing challenge's 404 is the only error the console shows.
            assert [e for e in errors if not re.search(r"status of 404", e)] == []
        finally:
            browser.close()
