"""One deployment, one set of settings (CONTRACT.md, Configuration).

Several processes (`serve`, `projector`, one-shot commands) share one
PostgreSQL and one Redis. The settings they must agree on, and the
fingerprints of the four secrets (never the secrets), are recorded in
PostgreSQL by the deployment's first `serve` or `projector`. At start each
process compares its own values with them:
- a `serve` or `projector` whose value differs **while another process of
  the deployment runs** (heard from within the last 10 s) stops before it
  changes anything, with one line naming the variable; when no other
  process runs it records its values and logs each change with what it
  implies (restarting the whole deployment is how settings change);
- a one-shot command never records: a shared setting it leaves unset takes
  the recorded value; one it sets otherwise stops it.

Running processes are rows of `deployment_processes`, heard from every 2 s
(`Membership.beat`); a process stopped cleanly leaves at once, one killed
is forgotten 10 s after it was last heard. The comparison, the record and
the registration happen in one transaction under the deployment's lock,
so two processes starting at once with different values cannot both pass.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets as secrets_module
import signal
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter

from laurels.db import Database, Jsonb, Row
from laurels.process.fingerprints import fingerprints, url_record
from laurels.process.settings import Secrets, Settings

log = logging.getLogger("laurels.deployment")

HEARD_SECONDS = 10.0  # a process not heard from for this long is gone
BEAT_SECONDS = 2.0  # how often a running process says it runs
Kind = Literal["serve", "projector"]

# The settings every process must share, and what a change of each implies.
SHARED: dict[str, tuple[Callable[[Settings], Any], str]] = {
    "LAURELS_TIME_ZONE": (lambda s: s.time_zone,
                          "none: it is fixed at the deployment's first start"),
    "LAURELS_TIE_POLICY": (lambda s: s.tie_policy,
                           "every board is rebuilt: its keys name the policy"),
    "LAURELS_PERIODS": (lambda s: list(s.periods),
                        "the boards of an added period are built from PostgreSQL; a removed "
                        "period's boards are no longer read"),
    "LAURELS_CLOSE_SEASONS": (lambda s: s.close_seasons,
                              "seasons close (or no longer close) at their end plus grace"),
    "LAURELS_LATE_GRACE_SECONDS": (lambda s: s.late_grace_seconds,
                                   "late completions are taken for this long after a season"),
    "LAURELS_MAX_FUTURE_SKEW_SECONDS": (lambda s: s.max_future_skew_seconds,
                                        "completions may lie this far in the future"),
    "LAURELS_LEAGUE_TIERS": (lambda s: list(s.league_tiers),
                             "the leagues' tiers change: an undecided week is decided with "
                             "the new rule (mid-week)"),
    "LAURELS_LEAGUE_SIZE": (lambda s: s.league_size,
                            "new cohorts fill to the new size; placed ones stay"),
    "LAURELS_LEAGUE_PROMOTE": (lambda s: list(s.league_promote),
                               "undecided weeks are decided with the new promotions (mid-week)"),
    "LAURELS_LEAGUE_DEMOTE": (lambda s: list(s.league_demote),
                              "undecided weeks are decided with the new demotions (mid-week)"),
    "LAURELS_LEAGUE_GRACE_SECONDS": (lambda s: s.league_grace_seconds,
                                     "weeks are decided at their end plus the new grace"),
    "LAURELS_RETAIN_COMPLETIONS_DAYS": (lambda s: s.retain_completions_days,
                                        "completions older than this may be dropped"),
    "LAURELS_WEBHOOK_URL": (lambda s: s.webhook_url, "events are sent to the new address"),
    "LAURELS_WEBHOOK_EVENTS": (lambda s: sorted(s.webhook_events),
                               "the events sent change"),
    "LAURELS_WEBHOOK_COALESCE_SECONDS": (lambda s: s.webhook_coalesce_seconds,
                                         "refreshed notifications are sent at the new pace"),
    "LAURELS_WEBHOOK_TIMEOUT_SECONDS": (lambda s: s.webhook_timeout_seconds,
                                        "a receiver gets the new time to answer"),
}
# Settings fixed at the first start, which no restart changes: every season's
# name and boundaries, stored in PostgreSQL and Redis, depend on them. A
# deployment recorded before one existed had its default (UTC: every season
# was a UTC one).
FIXED: dict[str, Any] = {"LAURELS_TIME_ZONE": "UTC"}
SECRET_URLS = ("LAURELS_WEBHOOK_URL",)  # recorded masked, with a fingerprint (url_record)
SALT = "fingerprint_salt"  # deployment_settings' row of the fingerprints' salt (hex)
SECRETS = {"LAURELS_INGEST_TOKEN": "ingest_token", "LAURELS_ADMIN_TOKEN": "admin_token",
           "LAURELS_USER_TOKEN_SECRET": "user_token_secret",
           "LAURELS_WEBHOOK_SECRET": "webhook_secret"}


def _upgraded(recorded: dict[str, Any]) -> dict[str, Any]:
    """Recorded values as this version records them: a webhook URL recorded
    in clear by an earlier version, masked and fingerprinted."""
    url = recorded.get("LAURELS_WEBHOOK_URL")
    if isinstance(url, str):
        return {**recorded, "LAURELS_WEBHOOK_URL": url_record(url, recorded.get(SALT))}
    return recorded


def compatible(mine: Any, theirs: Any) -> bool:
    """Two processes' records of one secret may run side by side: each
    accepts the other's current value (both unset: alike)."""
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return bool(mine == theirs)
    return bool(mine["current"] == theirs["current"]
                or (mine["current"] in theirs["accepts"]
                    and theirs["current"] in mine["accepts"]))


