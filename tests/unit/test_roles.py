"""The board's roles (board/roles.py): the Board is every one of them, and a
service runs against a fake of only the role it takes (issue 41)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from laurels.board import Board, Entry, Top
from laurels.board import roles as roles_module
from laurels.board.roles import Reader
from laurels.core.seasons import parse_season
from laurels.process.settings import Settings
from laurels.reads.boards import Reads
from laurels.reads.privacy import Privacy

pytestmark = pytest.mark.once


def roles() -> list[type]:
    return [c for _, c in inspect.getmembers(roles_module, inspect.isclass)
            if getattr(c, "_is_protocol", False) and c.__module__ == roles_module.__name__]


def test_the_board_plays_every_role_with_the_same_signatures() -> None:
    found = roles()
    assert len(found) >= 12
    for role in found:
        for name, member in vars(role).items():
            if name.startswith("_") or not callable(member):
                continue
            ours = getattr(Board, name)
            # The board's coroutines are wrapped (StoreUnavailable): compare the originals.
            ours = inspect.unwrap(ours)
            assert list(inspect.signature(ours).parameters) == list(
                inspect.signature(member).parameters), f"{role.__name__}.{name}"


class FakeReader:
    """A board that is only a Reader: a page of the top, no neighbourhoods."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self.calls: list[Any] = []

    async def top(self, season: Any, limit: int, after: Any = None) -> Top:
        self.calls.append((season.name, limit, after))
        return Top(len(self.entries), self.entries[:limit])

    async def around(self, season: Any, user_id: int, radius: int) -> None:
        return None


async def test_reads_run_against_a_fake_reader(tmp_path: Any) -> None:
    """Reads' boundary check against a fake board: no Redis, no PostgreSQL.
    A learner PostgreSQL hides is left out whatever the board says; an
    anonymous one is shown unnamed."""
    board = FakeReader([Entry(1, 7, "Ada", "public", 30), Entry(2, 8, "Bo", "public", 20),
                        Entry(3, 9, "Cy", "anonymous", 10)])
    fake: Reader = board
    privacy = Privacy(None)  # type: ignore[arg-type]  # never refreshed here
    privacy.note(8, "hidden")
    settings = Settings(data_dir=tmp_path, database_url="postgresql://x@127.0.0.1/x",
                        redis_url="redis://127.0.0.1:1/0")
    reads = Reads(settings, None, fake, None, None, privacy)  # type: ignore[arg-type]
    week = parse_season("2026-W49", zone="UTC")
    page = await reads.top(week, 10)
    assert board.calls == [("2026-W49", 10, None)]
    assert [(e["rank"], e["user_id"], e["display_name"]) for e in page["entries"]] == [
        (1, 7, "Ada"), (3, None, "Anonymous")]
    assert (page["season"], page["total"], page["next"]) == ("2026-W49", 3, None)
