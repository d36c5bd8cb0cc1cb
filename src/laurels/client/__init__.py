"""A Python client of the laurels HTTP API, sync (`Client`) and async
(`AsyncClient`), on httpx. The reference is docs/client.md.

    from laurels.client import Client

    with Client("https://laurels.example", token=INGEST_TOKEN) as laurels:
        laurels.post_completion("lesson-42:user-7", user_id=7, points=10)

Every call returns the JSON body the contract describes, typed as a
`TypedDict` (`Board`, `Neighbourhood`, ...: types.py). A problem answer
raises a `LaurelsError` subclass carrying its contract `code` (`NotFound`,
`RateLimited`, ...: core/errors.py). Connection errors, timeouts, `429`, `502`, `503` and
`504` are retried with exponential backoff and jitter, honouring
`Retry-After`, up to `retries` times; a service that stays unreachable or
unavailable raises `Unavailable` (with the transport error as `cause` when no
answer came). Retrying is safe: `completion_id` makes a completion idempotent
(a retried one answers `200 duplicate`, never counts twice), and every other
call of the API is idempotent too (PUTs, membership sets, void, restore,
suspend).

Each call is written once (`Endpoints`), as a function that builds its
request; `Call` turns it into a method of both clients: `Client().board()`
returns a `Board`, `AsyncClient().board()` a coroutine of one.

The package, one concern a module; every public name is here:

- `types`: the contract's values (`Literal`s) and bodies (`TypedDict`s);
- `league_types`: those of the league calls;
- `challenge_types`: those of the challenge calls;
- `team_types`: those of the team boards' calls;
- `errors`: `LaurelsError` and its subclasses, one per problem code, and the
  mapping of an error answer to its exception;
- `transport`: the request, sending it, retries, backoff, `Retry-After`;
- `calls`: `Call`, one call written once for both clients;
- `endpoints`: every call of the API, and `Completion`;
- `challenge_endpoints`: the challenges' calls, which `endpoints` takes in;
- `team_endpoints`: the team boards' calls, which `endpoints` takes in too;
- `wire`: how arguments go on the wire (`UNCHANGED`: a field left out);
- `clients`: `Client` and `AsyncClient`, batching and paging.
"""

from __future__ import annotations

from laurels.client.challenge_types import (
    Challenge,
    ChallengeAround,
    ChallengeBoard,
    ChallengeDefinition,
    ChallengeEntry,
    ChallengeMe,
    ChallengeNeighbor,
    Challenges,
    ChallengeStatus,
    Joined,
    JoinRule,
    LearnerChallenge,
    LearnerChallenges,
    Reward,
)
from laurels.client.clients import BATCH_MAX as BATCH_MAX
from laurels.client.clients import AsyncClient, Client
from laurels.client.endpoints import Completion
from laurels.client.errors import ERRORS as ERRORS
from laurels.client.errors import GATEWAY_STATUSES as GATEWAY_STATUSES
from laurels.client.errors import (
    ChallengeConflict,
    ChallengeEnded,
    ChallengeFull,
    CompletionConflict,
    Forbidden,
    KindConflict,
    LaurelsError,
    NotFound,
    NotRanked,
    PayloadTooLarge,
    RateLimited,
    Rebuilding,
    SeasonClosed,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
    UserErased,
    ValidationError,
)
from laurels.client.league_types import (
    CohortBoard,
    CohortList,
    CohortRef,
    League,
    LeagueEntry,
    LeagueHistory,
    LeagueOutcome,
    LeagueReason,
    LeagueRecord,
    LeagueResult,
    LeagueStanding,
    LeagueStatus,
    LeagueSummary,
    LeagueTier,
    LeagueZone,
)
from laurels.client.team_types import (
    Aggregate,
    LearnerTeam,
    LearnerTeams,
    TeamBoard,
    TeamEntry,
    TeamKind,
    TeamKindDefinition,
    TeamKinds,
)
from laurels.client.transport import MAX_RETRY_AFTER_SECONDS as MAX_RETRY_AFTER_SECONDS
from laurels.client.transport import RETRY_STATUSES as RETRY_STATUSES
from laurels.client.types import (
    Access,
    AuditAction,
    AuditEntry,
    AuditLog,
    BatchResult,
    Board,
    BoardKind,
    BoardKinds,
    CompletionRecord,
    CompletionResult,
    Correction,
    Deliveries,
    Delivery,
    DeliveryStatus,
    Entry,
    FriendEntry,
    FriendsBoard,
    Group,
    GroupBoard,
    GroupNeighbourhood,
    GroupRef,
    ItemError,
    KindBoard,
    KindBoards,
    LearnerBoard,
    LearnerBoards,
    LearnerCorrection,
    LearnerRestored,
    LearnerVoided,
    MarkedRead,
    Membership,
    Metric,
    Mismatch,
    Neighbor,
    Neighbourhood,
    Notification,
    NotificationKind,
    Notifications,
    Paged,
    Period,
    Rebuild,
    RebuildStarted,
    Refused,
    Rejected,
    Standing,
    Suspension,
    TiePolicy,
    User,
    UserCompletions,
    UserGroups,
    VerifyResult,
    Visibility,
)
from laurels.client.types import AttemptError as AttemptError
from laurels.client.wire import UNCHANGED, Unchanged