class DeploymentConflict(Exception):
    """This process may not run with these settings: one line saying why."""


@dataclass(frozen=True)
class Difference:
    name: str
    recorded: Any
    mine: Any

    @property
    def secret(self) -> bool:
        return self.name in SECRETS

    def changed(self) -> str:
        if self.secret:
            return f"{self.name} (a new secret)"
        return f"{self.name} from {_shown(self.recorded)} to {_shown(self.mine)}"

    def said(self) -> str:
        if self.secret:
            return f"{self.name} is not the deployment's (its fingerprint differs)"
        return (f"{self.name} is {_shown(self.mine)} here, the deployment's is "
                f"{_shown(self.recorded)}")


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, dict) and "shown" in value:
        return str(value["shown"])
    if isinstance(value, list):
        return ",".join(map(str, value)) or "unset"
    return str(value).lower() if isinstance(value, bool) else str(value)


def values_of(settings: Settings, salt: str | None = None) -> dict[str, Any]:
    """This process's values of the shared settings, as recorded (a URL
    that may carry a secret masked and fingerprinted with `salt`)."""
    values = {name: read(settings) for name, (read, _) in SHARED.items()}
    for name in SECRET_URLS:
        values[name] = url_record(values[name], salt)
    return values


def secrets_of(secrets: Secrets, known: set[str] | None = None,
               salt: str | None = None) -> dict[str, Any]:
    """This process's secrets' records (`known`: the secrets it knows; None:
    all four), fingerprinted with the deployment's `salt`."""
    return {name: fingerprints(getattr(secrets, attr), salt) for name, attr in SECRETS.items()
            if known is None or attr in known}


