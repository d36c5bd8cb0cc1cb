"""Challenges in the operator console (issue 67; CONTRACT.md, "Challenges"
and "Operator console") in headless Chromium, at a phone's width and a
desktop's: listed with their status, defined from the form (the window
typed in the operator's own time zone, sent as instants), changed, refused
with the server's reason, filtered by status, and deleted only once
confirmed."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.acceptance.test_browser import CHROMIUM, FLAGS
from tests.acceptance.test_console import signs_in
from tests.helpers import ADMIN, INGEST, completion

pytestmark = [pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)"),
    pytest.mark.once, pytest.mark.slow]

ZONE = "Europe/Paris"


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def typed(at: datetime) -> str:
    """An instant as an operator in Paris types it in a datetime-local field."""
    return at.astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%dT%H:%M:%S")


def lists(page: Any) -> None:
    from playwright.sync_api import expect

    page.get_by_role("button", name="Challenges").click()
    running = page.locator('#challenge-list tr[data-id="running"]')
    expect(page.locator("#challenge-list tbody tr")).to_have_count(1)
    expect(running.locator("td").nth(3)).to_have_text("1", timeout=10_000)  # taking part
    expect(running).to_contain_text("active")
    expect(running).to_contain_text("open")
    expect(page.locator("#challenge-zone")).to_have_text(f"your time ({ZONE})")


def defines(page: Any, admin: Any, starts: datetime, ends: datetime) -> None:
    """Defined from the form, its window typed in Paris time."""
    from playwright.sync_api import expect

    page.locator("#challenge-id").fill("december-sprint")
    page.locator("#challenge-title").fill("December sprint")
    page.locator("#challenge-board").fill("course:sql")
    page.locator("#challenge-metric").select_option("completions")
    page.locator("#challenge-starts").fill(typed(starts))
    page.locator("#challenge-ends").fill(typed(ends))
    page.locator("#challenge-join").select_option("required")
    page.locator("#challenge-max").fill("50")
    page.locator("#challenge-notify").check()
    # Rewards that do not read as ranges are refused before any call.
    page.locator("#challenge-rewards").fill("gold for everyone")
    page.get_by_role("button", name="Define").click()
    expect(page.locator("#problem")).to_contain_text('"gold for everyone" is not')
    assert admin.get("/v1/challenges/december-sprint").status_code == 404
    page.locator("#challenge-rewards").fill("1: gold; 2-10: silver")
    page.get_by_role("button", name="Define").click()
    expect(page.locator("#status")).to_have_text("challenge december-sprint defined")
    expect(page.locator("#problem")).to_be_empty()
    sprint = page.locator('#challenge-list tr[data-id="december-sprint"]')
    expect(sprint).to_contain_text("upcoming")
    expect(sprint).to_contain_text("required (max 50)")
    expect(sprint.locator("td.rewards")).to_have_text("1: gold\n2-10: silver")
    expect(sprint).to_contain_text("course:sql · completions")
    got = admin.get("/v1/challenges/december-sprint").json()
    assert (got["starts_at"], got["ends_at"]) == (iso(starts), iso(ends))
    assert got["rewards"] == [{"from": 1, "to": 1, "reward": "gold"},
                              {"from": 2, "to": 10, "reward": "silver"}]
    assert (got["board"], got["metric"], got["join"], got["max_size"]) == (
        "course:sql", "completions", "required", 50)


def edits_and_is_refused(page: Any, admin: Any, starts: datetime) -> None:
    """Edited in place (the form filled from the row); a started challenge
    keeps its metric, and the server's reason is shown."""
    from playwright.sync_api import expect

    sprint = page.locator('#challenge-list tr[data-id="december-sprint"]')
    page.locator("#challenge-rewards").fill("")
    sprint.get_by_role("button", name="Edit").click()
    expect(page.locator("#challenge-rewards")).to_have_value("1: gold; 2-10: silver")
    expect(page.locator("#challenge-starts")).to_have_value(typed(starts))
    page.locator("#challenge-title").fill("December SQL sprint")
    page.get_by_role("button", name="Define").click()
    expect(page.locator("#status")).to_have_text("challenge december-sprint changed")
    expect(sprint).to_contain_text("December SQL sprint")
    page.locator('#challenge-list tr[data-id="running"]').get_by_role(
        "button", name="Edit").click()
    page.locator("#challenge-notify").uncheck()
    page.locator("#challenge-metric").select_option("best")
    page.get_by_role("button", name="Define").click()
    expect(page.locator("#problem")).to_contain_text("has started")
    assert admin.get("/v1/challenges/running").json()["metric"] == "points"


def filters_and_deletes(page: Any, admin: Any, width: int) -> None:
    """Filtered by status; deleted only once confirmed."""
    from playwright.sync_api import expect

    listed = page.locator("#challenge-list tbody tr")
    sprint = page.locator('#challenge-list tr[data-id="december-sprint"]')
    page.locator("#challenge-status").select_option("upcoming")
    page.locator("#challenge-filter").get_by_role("button", name="Show").click()
    expect(listed).to_have_count(1)
    expect(listed.first).to_have_attribute("data-id", "december-sprint")
    if width < 400:  # the table scrolls in its own box, the page does not
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.once("dialog", lambda d: d.accept("delete december"))
    sprint.get_by_role("button", name="Delete…").click()
    expect(page.locator("#problem")).to_contain_text("did not match")
    expect(sprint).to_have_count(1)
    page.once("dialog", lambda d: d.accept("delete december-sprint"))
    sprint.get_by_role("button", name="Delete…").click()
    expect(sprint).to_have_count(0)
    expect(page.locator("#status")).to_have_text("challenge december-sprint deleted")
    assert admin.get("/v1/challenges/december-sprint").status_code == 404
    page.get_by_role("button", name="Audit").click()
    expect(page.locator("#audit-log tbody tr").first).to_contain_text("challenge_delete")


@pytest.mark.parametrize("width", [390, 1280], ids=["phone", "desktop"])
def test_challenges_are_listed_defined_changed_and_deleted(serve: Any, width: int) -> None:
    from playwright.sync_api import sync_playwright

    server = serve()
    admin = server.client(ADMIN)
    now = datetime.now(UTC).replace(microsecond=0)
    assert admin.put("/v1/admin/challenges/running", json={
        "title": "Running", "starts_at": iso(now - timedelta(hours=1)),
        "ends_at": iso(now + timedelta(hours=1))}).status_code == 201
    assert server.client(INGEST).post("/v1/completions", json=completion("r1", 1, 5)
                                      ).status_code == 201
    starts, ends = now + timedelta(days=2, minutes=7), now + timedelta(days=9)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            context = browser.new_context(viewport={"width": width, "height": 900},
                                          timezone_id=ZONE, locale="en-GB")
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{server.url}/admin")
            signs_in(page)
            lists(page)
            defines(page, admin, starts, ends)
            edits_and_is_refused(page, admin, starts)
            filters_and_deletes(page, admin, width)
            assert errors == []
        finally:
            browser.close()
