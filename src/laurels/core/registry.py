"""Every kind laurels names in several places, declared once.

- Notification kinds, each with the type of its `data` (as stored; the API
  adds the mover's name to `overtaken` when it may be shown).
- Rank events: the fields apply.lua writes to a season's stream (and
  erase.lua rewrites), that the notifier reads.
- Webhook event types, and the names `LAURELS_WEBHOOK_EVENTS` takes.

Settings, the API's schemas and shapes, the notifier and the live hub take
these from here. What cannot import them is tested against them
(tests/unit/test_kinds.py): the database's CHECK constraints (db/schema.sql),
the client's types (client/types.py), the live page (api/static/app.js),
the Lua scripts' stream fields and the contract (docs/contract.md). Adding a
kind is a change those tests walk you through: docs/design.md, "Adding a
notification kind".
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict, get_args

Zone = Literal["promotion", "demotion"]  # a league cohort's (leagues/rules.py)

# -- board metrics ------------------------------------------------------------------------

# What a board of a kind ranks by (lifecycle/board_kinds.py; CONTRACT.md, "Boards of a
# course, a track or a skill"): the sum of the points of the completions
# that count, how many count, or the highest points of one.
Metric = Literal["points", "completions", "best"]
METRICS: tuple[Metric, ...] = get_args(Metric)

# -- notification kinds ---------------------------------------------------------------

NotificationKind = Literal["overtaken", "top10", "season_final", "league_zone",
                           "league_result", "challenge_result"]
NOTIFICATION_KINDS: tuple[NotificationKind, ...] = get_args(NotificationKind)


class Ranked(TypedDict):
    """`top10` (entered the top 10) and `season_final` (the final rank)."""

    rank: int
    score: int
    board: NotRequired[str]  # from a board of a kind: its tag (CONTRACT.md, notifications)
    challenge_id: NotRequired[str]  # from a challenge (`top10` only)
    metric: NotRequired[Metric]  # from a challenge on a board of a kind: what it ranks by


class Overtaken(TypedDict):
    """Passed by another learner, stored by id only: the name is resolved when
    it is read or sent (notifications.OvertakenShown: null and "Anonymous"
    for one who may not be named); an erasure of the mover drops the id
    (`scrub_notifications_about`)."""

    season: str
    by_user_id: NotRequired[int]
    board: NotRequired[str]  # from a board of a kind: its tag
    challenge_id: NotRequired[str]  # from a challenge
    metric: NotRequired[Metric]  # from a challenge on a board of a kind: what it ranks by


class LeagueZoneData(TypedDict):
    tier: str
    cohort_id: str
    zone: Zone
    rank: int


class LeagueResultData(TypedDict):
    tier: str
    cohort_id: str
    rank: int | None
    outcome: Literal["promoted", "demoted", "stayed"]
    new_tier: str


class ChallengeResultData(TypedDict):
    """A decided challenge's result for one ranked participant."""

    challenge_id: str
    title: str
    rank: int
    score: int
    reward: str | None
    board: NotRequired[str]  # a challenge on a board of a kind: its tag
    metric: NotRequired[Metric]  # ... and what it ranks by


PAYLOADS: dict[NotificationKind, type] = {
    "overtaken": Overtaken, "top10": Ranked, "season_final": Ranked,
    "league_zone": LeagueZoneData, "league_result": LeagueResultData,
    "challenge_result": ChallengeResultData}
# The kinds that name another learner (their name is resolved when shown).
NAMING: frozenset[NotificationKind] = frozenset({"overtaken"})
# The kinds written for every learner of a season at once (its end): announced
# on the notification channel by season, not one by one (live/hub.py).
FOR_EVERYONE: tuple[NotificationKind, ...] = ("season_final", "league_result",
                                              "challenge_result")

# -- rank events ----------------------------------------------------------------------


class RankEvent(TypedDict):
    """One entry of a season's rank-event stream, as apply.lua writes it (and
    erase.lua rewrites it without an erased learner): all strings."""

    seq: str  # the completion's
    uid: str  # the learner who moved, padded
    vis: str  # their visibility then
    rank: str  # their new rank
    score: str  # their new score
    top10: str  # '1' when they entered the top 10
    passed: str  # the learners they passed in the top 100, padded, comma-joined


RANK_EVENT_FIELDS: tuple[str, ...] = tuple(RankEvent.__annotations__)

# -- webhook events -------------------------------------------------------------------

WebhookType = Literal["notification.created", "season.finalized", "completion.voided",
                      "completion.restored", "user.erased", "challenge.decided"]
WEBHOOK_TYPES: tuple[WebhookType, ...] = get_args(WebhookType)
# What LAURELS_WEBHOOK_EVENTS may name: an event type, or one kind of
# notification (`notification.<kind>`).
WEBHOOK_EVENTS: tuple[str, ...] = (*WEBHOOK_TYPES,
                                   *(f"notification.{k}" for k in NOTIFICATION_KINDS))


# The data of the events written where their change commits (the lifecycle,
# corrections); `notification.created`'s is the notification as shown
# (notifications.WEBHOOK_DATA holds every type's).
class SeasonFinalized(TypedDict):
    season: str  # its period's name (`2026-W49`)
    period: Literal["week", "day", "month", "all", "7d", "30d"]  # (a window never closes)
    board: str  # `global`, or a board of a kind's tag


class CompletionCorrected(TypedDict):
    """`completion.voided` and `completion.restored`."""

    completion_id: str
    seq: int
    season: str  # its week's name
    user_id: int
    points: int
    status: Literal["voided", "recorded"]


class UserErased(TypedDict):
    user_id: int  # and nothing else about the learner


class Rewarded(TypedDict):
    user_id: int
    rank: int
    reward: str


class ChallengeDecided(TypedDict):
    """`challenge.decided`: who took part, and who won what (an erasure
    takes a learner out of `rewarded`, sent or not)."""

    challenge_id: str
    participants: int
    rewarded: list[Rewarded]
