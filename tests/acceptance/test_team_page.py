"""Team boards in a real browser (CONTRACT.md, "Team boards" and "Rolling
windows"): on the live page a learner sees "your team" (each team of theirs
with its rank of the kind's teams, its score and what they add), moving on
the board's hints with no reload, and following the period switch onto a
rolling window; `<laurels-board view="teams">` shows a kind's teams on
another origin, live, a members-only team unnamed to whoever may not read
it. At a phone's width and a desktop's.

The seed: the team kind `classes` (sum) and three of its groups: 7A
(members-only: Ada and Alan), 7B (public: Grace and Edsger) and 7C (public:
Barbara).
"""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

from tests.acceptance.test_browser import CHROMIUM, FLAGS, host_page
from tests.helpers import ADMIN, INGEST, completion, free_port, token_for

pytestmark = [pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)"),
    pytest.mark.once, pytest.mark.slow]

WIDTHS = pytest.mark.parametrize("width", [390, 1280], ids=["phone", "desktop"])
NAMES = {1: "Ada L.", 2: "Alan T.", 3: "Grace H.", 4: "Edsger D.", 5: "Barbara L."}
GROUPS = {"7a": ("7A", "members", [1, 2]), "7b": ("7B", "public", [3, 4]),
          "7c": ("7C", "public", [5])}
POINTS = {1: 10, 2: 5, 3: 8, 4: 8, 5: 3}  # 7A 15, 7B 16, 7C 3


def seeded(server: Any) -> Any:
    """The kind, its three groups and their members' completions; the
    ingest client."""
    admin, c = server.client(ADMIN), server.client(INGEST)
    resp = admin.put("/v1/admin/team-kinds/classes", json={"title": "Classes"})
    assert resp.status_code == 201, resp.text
    for uid, name in NAMES.items():
        assert c.put(f"/v1/users/{uid}", json={"display_name": name}).status_code == 200
    for gid, (name, access, members) in GROUPS.items():
        resp = c.put(f"/v1/groups/{gid}", json={"name": name, "access": access,
                                                "team": "classes"})
        assert resp.status_code == 200 and resp.json()["team"] == "classes", resp.text
        resp = c.post(f"/v1/groups/{gid}/members", json={"add": members})
        assert resp.status_code == 200, resp.text
    for uid, points in POINTS.items():
        resp = c.post("/v1/completions", json=completion(f"s{uid}", uid, points))
        assert resp.status_code == 201, resp.text
    return c


def fits(page: Any, width: int) -> None:
    """Nothing wider than the screen: no sideways scrolling."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def top_of(card: Any) -> list[str]:
    """The kind's first teams in a card, a line each: "rank name score"."""
    return [" ".join(t.split()) for t in card.locator(".team-top li").all_inner_texts()]


def your_team(page: Any, width: int) -> None:
    """Alan's team: its rank of the three, its score, what he adds; the
    kind's first teams, his own (members-only, his) named and marked."""
    from playwright.sync_api import expect

    panel = page.locator("#your-teams")
    expect(panel).to_be_visible()
    expect(page.locator("#teams-title-text")).to_have_text("Your team")
    card = page.locator('#team-list > li[data-group-id="7a"]')
    expect(page.locator("#team-list > li")).to_have_count(1)
    expect(card.locator("h3")).to_have_text("7A Classes")
    expect(card.locator(".standing")).to_have_text("2nd of 3 · 15 points")
    expect(card.locator(".contribution")).to_have_text("You add 5 points.")
    expect(card.locator(".how")).to_have_text(
        "A team's score: the sum of its members' scores.")
    expect(card.locator(".team-top li")).to_have_count(3)
    assert top_of(card) == ["1 7B 16", "2 7A 15", "3 7C 3"]
    expect(card.locator(".team-top li.me")).to_have_text(re.compile(r"7A"))
    fits(page, width)


def moves_live(page: Any, c: Any) -> None:
    """Alan scores: his team passes 7B on the board's hint, no reload."""
    from playwright.sync_api import expect

    page.evaluate("window.__noReload = true")
    assert c.post("/v1/completions", json=completion("more", 2, 10)).status_code == 201
    card = page.locator('#team-list > li[data-group-id="7a"]')
    expect(card.locator(".standing")).to_have_text("1st of 3 · 25 points", timeout=10_000)
    expect(card.locator(".contribution")).to_have_text("You add 15 points.")
    assert top_of(card)[:2] == ["1 7A 25", "2 7B 16"]
    assert page.evaluate("window.__noReload") is True


def follows_the_window(page: Any, c: Any) -> None:
    """The period switch offers the rolling windows; on the last 7 days the
    board and "your team" read that season, which has no season before or
    after it."""
    from playwright.sync_api import expect

    period = page.get_by_label("period")
    expect(period.locator("option")).to_have_text(["This week", "Last 7 days", "Last 30 days"])
    period.select_option("7d")
    expect(page.locator("#season")).to_have_text("last-7d")
    expect(page.locator("#teams-season")).to_have_text("last-7d")
    expect(page.locator("#prev")).to_be_hidden()
    expect(page.locator("#next")).to_be_hidden()
    expect(page.locator("#range")).to_contain_text("moves at each midnight")
    assert "season=last-7d" in page.url
    card = page.locator('#team-list > li[data-group-id="7a"]')
    expect(card.locator(".standing")).to_have_text("1st of 3 · 25 points")
    # Live on the window too: Grace's 7B passes 7A again.
    assert c.post("/v1/completions", json=completion("grace", 3, 20)).status_code == 201
    expect(card.locator(".standing")).to_have_text("2nd of 3 · 25 points", timeout=10_000)
    period.select_option("week")
    expect(page.locator("#prev")).to_be_visible()
    expect(page.locator("#teams-season")).to_have_text(re.compile(r"^[0-9]{4}-W[0-9]{2}$"))


