"""Team kinds in the operator console (CONTRACT.md, "Team boards" and
"Operator console") in headless Chromium, at a phone's width and a
desktop's: listed with how their teams score and how many are ranked this
week, defined from the form, retitled, refused with the server's reason
when the aggregate would change, and deleted only once confirmed (their
groups stay, in no team kind). With rolling windows configured, the boards
list their seasons too ("Rolling windows")."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.acceptance.test_browser import CHROMIUM, FLAGS
from tests.acceptance.test_console import signs_in
from tests.helpers import ADMIN, INGEST, completion

pytestmark = [pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason="needs Debian's chromium at /usr/bin/chromium (.ci/run installs it)"),
    pytest.mark.once, pytest.mark.slow]


def seeded(server: Any) -> None:
    """The kind `houses` (sum) with two houses, each a member with points."""
    admin, c = server.client(ADMIN), server.client(INGEST)
    resp = admin.put("/v1/admin/team-kinds/houses", json={"title": "Houses"})
    assert resp.status_code == 201, resp.text
    for gid, uid in (("red", 1), ("blue", 2)):
        resp = c.put(f"/v1/groups/{gid}", json={"team": "houses"})
        assert resp.status_code == 200, resp.text
        assert c.post(f"/v1/groups/{gid}/members", json={"add": [uid]}).status_code == 200
        resp = c.post("/v1/completions", json=completion(f"s{uid}", uid, 5 * uid))
        assert resp.status_code == 201, resp.text


def lists_the_windows(page: Any) -> None:
    """The Boards section lists the rolling windows' seasons with the week's."""
    from playwright.sync_api import expect

    seasons = page.locator("#seasons tbody tr td:nth-child(2)")
    expect(seasons).to_have_count(3)
    assert seasons.all_inner_texts()[1:] == ["last-7d", "last-30d"]
    expect(page.locator("#problem")).to_be_empty()


def lists(page: Any) -> None:
    from playwright.sync_api import expect

    page.get_by_role("button", name="Team kinds").click()
    houses = page.locator('#team-kind-list tr[data-id="houses"]')
    expect(page.locator("#team-kind-list tbody tr")).to_have_count(1)
    expect(houses.locator("td")).to_have_count(6)
    assert houses.locator("td").all_inner_texts()[:4] == ["houses", "Houses", "sum", "2"]
    expect(page.locator("#team-kind-top")).to_be_disabled()


def defines_and_retitles(page: Any, admin: Any) -> None:
    """Defined from the form (`top` asks for its number), then retitled from
    the row's Edit."""
    from playwright.sync_api import expect

    page.locator("#team-kind-name").fill("classes")
    page.locator("#team-kind-title").fill("Classes")
    page.locator("#team-kind-aggregate").select_option("top")
    expect(page.locator("#team-kind-top")).to_be_enabled()
    page.locator("#team-kind-top").fill("3")
    page.get_by_role("button", name="Define").click()
    expect(page.locator("#status")).to_have_text("team kind classes defined")
    expect(page.locator("#problem")).to_be_empty()
    classes = page.locator('#team-kind-list tr[data-id="classes"]')
    expect(classes.locator("td").nth(2)).to_have_text("top 3")
    expect(classes.locator("td").nth(1)).to_have_text("Classes")
    got = admin.get("/v1/admin/team-kinds").json()["team_kinds"]
    assert [(k["team"], k["title"], k["aggregate"], k["top"]) for k in got] == [
        ("classes", "Classes", "top", 3), ("houses", "Houses", "sum", None)]
    # Retitled: the form filled from the row.
    page.get_by_role("button", name="Clear").click()
    expect(page.locator("#team-kind-top")).to_be_disabled()
    classes.get_by_role("button", name="Edit").click()
    expect(page.locator("#team-kind-name")).to_have_value("classes")
    expect(page.locator("#team-kind-aggregate")).to_have_value("top")
    expect(page.locator("#team-kind-top")).to_have_value("3")
    page.locator("#team-kind-title").fill("Forms")
    page.get_by_role("button", name="Define").click()
    expect(page.locator("#status")).to_have_text("team kind classes retitled")
    expect(classes.locator("td").nth(1)).to_have_text("Forms")


def is_refused(page: Any, admin: Any) -> None:
    """Another aggregate is the server's 409, its reason shown."""
    from playwright.sync_api import expect

    page.locator('#team-kind-list tr[data-id="classes"]').get_by_role(
        "button", name="Edit").click()
    page.locator("#team-kind-aggregate").select_option("mean")
    expect(page.locator("#team-kind-top")).to_be_disabled()
    page.get_by_role("button", name="Define").click()
    expect(page.locator("#problem")).to_contain_text("exists with another aggregate")
    got = {k["team"]: k for k in admin.get("/v1/admin/team-kinds").json()["team_kinds"]}
    assert (got["classes"]["aggregate"], got["classes"]["top"]) == ("top", 3)


def deletes(page: Any, server: Any, width: int) -> None:
    """Deleted only once confirmed; its groups stay, in no team kind."""
    from playwright.sync_api import expect

    houses = page.locator('#team-kind-list tr[data-id="houses"]')
    if width < 400:  # the table scrolls in its own box, the page does not
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.once("dialog", lambda d: d.accept("delete house"))
    houses.get_by_role("button", name="Delete…").click()
    expect(page.locator("#problem")).to_contain_text("did not match")
    expect(houses).to_have_count(1)
    page.once("dialog", lambda d: d.accept("delete houses"))
    houses.get_by_role("button", name="Delete…").click()
    expect(houses).to_have_count(0)
    expect(page.locator("#status")).to_have_text("team kind houses deleted")
    kinds = server.client(ADMIN).get("/v1/admin/team-kinds").json()["team_kinds"]
    assert [k["team"] for k in kinds] == ["classes"]
    group = server.client(INGEST).get("/v1/groups/red")
    assert group.status_code == 200 and group.json()["team"] is None, group.text
    page.get_by_role("button", name="Audit").click()
    expect(page.locator("#audit-log tbody tr").first).to_contain_text("team_delete")
    expect(page.locator("#audit-log tbody tr").first).to_contain_text("houses")


@pytest.mark.parametrize("width", [390, 1280], ids=["phone", "desktop"])
def test_team_kinds_are_listed_defined_retitled_and_deleted(serve: Any, width: int) -> None:
    from playwright.sync_api import sync_playwright

    server = serve(LAURELS_PERIODS="week,7d,30d")
    admin = server.client(ADMIN)
    seeded(server)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{server.url}/admin")
            signs_in(page)
            lists_the_windows(page)
            lists(page)
            defines_and_retitles(page, admin)
            is_refused(page, admin)
            deletes(page, server, width)
            assert errors == []
        finally:
            browser.close()
