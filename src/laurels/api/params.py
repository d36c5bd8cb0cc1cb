"""Path parameters parsed alike by the FastAPI routes and the fast lane."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from laurels.api.problems import Problem
from laurels.seasons import BadSeason, Period, PeriodOff, Season, configured_season
from laurels.validation import Invalid

T = TypeVar("T")


def valid(check: Callable[..., T], *raw: object) -> T:
    """`check(*raw)`, its `Invalid` answered as 422 `validation_error`."""
    try:
        return check(*raw)
    except Invalid as exc:
        raise Problem("validation_error", str(exc)) from None


def path_season(text: str, periods: tuple[Period, ...]) -> Season:
    """A season of the URL (any period's name, or an alias: `current`,
    `current-day`, `current-month`): 422 if malformed, 404 if its period is
    not configured (LAURELS_PERIODS)."""
    try:
        return configured_season(text, periods)
    except BadSeason as exc:
        raise Problem("validation_error", str(exc)) from None
    except PeriodOff as exc:
        raise Problem("not_found", str(exc)) from None
