"""HTTP routes of the live web page (`GET /`) and its assets, and of the
embeddable board (`/embed.js`, docs/integrating.md)."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from laurels.api.dependencies import periods
from laurels.api.problems import Problem
from laurels.api.state import services

PAGE_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; "
                                "connect-src 'self'; img-src 'self'; base-uri 'none'; "
                                "form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
_STATIC = resources.files("laurels.api").joinpath("static")
_ASSETS = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8",
           "icon.svg": "image/svg+xml", "embed.js": "text/javascript; charset=utf-8",
           "admin.js": "text/javascript; charset=utf-8", "admin.css": "text/css; charset=utf-8"}

router = APIRouter()


@router.get("/", tags=["page"], response_class=HTMLResponse)
async def page(request: Request) -> Response:
    """The live board of the current season (`#token=<learner token>` shows your
    rank); the configured periods are named in the page, for its switch."""
    leagues = ",".join(services(request).settings.league_tiers)  # empty: no leagues
    html = _STATIC.joinpath("index.html").read_text().replace(
        '<meta name="laurels-periods" content="week">',
        f'<meta name="laurels-periods" content="{",".join(periods(request))}">'
        f'\n  <meta name="laurels-leagues" content="{leagues}">')
    return HTMLResponse(html, headers=PAGE_HEADERS)


@router.get("/admin", tags=["page"], response_class=HTMLResponse)
async def console(request: Request) -> Response:
    """The operator console (CONTRACT.md, "Operator console"): it asks for
    the admin token, keeps it in the tab's sessionStorage, and reaches every
    admin read and action through the admin endpoints."""
    html = _STATIC.joinpath("admin.html").read_text().replace(
        '<meta name="laurels-periods" content="week">',
        f'<meta name="laurels-periods" content="{",".join(periods(request))}">')
    return HTMLResponse(html, headers=PAGE_HEADERS)


@router.get("/favicon.ico", tags=["page"], include_in_schema=False)
async def favicon() -> Response:
    return await asset("icon.svg")


@router.get("/embed.js", tags=["page"], response_class=Response,
            responses={200: {"content": {"text/javascript": {}}}})
async def embed() -> Response:
    """The embeddable board: a `<laurels-board>` custom element for a
    platform's own pages (docs/integrating.md); reads need
    `LAURELS_CORS_ORIGINS` to name the page's origin."""
    return await asset("embed.js")


@router.get("/static/{name}", tags=["page"], include_in_schema=False)
async def asset(name: str) -> Response:
    if name not in _ASSETS:
        raise Problem("not_found", "no such file")
    return Response(_STATIC.joinpath(name).read_bytes(), media_type=_ASSETS[name],
                    headers={**PAGE_HEADERS, "Cache-Control": "no-cache"})
