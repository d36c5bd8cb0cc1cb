"""A Python client of the laurels HTTP API, sync (`Client`) and async
(`AsyncClient`), on httpx (docs/integrating.md).

    from laurels.client import Client

    with Client("https://laurels.example", token=INGEST_TOKEN) as laurels:
        laurels.post_completion("lesson-42:user-7", user_id=7, points=10)

Every call returns the JSON body the contract describes (a dict); a problem
answer raises a `LaurelsError` subclass carrying its contract `code`
(`NotFound`, `RateLimited`, ...). Connection errors, `429` and `503` are
retried with exponential backoff and jitter, honouring `Retry-After`, up to
`retries` times. Retrying a completion is safe: `completion_id` makes it
idempotent (a retried one answers `200 duplicate`, never counts twice), and
every other call of the API is idempotent too (PUTs, membership sets, void,
restore, suspend).

The methods are written once (`_Endpoints`) and return what the transport
returns: the body for `Client`, an awaitable of it for `AsyncClient`.
"""

from __future__ import annotations

import asyncio
import random
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

import httpx

BATCH_MAX = 1000  # items per POST /v1/completions/batch (the contract's limit)
RETRY_STATUSES = (429, 503)


class LaurelsError(Exception):
    """A problem answer (RFC 9457) of the API: `code` is the contract's."""

    code = "internal_error"

    def __init__(self, status: int, code: str, detail: str, retry_after: float | None = None,
                 body: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.retry_after = retry_after
        self.body = dict(body or {})


class ValidationError(LaurelsError):
    code = "validation_error"


class Unauthorized(LaurelsError):
    code = "unauthorized"


class Forbidden(LaurelsError):
    code = "forbidden"


class NotFound(LaurelsError):
    code = "not_found"


class NotRanked(LaurelsError):
    code = "not_ranked"


class CompletionConflict(LaurelsError):
    code = "completion_conflict"


class SeasonClosed(LaurelsError):
    code = "season_closed"


class UserErased(LaurelsError):
    code = "user_erased"


class PayloadTooLarge(LaurelsError):
    code = "payload_too_large"


class UnsupportedMediaType(LaurelsError):
    code = "unsupported_media_type"


class RateLimited(LaurelsError):
    code = "rate_limited"


class Rebuilding(LaurelsError):
    code = "rebuilding"


class Unavailable(LaurelsError):
    code = "unavailable"


ERRORS: dict[str, type[LaurelsError]] = {cls.code: cls for cls in (
    ValidationError, Unauthorized, Forbidden, NotFound, NotRanked, CompletionConflict,
    SeasonClosed, UserErased, PayloadTooLarge, UnsupportedMediaType, RateLimited, Rebuilding,
    Unavailable)}


def _error(resp: httpx.Response) -> LaurelsError:
    try:
        body = resp.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    code = str(body.get("code") or "internal_error")
    retry = resp.headers.get("retry-after")
    return ERRORS.get(code, LaurelsError)(
        resp.status_code, code, str(body.get("detail") or resp.reason_phrase),
        float(retry) if retry and retry.isdigit() else None, body)


@dataclass(frozen=True)
class Completion:
    """One completed tutorial, as the platform posts it."""

    completion_id: str
    user_id: int
    points: int
    completed_at: datetime | str | None = None  # RFC 3339 with an offset; None: now

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"completion_id": self.completion_id, "user_id": self.user_id,
                               "points": self.points}
        if self.completed_at is not None:
            at = self.completed_at
            out["completed_at"] = at.isoformat() if isinstance(at, datetime) else at
        return out


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None


def _seg(value: object) -> str:
    return quote(str(value), safe="")


@dataclass
class _Retry:
    retries: int = 5
    backoff: float = 0.2  # seconds before the first retry; doubles, with jitter
    max_backoff: float = 10.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, 60.0)
        base = min(self.max_backoff, self.backoff * 2.0 ** attempt)
        return base / 2 + random.uniform(0, base / 2)  # noqa: S311 (jitter, not secrecy)


