"""Time zones by IANA name, and the local calendar's days in them (pure
functions): a season's boundaries (core/seasons.py) are its zone's local midnights."""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, date, datetime
from functools import lru_cache


class BadZone(ValueError):
    pass


@lru_cache(maxsize=256)
def zone_info(name: str) -> zoneinfo.ZoneInfo:
    """An IANA time zone by name; BadZone for anything else (a path, a
    POSIX TZ string, an unknown name)."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}", name or "") \
            or name.lower() in {"localtime", "posixrules"}:
        raise BadZone(f"{name!r} is not an IANA time zone name (such as Europe/Paris)")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise BadZone(f"unknown time zone {name!r} (an IANA name such as Europe/Paris)"
                      ) from None


def local_midnight(day: date, zone: str) -> datetime:
    """The first instant of a local date, in UTC: local midnight read with
    the offset before (fold 0) and after (fold 1) a change, the earlier of
    the readings that fall on that date. A skipped midnight gives the gap's
    end; a repeated one its first occurrence."""
    if zone == "UTC":
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    tz = zone_info(zone)
    readings = [datetime(day.year, day.month, day.day, fold=f, tzinfo=tz).astimezone(UTC)
                for f in (0, 1)]
    on_day = [r for r in readings if r.astimezone(tz).date() == day]
    # A date the zone skipped altogether (Pacific/Apia, 2011-12-30) has no
    # instant: it starts where the next one does, and is empty.
    return min(on_day) if on_day else max(readings)


def local_date(at: datetime, zone: str) -> date:
    return at.astimezone(UTC if zone == "UTC" else zone_info(zone)).date()
