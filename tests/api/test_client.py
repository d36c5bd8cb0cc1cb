"""laurels.client (issues 16, 26): the async client against the app in
process, its typed results against the bodies the app answers, its retries
against a scripted transport and a closed port. The sync client runs against
a real server in tests/acceptance/test_http.py; docs/client.md is checked
against the client in tests/unit/test_client_docs.py."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NotRequired, get_origin, get_type_hints

import httpx
import pytest

from laurels.client import (
    AsyncClient,
    AuditEntry,
    AuditLog,
    Board,
    Client,
    CohortBoard,
    CohortList,
    CohortRef,
    Completion,
    CompletionRecord,
    CompletionResult,
    Correction,
    Deliveries,
    Delivery,
    Entry,
    Forbidden,
    FriendEntry,
    FriendsBoard,
    Group,
    GroupBoard,
    GroupRef,
    League,
    LeagueEntry,
    LeagueHistory,
    LeagueRecord,
    LeagueResult,
    LeagueStanding,
    LeagueSummary,
    LeagueTier,
    LearnerCorrection,
    MarkedRead,
    Membership,
    Neighbor,
    Neighbourhood,
    NotFound,
    Notification,
    Notifications,
    Rebuild,
    RebuildStarted,
    Standing,
    Suspension,
    Unavailable,
    User,
    UserCompletions,
    UserGroups,
    ValidationError,
    VerifyResult,
)
from laurels.core.seasons import parse_season
from tests.api.conftest import BASE_URL, Api, ApiFactory
from tests.helpers import ADMIN, INGEST, eventually, free_port, token_for

pytestmark = pytest.mark.once


def client(api: Api, token: str) -> AsyncClient:
    return AsyncClient(BASE_URL, token, transport=api.transport)


async def test_the_async_client_covers_the_api(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    async with client(api, INGEST) as laurels, client(api, ADMIN) as admin:
        one = await laurels.post_completion("c-1", 1, 10, "2025-12-01T10:00:00Z")
        assert (one["status"], one["season"]) == ("recorded", "2025-W49")
        again = await laurels.post_completion("c-1", 1, 10, "2025-12-01T10:00:00Z")
        assert again["status"] == "duplicate"  # retrying a completion is safe
        tagged = await laurels.post_completion("c-2", 1, 1, "2025-12-01T11:00:00Z",
                                               tags=["track:data", "course:py"])
        assert tagged["status"] == "recorded"
        with pytest.raises(TypeError, match="not one string"):
            await laurels.post_completion("c-3", 1, 1, tags="course:py")
        assert (await laurels.post_completions([Completion(
            "c-2", 1, 1, "2025-12-01T11:00:00Z", ("course:py", "track:data"))]))[0][
            "status"] == "duplicate"  # the tags' order is not part of the payload
        # 2,500 items: three requests of at most 1,000.
        items = [Completion(f"b-{i}", 2 + i % 250, 1, "2025-12-02T10:00:00Z")
                 for i in range(2500)]
        results = await laurels.post_completions(items)
        assert len(results) == 2500 and {r["status"] for r in results} == {"recorded"}
        assert (await laurels.put_user(1, "Ada", "public"))["display_name"] == "Ada"
        assert (await laurels.put_group("team", "Team", "public"))["access"] == "public"
        changed = await laurels.change_members("team", add=[1, 2, 3])
        assert changed["members"] == 3
        board = await laurels.board("2025-W49", limit=5)
        assert board["entries"][0]["user_id"] == 1 and board["next"]
        everyone = [e async for e in laurels.pages("board", "2025-W49", limit=100)]
        assert len(everyone) == 251
        group = [e async for e in laurels.pages("group_board", "team", "2025-W49", limit=1)]
        assert [e["user_id"] for e in group] == [1, 2, 3]
        friends = await laurels.friends("2025-W49", [1, 2])
        assert [e["user_id"] for e in friends["entries"]] == [1, 2]
        await admin.void("b-0", "test")
        why = [c async for c in admin.pages("completions", "2025-W49", 2, limit=3)]
        assert [c["status"] for c in why].count("voided") == 1
        assert (await admin.restore("b-0"))["status"] == "recorded"
        assert (await admin.suspend(3, "test"))["suspended"] is True
        assert (await admin.unsuspend(3))["suspended"] is False
        assert [e["action"] async for e in admin.pages("audit", limit=2)] == [
            "unsuspend", "suspend", "restore", "void"]
        assert (await admin.verify("2025-W49"))["consistent"] is True
        with pytest.raises(NotFound) as info:
            await laurels.get_group("nope")
        assert info.value.code == "not_found" and info.value.status == 404
        with pytest.raises(ValidationError):
            await laurels.post_completion("bad id", 1, 1)
    async with client(api, token_for(api.env, 1)) as learner:
        me = await learner.around("2025-W49", 1, radius=1)
        assert me["user"]["rank"] == 1
        assert (await learner.user_groups(1))["groups"][0]["group_id"] == "team"
        assert "notifications" in await learner.notifications(1)


def scripted(answers: list[Any], calls: list[httpx.Request]) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer
    return handle


def problem(status: int, code: str, retry_after: str | None = None) -> httpx.Response:
    headers = {"retry-after": retry_after} if retry_after else {}
    return httpx.Response(status, headers=headers, json={
        "type": "about:blank", "title": code, "status": status, "detail": code, "code": code})


def answers() -> list[Any]:
    return [httpx.ConnectError("refused"), problem(503, "unavailable", "0"),
            problem(429, "rate_limited", "0"), httpx.Response(201, json={"status": "recorded"})]


def test_retries_of_the_sync_client() -> None:
    calls: list[httpx.Request] = []
    with Client("http://laurels.test", "t", backoff=0.001,
                transport=httpx.MockTransport(scripted(answers(), calls))) as c:
        assert c.post_completion("x", 1, 1) == {"status": "recorded"}
    assert len(calls) == 4 and calls[0].headers["authorization"] == "Bearer t"
    calls.clear()
    with Client("http://laurels.test", "t", retries=1, backoff=0.001,
                transport=httpx.MockTransport(scripted(
                    [problem(503, "unavailable"), problem(503, "unavailable")], calls))) as c:
        with pytest.raises(Unavailable):
            c.board()
    assert len(calls) == 2
    calls.clear()
    with Client("http://laurels.test", "t", transport=httpx.MockTransport(
            scripted([problem(422, "validation_error")], calls))) as c:
        with pytest.raises(ValidationError):  # a client error is never retried
            c.put_user(1, "x")
    assert len(calls) == 1


async def test_retries_of_the_async_client() -> None:
    calls: list[httpx.Request] = []
    async with AsyncClient("http://laurels.test", "t", backoff=0.001,
                           transport=httpx.MockTransport(scripted(answers(), calls))) as c:
        assert await c.post_completion("x", 1, 1) == {"status": "recorded"}
    assert len(calls) == 4


# -- an unreachable service ------------------------------------------------------------------

class CountingTransport(httpx.HTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        return super().handle_request(request)


class AsyncCountingTransport(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        return await super().handle_async_request(request)


def assert_unreachable(error: Unavailable, port: int) -> None:
    """No answer came: a typed `Unavailable` carrying the transport error,
    naming where it went and never the token."""
    assert isinstance(error.cause, httpx.TransportError)
    assert error.__cause__ is error.cause
    assert (error.status, error.code, error.retry_after) == (None, "unavailable", None)
    assert f"127.0.0.1:{port}/v1/" in str(error) and "3 attempts" in str(error)
    assert INGEST not in str(error) and INGEST not in repr(error)


def test_the_sync_client_raises_unavailable_when_nothing_listens() -> None:
    port = free_port()  # bound and released: nothing listens there
    transport = CountingTransport()
    with Client(f"http://127.0.0.1:{port}", INGEST, retries=2, backoff=0.001,
                transport=transport) as laurels:
        with pytest.raises(Unavailable) as info:
            laurels.post_completion("c-1", 1, 1)
    assert transport.calls == 3  # the first try and two retries
    assert isinstance(info.value.cause, httpx.ConnectError)
    assert_unreachable(info.value, port)
    assert "POST http://127.0.0.1" in str(info.value)


async def test_the_async_client_raises_unavailable_when_nothing_listens() -> None:
    port = free_port()
    transport = AsyncCountingTransport()
    async with AsyncClient(f"http://127.0.0.1:{port}", INGEST, retries=2, backoff=0.001,
                           transport=transport) as laurels:
        with pytest.raises(Unavailable) as info:
            await laurels.board("current", after="cursor")
    assert transport.calls == 3
    assert isinstance(info.value.cause, httpx.ConnectError)
    assert_unreachable(info.value, port)
    assert "cursor" not in str(info.value)  # the URL without its query


@pytest.mark.parametrize("failure", [
    httpx.ReadTimeout("timed out"), httpx.ReadError("reset"),
    httpx.RemoteProtocolError("server disconnected"), httpx.ConnectTimeout("")])
def test_every_transport_failure_is_retried_then_unavailable(failure: Exception) -> None:
    calls: list[httpx.Request] = []
    with Client("http://laurels.test", "t", retries=1, backoff=0.001,
                transport=httpx.MockTransport(scripted([failure, failure], calls))) as c:
        with pytest.raises(Unavailable) as info:
            c.friends("current", [1])
    assert len(calls) == 2 and info.value.cause is failure and info.value.__cause__ is failure
    assert str(info.value).startswith(
        "unavailable: could not reach POST http://laurels.test/v1/leaderboards/current/ranks")


def test_a_gateway_failure_is_retried_then_unavailable_and_a_bad_url_is_not() -> None:
    calls: list[httpx.Request] = []
    past = "Wed, 21 Oct 2015 07:28:00 GMT"  # an HTTP-date Retry-After: no wait
    gateway = [httpx.Response(502, text="<html>Bad Gateway</html>",
                              headers={"retry-after": past}),
               httpx.Response(504, text="Gateway Timeout")]
    with Client("http://laurels.test", "t", retries=1, backoff=0.001,
                transport=httpx.MockTransport(scripted(gateway, calls))) as c:
        with pytest.raises(Unavailable) as info:
            c.board()
    assert len(calls) == 2 and (info.value.status, info.value.cause) == (504, None)
    # A base URL without http(s):// is the caller's mistake: raised at once.
    with Client("laurels.test", "t", backoff=0.001) as c, \
            pytest.raises(httpx.UnsupportedProtocol):
        c.board()


# -- typed results ---------------------------------------------------------------------------

def shaped(body: Any, kind: Any) -> Any:
    """`body` has every key `kind` (a TypedDict of laurels.client) requires.
    (Keys beyond the contract may come too: a TypedDict does not forbid them.)"""
    hints = get_type_hints(kind, include_extras=True)
    required = {k for k, t in hints.items() if get_origin(t) is not NotRequired}
    assert isinstance(body, dict), (kind.__name__, body)
    assert required <= body.keys(), (kind.__name__, sorted(required - body.keys()))
    return body


def each(bodies: list[Any], kind: Any) -> None:
    assert bodies, kind.__name__  # something to check
    for body in bodies:
        shaped(body, kind)


async def test_a_learners_completions_are_corrected_in_one_call(serve: ApiFactory) -> None:
    api = await serve(close_seasons=False)
    async with client(api, INGEST) as laurels, client(api, ADMIN) as admin:
        for n in range(3):
            await laurels.post_completion(f"x-{n}", 1, 5, "2025-12-01T10:00:00Z")
        voided = shaped(await admin.void_user(1, "copied", season="2025-W49"),
                        LearnerCorrection)
        assert voided == {"user_id": 1, "voided": 3}
        assert shaped(await admin.restore_user(1), LearnerCorrection) == {
            "user_id": 1, "restored": 3}
        with pytest.raises(ValidationError):
            await admin.void_user(1, "x", season="2025-W99")


async def test_every_result_has_the_documented_keys(serve: ApiFactory) -> None:
    hooks = f"http://127.0.0.1:{free_port()}/hooks"  # deliveries stay pending
    api = await serve(close_seasons=False, webhook_url=hooks)
    learner = AsyncClient(BASE_URL, token_for(api.env, 1), transport=api.transport)
    async with client(api, INGEST) as laurels, client(api, ADMIN) as admin, learner:
        for uid, points in ((1, 10), (2, 20), (3, 30)):
            shaped(await laurels.post_completion(f"k-{uid}", uid, points,
                                                 "2025-12-01T10:00:00Z"), CompletionResult)
        [item] = await laurels.post_completions([{"completion_id": "k-4", "user_id": 4,
                                                  "points": 5}])
        shaped(item, CompletionResult)
        shaped(await laurels.put_user(3, "Cleo", "anonymous"), User)
        shaped(await laurels.put_group("k", "K"), Group)
        shaped(await laurels.get_group("k"), Group)
        shaped(await laurels.change_members("k", add=[1, 2]), Membership)

        board = shaped(await laurels.board("2025-W49"), Board)
        each(board["entries"], Entry)
        group = shaped(await learner.group_board("k", "2025-W49"), GroupBoard)
        each(group["entries"], Entry)
        for mine in (await learner.around("2025-W49", 1),
                     await learner.group_around("k", "2025-W49", 1)):
            shaped(mine, Neighbourhood)
            shaped(mine["user"], Standing)
            each(mine["neighbors"], Neighbor)
        friends = shaped(await learner.friends("2025-W49", [1, 2, 3]), FriendsBoard)
        assert [(e["user_id"], e.get("self")) for e in friends["entries"]] == [
            (2, None), (1, True)]  # the anonymous learner 3 is left out
        each(friends["entries"], FriendEntry)
        each(shaped(await learner.user_groups(1), UserGroups)["groups"], GroupRef)

        shaped(await admin.void("k-1", "test"), Correction)
        why = shaped(await learner.completions("2025-W49", 1), UserCompletions)
        assert [shaped(c, CompletionRecord)["status"] for c in why["completions"]] == [
            "voided"]
        shaped(await admin.restore("k-1"), Correction)
        shaped(await admin.suspend(2, "test"), Suspension)
        shaped(await admin.unsuspend(2), Suspension)
        each(shaped(await admin.audit(limit=2), AuditLog)["entries"], AuditEntry)
        assert shaped(await admin.verify("2025-W49"), VerifyResult)["consistent"] is True

        async def pending() -> Any:
            page = await admin.deliveries(status="pending")
            return page if page["deliveries"] else None

        deliveries = shaped(await eventually(pending, what="a pending delivery"), Deliveries)
        each(deliveries["deliveries"], Delivery)
        assert await admin.retry_delivery(deliveries["deliveries"][0]["id"]) is None

        started = shaped(await admin.rebuild("2025-W49"), RebuildStarted)

        async def finished() -> Any:
            state = await admin.rebuild_status(started["rebuild_id"])
            return state if state["status"] != "running" else None

        ended = await eventually(finished, 30, "the rebuild to end")
        assert shaped(ended, Rebuild)["status"] == "succeeded"

        await api.close_seasons()
        await api.runtime.lifecycle.finalize_due(datetime(2025, 12, 20, tzinfo=UTC))
        mine = shaped(await learner.notifications(1), Notifications)
        [final] = [shaped(n, Notification) for n in mine["notifications"]
                   if n["kind"] == "season_final"]
        assert (final["season"], final["read"], final["data"]["rank"]) == ("2025-W49", False, 3)
        assert shaped(await learner.mark_read(1, [final["id"]]), MarkedRead) == {
            "read": [final["id"]]}

        assert await laurels.delete_group("k") is None
        assert await admin.erase_user(4) is None


async def cohorts_listed(admin: AsyncClient) -> None:
    """W48's cohorts a page at a time: bronze's, then silver's."""
    listed = shaped(await admin.league_cohorts("2025-W48", limit=1), CohortList)
    each(listed["cohorts"], CohortRef)
    assert listed["next"] is not None
    rest = await admin.league_cohorts("2025-W48", limit=1, after=listed["next"])
    assert [c["tier"] for c in listed["cohorts"] + rest["cohorts"]] == ["bronze", "silver"]


