"""A batch's arrays as query parameters."""

from __future__ import annotations

import re
from datetime import UTC, datetime

# Arrays of a batch as PostgreSQL's text form of an array, built with joins
# done in C: psycopg's ListDumper walks a list in Python, element by element
# (a fifth of the server's samples in batch ingest: seven arrays of 1,000 a
# batch). PostgreSQL parses the same text either way. Strings are quoted, so
# "NULL" stays a string and commas and spaces stay inside their element; a
# list whose text holds a quote or a backslash is given to psycopg as it is.
_NEEDS_ESCAPING = re.compile(r'["\\]')


def int_array(values: list[int]) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def bool_array(values: list[bool]) -> str:
    return "{" + ",".join(["t" if v else "f" for v in values]) + "}"


def text_array(values: list[str]) -> str | list[str]:
    if _NEEDS_ESCAPING.search("".join(values)):
        return values
    return '{"' + '","'.join(values) + '"}' if values else "{}"


def timestamp_array(values: list[datetime]) -> str:
    """Aware datetimes, each as an instant in UTC (RFC 3339 allows offsets up
    to 23:59, PostgreSQL's timestamptz input only up to 15:59)."""
    return ('{"' + '","'.join([v.astimezone(UTC).isoformat() for v in values]) + '"}'
            if values else "{}")
