"""Board kinds as an operator defines them (CONTRACT.md, "Boards of a
course, a track or a skill"): defaults, immutability but for the title
(`kind_conflict`), at most 100, a zone PostgreSQL knows, deletion; a field
left out of a later definition keeps what the kind has."""

from __future__ import annotations

import asyncio

import pytest

from laurels.core.errors import DomainError
from laurels.lifecycle.kind_rules import KINDS_MAX, check_board
from laurels.runtime import Runtime

pytestmark = pytest.mark.once


async def test_a_kind_is_defined_with_defaults_and_listed(rt: Runtime) -> None:
    kind, created = await rt.board_kinds.define("course", {})
    assert created
    assert (kind.kind, kind.title, kind.metric, kind.periods, kind.time_zone, kind.notify) == (
        "course", "Course", "points", ("week",), rt.settings.time_zone, False)
    track, _ = await rt.board_kinds.define("track", {
        "title": "Tracks", "metric": "completions", "periods": ["all", "week", "day"],
        "time_zone": "Europe/Paris", "notify": True})
    assert track.periods == ("week", "day", "all")  # week always, in the periods' order
    assert [k.kind for k in await rt.board_kinds.all()] == ["course", "track"]
    assert await rt.board_kinds.get("track") == track
    assert await rt.board_kinds.get("skill") is None


async def test_only_the_title_changes(rt: Runtime) -> None:
    first, _ = await rt.board_kinds.define("skill", {"metric": "completions",
                                                     "periods": ["week", "all"]})
    again, created = await rt.board_kinds.define("skill", {"metric": "completions"})
    assert not created and again == first  # nothing changed: the same kind
    renamed, created = await rt.board_kinds.define("skill", {"title": "Skills"})
    assert not created and renamed.title == "Skills" and renamed.metric == "completions"
    assert renamed.created_at == first.created_at
    for change in ({"metric": "points"}, {"periods": ["week"]}, {"time_zone": "Asia/Tokyo"},
                   {"notify": True}, {"title": "Other", "metric": "points"}):
        with pytest.raises(DomainError) as err:
            await rt.board_kinds.define("skill", change)
        assert err.value.code == "kind_conflict", change
        assert next(iter(change.keys() - {"title"})) in err.value.detail
    assert (await rt.board_kinds.get("skill")) == renamed  # a refusal changes nothing


@pytest.mark.parametrize("kind,body", [
    ("Course", {}), ("9lives", {}), ("a" * 33, {}), ("ok", {"metric": "sum"}),
    ("ok", {"periods": ["year"]}), ("ok", {"periods": "week"}), ("ok", {"periods": ["day", "day"]}),
    ("ok", {"time_zone": "Mars/Olympus"}), ("ok", {"time_zone": "../etc/passwd"}),
    ("ok", {"time_zone": 1}), ("ok", {"notify": "yes"}), ("ok", {"title": ""}),
    ("ok", {"title": "x" * 101}), ("ok", {"colour": "red"}),
])
async def test_bad_definitions_are_refused_and_change_nothing(rt: Runtime, kind: str,
                                                              body: dict[str, object]) -> None:
    with pytest.raises(DomainError) as err:
        await rt.board_kinds.define(kind, body)
    assert err.value.code == "validation_error"
    assert await rt.board_kinds.all() == []


async def test_at_most_a_hundred_kinds(rt: Runtime) -> None:
    await asyncio.gather(*[rt.board_kinds.define(f"k{i}", {}) for i in range(KINDS_MAX)])
    with pytest.raises(DomainError) as err:
        await rt.board_kinds.define("one-more", {})
    assert err.value.code == "validation_error" and str(KINDS_MAX) in err.value.detail
    await rt.board_kinds.define("k7", {"title": "Still retitled"})  # not a new kind
    assert await rt.board_kinds.delete("k0")
    assert not await rt.board_kinds.delete("k0")
    await rt.board_kinds.define("one-more", {})
    assert len(await rt.board_kinds.all()) == KINDS_MAX


def test_a_board_is_global_or_a_tag() -> None:
    assert check_board("global") == "global"
    assert check_board("course:python-101") == "course:python-101"
    for bad in ("", "course", "course:", ":x", "Course:x", "course:a/b", "course:" + "x" * 65):
        with pytest.raises(DomainError):
            check_board(bad)