class _Endpoints(ABC):
    """Every call of the API, written once; `_run` sends it."""

    @abstractmethod
    def _run(self, req: _Request) -> Any:
        """Send the request: the body (`Client`) or an awaitable of it."""

    # -- writes (the ingest token) ----------------------------------------------------------

    def post_completion(self, completion_id: str, user_id: int, points: int,
                        completed_at: datetime | str | None = None) -> Any:
        """Record one completion (idempotent on `completion_id`: safe to retry)."""
        body = Completion(completion_id, user_id, points, completed_at).body()
        return self._run(_Request("POST", "/v1/completions", json=body))

    def put_user(self, user_id: int, display_name: str | None = None,
                 visibility: str | None = None) -> Any:
        body = {k: v for k, v in (("display_name", display_name), ("visibility", visibility))
                if v is not None}
        return self._run(_Request("PUT", f"/v1/users/{user_id}", json=body))

    def put_group(self, group_id: str, name: str | None = None, access: str | None = None
                  ) -> Any:
        body = {k: v for k, v in (("name", name), ("access", access)) if v is not None}
        return self._run(_Request("PUT", f"/v1/groups/{_seg(group_id)}", json=body))

    def get_group(self, group_id: str) -> Any:
        return self._run(_Request("GET", f"/v1/groups/{_seg(group_id)}"))

    def delete_group(self, group_id: str) -> Any:
        return self._run(_Request("DELETE", f"/v1/groups/{_seg(group_id)}"))

    def change_members(self, group_id: str, add: Iterable[int] = (),
                       remove: Iterable[int] = ()) -> Any:
        return self._run(_Request("POST", f"/v1/groups/{_seg(group_id)}/members",
                                  json={"add": list(add), "remove": list(remove)}))

    # -- reads ------------------------------------------------------------------------------

    def board(self, season: str = "current", limit: int = 100, after: str | None = None
              ) -> Any:
        return self._run(_Request("GET", f"/v1/leaderboards/{_seg(season)}",
                                  _page(limit, after)))

    def around(self, season: str, user_id: int, radius: int = 5) -> Any:
        return self._run(_Request("GET", f"/v1/leaderboards/{_seg(season)}/users/{user_id}",
                                  {"radius": radius}))

    def friends(self, season: str, user_ids: Iterable[int]) -> Any:
        return self._run(_Request("POST", f"/v1/leaderboards/{_seg(season)}/ranks",
                                  json={"user_ids": list(user_ids)}))

    def group_board(self, group_id: str, season: str = "current", limit: int = 100,
                    after: str | None = None) -> Any:
        return self._run(_Request(
            "GET", f"/v1/groups/{_seg(group_id)}/leaderboards/{_seg(season)}",
            _page(limit, after)))

    def user_groups(self, user_id: int) -> Any:
        return self._run(_Request("GET", f"/v1/users/{user_id}/groups"))

    def completions(self, season: str, user_id: int, limit: int = 50,
                    after: str | None = None) -> Any:
        """Why a learner's score is what it is (their token, or admin)."""
        return self._run(_Request(
            "GET", f"/v1/leaderboards/{_seg(season)}/users/{user_id}/completions",
            _page(limit, after)))

    def notifications(self, user_id: int) -> Any:
        return self._run(_Request("GET", f"/v1/users/{user_id}/notifications"))

    def mark_read(self, user_id: int, ids: Iterable[int]) -> Any:
        return self._run(_Request("POST", f"/v1/users/{user_id}/notifications/read",
                                  json={"ids": list(ids)}))

    # -- admin (the admin token) ------------------------------------------------------------

    def erase_user(self, user_id: int) -> Any:
        return self._run(_Request("DELETE", f"/v1/users/{user_id}"))

    def void(self, completion_id: str, reason: str) -> Any:
        return self._run(_Request("POST", f"/v1/admin/completions/{_seg(completion_id)}/void",
                                  json={"reason": reason}))

    def restore(self, completion_id: str, reason: str | None = None) -> Any:
        return self._run(_Request(
            "POST", f"/v1/admin/completions/{_seg(completion_id)}/restore",
            json={"reason": reason} if reason else {}))

    def suspend(self, user_id: int, reason: str) -> Any:
        return self._run(_Request("POST", f"/v1/admin/users/{user_id}/suspend",
                                  json={"reason": reason}))

    def unsuspend(self, user_id: int, reason: str | None = None) -> Any:
        return self._run(_Request("POST", f"/v1/admin/users/{user_id}/unsuspend",
                                  json={"reason": reason} if reason else {}))

    def audit(self, limit: int = 100, after: str | None = None) -> Any:
        return self._run(_Request("GET", "/v1/admin/audit", _page(limit, after)))

    def rebuild(self, season: str) -> Any:
        return self._run(_Request("POST", f"/v1/admin/leaderboards/{_seg(season)}/rebuild"))

    def rebuild_status(self, rebuild_id: str) -> Any:
        return self._run(_Request("GET", f"/v1/admin/rebuilds/{_seg(rebuild_id)}"))

    def verify(self, season: str) -> Any:
        return self._run(_Request("GET", f"/v1/admin/leaderboards/{_seg(season)}/verify"))


