"""Webhooks at the pace of a decision (issue 40): D deliveries waiting (a
week's decision of that many members), P processes sending them to a
receiver on the loopback that answers each in 10 ms; the time to drain
them all, and the deliveries a second per process. The baseline, measured
in the same run against the same receiver: plain POSTs of the same bodies
from one process, 32 at a time (what the receiver and the loopback allow).

    .venv/bin/python -m bench.webhooks                       # 200,000, 3 processes
    .venv/bin/python -m bench.webhooks --deliveries 20000 --processes 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import time
from typing import Any

import httpx
import psycopg

from bench.support import ROOT, BenchError, dump_json, log, loopback_only
from laurels.db import Database, migrate
from laurels.live.notifications import Notifications
from laurels.live.webhooks import Webhooks, store_settings
from laurels.process.settings import Settings
from tests.helpers import free_port

RECEIVER = '''
import asyncio, sys
from aiohttp import web
got = 0
async def hook(request):
    global got
    await request.read()
    await asyncio.sleep(0.010)
    got += 1
    return web.Response(status=204)
async def count(request):
    return web.Response(text=str(got))
app = web.Application()
app.router.add_post("/hooks", hook)
app.router.add_get("/count", count)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
'''


async def sender(database_url: str, url: str, concurrency: int) -> None:
    """One process's webhook loop, until nothing is pending."""
    db = Database(database_url, max_size=concurrency // 8 + 2)
    await db.open()
    webhooks = Webhooks(db, Notifications(db), url, "bench-secret", 10.0, concurrency)
    stop = asyncio.Event()
    task = asyncio.create_task(webhooks.run(stop))
    # Until nothing is pending: one probe of the pending index a second (a
    # count by status of 200,000 rows twice a second per process was a
    # tenth of the machine, and grew with the table).
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        while True:
            await asyncio.sleep(1.0)
            cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM webhook_deliveries"
                                     " WHERE status = 'pending') AS pending")
            row = await cur.fetchone()
            if not (row and row[0]):
                break
    stop.set()
    await task
    await db.close()


async def baseline(url: str, seconds: float = 5.0) -> float:
    """Plain POSTs a second, 32 at a time, for `seconds`."""
    body = b'{"id":"x","type":"notification.created","data":{}}'
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await http.post(url, content=body)
            done += 1

    started = time.perf_counter()
    clients = [httpx.AsyncClient(limits=httpx.Limits(max_connections=8)) for _ in range(4)]
    await asyncio.gather(*(worker(clients[i % 4]) for i in range(32)))
    for c in clients:
        await c.aclose()
    return done / (time.perf_counter() - started)


async def prepare(admin: str, deliveries: int, url: str) -> str:
    name = f"bench_{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {name}")
    database_url = admin.rsplit("/", 1)[0] + f"/{name}"
    await migrate(database_url)
    db = Database(database_url, max_size=2)
    await db.open()
    await store_settings(db, Settings(webhook_url=url))
    await db.close()
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(  # a decision's league_result notifications, one per member
            "INSERT INTO notifications (user_id, kind, season, data, dedup_key)"
            " SELECT g, 'league_result', '2026-W49', jsonb_build_object('rank', 1 + g %% 30,"
            " 'outcome', 'stayed'), 'league_result:' || g FROM generate_series(1, %s) g",
            (deliveries,))
    return database_url


async def count(url: str) -> int:
    async with httpx.AsyncClient() as c:
        return int((await c.get(url.replace("/hooks", "/count"))).text)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hooks"
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, str(port)])
    try:
        for _ in range(100):
            try:
                await count(url)
                break
            except httpx.HTTPError:
                await asyncio.sleep(0.1)
        base = await baseline(url)
        before = await count(url)
        database_url = await prepare(args.database_url, args.deliveries, url)
        log(f"{args.deliveries:,} deliveries waiting; {args.processes} processes send them")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        started = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-m", "bench.webhooks", "--send",
                                   database_url, url, str(args.concurrency)], env=env)
                 for _ in range(args.processes)]
        for p in procs:
            if p.wait() != 0:
                raise BenchError("a sender failed")
        drained = time.perf_counter() - started
        got = await count(url) - before
        if got < args.deliveries:
            raise BenchError(f"the receiver got {got} of {args.deliveries}")
        async with await psycopg.AsyncConnection.connect(args.database_url,
                                                         autocommit=True) as conn:
            await conn.execute(f"DROP DATABASE {database_url.rsplit('/', 1)[1]} WITH (FORCE)")
    finally:
        receiver.kill()
    per_process = args.deliveries / drained / args.processes
    return {"deliveries": args.deliveries, "processes": args.processes,
            "concurrency": args.concurrency, "drain_s": drained,
            "per_process_per_s": per_process, "baseline_posts_per_s": base,
            "per_process_over_baseline": per_process / base}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=200_000)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--send", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.send:
        database_url, url, concurrency = args.send
        asyncio.run(sender(database_url, url, int(concurrency)))
        return
    loopback_only(args.database_url, "--database-url")
    result = asyncio.run(measure(args))
    log(f"{result['deliveries']:,} webhooks drained by {result['processes']} processes in "
        f"{result['drain_s']:.1f} s: {result['per_process_per_s']:.0f} a second per process "
        f"({result['per_process_over_baseline']:.2f} of plain POSTs from one process, "
        f"{result['baseline_posts_per_s']:.0f}/s)")
    dump_json(ROOT / "bench" / "results-webhooks.json", result)


if __name__ == "__main__":
    main()
