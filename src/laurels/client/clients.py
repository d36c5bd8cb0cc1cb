"""The two clients: `Client` (sync) and `AsyncClient` (asyncio). Both have
every call of endpoints.py and send it with transport.py; here are what is
their own: the httpx client underneath, batching (`post_completions`),
paging (`pages`), closing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, Literal, Self, overload

import httpx

from laurels.client.calls import P
from laurels.client.challenge_types import Challenge, ChallengeEntry
from laurels.client.endpoints import Completion, Endpoints
from laurels.client.league_types import LeagueRecord
from laurels.client.team_types import TeamEntry
from laurels.client.transport import R, Request, Retry, headers, send, send_async
from laurels.client.types import (
    AuditEntry,
    BatchBody,
    BatchResult,
    CompletionRecord,
    Delivery,
    Entry,
    Paged,
)

BATCH_MAX = 1000  # items per POST /v1/completions/batch (the contract's limit)


def batches(items: Iterable[Completion | Mapping[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for item in items:
        batch.append(item.body() if isinstance(item, Completion) else dict(item))
        if len(batch) == BATCH_MAX:
            yield batch
            batch = []
    if batch:
        yield batch


# Which list of a body a paged read walks through.
ITEMS: dict[str, str] = {"board": "entries", "group_board": "entries",
                         "completions": "completions", "audit": "entries",
                         "deliveries": "deliveries", "league_history": "results",
                         "challenges": "challenges", "challenge_board": "entries",
                         "team_board": "entries"}


def paged(method: str) -> str:
    if method not in ITEMS:
        raise ValueError(f"pages() walks {', '.join(ITEMS)}, not {method!r}")
    return ITEMS[method]


class Client(Endpoints):
    """The synchronous client (a thread-safe `httpx.Client` underneath, as
    `http`). `token`: the ingest token (the platform's backend), the admin
    token (operators) or a learner's JWT (their own reads); None for the
    public reads. `retries` more tries after the first, waiting `backoff`
    seconds before the first, doubling (with jitter, at most 10 s), or what
    `Retry-After` says (at most 60 s)."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 10.0,
                 retries: int = 5, backoff: float = 0.2,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(base_url=base_url, headers=headers(token), timeout=timeout,
                                 transport=transport)
        self.retry = Retry(retries, backoff)

    def _run(self, req: Request[R]) -> R:
        return send(self.http, self.retry, req)

    def _bind(self, build: Callable[P, Request[R]]) -> Callable[P, R]:
        """A call as a method of this client (calls.Call): it sends the request."""
        def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return self._run(build(*args, **kwargs))

        return call

    def post_completions(self, items: Iterable[Completion | Mapping[str, Any]]
                         ) -> list[BatchResult]:
        """Record any number of completions (`Completion`s or JSON items),
        1,000 per `POST /v1/completions/batch` (ingest token). Returns every
        item's result in order: a `CompletionResult` (recorded, duplicate) or
        a `Rejected` with its error; items are independent. Raises
        `ValidationError` (a malformed batch) and what every call raises."""
        out: list[BatchResult] = []
        for batch in batches(items):
            req: Request[BatchBody] = Request("POST", "/v1/completions/batch",
                                              json={"completions": batch})
            out += self._run(req)["results"]
        return out

    @overload
    def pages(self, method: Literal["board", "group_board"], *args: Any, **kwargs: Any
              ) -> Iterator[Entry]: ...

    @overload
    def pages(self, method: Literal["completions"], *args: Any, **kwargs: Any
              ) -> Iterator[CompletionRecord]: ...

    @overload
    def pages(self, method: Literal["audit"], *args: Any, **kwargs: Any
              ) -> Iterator[AuditEntry]: ...

    @overload
    def pages(self, method: Literal["deliveries"], *args: Any, **kwargs: Any
              ) -> Iterator[Delivery]: ...

    @overload
    def pages(self, method: Literal["league_history"], *args: Any, **kwargs: Any
              ) -> Iterator[LeagueRecord]: ...

    @overload
    def pages(self, method: Literal["challenges"], *args: Any, **kwargs: Any
              ) -> Iterator[Challenge]: ...

    @overload
    def pages(self, method: Literal["challenge_board"], *args: Any, **kwargs: Any
              ) -> Iterator[ChallengeEntry]: ...

    @overload
    def pages(self, method: Literal["team_board"], *args: Any, **kwargs: Any
              ) -> Iterator[TeamEntry]: ...

    def pages(self, method: Paged, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Every item of a paged read (`board`, `group_board`,
        `completions`, `audit`, `deliveries`, `league_history`, `challenges`,
        `challenge_board`, `team_board`, called with `args` and `kwargs`),
        following the `next` cursors from `after` (default: the first page):
        `for e in c.pages("board", "all", limit=1000)`. Raises
        `ValueError` for another method, and what the method raises."""
        items, after = paged(method), kwargs.pop("after", None)
        while True:
            body = getattr(self, method)(*args, **kwargs, after=after)
            yield from body[items]
            after = body.get("next")
            if not after:
                return

    def close(self) -> None:
        """Close the connections (`with Client(...)` does it on exit)."""
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class AsyncClient(Endpoints):
    """The asyncio client (an `httpx.AsyncClient` underneath, as `http`):
    every method is a coroutine function returning what `Client`'s returns;
    `pages` is an async iterator. Arguments as `Client`'s."""

    def __init__(self, base_url: str, token: str | None = None, *, timeout: float = 10.0,
                 retries: int = 5, backoff: float = 0.2,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.http = httpx.AsyncClient(base_url=base_url, headers=headers(token),
                                      timeout=timeout, transport=transport)
        self.retry = Retry(retries, backoff)

    async def _run(self, req: Request[R]) -> R:
        return await send_async(self.http, self.retry, req)

    def _bind(self, build: Callable[P, Request[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        """A call as a method of this client (calls.Call): a coroutine
        function that sends the request."""
        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return await self._run(build(*args, **kwargs))

        return call

    async def post_completions(self, items: Iterable[Completion | Mapping[str, Any]]
                               ) -> list[BatchResult]:
        """As `Client.post_completions`: every item's result, in order."""
        out: list[BatchResult] = []
        for batch in batches(items):
            req: Request[BatchBody] = Request("POST", "/v1/completions/batch",
                                              json={"completions": batch})
            out += (await self._run(req))["results"]
        return out

    @overload
    def pages(self, method: Literal["board", "group_board"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[Entry]: ...

    @overload
    def pages(self, method: Literal["completions"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[CompletionRecord]: ...

    @overload
    def pages(self, method: Literal["audit"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[AuditEntry]: ...

    @overload
    def pages(self, method: Literal["deliveries"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[Delivery]: ...

    @overload
    def pages(self, method: Literal["league_history"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[LeagueRecord]: ...

    @overload
    def pages(self, method: Literal["challenges"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[Challenge]: ...

    @overload
    def pages(self, method: Literal["challenge_board"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[ChallengeEntry]: ...

    @overload
    def pages(self, method: Literal["team_board"], *args: Any, **kwargs: Any
              ) -> AsyncIterator[TeamEntry]: ...

    async def pages(self, method: Paged, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """As `Client.pages`, asynchronously:
        `async for e in c.pages("board", "all")`."""
        items, after = paged(method), kwargs.pop("after", None)
        while True:
            body = await getattr(self, method)(*args, **kwargs, after=after)
            for item in body[items]:
                yield item
            after = body.get("next")
            if not after:
                return

    async def aclose(self) -> None:
        """Close the connections (`async with AsyncClient(...)` does it on exit)."""
        await self.http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()
