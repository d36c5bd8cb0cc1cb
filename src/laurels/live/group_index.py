"""Which groups a hint concerns, per process (issue 13, "hints per group").

A process watches a group while it has a live stream of one of the group's
boards or a cached body of one (api/fast.py, `GroupCache`). For those groups
alone it keeps the members, indexed by member, so a hint that names the
learners who changed (`Hint["routes"]`, built by apply.lua, public learners
only) reaches only the groups that hold one of them: no per-listener work
for a completion in no watched group.

A hint without routes (an anonymous or hidden learner changed, a heal, a
rebuild, a big batch) concerns every watched group of its season. A group
whose members are not loaded yet, or changed since (a membership message on
the notification channel, `Board.publish_group_change`), gets every hint
until they are loaded again: routing may over-deliver, never miss.

A load races membership changes by version: members read before a change
arrived are not kept (`load` ignores them), so the group stays unloaded and
keeps getting every hint. Loaded members also age out after LOADED_SECONDS,
so a membership message lost with a failed publish is repaired by a reload.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from laurels.board import Hint

# Members loaded longer ago count as unloaded (every hint, and a reload): a
# membership message lost with a failed publish costs at most this long.
LOADED_SECONDS = 60.0


class GroupIndex:
    def __init__(self) -> None:
        self.members: dict[str, frozenset[int]] = {}  # loaded groups -> members
        self.by_member: dict[int, tuple[str, ...]] = {}  # member -> loaded groups
        self.watchers: dict[str, int] = {}  # watched group -> how many hold it
        self.versions: dict[str, int] = {}  # group -> membership changes seen
        self.loaded_at: dict[str, float] = {}

    def version(self, group_id: str) -> int:
        return self.versions.get(group_id, 0)

    def watch(self, group_id: str) -> None:
        self.watchers[group_id] = self.watchers.get(group_id, 0) + 1

    def unwatch(self, group_id: str) -> None:
        left = self.watchers.get(group_id, 0) - 1
        if left > 0:
            self.watchers[group_id] = left
            return
        self.watchers.pop(group_id, None)
        self._unload(group_id)

    def is_loaded(self, group_id: str) -> bool:
        at = self.loaded_at.get(group_id)
        return at is not None and time.monotonic() - at < LOADED_SECONDS

    def load(self, group_id: str, members: Iterable[int], version: int) -> None:
        """The group's members, as read at `version` (ignored if a change has
        arrived since, or nobody watches the group any more)."""
        if group_id not in self.watchers or self.version(group_id) != version:
            return
        self._unload(group_id)
        loaded = frozenset(members)
        self.members[group_id] = loaded
        self.loaded_at[group_id] = time.monotonic()
        for uid in loaded:
            self.by_member[uid] = (*self.by_member.get(uid, ()), group_id)

    def changed(self, group_id: str) -> None:
        """The group's membership (or access) changed: unloaded until read again."""
        self.versions[group_id] = self.version(group_id) + 1
        self._unload(group_id)

    def is_member(self, group_id: str, user_id: int) -> bool | None:
        """Whether the learner is in the group; None when not loaded here."""
        if not self.is_loaded(group_id):
            return None
        return user_id in self.members[group_id]

    def concerned(self, hint: Hint) -> set[str] | None:
        """The watched groups a hint may concern; None: every one of them."""
        routes = hint.get("routes")
        if routes is None or hint.get("kind") == "rebuilt":
            return None
        out = {g for g in self.watchers if not self.is_loaded(g)}  # not loaded: every hint
        for uid in routes:
            out.update(self.by_member.get(uid, ()))
        return out

    def _unload(self, group_id: str) -> None:
        self.loaded_at.pop(group_id, None)
        members = self.members.pop(group_id, None)
        if not members:
            return
        for uid in members:
            rest = tuple(g for g in self.by_member.get(uid, ()) if g != group_id)
            if rest:
                self.by_member[uid] = rest
            else:
                self.by_member.pop(uid, None)