def another_learner(browser: Any, server: Any, width: int) -> None:
    """Barbara (7C) is not in 7A: on her page it is a private team, and her
    own, last, is listed after the first teams."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{server.url}/#token={token_for(server.env, 5)}")
    card = page.locator('#team-list > li[data-group-id="7c"]')
    expect(card.locator(".standing")).to_have_text("3rd of 3 · 3 points")
    expect(card.locator(".contribution")).to_have_text("You add 3 points.")
    expect(card.locator(".team-top .private")).to_have_text("Private team")
    expect(card.locator(".team-top li.me")).to_contain_text("7C")
    assert "7A" not in page.locator("#your-teams").inner_text()
    fits(page, width)
    assert errors == []
    page.close()


@WIDTHS
def test_a_learner_sees_their_team_rank_live(serve: Any, width: int) -> None:
    from playwright.sync_api import expect, sync_playwright

    server = serve(LAURELS_PERIODS="week,7d,30d")
    c = seeded(server)
    token = token_for(server.env, 2)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(f"{server.url}/#token={token}")
            your_team(page, width)
            moves_live(page, c)
            follows_the_window(page, c)
            # Signed out (no token): no "your team".
            page.goto(f"{server.url}/")
            expect(page.locator("#board tbody tr").first).to_be_visible()
            expect(page.locator("#your-teams")).to_be_hidden()
            another_learner(browser, server, width)
            assert errors == []
        finally:
            browser.close()


@WIDTHS
def test_the_embedded_team_board(serve: Any, width: int) -> None:
    """`<laurels-board view="teams" team="classes">` on a platform's page
    (another origin, a strict CSP): the kind's teams ranked; 7A, members-
    only, is a "Private team" to an anonymous board and named, marked, to
    its member's; a learner whose team is below the limit has it listed
    after; live on the board's hints. A team kind the server does not have
    says so."""
    from playwright.sync_api import expect, sync_playwright

    host_port = free_port()
    server = serve(LAURELS_CORS_ORIGINS=f"http://127.0.0.1:{host_port}")
    c = seeded(server)
    html = (f'<!doctype html><title>platform</title>'
            f'<laurels-board id="anon" view="teams" team="classes" season="current" '
            f'board="global" limit="10"></laurels-board>'
            f'<laurels-board id="alan" view="teams" team="classes" '
            f'token="{token_for(server.env, 2)}"></laurels-board>'
            f'<laurels-board id="barbara" view="teams" team="classes" limit="1" '
            f'token="{token_for(server.env, 5)}"></laurels-board>'
            f'<laurels-board id="nosuch" view="teams" team="houses"></laurels-board>'
            f'<script src="{server.url}/embed.js" defer></script>')
    csp = (f"default-src 'none'; script-src {server.url}; connect-src {server.url}; "
           "style-src 'self'; base-uri 'none'")
    with host_page(host_port, html, csp) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(url)
            rows = page.locator("#anon tbody tr")
            expect(rows).to_have_count(3)
            expect(page.locator("#anon caption")).to_have_text(
                re.compile(r"^Classes, [0-9]{4}-W[0-9]{2}$"))
            expect(page.locator("#anon thead th")).to_have_text(
                ["#", "Team", "Members", "Score"])
            expect(rows.nth(0)).to_have_text(re.compile(r"^1\s*7B\s*2\s*16$"))
            expect(rows.nth(1)).to_have_text(re.compile(r"^2\s*Private team\s*2\s*15$"))
            expect(rows.nth(1).locator("td.private")).to_have_count(1)
            expect(rows.nth(2)).to_have_text(re.compile(r"^3\s*7C\s*1\s*3$"))
            assert "7A" not in page.locator("#anon").inner_text()
            expect(page.locator("#anon tr.me")).to_have_count(0)
            expect(page.locator("#anon p.note")).to_have_text(
                "A team's score: the sum of its members' scores.")
            # Alan's: his members-only team named, and his.
            expect(page.locator("#alan tr.me")).to_have_text(re.compile(r"^2\s*7A\s*2\s*15$"))
            expect(page.locator("#alan td.private")).to_have_count(0)
            # Barbara's: the first team, then hers.
            expect(page.locator("#barbara tbody tr")).to_have_count(2)
            expect(page.locator("#barbara tr.me")).to_contain_text("7C")
            expect(page.locator("#nosuch p.note")).to_contain_text("no such team kind")
            # Live: Alan scores and his (private) team goes first, on every board.
            assert c.post("/v1/completions", json=completion("more", 2, 10)).status_code == 201
            expect(rows.nth(0)).to_have_text(re.compile(r"^1\s*Private team\s*2\s*25$"),
                                             timeout=10_000)
            expect(page.locator("#alan tr.me")).to_have_text(re.compile(r"^1\s*7A\s*2\s*25$"),
                                                             timeout=10_000)
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            # The missing kind's 404 is the only error the console shows.
            assert [e for e in errors if not re.search(r"status of 404", e)] == []
        finally:
            browser.close()
