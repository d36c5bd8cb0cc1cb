"""Bodies of the boards of kinds (CONTRACT.md, "Boards of a course, a track
or a skill"), for /openapi.json: re-exported by api/schemas.py, beside
every other body's."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from laurels.core.registry import Metric


class BoardKindIn(BaseModel):
    """A board kind's definition; every field optional (CONTRACT.md, "Boards
    of a course, a track or a skill")."""

    model_config = ConfigDict(extra="forbid")  # for the schema: board_kinds refuses others

    title: str | None = Field(None, min_length=1, max_length=100)
    metric: Metric | None = None
    periods: list[Literal["week", "day", "month", "all", "7d", "30d"]] | None = None
    time_zone: str | None = Field(None, description="an IANA time zone name",
                                  examples=["Europe/Paris"])
    notify: bool | None = None


class BoardKindOut(BaseModel):
    kind: str
    title: str
    metric: Metric
    periods: list[Literal["week", "day", "month", "all", "7d", "30d"]]
    time_zone: str
    notify: bool
    created_at: str


class BoardKindsOut(BaseModel):
    kinds: list[BoardKindOut]


class LearnerBoardOut(BaseModel):
    board: str
    kind: str
    title: str
    metric: Metric
    season: str
    rank: int
    score: int
    total: int


class LearnerBoardsOut(BaseModel):
    boards: list[LearnerBoardOut]


class KindBoardOut(BaseModel):
    board: str
    learners: int


class KindBoardsOut(BaseModel):
    """A kind's boards with a counted completion in a season of the kind."""

    kind: str
    season: str
    boards: list[KindBoardOut]
    next: str | None = Field(description="the `after` of the next page; null: the last")
