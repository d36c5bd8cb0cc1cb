"""apply.lua's short cuts (`top_bar`: no rank read below the top; the lean
entry of a default profile, `users_empty`, a tie time made only when
needed; the plain lane of a board of a kind) change nothing: whatever a
batch holds (gains, ties, learners turning hidden, anonymous or named,
voids, duplicates, learners erased between calls), on the whole board's
week (rank events), a kind's board that makes none (with a rebuild open,
with its season counted from an archive, beside the whole board's week in
one call), or a notifying kind's `best` board, the rank events, the sets,
the stored profiles and bits, each delta's answer and the hints it leaves
are those of the same script with every entry on its general path,
reading every rank."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laurels.board import Board, Delta, Profile
from laurels.board.base import lua_text, script_source
from laurels.board.hints import Hint
from laurels.board.keys import Keys
from laurels.core.seasons import Season, parse_season
from laurels.runtime import Runtime
from tests import deadlines

SEASON = parse_season("2026-W49", zone="UTC")
WEEK = SEASON
START = WEEK.starts_at
# Where each board's deltas go: (its season, points of a delta's, notify).
KIND = WEEK.on("course:c1", "points")
BOARDS = {
    "whole": (SEASON, False),  # the whole board's week: rank events
    "kind": (KIND, False),  # no rank events: ZINCRBY (the plain lane)
    "best": (WEEK.on("course:c2", "best"), True),  # a notifying kind, by best
    # the kind's board with a rebuild open (two targets: no plain lane)
    "building": (KIND, False),
    # the kind's board whose version counts this season from its archive
    # (apply.lua, "Parts": every completion a duplicate; no plain lane)
    "parts": (KIND, False),
    # each delta on the kind's board and the whole board's week, in one call
    "mixed": (KIND, False),
}
# (each short cut's switch, as the script has it, and turned off)
OFF = {"ctx.bar = at[2] and tonumber(at[2]) or math.huge": "ctx.bar = math.huge",
       "  if ctx.lean and default_entry(": "  if false and default_entry(",
       "  local plain = ctx.lean and ctx.T == 1": "  local plain = false and ctx.T == 1"}
_boards = itertools.count()


def general_path_script() -> str:
    """apply.lua as `Scripts` loads it, with no lean entry and a bar no
    score is below: every entry takes the general path and its rank reads."""
    text = lua_text("apply")
    for switch, off in OFF.items():
        assert text.count(switch) == 1  # (what this test turns off is where it was)
        text = text.replace(switch, off)
    return script_source("apply", text)


@dataclass
class Side:
    board: Board
    season: Season
    notify: bool
    mixed: bool = False  # each delta on the whole board's week too
    answers: list[Any] = field(default_factory=list)
    hints: list[Hint] = field(default_factory=list)

    @property
    def seasons(self) -> list[Season]:
        return [self.season, SEASON] if self.mixed else [self.season]

    async def apply(self, deltas: list[Delta]) -> None:
        if self.season != SEASON:
            deltas = [x for d in deltas
                      for x in ((d.on_board(self.season, d.points, self.notify), d)
                                if self.mixed else (d.on_board(self.season, d.points,
                                                               self.notify),))]
        self.answers.append(await self.board.apply(deltas))

    async def erase(self, uid: int) -> None:
        for season in self.seasons:
            await self.board.erase(season, uid, START + timedelta(days=30))


async def two_boards(rt: Runtime, policy: str, where: str = "whole") -> tuple[Side, Side]:
    """The shipped script's board and the general path's, both built empty."""
    n = next(_boards)
    season, notify = BOARDS[where]
    sides = []
    for name in ("short", "general"):
        board = Board(rt.redis, Keys(f"{rt.keys.prefix}:{name}{n}", policy),
                      policy, zone="UTC")  # type: ignore[arg-type]
        if name == "general":
            board.scripts.by_name["apply"] = rt.redis.register_script(general_path_script())
        for each in [season, SEASON] if where == "mixed" else [season]:
            version, _, _ = await board.begin_build(each)
            await board.switch(each, version)
        if where == "building":
            await board.begin_build(season)  # (left open: a second target)
        if where == "parts":
            await rt.redis.sadd(board.season_keys(season).version(version).parts, season.name)
        side = Side(board, season, notify, mixed=where == "mixed")
        board.signals.changes.append(side.hints.append)
        sides.append(side)
    return sides[0], sides[1]


async def events(rt: Runtime, side: Side) -> list[dict[str, Any]]:
    out = []
    for season in side.seasons:
        entries = await rt.redis.xrange(side.board.season_keys(season).notify_stream)
        out += [fields for _, fields in entries]
    return out


async def standings(side: Side, season: Season | None = None
                    ) -> list[tuple[int, int | None, int]]:
    top = await side.board.top(season or side.season, 200)
    return [(e.rank, e.user_id, e.score) for e in top.entries]


async def stored(rt: Runtime, side: Side) -> tuple[Any, ...]:
    """Each season's versions' (current, and building when one is) sets,
    profiles and idempotency bits, and its erased set, as stored."""
    out: list[Any] = []
    for season in side.seasons:
        sk = side.board.season_keys(season)
        out.append(sorted(await rt.redis.smembers(sk.erased)))
        for marker in (sk.current, sk.building):
            if (version := await rt.redis.get(marker)) is None:
                continue
            vk = sk.version(version)
            chunks = sorted(await rt.redis.smembers(vk.chunks))
            out += [await rt.redis.zrange(vk.public, 0, -1, withscores=True),
                    await rt.redis.zrange(vk.hidden, 0, -1, withscores=True),
                    await rt.redis.hgetall(vk.users),
                    # (the idempotency bits: bytes, not text)
                    await rt.redis.execute_command("HGETALL", vk.bits, NEVER_DECODE=True),
                    chunks, [await rt.redis.execute_command(
                        "GET", vk.applied(int(c)), NEVER_DECODE=True) for c in chunks]]
    return tuple(out)


async def same(rt: Runtime, short: Side, general: Side) -> None:
    assert await events(rt, short) == await events(rt, general)
    for season in short.seasons:
        assert await standings(short, season) == await standings(general, season)
    assert await stored(rt, short) == await stored(rt, general)
    assert short.answers == general.answers
    assert short.hints == general.hints


# An operation on learner `uid`: ("gain", points), ("profile", visibility)
# (a completion carrying a newer profile), ("void", k) (void the k-th
# completion recorded so far, if it counts), ("again", k) (the k-th delta
# sent so far, sent again: a duplicate) or ("erase", uid) (between two
# calls: the learner erased from both boards).
OPS = st.one_of(
    st.tuples(st.just("gain"), st.integers(1, 130), st.integers(1, 60)),
    st.tuples(st.just("profile"), st.integers(1, 130), st.sampled_from(
        ["hidden", "anonymous", "public", "named"])),
    st.tuples(st.just("void"), st.integers(0, 10_000), st.just(0)),
    st.tuples(st.just("again"), st.integers(0, 10_000), st.just(0)),
    st.tuples(st.just("erase"), st.integers(1, 130), st.just(0)))


class Feed:
    """Deltas for both boards: seqs, profile versions and voids kept consistent."""

    def __init__(self) -> None:
        self.seq = 0
        self.versions: dict[int, Profile] = {}
        self.counting: list[Delta] = []
        self.sent: list[Delta] = []

    def profile(self, uid: int, visibility: str) -> Profile:
        """The learner's next profile (`named`: public, with a name)."""
        version = self.versions.get(uid, Profile(0, "public", "")).version + 1
        profile = (Profile(version, "public", f"learner {uid}") if visibility == "named"
                   else Profile(version, visibility, ""))
        self.versions[uid] = profile
        return profile

    def completion(self, uid: int, points: int, profile: Profile | None = None) -> Delta:
        self.seq += 1
        if profile is not None:
            self.versions[uid] = profile
        d = Delta(self.seq, uid, points, START + timedelta(seconds=self.seq), SEASON,
                  self.versions.get(uid, Profile(0, "public", "")))
        self.counting.append(d)
        return d

    def void(self, k: int) -> Delta | None:
        if not self.counting:
            return None
        d = self.counting.pop(k % len(self.counting))
        return Delta(d.seq, d.user_id, d.points, d.completed_at, SEASON,
                     self.versions.get(d.user_id, d.profile), correction=1, counted=False,
                     reset_at=d.completed_at - timedelta(days=1))

    def op(self, kind: str, a: int, b: Any) -> Delta | None:
        if kind == "again":
            return self.sent[a % len(self.sent)] if self.sent else None
        if kind == "gain":
            d: Delta | None = self.completion(a, b)
        elif kind == "profile":
            d = self.completion(a, 1, self.profile(a, b))
        else:
            d = self.void(a)
        if d is not None:
            self.sent.append(d)
        return d


