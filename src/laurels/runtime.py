"""Wiring: the one function that builds the service graph, and the runtime
that owns the store connections it runs on.

`wire()` builds every domain service from settings and two store clients;
`Runtime` opens those clients and is what the CLI, the app and the tests
use. A test that needs another tie policy, key prefix or clock calls
`derive()`, which runs the same `wire()` on the same connections.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis

from laurels.board import Board, HintSubscription
from laurels.board.connection import connect
from laurels.board.keys import Keys
from laurels.board.signals import Signals
from laurels.board.trust import Unproven
from laurels.challenges.decision import Decider
from laurels.challenges.definitions import Challenges
from laurels.challenges.erasure import ChallengeErasure
from laurels.challenges.standings import Standings
from laurels.challenges.verify import Checker
from laurels.core.errors import StoreUnavailable
from laurels.core.seasons import WINDOW_DAYS
from laurels.db import Database, migrate
from laurels.ingest.corrections import Corrections
from laurels.ingest.record import Clock, Ingestor
from laurels.leagues.cohorts import Leagues
from laurels.leagues.erasure import LeagueErasure
from laurels.learners.erasure import Erasure
from laurels.learners.profiles import Learners
from laurels.lifecycle.board_kinds import BoardKinds
from laurels.lifecycle.closing import Lifecycle
from laurels.lifecycle.history import Partitions
from laurels.lifecycle.teams import Teams
from laurels.lifecycle.windows import Windows
from laurels.live.hub import Hub
from laurels.live.notifications import Notifications
from laurels.live.notifier import Notifier
from laurels.live.webhooks import Deliveries, Webhooks
from laurels.process.deployment import BEAT_SECONDS, Membership
from laurels.process.settings import Secrets, Settings
from laurels.process.supervisor import Loop, every
from laurels.projection.catchup import CatchUp
from laurels.projection.epoch import EpochWatch
from laurels.projection.heal import Healer
from laurels.projection.projector import Projector
from laurels.projection.rebuild import Rebuilder
from laurels.projection.team_verify import TeamChecker
from laurels.projection.verify import Verifier
from laurels.reads.boards import Reads
from laurels.reads.groups import Groups
from laurels.reads.privacy import REFRESH_SECONDS, Privacy
from laurels.reads.teams import TeamReads

log = logging.getLogger("laurels.runtime")
PROVEN_WAIT_SECONDS = 60.0  # a one-shot command waits this long for a Redis being repaired


def redis_client(url: str, cluster: bool, settings: Settings | None = None) -> Any:
    """A Redis client whose requests queue for a connection (board/connection.py)."""
    if settings is None:
        return connect(url, cluster)
    return connect(url, cluster, settings.redis_pool_size, settings.pool_timeout_seconds)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Services:
    """Every domain service of one configuration, on shared store clients."""

    settings: Settings
    db: Database
    redis: Redis
    keys: Keys
    board: Board
    lifecycle: Lifecycle
    erasure: Erasure
    rebuilder: Rebuilder
    healer: Healer
    notifier: Notifier
    projector: Projector
    ingestor: Ingestor
    learners: Learners
    verifier: Verifier
    reads: Reads
    groups: Groups
    partitions: Partitions
    leagues: Leagues
    challenges: Challenges
    challenge_standings: Standings
    decider: Decider
    challenge_checker: Checker
    corrections: Corrections
    notifications: Notifications
    subscription: HintSubscription
    signals: Signals
    hub: Hub
    privacy: Privacy
    epoch: EpochWatch
    secrets: Secrets
    webhooks: Webhooks | None  # with LAURELS_WEBHOOK_URL
    deliveries: Deliveries  # the operator's view of them, with or without a URL
    board_kinds: BoardKinds
    windows: Windows  # rolling windows moved at local midnight
    teams: Teams  # team kinds; who counts in which team on the boards Redis keeps
    team_reads: TeamReads
    team_checker: TeamChecker  # team boards against PostgreSQL (`verify --all`)
    # This process among the deployment's (a serve or projector the CLI
    # started: process/deployment.py); it says it runs every 2 s.
    membership: Membership | None = None

    async def ping(self) -> None:
        """Return once PostgreSQL and Redis both answer; raise if either does not."""
        await self.db.ping()
        await self.board.ping()

    async def until_proven(self, wait_seconds: float = PROVEN_WAIT_SECONDS) -> None:
        """A one-shot command's start: return once Redis is proven (a repair
        made here if no running process makes it: the epoch watch's check
        skips while another holds its lock); raise Unproven after
        `wait_seconds`."""
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                await self.board.trust.check()
                return
            except Unproven:
                if time.monotonic() > deadline:
                    raise
            await self.epoch.check()
            await asyncio.sleep(0.25)

    async def proven(self) -> None:
        """Return when the Redis servers are proven to hold what PostgreSQL
        says (not a restart or failover still being repaired); else raise
        Unproven (board/trust.py)."""
        await self.board.trust.check()

    def derive(self, clock: Clock | None = None, **overrides: Any) -> Services:
        """The same graph with other settings (or clock), on the same connections."""
        return wire(self.settings.model_copy(update=overrides), self.secrets, self.db,
                    self.redis, clock)


def _connect_live(signals: Signals, notifier: Notifier, hub: Hub) -> None:
    """The live path: hints reach the caches (the API connects its own,
    api/state.py), then the hub's streams; notes and group changes the hub."""
    signals.changes.append(notifier.heard)
    signals.streams.append(hub.fan_out)
    signals.notes.append(hub.note)
    signals.group_changes.append(hub.group_changed)


