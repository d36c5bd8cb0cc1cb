"""apply.lua's short cuts (`top_bar`: no rank read below the top; the lean
entry of a default profile, `users_empty`, a tie time made only when
needed) change nothing: whatever a batch holds (gains, ties, learners
turning hidden, anonymous or named, voids), the rank events, the sets and
the profiles it leaves are those of the same script with every entry on
its general path, reading every rank."""

from __future__ import annotations

import itertools
from datetime import timedelta
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laurels.board import Board, Delta, Profile
from laurels.board.lua_args import preamble
from laurels.keys import Keys
from laurels.rebuild import Rebuilder
from laurels.runtime import Runtime
from laurels.seasons import parse_season

SEASON = "2026-W49"
START = parse_season(SEASON, zone="UTC").starts_at
# (each short cut's switch, as the script has it, and turned off)
OFF = {"ctx.bar = at[2] and tonumber(at[2]) or math.huge": "ctx.bar = math.huge",
       "  if ctx.lean and profile_version == '0'": "  if false and profile_version == '0'"}
_boards = itertools.count()


def general_path_script() -> str:
    """apply.lua as `Scripts` loads it, with no lean entry and a bar no
    score is below: every entry takes the general path and its rank reads."""
    lua = resources.files("laurels.board").joinpath("lua")
    text = lua.joinpath("apply.lua").read_text()
    for switch, off in OFF.items():
        assert text.count(switch) == 1  # (what this test turns off is where it was)
        text = text.replace(switch, off)
    return "\n".join((lua.joinpath("_common.lua").read_text(), preamble("apply"), text))


async def two_boards(rt: Runtime, policy: str) -> tuple[Board, Board]:
    """The shipped script's board and the general path's, both built empty."""
    n = next(_boards)
    boards = []
    for side in ("short", "general"):
        board = Board(rt.redis, Keys(f"{rt.keys.prefix}:{side}{n}", policy),
                      policy, zone="UTC")  # type: ignore[arg-type]
        if side == "general":
            board.scripts.by_name["apply"] = rt.redis.register_script(general_path_script())
        await Rebuilder(rt.db, board).run(SEASON)
        boards.append(board)
    return boards[0], boards[1]


async def events(rt: Runtime, board: Board) -> list[dict[str, Any]]:
    entries = await rt.redis.xrange(board.season_keys(SEASON).notify_stream)
    return [fields for _, fields in entries]


async def standings(board: Board) -> list[tuple[int, int | None, int]]:
    top = await board.top(SEASON, 200)
    return [(e.rank, e.user_id, e.score) for e in top.entries]


async def stored(rt: Runtime, board: Board) -> tuple[Any, ...]:
    """The current version's sets and profiles, as stored."""
    sk = board.season_keys(SEASON)
    vk = sk.version(await rt.redis.get(sk.current))
    return (await rt.redis.zrange(vk.public, 0, -1, withscores=True),
            await rt.redis.zrange(vk.hidden, 0, -1, withscores=True),
            await rt.redis.hgetall(vk.users))


async def same(rt: Runtime, short: Board, general: Board) -> None:
    assert await events(rt, short) == await events(rt, general)
    assert await standings(short) == await standings(general)
    assert await stored(rt, short) == await stored(rt, general)


# An operation on learner `uid`: ("gain", points), ("profile", visibility)
# (a completion carrying a newer profile), or ("void", k) (void the k-th
# completion recorded so far, if it counts).
OPS = st.one_of(
    st.tuples(st.just("gain"), st.integers(1, 130), st.integers(1, 60)),
    st.tuples(st.just("profile"), st.integers(1, 130), st.sampled_from(
        ["hidden", "anonymous", "public", "named"])),
    st.tuples(st.just("void"), st.integers(0, 10_000), st.just(0)))


