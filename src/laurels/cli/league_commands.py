"""A week's leagues, by tier or by cohort: `laurels leagues`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from laurels.cli.common import JsonOpt, _print, _settings, app
from laurels.cli.stores import _admin


@app.command()
def leagues(season: Annotated[str, typer.Argument(help="a week (2026-W49) or current")],
            cohorts: Annotated[bool, typer.Option("--cohorts", help="list its cohorts")]
            = False,
            tier: Annotated[str | None, typer.Option("--tier", help="with --cohorts: one "
                                                     "tier's")] = None,
            as_json: JsonOpt = False) -> None:
    """A week's leagues by tier, or its cohorts (GET /v1/admin/leagues/SEASON[/cohorts])."""
    settings = _settings()

    async def work(rt: Any) -> Any:
        from laurels.api.params import path_season
        from laurels.core.seasons import PERIODS

        week = path_season(season, PERIODS, settings.time_zone)
        if not cohorts:
            return await rt.leagues.summary(week)
        listed: list[Any] = []
        after = None
        while True:  # every page
            page, after = await rt.leagues.cohorts(week, tier, 1000, after)
            listed += page["cohorts"]
            if after is None:
                return {"cohorts": listed}

    body = _admin(work)
    if cohorts:
        _print(body, as_json, ("cohort", "tier", "members", "decided"),
               [(c["cohort_id"], c["tier"], c["members"], "yes" if c["decided"] else "no")
                for c in body["cohorts"]])
        return
    _print(body, as_json, ("tier", "cohorts", "members", "promoted", "demoted"),
           [(t["tier"], t["cohorts"], t["members"], t["promoted"], t["demoted"])
            for t in body["tiers"]],
           line=f"{body['season']}: {'decided' if body['decided'] else 'not decided yet'}")
