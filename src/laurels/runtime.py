"""Wiring: one object that owns the connections and the domain services."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis, RedisCluster

from laurels.board import Board
from laurels.board.rebuild import Rebuilder
from laurels.db import Database, migrate
from laurels.ingest import Ingestor
from laurels.keys import Keys
from laurels.learners import Learners
from laurels.lifecycle import Lifecycle
from laurels.notify import Notifier
from laurels.projector import Projector
from laurels.settings import Secrets, Settings
from laurels.verify import Verifier


def redis_client(url: str, cluster: bool) -> Any:
    options: dict[str, Any] = {"decode_responses": True, "socket_connect_timeout": 5,
                               "socket_timeout": 30, "health_check_interval": 15}
    if cluster:
        return RedisCluster.from_url(url, **options)
    return Redis.from_url(url, **options)


@dataclass
class Runtime:
    settings: Settings
    secrets: Secrets
    database_url: str
    redis_url: str

    def __post_init__(self) -> None:
        self.db = Database(self.database_url)
        self.redis: Redis = redis_client(self.redis_url, self.settings.redis_cluster)
        self.keys = Keys(self.settings.key_prefix, self.settings.tie_policy)
        self.board = Board(self.redis, self.keys, self.settings.tie_policy)
        self.lifecycle = Lifecycle(self.settings, self.db, self.board)
        self.rebuilder = Rebuilder(self.db, self.board, self.lifecycle)
        self.ingestor = Ingestor(self.settings, self.db, self.board, self.rebuilder)
        self.learners = Learners(self.db, self.board, self.lifecycle)
        self.projector = Projector(self.db, self.board, self.rebuilder, self.lifecycle)
        self.verifier = Verifier(self.db, self.board, self.projector, self.lifecycle)
        self.notifier = Notifier(self.db, self.board)
        self.lifecycle.on_finalized.append(self.notifier.season_final)
        self.lifecycle.after_finalized.append(self.notifier.announce_final)
        self.projector.notifier = self.notifier

    async def open(self, run_migrations: bool = True) -> None:
        if run_migrations:
            await migrate(self.database_url)
        await self.db.open()

    async def close(self) -> None:
        await self.rebuilder.cancel_all()
        await self.db.close()
        await self.redis.aclose()
