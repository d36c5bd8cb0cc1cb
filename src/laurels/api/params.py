"""Path and query parameters parsed alike by the FastAPI routes and the fast
lane: one parser per kind, strict, so that a malformed value is 422
`validation_error` before it reaches a store (docs/contract.md, Errors)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, TypeVar
from urllib.parse import parse_qs

from fastapi import Path, Query
from pydantic import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError

from laurels.api.problems import Problem
from laurels.core.seasons import ALIASES, BadSeason, Period, PeriodOff, Season, configured_season
from laurels.core.validation import USER_ID_MAX, Invalid, parse_user_id, parse_uuid

T = TypeVar("T")

# A number in a query string: ASCII digits only. int() also takes "+5",
# " 5", "5_000" and "\u0665", and FastAPI's int parameters take "5.0".
QUERY_DIGITS = re.compile(r"[0-9]{1,9}")
# A paging cursor as Cursors.encode writes it: unpadded URL-safe base64.
# (base64's decoder skips any other character, so "<cursor>!" would pass.)
CURSOR_CHARS = re.compile(r"[A-Za-z0-9_-]{1,512}")
CURSOR_PROBLEM = "not a cursor: pass the `next` of the previous page as it is"

# Path parameters as /openapi.json documents them; the handlers check them
# (path_season, path_user_id), which word the errors.
SeasonPath = Annotated[str, Path(
    description="a season of a configured period, in UTC: a week `YYYY-Www`, a day "
                "`YYYY-MM-DD`, a month `YYYY-MM`, `all`, a rolling window `last-7d` or "
                "`last-30d`; or `current` (this week), `current-day`, `current-month`",
    examples=["current", "2026-W49", "2026-11-30", "2026-11", "all", "last-7d"],
    json_schema_extra={"pattern": "^([0-9]{4}-W[0-9]{2}|[0-9]{4}-[0-9]{2}(-[0-9]{2})?|all|"
                                  "last-7d|last-30d|current|current-day|current-month)$"})]
UserIdPath = Annotated[str, Path(
    description=f"learner id, 1 to {USER_ID_MAX}", examples=["42"],
    json_schema_extra={"pattern": "^[1-9][0-9]{0,18}$"})]


def valid(check: Callable[..., T], *raw: object) -> T:
    """`check(*raw)`, its `Invalid` answered as 422 `validation_error`."""
    try:
        return check(*raw)
    except Invalid as exc:
        raise Problem("validation_error", str(exc)) from None


def path_season(text: str, periods: tuple[Period, ...], zone: str) -> Season:
    """A season of the URL (any period's name, or an alias: `current`,
    `current-day`, `current-month`): 422 if malformed, 404 if its period is
    not configured (LAURELS_PERIODS); in the calendar of `zone`. Every read names its season, so the
    answers are kept: a name's for good (a season is a value), an alias's
    until its season ends by the clock."""
    if text in ALIASES:
        now = datetime.now(UTC)
        held = _CURRENT.get((text, periods, zone))
        if held is not None and held.starts_at <= now < held.ends_at:
            return held
        season = _checked(text, periods, now, zone)
        _CURRENT[(text, periods, zone)] = season
        return season
    return _named(text, periods, zone)


# alias -> its season now
_CURRENT: dict[tuple[str, tuple[Period, ...], str], Season] = {}


@functools.lru_cache(maxsize=1024)
def _named(text: str, periods: tuple[Period, ...], zone: str) -> Season:
    return _checked(text, periods, None, zone)  # (a malformed name raises: nothing kept)


def _checked(text: str, periods: tuple[Period, ...], now: datetime | None, zone: str
             ) -> Season:
    try:
        return configured_season(text, periods, now, zone=zone)
    except BadSeason as exc:
        raise Problem("validation_error", str(exc)) from None
    except PeriodOff as exc:
        raise Problem("not_found", str(exc)) from None


def path_user_id(text: str) -> int:
    return valid(parse_user_id, text)


def path_uuid(text: str, field: str) -> str:
    """A UUID of the URL (a rebuild's, a webhook delivery's), canonical and
    in lower case: anything else is 422, never a query that fails."""
    return valid(parse_uuid, text, field)


def int_in(name: str, text: str, low: int, high: int) -> int:
    """A query string's integer from `low` to `high`, in ASCII digits."""
    if not QUERY_DIGITS.fullmatch(text) or not low <= int(text) <= high:
        raise Problem("validation_error", f"{name}: must be an integer from {low} to {high}")
    return int(text)


KEPT_QUERY_BYTES = 256  # longer query strings are parsed each time, never kept


def query_value(query: bytes, name: str) -> str | None:
    if not query:
        return None
    fields = _kept_fields(query) if len(query) <= KEPT_QUERY_BYTES else _query_fields(query)
    return fields.get(name)


def _query_fields(query: bytes) -> dict[str, str]:
    """A query string's fields. Blank values kept, as FastAPI's routes keep
    them: `limit=` is malformed; the last of repeated values counts, as in
    FastAPI's."""
    parsed = parse_qs(query.decode("latin-1"), keep_blank_values=True)
    return {name: values[-1] for name, values in parsed.items()}


# Kept per query string (read only: the dict is shared): a page's readers
# send the same few; with boards of kinds, a query names one of thousands of
# boards (issue 42: 2,000 neighbourhoods on 10,000 boards missed a cache of
# 256 and parsed every string twice). At most KEPT_QUERIES strings of at
# most KEPT_QUERY_BYTES: 4 MB.
KEPT_QUERIES = 16_384
_kept_fields = functools.lru_cache(maxsize=KEPT_QUERIES)(_query_fields)


def query_int(query: bytes, name: str, default: int, low: int, high: int) -> int:
    """A query string's integer (the fast lane's `limit`, `radius`)."""
    text = query_value(query, name)
    return default if text is None else int_in(name, text, low, high)


def query_cursor(query: bytes, name: str = "after") -> str | None:
    """A query string's paging cursor, as written (Cursors.decode opens it)."""
    text = query_value(query, name)
    if text is not None and not CURSOR_CHARS.fullmatch(text):
        raise Problem("validation_error", f"{name}: {CURSOR_PROBLEM}")
    return text


# The same rules for FastAPI's query parameters (its message is prefixed
# with the parameter's name, as `int_in`'s is).

def _int_from(low: int, high: int) -> BeforeValidator:
    def check(value: object) -> int:
        if not (isinstance(value, str) and QUERY_DIGITS.fullmatch(value)
                and low <= int(value) <= high):
            raise PydanticCustomError("int_query", "must be an integer from {low} to {high}",
                                      {"low": low, "high": high})
        return int(value)
    return BeforeValidator(check)


def _cursor(value: str | None) -> str | None:
    if value is not None and not CURSOR_CHARS.fullmatch(value):
        raise PydanticCustomError("cursor", CURSOR_PROBLEM)
    return value


Limit = Annotated[int, Query(ge=1, le=1000, description="entries per page, 1 to 1000"),
                  _int_from(1, 1000)]
Radius = Annotated[int, Query(ge=0, le=50, description="ranks above and below, 0 to 50"),
                   _int_from(0, 50)]
Cursor = Annotated[str | None, Query(
    description="the `next` of the previous page",
    json_schema_extra={"pattern": f"^{CURSOR_CHARS.pattern}$"}), AfterValidator(_cursor)]
