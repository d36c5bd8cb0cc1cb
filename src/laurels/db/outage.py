"""Whether PostgreSQL's failure to take a connection is for now or for good.

`StoreUnavailable` says PostgreSQL did not answer; a long-running process
starting (cli/stores.py, `_patiently`) waits only for one that does not answer
*yet*: refused, gone, starting up or shutting down, out of connections.
Anything else stops it at once: PostgreSQL refusing this process (a
password, a database that does not exist, SSL), a mistake in the URL, an
error of its own; waiting would only hide it. libpq gives a connection's
failure as text, with no SQLSTATE, so that text is read; a server whose
messages are not in English is taken at its word (it stops at once, as
every process did before it waited).
"""

from __future__ import annotations

import psycopg

from laurels.core.errors import StoreUnavailable

# SQLSTATEs of a server that cannot take a connection now: admin_shutdown,
# crash_shutdown, cannot_connect_now (starting up), too_many_connections;
# and every connection exception (class 08).
NOT_YET_STATES = ("57P01", "57P02", "57P03", "53300")
# What libpq and the server say of the same (a connection's failure, as text).
NOT_YET = (
    "Connection refused", "No such file or directory", "timeout expired",  # nobody listens
    "server closed the connection", "Connection reset", "could not receive data",
    "consuming input failed", "Network is unreachable", "No route to host",
    "couldn't get a connection after",  # a pool's timeout (PoolTimeout)
    "the database system is starting up", "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "the database system is not accepting connections", "too many clients",
    "remaining connection slots are reserved", "too many connections for",
    "terminating connection due to administrator command")


def answers_later(exc: BaseException) -> bool:
    """True when `exc` (StoreUnavailable of PostgreSQL, or what it wraps)
    means PostgreSQL does not answer for now; False when it refused, or for
    any other error."""
    cause = exc.__cause__ if isinstance(exc, StoreUnavailable) and exc.__cause__ else exc
    if isinstance(cause, psycopg.Error):
        if cause.sqlstate is not None:
            return cause.sqlstate.startswith("08") or cause.sqlstate in NOT_YET_STATES
        said = str(cause)
        return isinstance(cause, psycopg.OperationalError) and any(s in said for s in NOT_YET)
    return isinstance(cause, (ConnectionError, TimeoutError))
