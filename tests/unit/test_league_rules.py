"""The zones of a league cohort (CONTRACT.md, Leagues; issue 43, point 3):
they scale with the cohort's board, p = ceil(PROMOTE * n / SIZE) and
d = floor(DEMOTE * n / SIZE), so a small newest cohort promotes few."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from laurels.leagues.rules import MAX_COHORT, LeagueRules
from laurels.process.settings import Settings
from tests import deadlines

TIERS = ("bronze", "silver", "gold", "diamond")


def rules(size: int = 30, promote: tuple[int, ...] = (7,), demote: tuple[int, ...] = (5,)
          ) -> LeagueRules:
    return LeagueRules.of(Settings(league_tiers=TIERS, league_size=size,
                                   league_promote=promote, league_demote=demote))


def zones(r: LeagueRules, tier: int, n: int) -> list[str | None]:
    return [r.zone(tier, rank, n) for rank in range(1, n + 1)]


def test_the_issue_s_small_cohorts_promote_few() -> None:
    r = rules()
    assert r.scaled(0, 30) == (7, 5)  # a full cohort: PROMOTE and DEMOTE
    assert r.scaled(0, 9) == (3, 1)  # the 9-member bronze cohort promoted 8 before
    assert r.scaled(1, 2) == (1, 0)  # the 2-member silver cohort promoted both
    assert zones(r, 1, 2) == ["promotion", None]
    assert zones(r, 0, 9).count("promotion") == 3 and "demotion" not in zones(r, 0, 9)
    assert zones(r, 1, 9)[-1] == "demotion" and zones(r, 1, 9).count("demotion") == 1
    assert zones(r, 3, 30).count("promotion") == 0  # the highest tier promotes nobody
    assert r.scaled(0, 0) == (0, 0) and zones(r, 2, 1) == ["promotion"]


@settings(deadline=deadlines.PURE)
@given(size=st.integers(5, 100), p=st.integers(0, 99), d=st.integers(0, 99),
       tier=st.integers(0, 3), n=st.integers(0, 100))
def test_the_zones_follow_the_contract_s_formula(size: int, p: int, d: int, tier: int,
                                                n: int) -> None:
    p, d = p % size, d % size
    if p + d >= size:
        d = size - 1 - p
    r = rules(size, (p,), (d,))
    want_p, want_d = math.ceil(p * n / size), math.floor(d * n / size)
    assert r.scaled(tier, n) == (want_p, want_d)
    for rank in range(1, n + 1):
        want = ("promotion" if rank <= want_p and tier < 3 else
                "demotion" if rank > max(want_p, n - want_d) and tier > 0 else None)
        assert r.zone(tier, rank, n) == want
    # The decision's table holds the same cutoffs, for every size a board can have.
    table = r.cutoff_table()
    row = table["cut_tiers"].index(tier) + n
    assert (table["cut_sizes"][row], table["cut_promote"][row], table["cut_demote"][row]) == (
        n, *r.cutoffs(tier, n))
    assert len(table["cut_tiers"]) == len(TIERS) * (MAX_COHORT + 1)