# Importable from here too, beyond `__all__` (`X as X` above): AttemptError,
# BATCH_MAX, ERRORS, GATEWAY_STATUSES, MAX_RETRY_AFTER_SECONDS, RETRY_STATUSES.
__all__ = [
    "UNCHANGED",
    "Access",
    "Aggregate",
    "AsyncClient",
    "AuditAction",
    "AuditEntry",
    "AuditLog",
    "BatchResult",
    "Board",
    "BoardKind",
    "BoardKinds",
    "Challenge",
    "ChallengeAround",
    "ChallengeBoard",
    "ChallengeConflict",
    "ChallengeDefinition",
    "ChallengeEnded",
    "ChallengeEntry",
    "ChallengeFull",
    "ChallengeMe",
    "ChallengeNeighbor",
    "ChallengeStatus",
    "Challenges",
    "Client",
    "CohortBoard",
    "CohortList",
    "CohortRef",
    "Completion",
    "CompletionConflict",
    "CompletionRecord",
    "CompletionResult",
    "Correction",
    "Deliveries",
    "Delivery",
    "DeliveryStatus",
    "Entry",
    "Forbidden",
    "FriendEntry",
    "FriendsBoard",
    "Group",
    "GroupBoard",
    "GroupNeighbourhood",
    "GroupRef",
    "ItemError",
    "JoinRule",
    "Joined",
    "KindBoard",
    "KindBoards",
    "KindConflict",
    "LaurelsError",
    "League",
    "LeagueEntry",
    "LeagueHistory",
    "LeagueOutcome",
    "LeagueReason",
    "LeagueRecord",
    "LeagueResult",
    "LeagueStanding",
    "LeagueStatus",
    "LeagueSummary",
    "LeagueTier",
    "LeagueZone",
    "LearnerBoard",
    "LearnerBoards",
    "LearnerChallenge",
    "LearnerChallenges",
    "LearnerCorrection",
    "LearnerRestored",
    "LearnerTeam",
    "LearnerTeams",
    "LearnerVoided",
    "MarkedRead",
    "Membership",
    "Metric",
    "Mismatch",
    "Neighbor",
    "Neighbourhood",
    "NotFound",
    "NotRanked",
    "Notification",
    "NotificationKind",
    "Notifications",
    "Paged",
    "PayloadTooLarge",
    "Period",
    "RateLimited",
    "Rebuild",
    "RebuildStarted",
    "Rebuilding",
    "Refused",
    "Rejected",
    "Reward",
    "SeasonClosed",
    "Standing",
    "Suspension",
    "TeamBoard",
    "TeamEntry",
    "TeamKind",
    "TeamKindDefinition",
    "TeamKinds",
    "TiePolicy",
    "Unauthorized",
    "Unavailable",
    "Unchanged",
    "UnsupportedMediaType",
    "User",
    "UserCompletions",
    "UserErased",
    "UserGroups",
    "ValidationError",
    "VerifyResult",
    "Visibility",
]