class Feed:
    """Deltas for both boards: seqs, profile versions and voids kept consistent."""

    def __init__(self) -> None:
        self.seq = 0
        self.versions: dict[int, Profile] = {}
        self.counting: list[Delta] = []

    def completion(self, uid: int, points: int, profile: Profile | None = None) -> Delta:
        self.seq += 1
        if profile is not None:
            self.versions[uid] = profile
        d = Delta(self.seq, uid, points, START + timedelta(seconds=self.seq), SEASON,
                  self.versions.get(uid, Profile(0, "public", "")))
        self.counting.append(d)
        return d

    def op(self, kind: str, a: int, b: Any) -> Delta | None:
        if kind == "gain":
            return self.completion(a, b)
        if kind == "profile":
            version = self.versions.get(a, Profile(0, "public", "")).version + 1
            profile = (Profile(version, "public", f"learner {a}") if b == "named"
                       else Profile(version, b, ""))
            return self.completion(a, 1, profile)
        if not self.counting:
            return None
        d = self.counting.pop(a % len(self.counting))
        return Delta(d.seq, d.user_id, d.points, d.completed_at, SEASON,
                     self.versions.get(d.user_id, d.profile), correction=1, counted=False,
                     reset_at=d.completed_at - timedelta(days=1))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(policy=st.sampled_from(["shared", "first"]),
       start=st.lists(st.integers(1, 300), min_size=90, max_size=130),
       batches=st.lists(st.lists(OPS, min_size=1, max_size=40), min_size=1, max_size=4))
async def test_short_cuts_leave_what_the_general_path_leaves(
        rt: Runtime, policy: str, start: list[int], batches: list[list[Any]]) -> None:
    short, general = await two_boards(rt, policy)
    feed = Feed()
    first = [feed.completion(uid, points) for uid, points in enumerate(start, 1)]
    for board in (short, general):
        await board.apply(first)
    for ops in batches:
        deltas = [d for op in ops if (d := feed.op(*op)) is not None]
        for board in (short, general):
            await board.apply(deltas)
    await same(rt, short, general)


@pytest.mark.parametrize("leave", ["hidden", "void"])
async def test_two_leaving_the_top_let_a_climber_pass_within_one_call(
        rt: Runtime, leave: str) -> None:
    """The bar is read once a call; two public learners leaving the public
    board in it (turning hidden, or their one completion voided) bring the
    top's last place down two places, and a learner climbing between the
    old bar and the new one passes somebody: the bar is read again after
    each, or that event is lost."""
    short, general = await two_boards(rt, "shared")
    feed = Feed()
    # learner i scores 10 * (200 - i): 1 leads, 100 is the 100th with 1,000
    setup = [feed.completion(i, 10 * (200 - i)) for i in range(1, 111)]
    # 1 and 2 leave, then 105 (950) gains 45: 995, between 100 (1,000) and
    # 101 (990), the 99th of the public board once 1 and 2 are gone
    leaving = ([feed.op("profile", 1, "hidden"), feed.op("profile", 2, "hidden")]
               if leave == "hidden" else [feed.op("void", 0, 0), feed.op("void", 0, 0)])
    # (110's gain first: the call reads its bar before they leave)
    call = [feed.completion(110, 1), *(d for d in leaving if d is not None),
            feed.completion(105, 45)]
    for board in (short, general):
        await board.apply(setup)
        await board.apply(call)
    assert [e for e in await standings(short) if e[1] in (1, 2)] == []
    climbed = [e for e in await events(rt, short) if e["uid"].lstrip("0") == "105"]
    assert [e["passed"].lstrip("0") for e in climbed] == ["101"]
    await same(rt, short, general)


async def test_a_profile_stored_in_a_call_ends_its_lean_entries(rt: Runtime) -> None:
    """A board with no profile stored takes a default learner's entry below
    the top without asking the users hash (users_empty); once the call
    stores one, an entry carrying an older, default profile of that learner
    takes the general path, which moves the stored profile's last
    completion time."""
    short, general = await two_boards(rt, "shared")
    feed = Feed()
    top = [feed.completion(uid, 1_000) for uid in range(101, 201)]  # (a bar to be below)
    first = feed.completion(8, 2)
    named = feed.completion(7, 5, Profile(1, "public", "Ann"))
    older = Delta(feed.seq + 1, 7, 3, named.completed_at + timedelta(seconds=5), SEASON,
                  Profile(0, "public", ""))
    for board in (short, general):
        await board.apply(top)
        await board.apply([first, named, older])
    await same(rt, short, general)
    profiles = (await stored(rt, short))[2]
    assert [v.split("\t")[3] for v in profiles.values()] == ["Ann"]  # (Ann's alone)
