"""CORS for reads, and only reads (`LAURELS_CORS_ORIGINS`).

A platform embeds the board on its own pages (`/embed.js`): their browsers
read boards, neighbourhoods, leagues and hint streams from another origin.
Starlette's `CORSMiddleware` answers for the read paths below (GET and its
preflight, the `Authorization` header allowed, `ETag` exposed; and the
friends board, `POST /v1/leaderboards/{season}/ranks`, a read with a body);
every other path (writes, admin calls such as a week's league summary, the
page itself) goes straight to the app and never gets a CORS header, so a
browser refuses it cross-origin.
"""

from __future__ import annotations

import re

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from laurels.api.early import Answer, Headers

READS = re.compile(
    r"/v1/leaderboards/[^/]+(/events|/ranks|/users/[^/]+(/completions)?)?"
    r"|/v1/groups/[^/]+/leaderboards/[^/]+(/events|/users/[^/]+)?"
    r"|/v1/users/[^/]+/(groups|notifications|notifications/events|league|league/history"
    r"|challenges|teams)"
    r"|/v1/teams/[^/]+/leaderboards/[^/]+"
    r"|/v1/leagues/[^/]+/cohorts/[^/]+(/events)?"
    r"|/v1/challenges(/[^/]+(/leaderboard|/events|/users/[^/]+)?)?")


class ReadCors:
    def __init__(self, app: ASGIApp, origins: tuple[str, ...]) -> None:
        self.app = app
        self.cors = CORSMiddleware(app, allow_origins=list(origins),
                                   allow_methods=["GET", "POST"],
                                   allow_headers=["Authorization", "Content-Type"],
                                   expose_headers=["ETag"], max_age=600)

    def answer_early(self, path: str, query: bytes, headers: Headers) -> Answer | None:
        """The app's early answer (api/early.py) to a request that names no
        `Origin`, with the `Vary: Origin` CORS gives a read path's answer
        (a shared cache must not send it to a request that names one); a
        request that does goes the usual way, for its CORS headers."""
        early = getattr(self.app, "answer_early", None)
        if early is None or any(name == b"origin" for name, _ in headers):
            return None
        answer: Answer | None = early(path, query, headers)
        if answer is not None and READS.fullmatch(path):
            status, head, body = answer
            return status, [*head, (b"vary", b"Origin")], body
        return answer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        method = scope.get("method")
        read = method in ("GET", "HEAD", "OPTIONS") or (method == "POST"
                                                         and path.endswith("/ranks"))
        if scope["type"] == "http" and read and READS.fullmatch(path):
            await self.cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)