@pytest.mark.parametrize("where", sorted(BOARDS))
@pytest.mark.parametrize("policy", ["shared", "first"])
@settings(max_examples=8, deadline=deadlines.RANK_BAR,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.lists(st.integers(1, 300), min_size=90, max_size=130),
       batches=st.lists(st.lists(OPS, min_size=1, max_size=40), min_size=1, max_size=4))
async def test_short_cuts_leave_what_the_general_path_leaves(
        rt: Runtime, policy: str, where: str, start: list[int],
        batches: list[list[Any]]) -> None:
    short, general = await two_boards(rt, policy, where)
    feed = Feed()
    first = [feed.completion(uid, points) for uid, points in enumerate(start, 1)]
    for side in (short, general):
        await side.apply(first)
    for ops in batches:
        deltas: list[Delta] = []
        for op in [*ops, ("erase", 0, 0)]:  # (the last only sends the rest)
            if op[0] != "erase":
                if (d := feed.op(*op)) is not None:
                    deltas.append(d)
                continue
            for side in (short, general):
                await side.apply(deltas)
                if op[1]:
                    await side.erase(op[1])
            deltas = []
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
               if leave == "hidden" else [feed.void(0), feed.void(0)])
    # (110's gain first: the call reads its bar before they leave)
    call = [feed.completion(110, 1), *(d for d in leaving if d is not None),
            feed.completion(105, 45)]
    for side in (short, general):
        await side.apply(setup)
        await side.apply(call)
    assert [e for e in await standings(short) if e[1] in (1, 2)] == []
    climbed = [e for e in await events(rt, short) if e["uid"].lstrip("0") == "105"]
    assert [e["passed"].lstrip("0") for e in climbed] == ["101"]
    await same(rt, short, general)


