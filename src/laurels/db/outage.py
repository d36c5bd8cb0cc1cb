"""Whether PostgreSQL's failure to take a connection is for now or for good.

`StoreUnavailable` says PostgreSQL did not answer; a long-running process
starting (cli.py, `_patiently`) waits only for one that does not answer
*yet*: refused, gone, starting up or shutting down, out of connections.
PostgreSQL refusing this process (a password, a database that does not
exist) is for good: waiting would only hide the mistake. libpq gives a
connection's failure as text, with no SQLSTATE, so its FATAL line is read.
"""

from __future__ import annotations

import psycopg

from laurels.errors import StoreUnavailable

# What PostgreSQL says (FATAL) while it cannot take a connection for now.
NOT_YET = ("the database system is starting up", "the database system is shutting down",
           "the database system is in recovery mode",
           "the database system is not yet accepting connections",
           "the database system is not accepting connections", "too many clients",
           "terminating connection due to administrator command")


def answers_later(exc: BaseException) -> bool:
    """True when `exc` (StoreUnavailable of PostgreSQL, or what it wraps)
    means PostgreSQL does not answer for now; False when it refused, or for
    any other error."""
    cause = exc.__cause__ if isinstance(exc, StoreUnavailable) and exc.__cause__ else exc
    if isinstance(cause, psycopg.Error):
        if cause.sqlstate is not None:  # 08: connection exception, 57: operator, 53: resources
            return cause.sqlstate[:2] in ("08", "57", "53")
        said = str(cause)
        return "FATAL:" not in said or any(reason in said for reason in NOT_YET)
    return isinstance(cause, OSError)
