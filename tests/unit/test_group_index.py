"""The per-process member index that routes hints to groups (live/group_index.py)."""

from __future__ import annotations

import pytest

from laurels.live import group_index
from laurels.live.group_index import GroupIndex

pytestmark = pytest.mark.once


def test_a_hint_concerns_the_groups_of_the_learners_it_names() -> None:
    index = GroupIndex()
    for gid, members in (("a", [1, 2]), ("b", [2, 3]), ("c", [4])):
        index.watch(gid)
        index.load(gid, members, index.version(gid))
    assert index.concerned({"season": "s", "routes": [1]}) == {"a"}
    assert index.concerned({"season": "s", "routes": [2, 4]}) == {"a", "b", "c"}
    assert index.concerned({"season": "s", "routes": [9]}) == set()
    assert index.concerned({"season": "s"}) is None  # names nobody: every group
    assert index.concerned({"season": "s", "kind": "rebuilt", "routes": [1]}) is None
    assert index.is_member("b", 3) is True and index.is_member("b", 1) is False
    index.unwatch("b")  # nobody holds b any more: forgotten
    assert index.concerned({"season": "s", "routes": [3]}) == set()
    assert index.by_member == {1: ("a",), 2: ("a",), 4: ("c",)}
    assert index.is_member("b", 3) is None


def test_members_read_before_a_change_are_not_kept() -> None:
    index = GroupIndex()
    index.watch("a")
    version = index.version("a")
    index.changed("a")  # a change arrives while the members are being read
    index.load("a", [1], version)
    assert not index.is_loaded("a")
    assert index.concerned({"season": "s", "routes": [9]}) == {"a"}  # every hint meanwhile
    index.load("a", [1, 9], index.version("a"))
    assert index.concerned({"season": "s", "routes": [9]}) == {"a"}
    assert index.concerned({"season": "s", "routes": [5]}) == set()
    index.load("b", [5], index.version("b"))  # nobody watches b: not kept
    assert not index.is_loaded("b") and 5 not in index.by_member


def test_loaded_members_age_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A membership message lost with a failed publish costs at most
    LOADED_SECONDS: then the group gets every hint until reloaded."""
    now = [1000.0]
    monkeypatch.setattr(group_index.time, "monotonic", lambda: now[0])
    index = GroupIndex()
    index.watch("a")
    index.load("a", [1], index.version("a"))
    assert index.concerned({"season": "s", "routes": [9]}) == set()
    now[0] += group_index.LOADED_SECONDS
    assert index.concerned({"season": "s", "routes": [9]}) == {"a"}
    assert index.is_member("a", 1) is None