@pytest.mark.parametrize("where", ["whole", "kind"])
@pytest.mark.parametrize("by", ["completion", "void"])
async def test_a_profile_stored_in_a_call_ends_its_lean_entries(
        rt: Runtime, where: str, by: str) -> None:
    """A board with no profile stored takes a default learner's entry (below
    the top, where rank events are made) without asking the users hash
    (users_empty); once the call stores a profile, by a completion or by a
    void that carries it, an entry carrying that learner's older, default
    profile takes the general path, which moves the stored profile's last
    completion time."""
    short, general = await two_boards(rt, "shared", where)
    feed = Feed()
    top = [feed.completion(uid, 1_000) for uid in range(101, 201)]  # (a bar to be below)
    earlier = feed.completion(7, 4)
    first = feed.completion(8, 2)  # (lean: the board's users hash is read empty)
    if by == "completion":
        named = feed.completion(7, 5, feed.profile(7, "named"))
    else:
        feed.counting.remove(top[0])
        named = Delta(top[0].seq, top[0].user_id, top[0].points, top[0].completed_at, SEASON,
                      feed.profile(top[0].user_id, "named"), correction=1, counted=False)
    uid = named.user_id
    older = Delta(feed.seq + 1, uid, 3, START + timedelta(days=1), SEASON,
                  Profile(0, "public", ""))
    for side in (short, general):
        await side.apply([*top, earlier])
        await side.apply([first, named, older])
    await same(rt, short, general)
    profiles = (await stored(rt, short))[3]  # (after the erased set, the sets)
    assert [v.split("\t")[3] for v in profiles.values()] == [f"learner {uid}"]


@pytest.mark.parametrize("policy", ["shared", "first"])
async def test_a_best_learner_leaping_into_the_top_is_read(rt: Runtime, policy: str) -> None:
    """On a `best` board the bar is tested against the learner's score after
    the entry (their best, if this completion beats it), not before: one far
    below the top whose completion beats everybody's enters the top 10."""
    short, general = await two_boards(rt, policy, "best")
    feed = Feed()
    setup = [feed.completion(i, 10 * (200 - i)) for i in range(1, 111)]
    leap = feed.completion(105, 5_000)
    for side in (short, general):
        await side.apply(setup)
        await side.apply([leap])
    assert [e["top10"] for e in await events(rt, short) if e["seq"] == str(leap.seq)] == ["1"]
    assert (await standings(short))[0][1:] == (105, 5_000)
    await same(rt, short, general)


@pytest.mark.parametrize("where", ["kind", "mixed"])
async def test_an_erased_learner_stays_off_every_board_of_the_call(
        rt: Runtime, where: str) -> None:
    """A learner erased between two calls is in their seasons' erased sets;
    a completion of theirs applied later (a re-delivery) is refused on the
    kind's board as on the whole board's week, in the plain lane too."""
    short, general = await two_boards(rt, "shared", where)
    feed = Feed()
    first = [feed.completion(uid, 5) for uid in (1, 2)]
    later = [feed.completion(1, 7), feed.completion(2, 3)]
    for side in (short, general):
        await side.apply(first)
        await side.erase(1)
        await side.apply(later)
    for season in short.seasons:
        assert [e[1:] for e in await standings(short, season)] == [(2, 8)]
    await same(rt, short, general)


async def test_a_hint_routes_by_every_digit_of_large_ids(rt: Runtime) -> None:
    """The routes of a hint are the learners' ids with the padding's zeros
    stripped, once for the hint: ids of 19 digits, and ids holding zeros of
    their own, come out whole."""
    short, _ = await two_boards(rt, "shared", "kind")
    feed = Feed()
    ids = [9_223_372_036_854_775_807, 1_000_000_000_000_000_000, 1_000_000_000_000_000_001,
           100, 7]
    await short.apply([feed.completion(uid, 5) for uid in ids])
    assert short.hints[-1].get("routes") == ids