class Membership:
    """This process among the deployment's: its registration, its beats."""

    def __init__(self, db: Database, kind: Kind, process_id: str | None = None,
                 joined: tuple[Settings, Secrets] | None = None, stops: int | None = None,
                 refused: Callable[[str], None] | None = None) -> None:
        self.db = db
        self.kind = kind
        self.id = process_id or str(uuid.uuid4())
        self.secrets: dict[str, Any] = {}  # its secrets' records, once it joined
        # What it runs with (set by join; given for a serve's worker, whose
        # serve joined), compared again if it is forgotten (beat).
        self.joined = joined
        # Refused on rejoining: the process stops (SIGTERM to `stops`, a
        # serve's pid, or to itself); a test passes its own.
        self.refused = refused or (lambda line: _stop(line, stops or os.getpid()))

    async def join(self, settings: Settings, secrets: Secrets) -> list[Difference]:
        """Compare, record, register: in one transaction under the
        deployment's lock. Raises DeploymentConflict when another process
        runs with other settings, or with secrets this one and it do not
        both accept (a rotation's `new,old` runs beside `old` and beside
        `new`); returns the changes recorded."""
        self.joined = (settings, secrets)
        await refuse_unknown_zone(self.db, settings.time_zone)
        async with self.db.transaction() as tx:
            await self.db.fetch("lock_deployment", tx)
            await self.db.run("forget_silent_processes", tx, seconds=HEARD_SECONDS)
            others = [r for r in await self.db.fetch("running_processes", tx)
                      if str(r["id"]) != self.id]
            stored = {r["name"]: r["value"] for r in await self.db.fetch(
                "recorded_settings", tx)}
            # Compared as recorded (an earlier version's records: no salt);
            # recorded anew with a salt once this process runs alone.
            salt = stored.get(SALT)
            mine, keys = values_of(settings, salt), secrets_of(secrets, salt=salt)
            recorded = _with_fixed(_upgraded(stored))
            _refuse_fixed(recorded, mine)
            changed = [Difference(n, recorded[n], v) for n, v in mine.items()
                       if n in recorded and recorded[n] != v]
            if changed and others:
                raise DeploymentConflict(_refusal(changed[0], others))
            _refuse_incompatible(keys, others)
            if not others:
                changed += [Difference(n, recorded[n], v) for n, v in keys.items()
                            if n in recorded and not compatible(v, recorded[n])]
            unused = await self.db.fetch_one("settings_unused", tx) if changed else None
            if unused is not None and not unused["free"]:
                raise DeploymentConflict(
                    f"{changed[0].said()}, and a one-shot command runs with the deployment's "
                    "settings: start this process once it has finished, or with them")
            if salt is None and not others:  # the deployment's salt, made once
                salt = secrets_module.token_hex(16)
                await self.db.run("record_setting", tx, setting=SALT, value=Jsonb(salt))
                mine, keys = values_of(settings, salt), secrets_of(secrets, salt=salt)
            self.secrets = keys
            # Settings change only when no other process runs; a secret's
            # record follows its latest compatible process (a rotation).
            for name, value in {**mine, **keys}.items():
                if stored.get(name, _ABSENT) != value and (name in keys or not others):
                    await self.db.run("record_setting", tx, setting=name, value=Jsonb(value))
            await self.db.run("register_process", tx, id=self.id, kind=self.kind,
                              host=socket.gethostname(), pid=os.getpid(), secrets=Jsonb(keys))
        for change in changed:
            log.warning("%s changes (no other process runs: recorded): %s",
                        change.changed(), _implied(change.name))
        if not recorded:
            log.info("deployment settings recorded by this first start")
        return changed

    async def beat(self) -> None:
        """Say this process runs (every BEAT_SECONDS, runtime.py). One that
        was forgotten meanwhile (silent for HEARD_SECONDS: paused, cut off
        from PostgreSQL) joins again, compared as at its start: if another
        process recorded other settings while it was gone, it stops, and
        never runs beside them (issue 63)."""
        if await self.db.run("beat_process", id=self.id) or self.joined is None:
            return
        log.warning("this %s was not heard from for %.0f s and was forgotten: it joins "
                    "the deployment again", self.kind, HEARD_SECONDS)
        try:
            await self.join(*self.joined)
        except DeploymentConflict as exc:
            self.refused(f"{exc} (this {self.kind} was forgotten while silent, and "
                         "stops)")

    async def leave(self) -> None:
        await self.db.run("leave_deployment", id=self.id)


def _refuse_incompatible(keys: dict[str, Any], others: list[Row]) -> None:
    """A process runs with secrets this one and it do not both accept."""
    for other in others:
        theirs = other["secrets"] or {}
        for name, record in keys.items():
            if name in theirs and not compatible(record, theirs[name]):
                raise DeploymentConflict(_refusal(Difference(name, None, None), [other]))


def _stop(line: str, pid: int) -> None:
    """A process refused on rejoining: one line, then SIGTERM (a clean stop)."""
    log.error("%s", line)
    os.kill(pid, signal.SIGTERM)


@contextlib.asynccontextmanager
async def one_shot(db: Database, settings: Settings, secrets: Secrets | None,
                   known: set[str]) -> AsyncIterator[None]:
    """A one-shot command's run: its settings compared with the recorded
    ones (`check`), which no process may change until it ends (it holds
    their lock's shared side; a start that would record a change is refused
    meanwhile), so it never acts on settings the deployment has left."""
    held, let_go = await db.hold(), False
    try:
        await db.fetch("share_settings_in_use", held)
        try:
            await check(db, settings, secrets, known)
            yield
        finally:
            await db.fetch("settings_no_longer_in_use", held)
            let_go = True
    finally:
        await db.release(held, discard=not let_go)  # (closing a session lets go too)


