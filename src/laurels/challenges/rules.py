"""A challenge as a value (CONTRACT.md, "Challenges: boards with a start and
an end"): the rules of its definition (a PUT's body, checked against what
it was), its status at an instant, and its shape in the API. Pure: the
registry, its lock and its standings are challenges/definitions.py's and
challenges/standings.py's.

What may change of a challenge that exists: anything before it starts;
once it has started only its title, its rewards (until it is decided) and
a later `ends_at` (until it ends). Anything else is `409
challenge_conflict`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from laurels.core import challenge_shapes as shapes
from laurels.core.errors import DomainError
from laurels.core.registry import METRICS, Metric
from laurels.core.seasons import BOARD_RE, GLOBAL
from laurels.core.validation import unknown_field
from laurels.db import Row

CHALLENGE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
TITLE_MAX = 200
REWARD_MAX = 64
REWARDS_MAX = 100
MAX_SIZE = 1_000_000
LONGEST = timedelta(days=92)
FIELDS = ("title", "board", "metric", "starts_at", "ends_at", "join", "max_size", "rewards",
          "notify", "grace_seconds")
Status = Literal["upcoming", "active", "ended"]
STATUSES: tuple[Status, ...] = ("upcoming", "active", "ended")
Join = Literal["open", "required"]


@dataclass(frozen=True)
class Reward:
    first: int  # `from`
    last: int  # `to`
    reward: str

    def shape(self) -> shapes.Reward:
        return {"from": self.first, "to": self.last, "reward": self.reward}


@dataclass(frozen=True)
class Challenge:
    challenge_id: str
    title: str
    board: str
    metric: Metric
    starts_at: datetime
    ends_at: datetime
    join: Join
    max_size: int | None
    rewards: tuple[Reward, ...]
    notify: bool
    grace_seconds: int
    decided: bool = False

    @classmethod
    def from_row(cls, row: Row) -> Challenge:
        return cls(row["challenge_id"], row["title"], row["board"], row["metric"],
                   row["starts_at"], row["ends_at"], row["join_rule"], row["max_size"],
                   tuple(Reward(r["from"], r["to"], r["reward"]) for r in row["rewards"]),
                   bool(row["notify"]), int(row["grace_seconds"]),
                   row["decided_at"] is not None)

    def status(self, now: datetime) -> Status:
        if now < self.starts_at:
            return "upcoming"
        return "active" if now < self.ends_at else "ended"

    @property
    def decides_at(self) -> datetime:
        return self.ends_at + timedelta(seconds=self.grace_seconds)

    @property
    def label(self) -> str:
        """How its notifications name it where a season's name would go."""
        return f"challenge:{self.challenge_id}"

    def reward_of(self, rank: int | None) -> str | None:
        for r in self.rewards:
            if rank is not None and r.first <= rank <= r.last:
                return r.reward
        return None

    def row(self) -> dict[str, Any]:
        """Its definition as the statements take it."""
        return {"challenge_id": self.challenge_id, "title": self.title, "board": self.board,
                "metric": self.metric, "starts_at": self.starts_at, "ends_at": self.ends_at,
                "join_rule": self.join, "max_size": self.max_size,
                "rewards": [r.shape() for r in self.rewards], "notify": self.notify,
                "grace_seconds": self.grace_seconds}

    def shape(self, now: datetime, participants: int) -> shapes.Challenge:
        return {"challenge_id": self.challenge_id, "title": self.title, "board": self.board,
                "metric": self.metric, "starts_at": utc(self.starts_at),
                "ends_at": utc(self.ends_at), "join": self.join, "max_size": self.max_size,
                "participants": participants, "rewards": [r.shape() for r in self.rewards],
                "status": self.status(now), "decided": self.decided, "notify": self.notify,
                "grace_seconds": self.grace_seconds}


