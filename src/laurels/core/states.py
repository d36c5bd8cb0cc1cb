"""The states the domain passes around, as types mypy checks (the tie policy
lives with the ranking rules, `ranking.TiePolicy`)."""

from __future__ import annotations

from typing import Literal

Visibility = Literal["public", "anonymous", "hidden"]
# per event, board.apply ("deferred": a correction while its board is rebuilt;
# "retry": a void whose fallback tie time may be stale, apply.lua "Ties")
ApplyResult = Literal["applied", "duplicate", "missing", "deferred", "retry"]
OutcomeStatus = Literal["recorded", "duplicate", "rejected"]  # per completion, ingest
RebuildStatus = Literal["running", "succeeded", "failed"]