def _page(limit: int, after: str | None) -> dict[str, Any]:
    return {"limit": limit, **({"after": after} if after else {})}


def _batches(items: Iterable[Completion | Mapping[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for item in items:
        batch.append(item.body() if isinstance(item, Completion) else dict(item))
        if len(batch) == BATCH_MAX:
            yield batch
            batch = []
    if batch:
        yield batch


# Which list of a body a paged read walks through.
_ITEMS = {"board": "entries", "group_board": "entries", "completions": "completions",
          "audit": "entries"}


class Client(_Endpoints):
    """The synchronous client (a thread-safe `httpx.Client` underneath)."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 10.0,
                 retries: int = 5, backoff: float = 0.2,
                 transport: httpx.BaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout,
                                 transport=transport)
        self.retry = _Retry(retries, backoff)

    def _run(self, req: _Request) -> Any:
        for attempt in range(self.retry.retries + 1):
            try:
                resp = self.http.request(req.method, req.path, params=req.params or None,
                                         json=req.json)
            except httpx.TransportError:
                if attempt == self.retry.retries:
                    raise
                time.sleep(self.retry.delay(attempt, None))
                continue
            if resp.status_code in RETRY_STATUSES and attempt < self.retry.retries:
                time.sleep(self.retry.delay(attempt, _error(resp).retry_after))
                continue
            if resp.status_code >= 400:
                raise _error(resp)
            return resp.json() if resp.content else None
        raise AssertionError("unreachable")

    def post_completions(self, items: Iterable[Completion | Mapping[str, Any]]
                         ) -> list[dict[str, Any]]:
        """Record many completions, 1,000 per request; every item's outcome,
        in order (`recorded`, `duplicate` or `rejected` with its error)."""
        out: list[dict[str, Any]] = []
        for batch in _batches(items):
            out += self._run(_Request("POST", "/v1/completions/batch",
                                      json={"completions": batch}))["results"]
        return out

    def pages(self, method: str, *args: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """Every item of a paged read (`board`, `group_board`, `completions`,
        `audit`), following `next` cursors: `for e in c.pages("board", "all")`."""
        after = None
        while True:
            body = getattr(self, method)(*args, **kwargs, after=after)
            yield from body[_ITEMS[method]]
            after = body.get("next")
            if not after:
                return

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Endpoints):
    """The asyncio client (an `httpx.AsyncClient` underneath): every method
    returns an awaitable of what `Client`'s returns."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 10.0,
                 retries: int = 5, backoff: float = 0.2,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout,
                                      transport=transport)
        self.retry = _Retry(retries, backoff)

    async def _run(self, req: _Request) -> Any:
        for attempt in range(self.retry.retries + 1):
            try:
                resp = await self.http.request(req.method, req.path,
                                               params=req.params or None, json=req.json)
            except httpx.TransportError:
                if attempt == self.retry.retries:
                    raise
                await asyncio.sleep(self.retry.delay(attempt, None))
                continue
            if resp.status_code in RETRY_STATUSES and attempt < self.retry.retries:
                await asyncio.sleep(self.retry.delay(attempt, _error(resp).retry_after))
                continue
            if resp.status_code >= 400:
                raise _error(resp)
            return resp.json() if resp.content else None
        raise AssertionError("unreachable")

    async def post_completions(self, items: Iterable[Completion | Mapping[str, Any]]
                               ) -> list[dict[str, Any]]:
        """Record many completions, 1,000 per request; every item's outcome."""
        out: list[dict[str, Any]] = []
        for batch in _batches(items):
            out += (await self._run(_Request("POST", "/v1/completions/batch",
                                             json={"completions": batch})))["results"]
        return out

    async def pages(self, method: str, *args: Any, **kwargs: Any
                    ) -> AsyncIterator[dict[str, Any]]:
        """Every item of a paged read, following `next` cursors:
        `async for e in c.pages("board", "all")`."""
        after = None
        while True:
            body = await getattr(self, method)(*args, **kwargs, after=after)
            for item in body[_ITEMS[method]]:
                yield item
            after = body.get("next")
            if not after:
                return

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()
