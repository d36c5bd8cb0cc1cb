"""The live path of one process, as one typed object: who hears what, in
which order (docs/design.md, "The live leg").

    a hint (apply.lua's reply, publish_hint, or the subscription)
      -> changes       the notifier notes the season (rank events to read)
      -> caches        the API's page caches drop the season (api/caches.py),
                       first, so a page read after a hint is never the stale one
      -> streams       then the live streams (live/hub.py) send `refresh`
    a group change     -> group_changes (the hub's index, the group caches)
    a notification or a season's end, from the channel -> notes (the hub)

`wire()` (runtime.py) makes it and connects the hub; the API's state connects
its caches (api/state.py, `connect_caches`). Nothing subscribes itself in a
constructor: what hears the live path is read in those two places.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # hints.py builds on the board's base, which holds the signals
    from laurels.board.hints import Hint

HintListener = Callable[["Hint"], None]


@dataclass
class Signals:
    changes: list[HintListener] = field(default_factory=list)
    caches: list[HintListener] = field(default_factory=list)
    streams: list[HintListener] = field(default_factory=list)
    group_changes: list[Callable[[str], None]] = field(default_factory=list)
    notes: list[Callable[[dict[str, Any]], None]] = field(default_factory=list)

    def hint_caches(self, hint: Hint) -> None:
        """A change this process made: its caches hear at once (its streams
        hear the published hint come back, as every process's do)."""
        for changed in self.changes:
            changed(hint)
        for cache in self.caches:
            cache(hint)

    def hint(self, hint: Hint) -> None:
        """A hint heard on the subscription: the caches first, then the streams."""
        self.hint_caches(hint)
        for stream in self.streams:
            stream(hint)

    def group_changed(self, group_id: str) -> None:
        for changed in self.group_changes:
            changed(group_id)

    def note(self, message: dict[str, Any]) -> None:
        for note in self.notes:
            note(message)
