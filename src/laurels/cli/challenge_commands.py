"""Challenges listed, shown, defined, deleted, joined and decided (CONTRACT.md,
"Challenges: boards with a start and an end"): `laurels challenges`,
`challenges show`, `define`, `delete`, `join`, `decide`. Each calls the
service its endpoint calls; a table (or a line) for people, `--json` the
endpoint's body for scripts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from laurels.cli.common import BOARD_HELP, JsonOpt, _print, app, fail
from laurels.cli.stores import _admin

challenges_app = typer.Typer(no_args_is_help=False, invoke_without_command=True,
                             rich_markup_mode=None,
                             help="Challenges: list them (no subcommand), show, define, delete, "
                                  "join or decide them.")
app.add_typer(challenges_app, name="challenges")

STATUSES = ("upcoming", "active", "ended")
IdArg = Annotated[str, typer.Argument(help="the challenge's id (december-sql-sprint)")]
StatusOpt = Annotated[str | None, typer.Option(
    "--status", help="upcoming, active or ended (at this moment)")]
REWARD_HELP = ("a reward of a range of ranks, FROM-TO:REWARD (2-10:silver) or RANK:REWARD "
               "(1:gold); repeat it for each range")
PAGE = 100  # challenges a page while every one is listed


def _rewards(rewards: list[dict[str, Any]]) -> str:
    """The rewards as --reward takes them: `1:gold, 2-10:silver`."""
    return ", ".join(f"{r['from']}{'' if r['from'] == r['to'] else '-' + str(r['to'])}:"
                     f"{r['reward']}" for r in rewards)


def _join_rule(c: dict[str, Any]) -> str:
    return f"required (at most {c['max_size']})" if c["max_size"] else str(c["join"])


def _check_status(status: str | None) -> None:
    if status not in (None, *STATUSES):
        raise fail("--status: upcoming, active or ended")


@challenges_app.callback()
def challenges(ctx: typer.Context, status: StatusOpt = None,
               user: Annotated[int | None, typer.Option(
                   "--user", min=1, help="the challenges a learner joined or took part in, "
                   "with their rank, score and reward")] = None,
               as_json: JsonOpt = False) -> None:
    """The challenges by id (GET /v1/challenges), or a learner's
    (GET /v1/users/USER/challenges)."""
    if ctx.invoked_subcommand is not None:
        return
    _check_status(status)
    if user is not None:
        _learner_challenges(user, status, as_json)
        return

    async def work(rt: Any) -> Any:
        listed: list[Any] = []
        after = None
        while True:  # every page
            page = await rt.challenges.page(status, PAGE, after)
            listed += page["challenges"]
            after = page["next"]
            if after is None:
                return {"challenges": listed, "next": None}

    body = _admin(work)
    _print(body, as_json, ("id", "title", "board", "metric", "starts at", "ends at", "join",
                           "participants", "rewards", "status", "decided"),
           [(c["challenge_id"], c["title"], c["board"], c["metric"], c["starts_at"],
             c["ends_at"], _join_rule(c), c["participants"], _rewards(c["rewards"]),
             c["status"], "yes" if c["decided"] else "no") for c in body["challenges"]])


def _learner_challenges(user: int, status: str | None, as_json: bool) -> None:
    async def work(rt: Any) -> Any:
        return await rt.challenge_standings.of_learner(user, status)

    body = _admin(work)
    _print(body, as_json, ("id", "title", "status", "decided", "joined at", "rank", "score",
                           "reward"),
           [(c["challenge_id"], c["title"], c["status"], "yes" if c["decided"] else "no",
             c["joined_at"], c["rank"], c["score"], c["reward"]) for c in body["challenges"]])


def _summary(c: dict[str, Any]) -> str:
    return (f"{c['challenge_id']}: {c['title']}, on {c['board']} by {c['metric']}, "
            f"{c['starts_at']} to {c['ends_at']}, {c['status']}"
            f"{' and decided' if c['decided'] else ''}; join {_join_rule(c)}, "
            f"{c['participants']} participants"
            + (f"; rewards {_rewards(c['rewards'])}" if c["rewards"] else ""))


@challenges_app.command("show")
def show(challenge_id: IdArg,
         limit: Annotated[int, typer.Option("--limit", min=1, max=1000,
                                            help="how many of its board's top")] = 10,
         user: Annotated[int | None, typer.Option(
             "--user", min=1, help="a learner's neighbourhood instead of the top")] = None,
         radius: Annotated[int, typer.Option("--radius", min=0, max=50,
                                             help="with --user: ranks each side")] = 5,
         as_json: JsonOpt = False) -> None:
    """A challenge and its board's top (GET /v1/challenges/ID, .../leaderboard),
    or a learner's neighbourhood on it (--user: .../users/USER). --json:
    {"challenge", "board"} or {"challenge", "around"}."""
    async def work(rt: Any) -> Any:
        challenge = await rt.challenges.get(challenge_id)
        if user is not None:
            around = await rt.challenge_standings.around(challenge_id, user, radius)
            return {"challenge": challenge, "around": around}
        board, _ = await rt.challenge_standings.board(challenge_id, limit, None)
        return {"challenge": challenge, "board": board}

    body = _admin(work)
    if user is not None:
        rows = [(e["rank"], e["user_id"], e["display_name"] + (" (this learner)" if e["self"]
                                                              else ""), e["score"], e["reward"])
                for e in body["around"]["neighbors"]]
        line = _summary(body["challenge"])
    else:
        rows = [(e["rank"], e["user_id"], e["display_name"], e["score"], e["reward"])
                for e in body["board"]["entries"]]
        line = f"{_summary(body['challenge'])}; {body['board']['total']} ranked"
    _print(body, as_json, ("rank", "user", "name", "score", "reward"), rows, line=line)


def _reward(text: str) -> dict[str, Any]:
    """`2-10:silver` (or `1:gold`) as a reward of the definition."""
    ranks, colon, reward = text.partition(":")
    first, dash, last = ranks.partition("-")
    try:
        if not colon:
            raise ValueError(text)
        low = int(first)
        high = int(last) if dash else low
    except ValueError:
        raise fail(f"--reward {text}: say FROM-TO:REWARD (2-10:silver) or RANK:REWARD "
                   "(1:gold)") from None
    return {"from": low, "to": high, "reward": reward}


def _file_body(file: Path) -> dict[str, Any]:
    """A definition's JSON object, from a file (`-`: standard input)."""
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
        body = json.loads(text)
    except OSError as exc:
        raise fail(f"--file {file}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise fail(f"--file {file} is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise fail(f"--file {file}: the definition is a JSON object")
    return body


def _definition(file: Path | None, given: dict[str, Any], rewards: list[str] | None
                ) -> dict[str, Any]:
    """The PUT body: the file's, then every option given over it."""
    body = _file_body(file) if file is not None else {}
    body.update({k: v for k, v in given.items() if v is not None})
    if rewards:
        body["rewards"] = [_reward(r) for r in rewards]
    return body


@challenges_app.command("define")
def define(  # noqa: PLR0913 (a command's options are its parameters)
    challenge_id: IdArg,
    title: Annotated[str | None, typer.Option(help="its title")] = None,
    starts_at: Annotated[str | None, typer.Option(
        help="when it starts, RFC 3339 (2026-12-14T00:00:00Z)")] = None,
    ends_at: Annotated[str | None, typer.Option(
        help="when it ends, RFC 3339: after the start, at most 92 days later")] = None,
    board: Annotated[str | None, typer.Option(help=f"{BOARD_HELP} [default global]")] = None,
    metric: Annotated[str | None, typer.Option(
        help="points, completions or best [default points]")] = None,
    join: Annotated[str | None, typer.Option(
        help="open (anyone with a counted completion) or required (only who joined) "
             "[default open]")] = None,
    max_size: Annotated[int | None, typer.Option(
        help="with --join required: at most N learners join")] = None,
    reward: Annotated[list[str] | None, typer.Option(metavar="FROM-TO:REWARD",
                                                     help=REWARD_HELP)] = None,
    notify: Annotated[bool | None, typer.Option(
        "--notify/--no-notify", help="top10 and overtaken notifications while it runs "
        "[default no]")] = None,
    grace_seconds: Annotated[int | None, typer.Option(
        help="late completions counted after its end [default 0]")] = None,
    file: Annotated[Path | None, typer.Option(
        help="the definition as JSON, the PUT's body (- for standard input); the options "
             "given replace its fields")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Define a challenge, or change one (PUT /v1/admin/challenges/ID): once it
    has started only its title, rewards and a later end may change."""
    body = _definition(file, {"title": title, "starts_at": starts_at, "ends_at": ends_at,
                              "board": board, "metric": metric, "join": join,
                              "max_size": max_size, "notify": notify,
                              "grace_seconds": grace_seconds}, reward)

    async def work(rt: Any) -> Any:
        return await rt.challenges.define(challenge_id, body)

    shown, created = _admin(work)
    _print(shown, as_json, line=f"challenge {challenge_id} {'created' if created else 'updated'}"
           f": {_summary(shown)}")


@challenges_app.command("delete")
def delete(challenge_id: IdArg, as_json: JsonOpt = False) -> None:
    """Delete a challenge: its board, joins and results go
    (DELETE /v1/admin/challenges/ID)."""
    async def work(rt: Any) -> None:
        await rt.challenges.delete(challenge_id)

    _admin(work)
    _print({"challenge_id": challenge_id, "deleted": True}, as_json,
           line=f"challenge {challenge_id} deleted")


@challenges_app.command("join")
def join(challenge_id: IdArg,
         user: Annotated[int, typer.Option("--user", min=1, help="the learner's user id")],
         as_json: JsonOpt = False) -> None:
    """Join a learner to a challenge, as the platform does for them
    (POST /v1/challenges/ID/join)."""
    async def work(rt: Any) -> Any:
        return await rt.challenges.join(challenge_id, user)

    joined = _admin(work)
    line = (f"learner {user} joined {challenge_id} at {joined['joined_at']}"
            if joined["joined_at"] else
            f"{challenge_id} is open: learner {user} takes part with a counted completion, "
            "no join needed")
    _print(joined, as_json, line=line)


@challenges_app.command("decide")
def decide(as_json: JsonOpt = False) -> None:
    """Decide every challenge due now (its end plus its grace passed), as a
    serve's projector does within a second; print which."""
    async def work(rt: Any) -> Any:
        return await rt.decider.decide_due()

    decided = _admin(work)
    _print({"decided": decided}, as_json,
           line=f"decided {', '.join(decided)}" if decided else "no challenge is due")