async def only_mine_marked(mine: CohortBoard, platform: CohortBoard) -> None:
    """Learner 1's read of their cohort marks their row (first every week,
    alone or beside 2); the platform's read marks none."""
    assert [e["self"] for e in mine["entries"]] == [True, False][:len(mine["entries"])]
    assert platform["entries"] == [{**e, "self": False} for e in mine["entries"]]


async def test_the_league_calls(serve: ApiFactory) -> None:
    """Each league call against the app, its body typed as declared; and
    `NotFound` from every one of them while leagues are off."""
    api = await serve(close_seasons=False, league_tiers=("bronze", "silver"), league_size=5,
                      league_promote=(1,), league_demote=(1,), late_grace_seconds=10**9,
                      league_grace_seconds=10**9)  # nothing decided but by the test
    leagues = api.runtime.leagues
    weeks = ("2025-W47", "2025-W48", "2025-W49")
    async with client(api, INGEST) as laurels, client(api, ADMIN) as admin, \
            client(api, token_for(api.env, 1)) as one, client(api, token_for(api.env, 2)) as two:
        for week in weeks:  # 1 beats 2 every week
            monday = datetime.fromisocalendar(int(week[:4]), int(week[6:]), 1)
            at = monday.replace(hour=10, tzinfo=UTC).isoformat()
            await laurels.post_completions([Completion(f"{week}-1", 1, 10, at),
                                            Completion(f"{week}-2", 2, 5, at)])

            async def scored(week: str = week) -> bool:
                return len((await laurels.board(week))["entries"]) == 2

            await eventually(scored, what=f"the board of {week}")
            await leagues.place(parse_season(week, zone=api.runtime.settings.time_zone))
            mine = shaped(await one.league(1, week), League)
            assert mine["status"] == "placed" and mine["cohort_id"]
            each(mine["entries"], LeagueEntry)
            shaped(mine["self"], LeagueStanding)
            board = shaped(await one.cohort(week, mine["cohort_id"]), CohortBoard)
            each(board["entries"], LeagueEntry)
            assert board["entries"] == mine["entries"]
            await only_mine_marked(board, await laurels.cohort(week, mine["cohort_id"]))
            assert await leagues.decide(parse_season(week, zone=api.runtime.settings.time_zone))
            shaped((await one.league(1, week))["result"], LeagueResult)
        # W47: both bronze, 1 promoted; W48: 1 alone in silver (the highest
        # tier: stays), 2 alone in bronze (promoted); W49: both silver.
        silver = (await one.league(1, "2025-W48"))["cohort_id"]
        assert silver is not None
        with pytest.raises(Forbidden):
            await two.cohort("2025-W48", silver)
        history = shaped(await one.league_history(1, limit=2), LeagueHistory)
        assert [r["season"] for r in history["results"]] == ["2025-W49", "2025-W48"]
        each(history["results"], LeagueRecord)
        walked = [r async for r in one.pages("league_history", 1, limit=1)]
        assert [(r["season"], r["tier"], r["outcome"]) for r in walked] == [
            ("2025-W49", "silver", "stayed"), ("2025-W48", "silver", "stayed"),
            ("2025-W47", "bronze", "promoted")]
        # W49's silver cohort of two demotes floor(1 * 2 / 5) = 0: 2 stays.
        assert [r["outcome"] for r in (await two.league_history(2))["results"]] == [
            "stayed", "promoted", "stayed"]
        await cohorts_listed(admin)
        summary = shaped(await admin.league_summary("2025-W49"), LeagueSummary)
        each(summary["tiers"], LeagueTier)
        assert summary["decided"] and [(t["tier"], t["members"], t["demoted"])
                                       for t in summary["tiers"]] == [
            ("bronze", 0, 0), ("silver", 2, 0)]
        assert (await one.league(1))["status"] == "none"  # this week: no completion yet
        with pytest.raises(Forbidden):
            await one.league(2)
        with pytest.raises(NotFound):
            await one.cohort("2025-W49", "no-such-cohort")
        with pytest.raises(ValidationError):
            await one.league(1, "2025-11")

    off = await serve()
    async with client(off, ADMIN) as admin:
        with pytest.raises(NotFound):
            await admin.league(1)
        with pytest.raises(NotFound):
            await admin.cohort("current", "x")
        with pytest.raises(NotFound):
            await admin.league_history(1)
        with pytest.raises(NotFound):
            await admin.league_summary("current")


