"""What the model machines on the real stores share (tests/integration/
test_model_kinds.py, test_model_challenges.py): a service graph opened on
the test's stores in an event loop of the machine's own, a clean start
(every table emptied, every key of the deployment unlinked), each step run
then checked with the steps so far noted on failure, and the teardown."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import note
from hypothesis.stateful import RuleBasedStateMachine, initialize

from laurels.process.settings import Secrets, Settings
from laurels.runtime import Runtime
from tests.helpers import ADMIN, INGEST, USER_SECRET
from tests.invariants import reset_tables


class StoreMachine(RuleBasedStateMachine):
    cfg: Settings

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.rt = Runtime(self.cfg, Secrets(INGEST, ADMIN, USER_SECRET),
                          self.cfg.database_url or "", self.cfg.redis_url or "")
        self.loop.run_until_complete(self.rt.open(run_migrations=False))
        self.log: list[str] = []

    @initialize()
    def start(self) -> None:
        async def go() -> None:
            async with self.rt.db.connection() as conn:
                await reset_tables(conn)
            async for key in self.rt.redis.scan_iter(match=f"{self.rt.keys.prefix}:*"):
                await self.rt.redis.unlink(key)
        self.loop.run_until_complete(go())

    async def check(self) -> None:
        raise NotImplementedError

    def _do(self, what: str, work: Any) -> None:
        """Run a step (`work`), then `check`; on a failure, the steps so far."""
        self.log.append(what)

        async def go() -> None:
            try:
                await work()
                await self.check()
            except BaseException:
                note("\n".join(self.log))
                raise

        self.loop.run_until_complete(go())

    def teardown(self) -> None:
        self.loop.run_until_complete(self.rt.close())
        self.loop.close()