def _challenges(settings: Settings, db: Database, board: Board, privacy: Privacy,
                clock: Clock) -> dict[str, Any]:
    """The challenges' services (challenges/): Services' fields of them."""
    challenges = Challenges(db, settings.late_grace_seconds, clock)
    return {"challenges": challenges,
            "challenge_standings": Standings(db, challenges, settings.tie_policy, privacy),
            "decider": Decider(db, board, settings.tie_policy, clock, settings.time_zone),
            "challenge_checker": Checker(db, settings.tie_policy)}


def _webhooks(settings: Settings, secrets: Secrets, db: Database,
              notifications: Notifications) -> Webhooks | None:
    """The deliveries' sender, with LAURELS_WEBHOOK_URL."""
    if settings.webhook_url is None:
        return None
    return Webhooks(db, notifications, settings.webhook_url, secrets.webhook_secret,
                    settings.webhook_timeout_seconds, concurrency=settings.webhook_concurrency)


def wire(settings: Settings, secrets: Secrets, db: Database, redis: Redis,
         clock: Clock | None = None) -> Services:
    """Settings, secrets and store clients -> the whole service graph."""
    keys = Keys(settings.key_prefix, settings.tie_policy)
    signals = Signals()  # the live path (board/signals.py), connected below
    board = Board(redis, keys, settings.tie_policy, signals, zone=settings.time_zone)
    lifecycle = Lifecycle(settings, db, board)
    board_kinds = BoardKinds(db, settings.time_zone, board)
    rebuilder = Rebuilder(db, board, lifecycle, settings.periods, board_kinds, clock or _now)
    healer = Healer(board, rebuilder, lifecycle, settings.periods, zone=settings.time_zone)
    notifier = Notifier(db, board, board_kinds)
    lifecycle.on_finalized.append(notifier.season_final)
    lifecycle.after_finalized.append(notifier.announce_final)
    projector = Projector(db, board, healer, lifecycle, periods=settings.periods,
                          kinds=board_kinds, clock=clock or _now)
    privacy = Privacy(db)
    subscription = HintSubscription(board)
    hub = Hub(subscription)
    _connect_live(signals, notifier, hub)
    reads = Reads(settings, db, board, healer, lifecycle, privacy, board_kinds, clock or _now)
    partitions = Partitions(db, lifecycle.archive_boards_of,
                            grace_seconds=settings.late_grace_seconds,
                            close_seasons=settings.close_seasons, tie_policy=settings.tie_policy,
                            windows=any(p in WINDOW_DAYS for p in settings.periods))
    teams = Teams(db, board)
    groups = Groups(db, board, reads, privacy, teams)
    notifications = Notifications(db, board_kinds)
    windows = Windows(db, board, settings.periods, board_kinds, clock or _now, rebuilder.run)
    epoch = EpochWatch(db, board, rebuilder,
                       CatchUp(db, board, projector, lifecycle, settings.periods, windows),
                       board_kinds)
    # Board reads wait while a server is doubted; a doubt is settled from
    # the servers and PostgreSQL's record (board/trust.py).
    board.trust.current, board.trust.recorded = board.fingerprint, epoch.recorded
    deliveries = Deliveries(db, settings)
    # What an erasure makes forget, in the order of the locks their statements
    # take (members, group, deliveries): erasure.Forgets.
    erasure = Erasure(settings, db, board, lifecycle)
    erasure.concerns = [LeagueErasure(db), ChallengeErasure(db), groups, notifications, deliveries]
    webhooks = _webhooks(settings, secrets, db, notifications)
    return Services(
        settings=settings, db=db, redis=redis, keys=keys, board=board, lifecycle=lifecycle,
        erasure=erasure,
        rebuilder=rebuilder, healer=healer, notifier=notifier, projector=projector,
        ingestor=Ingestor(settings, db, projector, partitions, clock or _now),
        partitions=partitions,
        learners=Learners(db, board, lifecycle, privacy, erasure, teams),
        verifier=Verifier(db, board, projector, lifecycle, settings.periods, windows),
        reads=reads, groups=groups, leagues=Leagues(settings, db, board, groups, privacy),
        corrections=Corrections(db, projector, lifecycle, settings.periods),
        notifications=notifications, subscription=subscription, hub=hub, signals=signals,
        privacy=privacy, epoch=epoch, secrets=secrets, webhooks=webhooks,
        deliveries=deliveries, board_kinds=board_kinds, windows=windows, teams=teams,
        team_reads=TeamReads(db, board, reads, teams),
        team_checker=TeamChecker(db, board, teams, windows, settings.periods),
        **_challenges(settings, db, board, privacy, clock or _now),
        # A serve's worker keeps its serve alive among the deployment's processes.
        membership=(Membership(db, "serve", settings.process_id, joined=(settings, secrets),
                               stops=settings.serve_pid) if settings.process_id else None),
    )


