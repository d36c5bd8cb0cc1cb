"""How the client sends a request: over an httpx client, retrying what is
worth another try (no answer, `429`, `502`, `503`, `504`) with exponential
backoff and jitter (laurels.core.backoff) or what `Retry-After` says, then
returning the answer's body or raising its exception (core/errors.py). `send`
and `send_async` are the same loop, for `Client` and `AsyncClient`."""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import httpx

from laurels.client.errors import GATEWAY_STATUSES, Unavailable, problem
from laurels.core.backoff import jittered_seconds

# Answers worth another try: rate limited, and unavailable (the service's
# own 503, or a gateway's 502/503/504 in front of it).
RETRY_STATUSES = (429, *GATEWAY_STATUSES)
MAX_RETRY_AFTER_SECONDS = 60.0

# Transport errors that mean "the service could not be reached (or did not
# answer in time)": retried, then raised as `Unavailable`. The others
# (`UnsupportedProtocol`: a base URL without http(s)://, `LocalProtocolError`:
# a request httpx cannot send) are the caller's mistakes: raised at once.
UNREACHABLE: tuple[type[httpx.TransportError], ...] = (
    httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)

R = TypeVar("R")  # the body a call answers


@dataclass(frozen=True)
class Request(Generic[R]):
    """One HTTP request of a call; `R` is the type of its answer's body."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    bodiless: bool = False  # the contract promises no body: answer None, whatever comes


def retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds: delay-seconds or an HTTP-date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return max(0.0, (at - datetime.now(UTC)).total_seconds())


@dataclass
class Retry:
    retries: int = 5
    backoff: float = 0.2  # seconds before the first retry; doubles, with jitter
    max_backoff: float = 10.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER_SECONDS)
        return jittered_seconds(attempt, base_seconds=self.backoff, cap_seconds=self.max_backoff)

    def after_answer(self, attempt: int, resp: httpx.Response) -> float | None:
        """Seconds to wait before trying again after this answer; None: it is final."""
        if resp.status_code in RETRY_STATUSES and attempt < self.retries:
            return self.delay(attempt, retry_after(resp.headers.get("retry-after")))
        return None

    def after_no_answer(self, attempt: int, where: str, exc: httpx.TransportError) -> float:
        """Seconds to wait before trying again after no answer; raises
        `Unavailable` once the retries are spent."""
        if attempt >= self.retries:
            raise Unavailable.unreachable(where, attempt + 1, exc) from exc
        return self.delay(attempt, None)


def headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def where(base_url: httpx.URL, req: Request[Any]) -> str:
    """The request's method and URL without query or credentials (for messages)."""
    url = base_url.copy_with(raw_path=base_url.raw_path + req.path.lstrip("/").encode())
    return f"{req.method} {url.scheme}://{url.netloc.decode('ascii')}{url.path}"


def body(req: Request[Any], resp: httpx.Response) -> Any:
    """The final answer's body, or its exception raised."""
    if resp.status_code >= 400:
        raise problem(resp, retry_after(resp.headers.get("retry-after")))
    return resp.json() if resp.content and not req.bodiless else None


def send(http: httpx.Client, retry: Retry, req: Request[R]) -> R:
    """Send `req`, retrying as `retry` says; its answer's body."""
    for attempt in range(retry.retries + 1):
        try:
            resp = http.request(req.method, req.path, params=req.params or None, json=req.json)
        except UNREACHABLE as exc:
            time.sleep(retry.after_no_answer(attempt, where(http.base_url, req), exc))
            continue
        wait = retry.after_answer(attempt, resp)
        if wait is not None:
            time.sleep(wait)
            continue
        answer: R = body(req, resp)
        return answer
    raise AssertionError("unreachable")


async def send_async(http: httpx.AsyncClient, retry: Retry, req: Request[R]) -> R:
    """As `send`, on an asyncio client."""
    for attempt in range(retry.retries + 1):
        try:
            resp = await http.request(req.method, req.path, params=req.params or None,
                                      json=req.json)
        except UNREACHABLE as exc:
            await asyncio.sleep(retry.after_no_answer(attempt, where(http.base_url, req), exc))
            continue
        wait = retry.after_answer(attempt, resp)
        if wait is not None:
            await asyncio.sleep(wait)
            continue
        answer: R = body(req, resp)
        return answer
    raise AssertionError("unreachable")
