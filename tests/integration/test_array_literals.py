"""A batch's arrays sent as PostgreSQL's text form of an array (db:
int_array, text_array, bool_array, timestamp_array) come back exactly as the
lists psycopg would have sent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from laurels.db import bool_array, int_array, text_array, timestamp_array
from laurels.runtime import Runtime
from tests import deadlines

TEXTS = ["NULL", "null", "", "a,b", " spaced ", "2026-W49,2026-11-30,2026-11", "{x}",
         "Zoë ✓", "9001", "a.b:c-d_e"]


async def _round_trip(rt: Runtime, literal: object, cast: str) -> list[object]:
    async with rt.db.connection() as conn:
        cur = await conn.execute(f"SELECT %(v)s::{cast} AS v", {"v": literal})  # type: ignore[arg-type]
        row = await cur.fetchone()
    assert row is not None
    return list(row["v"])


async def test_each_kind_comes_back_as_it_was(rt: Runtime) -> None:
    assert isinstance(text_array(TEXTS), str)  # (not a list handed to psycopg)
    assert await _round_trip(rt, text_array(TEXTS), "text[]") == TEXTS
    assert await _round_trip(rt, int_array([1, -5, 2**63 - 1]), "bigint[]") == [1, -5, 2**63 - 1]
    assert await _round_trip(rt, bool_array([True, False, True]), "boolean[]") == [
        True, False, True]
    at = [datetime(2026, 12, 3, 7, 53, 32, 574123, tzinfo=UTC),
          datetime(2026, 12, 3, 23, 0, tzinfo=timezone(timedelta(hours=-14))),
          datetime(2026, 12, 3, 23, 0, tzinfo=timezone(timedelta(hours=23, minutes=59))),
          datetime(1, 1, 1, tzinfo=UTC)]
    assert await _round_trip(rt, timestamp_array(at), "timestamptz[]") == at
    for empty, cast in ((text_array([]), "text[]"), (int_array([]), "bigint[]"),
                        (bool_array([]), "boolean[]"), (timestamp_array([]), "timestamptz[]")):
        assert await _round_trip(rt, empty, cast) == []


async def test_a_quote_or_backslash_goes_to_psycopg_as_a_list(rt: Runtime) -> None:
    odd = ['say "hi"', "back\\slash", "plain"]
    assert text_array(odd) == odd
    assert await _round_trip(rt, text_array(odd), "text[]") == odd


@settings(max_examples=50, deadline=deadlines.ARRAY_LITERALS,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
                        max_size=12), max_size=8))
async def test_any_text_comes_back(rt: Runtime, values: list[str]) -> None:
    assert await _round_trip(rt, text_array(values), "text[]") == values