def utc(at: datetime) -> str:
    """An instant as the API writes it."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def check_id(challenge_id: str) -> str:
    if not CHALLENGE_ID.fullmatch(challenge_id):
        raise DomainError("validation_error",
                          f"challenge_id must match ^{CHALLENGE_ID.pattern}$")
    return challenge_id


def check_status(status: str | None) -> Status | None:
    if status is None:
        return None
    if status not in STATUSES:
        raise DomainError("validation_error", "status must be upcoming, active or ended")
    return status


def _bad(detail: str) -> DomainError:
    return DomainError("validation_error", detail)


def _instant(body: dict[str, Any], field: str) -> datetime:
    raw = body.get(field)
    if not isinstance(raw, str):
        raise _bad(f"{field} is required: an RFC 3339 instant with an offset")
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise _bad(f"{field} must be an RFC 3339 instant with an offset") from None
    if at.tzinfo is None:
        raise _bad(f"{field} needs an offset (e.g. Z)")
    return at


def _int(body: dict[str, Any], field: str, low: int, high: int, default: int | None
         ) -> int | None:
    raw = body.get(field, default)
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
        raise _bad(f"{field} must be an integer from {low} to {high}")
    return raw


def _rewards(raw: Any) -> tuple[Reward, ...]:
    if not isinstance(raw, list) or len(raw) > REWARDS_MAX:
        raise _bad(f"rewards must be a list of at most {REWARDS_MAX} ranges")
    out = []
    for item in raw:
        if not isinstance(item, dict) or set(item) != {"from", "to", "reward"}:
            raise _bad('each reward must be {"from", "to", "reward"}')
        first, last, name = item["from"], item["to"], item["reward"]
        if (isinstance(first, bool) or isinstance(last, bool) or not isinstance(first, int)
                or not isinstance(last, int) or not 1 <= first <= last <= MAX_SIZE):
            raise _bad("a reward's ranks need 1 <= from <= to <= 1000000")
        if not isinstance(name, str) or not 1 <= len(name) <= REWARD_MAX:
            raise _bad(f"a reward is 1 to {REWARD_MAX} characters")
        out.append(Reward(first, last, name))
    out.sort(key=lambda r: r.first)
    for a, b in itertools.pairwise(out):
        if b.first <= a.last:
            raise _bad("reward ranges must not overlap")
    return tuple(out)


def parse_definition(challenge_id: str, body: dict[str, Any], grace_max: int) -> Challenge:
    """A PUT's body as a challenge: every field checked, the defaults filled
    in (`board` global, `metric` points, `join` open, `notify` false,
    `grace_seconds` 0)."""
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise _bad(unknown_field(unknown[0]))
    title = body.get("title")
    if not isinstance(title, str) or not 1 <= len(title.strip()) <= TITLE_MAX:
        raise _bad(f"title is required: 1 to {TITLE_MAX} characters")
    board = body.get("board", GLOBAL)
    if not isinstance(board, str) or (board != GLOBAL and not BOARD_RE.fullmatch(board)):
        raise _bad(f"board must be {GLOBAL} or a tag kind:value matching ^{BOARD_RE.pattern}$")
    metric = body.get("metric", "points")
    if metric not in METRICS:
        raise _bad("metric must be points, completions or best")
    starts_at, ends_at = _instant(body, "starts_at"), _instant(body, "ends_at")
    if not starts_at < ends_at:
        raise _bad("starts_at must be before ends_at")
    if ends_at - starts_at > LONGEST:
        raise _bad("a challenge lasts at most 92 days")
    join = body.get("join", "open")
    if join not in ("open", "required"):
        raise _bad("join must be open or required")
    max_size = _int(body, "max_size", 1, MAX_SIZE, None)
    if max_size is not None and join != "required":
        raise _bad("max_size needs join: required")
    notify = body.get("notify", False)
    if not isinstance(notify, bool):
        raise _bad("notify must be true or false")
    grace = _int(body, "grace_seconds", 0, grace_max, 0)
    return Challenge(challenge_id, title.strip(), board, metric, starts_at, ends_at, join,
                     max_size, _rewards(body.get("rewards", [])), notify, grace or 0)


def check_change(was: Challenge, new: Challenge, now: datetime, joined: int) -> None:
    """Whether `was` may become `new` at `now` (`challenge_conflict` if not)."""
    new = replace(new, decided=was.decided)
    if was.decided and new != replace(was, title=new.title):
        raise DomainError("challenge_conflict",
                          f"challenge {was.challenge_id} is decided: only its title may change")
    if now >= was.starts_at:
        allowed = replace(was, title=new.title, rewards=new.rewards, ends_at=new.ends_at)
        if new != allowed:
            ended = now >= was.ends_at
            raise DomainError("challenge_conflict",
                              f"challenge {was.challenge_id} has "
                              f"{'ended' if ended else 'started'}: only its title, "
                              f"{'and rewards' if ended else 'rewards and a later ends_at'} "
                              "may change")
        if new.ends_at != was.ends_at and (now >= was.ends_at or new.ends_at < was.ends_at):
            raise DomainError("challenge_conflict",
                              "ends_at may only move later, and only before the challenge ends")
    if new.max_size is not None and new.max_size < joined:
        raise DomainError("challenge_conflict",
                          f"max_size {new.max_size} is below the {joined} who joined")