async def test_the_kind_calls(serve: ApiFactory) -> None:
    """Issue 65, point 12: the client had no calls for board kinds. It defines,
    lists, retitles and deletes them, lists a kind's boards, and corrects a
    learner on one board; each result as its type says."""
    from laurels.client import BoardKind, KindBoards, KindConflict

    api = await serve(close_seasons=False)
    admin, platform = client(api, ADMIN), client(api, INGEST)
    async with admin, platform:
        defined = await admin.define_kind("course", metric="best", periods=["week", "all"],
                                          time_zone="Asia/Tokyo")
        shaped(defined, BoardKind)
        assert (defined["metric"], defined["periods"]) == ("best", ["week", "all"])
        assert (await admin.define_kind("course", title="Courses"))["title"] == "Courses"
        with pytest.raises(KindConflict):
            await admin.define_kind("course", metric="points")
        assert [k["kind"] for k in (await admin.board_kinds())["kinds"]] == ["course"]
        await platform.post_completion("k1", 3, 7, "2025-12-02T10:00:00Z", tags=["course:sql"])
        boards = await admin.kind_boards("course", season="2025-W49", search="sq")
        shaped(boards, KindBoards)
        assert boards["boards"] == [{"board": "course:sql", "learners": 1}]
        done = await admin.void_user(3, "copied", season="2025-W49", board="course:sql")
        assert done == {"user_id": 3, "voided": 1}
        assert (await admin.restore_user(3, board="course:sql"))["restored"] == 1
        await admin.delete_kind("course")
        assert (await admin.board_kinds())["kinds"] == []