def background_loops(svc: Services, projector: bool = True, hints: bool = True
                     ) -> dict[str, Loop]:
    """The named loops a process runs under its supervisor: the hints
    subscription (API processes), the projector's work (unless another
    process does it), and webhook deliveries (every process with the URL)."""
    loops: dict[str, Loop] = {}
    if hints:  # an API process: hints for its streams and caches, privacy for its reads

        loops["hints"] = svc.subscription.run
        loops["privacy"] = every(REFRESH_SECONDS, svc.privacy.refresh)
        loops["outbox-flush"] = svc.projector.flush_loop  # the fast path's rows, in bulk
    if projector:

        async def seasons() -> None:
            await svc.partitions.ahead(datetime.now(UTC))  # this month's and the next
            await svc.healer.prepare()  # this week's board before its first completion
            await svc.lifecycle.finalize_due()
            await svc.partitions.seal()  # finalized weeks' ids out of the recording's index

        loops["projector"] = svc.projector.run
        loops["notifier"] = every(0.25, svc.notifier.consume)
        loops["erasures"] = every(10, svc.erasure.resume_erasures)
        loops["kind-drops"] = every(10, svc.board_kinds.drop_pending)  # keys a deletion left
        loops["seasons"] = every(10, seasons)
        loops["challenges"] = every(1, svc.decider.tick)  # decisions due, notifying ones
        loops["windows"] = every(1, svc.windows.tick)  # the days leaving rolling windows
        loops["outbox"] = every(5, svc.projector.measure_outbox)
        loops["epoch"] = svc.epoch.run
        if svc.settings.redis_url is None or svc.settings.redis_embedded:
            loops["private-files"] = every(60, svc.erasure.scrub_files)
        if svc.settings.leagues:
            loops["leagues"] = every(0.5, svc.leagues.tick)
        if svc.settings.retain_completions_days is not None:

            async def retire() -> None:
                await svc.partitions.retire(datetime.now(UTC),
                                            svc.settings.retain_completions_days)

            loops["retention"] = every(60, retire)
    if svc.membership is not None:
        loops["deployment"] = every(BEAT_SECONDS, svc.membership.beat)
    if svc.webhooks is not None:  # whoever has the URL sends (what anyone recorded)
        loops["webhooks"] = svc.webhooks.run
        loops["webhook-metrics"] = every(5, svc.webhooks.measure)
    return loops


class Runtime(Services):
    """The service graph plus the connections it owns (opened and closed here)."""

    def __init__(self, settings: Settings, secrets: Secrets, database_url: str,
                 redis_url: str) -> None:
        db = Database(database_url, max_size=settings.database_pool_size,
                      timeout_seconds=settings.pool_timeout_seconds, zone=settings.time_zone)
        redis = redis_client(redis_url, settings.redis_cluster, settings)
        super().__init__(**vars(wire(settings, secrets, db, redis)))
        self.database_url = database_url
        self.redis_url = redis_url

    async def open(self, run_migrations: bool = True) -> None:
        if run_migrations:
            await migrate(self.database_url)
        await self.db.open()
        try:
            await self.board.open()
            await self.epoch.load()  # untrusted until proven (board/trust.py)
        except StoreUnavailable as exc:
            # Redis may come later: reads and writes answer 503 until it does.
            log.warning("Redis does not answer yet: %s", exc)

    async def close(self) -> None:
        await self.rebuilder.cancel_all()
        await self.db.close()
        await self.board.close()