def _field(name: str) -> str:
    return name.removeprefix("LAURELS_").lower()  # LAURELS_TIE_POLICY -> tie_policy


async def unset_recorded(db: Database, settings: Settings) -> dict[str, Any]:
    """The shared settings a one-shot command's environment leaves unset, as
    the deployment recorded them (field -> value): the command runs with
    them (CONTRACT.md: an operator's shell need not carry them all). A
    webhook URL, recorded masked, is not taken: one-shot commands send
    nothing, and what they enqueue follows the deployment's record."""
    stored = {r["name"]: r["value"] for r in await db.fetch("recorded_settings")}
    recorded = _with_fixed(stored)
    out: dict[str, Any] = {}
    for name in SHARED:
        field = _field(name)
        if field in settings.model_fields_set or name not in recorded or name in SECRET_URLS:
            continue
        kind: TypeAdapter[Any] = TypeAdapter(Settings.model_fields[field].annotation or Any)
        out[field] = kind.validate_python(recorded[name])
    return out


async def check(db: Database, settings: Settings, secrets: Secrets | None,
                known: set[str]) -> None:
    """A one-shot command's comparison: it never records; with a value it
    sets other than the recorded one (of the secrets it knows) it stops
    (the shared settings it leaves unset it took: `unset_recorded`)."""
    await refuse_unknown_zone(db, settings.time_zone)
    stored = {r["name"]: r["value"] for r in await db.fetch("recorded_settings")}
    recorded, salt = _with_fixed(_upgraded(stored)), stored.get(SALT)
    keys = secrets_of(secrets, known, salt) if secrets is not None else {}
    for name, value in {**values_of(settings, salt), **keys}.items():
        theirs = recorded.get(name, _ABSENT)
        if theirs is _ABSENT or (name in SECRET_URLS
                                 and _field(name) not in settings.model_fields_set):
            continue
        if name in keys:  # the secret it signs with is one the deployment accepts
            record = theirs if isinstance(theirs, dict) else {"current": None, "accepts": []}
            agreed = value["current"] in (record["current"], *record["accepts"])
        else:
            agreed = theirs == value
        if not agreed:
            change = Difference(name, theirs, value)
            raise DeploymentConflict(f"{change.said()}: a one-shot command runs with the "
                                     "deployment's settings; set it as the running "
                                     "processes have it")


async def recorded_secrets(db: Database) -> set[str]:
    """The secrets (Secrets attribute names) the deployment has recorded."""
    rows = await db.fetch("recorded_settings")
    return {SECRETS[r["name"]] for r in rows
            if r["name"] in SECRETS and (r["value"] or {}).get("current")}


_ABSENT = object()


async def refuse_unknown_zone(db: Database, zone: str) -> None:
    """A zone Python knows but PostgreSQL's time zone data does not (an
    older server): the two would disagree on local dates, so it stops."""
    row = await db.fetch_one("time_zone_known", zone=zone)
    if not (row and row["known"]):
        raise DeploymentConflict(
            f"LAURELS_TIME_ZONE {zone} is not in PostgreSQL's time zone data "
            "(pg_timezone_names): update the server's tzdata or choose another zone")


def _with_fixed(recorded: dict[str, Any]) -> dict[str, Any]:
    """The recorded settings, with a fixed one's default where a deployment
    recorded before it existed does not name it."""
    if not recorded:
        return recorded
    return {**FIXED, **recorded}


def _refuse_fixed(recorded: dict[str, Any], mine: dict[str, Any]) -> None:
    """A fixed setting other than the recorded one: refused, whoever runs."""
    for name in FIXED:
        if name in recorded and recorded[name] != mine[name]:
            change = Difference(name, recorded[name], mine[name])
            raise DeploymentConflict(
                f"{change.said()}: it is fixed at the deployment's first start (every "
                f"season's name and boundaries depend on it); start with {name}="
                f"{_shown(change.recorded)}")


def _refusal(change: Difference, others: list[dict[str, Any]]) -> str:
    who = others[0]
    more = f" and {len(others) - 1} more" if len(others) > 1 else ""
    return (f"{change.said()}, and the deployment runs ({who['kind']} on {who['host']}, "
            f"pid {who['pid']}{more}): start every process with the same settings, or stop "
            "them all to change it")


def _implied(name: str) -> str:
    if name in SHARED:
        return SHARED[name][1]
    return "the other processes must be given the new secret"
