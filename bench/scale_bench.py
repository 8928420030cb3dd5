"""Measure scale-out: pages/s with 1, 2 and 4 workers, and Redis bytes per queued / seen URL.

    .venv/bin/python bench/scale_bench.py             # 96 origins x 16 pages, 100 ms per page
    .venv/bin/python bench/scale_bench.py --quick     # a smaller smoke run (~30 s)
    .venv/bin/python bench/scale_bench.py --json      # one JSON object on stdout

Needs Redis on 127.0.0.1:6379 and PostgreSQL on 127.0.0.1:5432 (``--redis``, ``--pg``);
without them it prints why and exits 0. Prints figures, never pass/fail.

The site is latency-bound on purpose: many origins on loopback ports, each page answered
after an artificial delay, so W worker processes measure coordination, not this
machine's CPU. Each run crawls a fresh copy (new crawl in Redis, new database) and the
rate is taken over the steady middle of the crawl (the first seconds, while worker
processes start, and the tail are left out). Memory is measured separately: N synthetic
URLs enqueued through the real scripts, then ``MEMORY USAGE`` of the queue and seen keys.

Columns: ``steady/s`` pages per second in the steady middle of the crawl and ``effic.``
its ratio to W times the 1-worker figure; ``worker CPU ms/page`` the worker processes'
own CPU; ``scripts/page`` EVALSHA round trips per page (lease + complete = 2; waits,
heartbeats and robots.txt add a little); ``script us/page`` Redis time inside those
scripts; ``redis CPU us/page`` the whole Redis process (network I/O included, and any
other client of the same Redis).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import sys
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import redis.asyncio as aioredis
from aiohttp import web

from sitelore.adapters.frontier_redis import (
    Completion,
    FrontierItem,
    Lease,
    NewCrawl,
    Outcome,
    RedisFrontier,
    bucket_count,
)
from sitelore.adapters.store import PostgresStore
from sitelore.app.bootstrap_scale import enqueue
from sitelore.core.config import Settings
from sitelore.core.options import CrawlOptions, Limits

__all__ = ["main"]

_WARM = 2.0  # seconds left out at the start (worker processes importing, ramp-up)
_COOL = 0.5  # and at the end (the last origins finishing alone)


class _Site:
    """Many loopback origins serving a small linked site, each page after ``latency``."""

    def __init__(self, origins: int, pages: int, latency: float) -> None:
        self.count, self.pages, self.latency = origins, pages, latency
        self.origins: list[str] = []
        self.arrivals: list[float] = []

    def _html(self, title: str, links: list[str]) -> str:
        anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
        body = f"<p>{title}: a page of the latency-bound benchmark site.</p>"
        head = f"<html><head><title>{title}</title></head>"
        return f"{head}<body><main><h1>{title}</h1>{body}{anchors}</main></body></html>"

    def _page(self, index: int, path: str) -> str | None:
        if path == "/":
            links = [f"/p{k}.html" for k in range(1, self.pages + 1)]
            if index == 0:
                links += [origin + "/" for origin in self.origins[1:]]
            return self._html(f"origin {index}", links)
        if path.startswith("/p") and path.endswith(".html") and path[2:-5].isdigit():
            k = int(path[2:-5])
            if 1 <= k <= self.pages:
                return self._html(f"origin {index} page {k}", ["/", f"/p{k % self.pages + 1}.html"])
        return None

    def _app(self, index: int) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            if request.path == "/robots.txt":
                return web.Response(text="User-agent: *\nAllow: /\n")
            self.arrivals.append(time.monotonic())
            await asyncio.sleep(self.latency)
            html = self._page(index, request.path)
            if html is None:
                return web.Response(status=404)
            return web.Response(text=html, content_type="text/html")

        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        return app

    @contextlib.asynccontextmanager
    async def serve(self) -> AsyncIterator[None]:
        runners = []
        try:
            for index in range(self.count):
                runner = web.AppRunner(self._app(index), access_log=None)
                await runner.setup()
                runners.append(runner)
                await web.TCPSite(runner, "127.0.0.1", 0).start()
                self.origins.append(f"http://127.0.0.1:{runner.addresses[0][1]}")
            yield
        finally:
            for runner in runners:
                await runner.cleanup()

    @property
    def total(self) -> int:
        return self.count * (self.pages + 1)


def _children_cpu() -> float:
    """CPU seconds (user + sys) of the worker processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def _database(admin: str) -> Any:
    name = "sitelore_bench_" + uuid.uuid4().hex[:10]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    base = admin.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def _redis_counters(client: aioredis.Redis) -> tuple[int, int, float]:
    """Script calls (EVALSHA round trips), microseconds spent in them, Redis CPU seconds."""
    stats = await client.info("commandstats")
    evalsha = stats.get("cmdstat_evalsha", {})
    cpu = await client.info("cpu")
    return (
        int(evalsha.get("calls", 0)),
        int(evalsha.get("usec", 0)),
        float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
    )


async def _crawl_run(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    namespace = "slbench-" + uuid.uuid4().hex[:8]
    frontier_url = f"{args.redis}?namespace={namespace}"
    site = _Site(args.origins, args.pages, args.latency)
    client = aioredis.Redis.from_url(args.redis)
    with _database(args.pg) as db:
        settings = Settings(
            store=db, allow_private=("127.0.0.1",), limits=Limits(max_pages=1_000_000)
        )
        options = CrawlOptions(
            max_pages=site.total + 10,
            max_depth=3,
            same_domain=False,
            delay=args.delay,
            concurrency=args.slots,
            deadline_seconds=600,
        )
        try:
            async with site.serve():
                queued = await enqueue(settings, frontier_url, site.origins[0] + "/", options)
                calls0, usec0, cpu0 = await _redis_counters(client)
                children0 = _children_cpu()
                procs = [
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        "-m",
                        "sitelore",
                        "worker",
                        "--frontier",
                        frontier_url,
                        "--db",
                        db,
                        "--crawl",
                        queued.crawl_id,
                        "--allow-private",
                        "127.0.0.1",
                        "--slots",
                        str(args.slots),
                        "--worker-id",
                        f"bench-w{i}",
                        stdout=asyncio.subprocess.DEVNULL,
                        stderr=asyncio.subprocess.DEVNULL,
                    )
                    for i in range(workers)
                ]
                codes = [await p.wait() for p in procs]
                calls1, usec1, cpu1 = await _redis_counters(client)
                workers_cpu = _children_cpu() - children0
            store = PostgresStore(db)
            stored = await store.count()
            await store.close()
        finally:
            keys = [k async for k in client.scan_iter(match=f"{namespace}:*", count=1000)]
            if keys:
                await client.unlink(*keys)
            await client.aclose()
    times = sorted(site.arrivals)
    first, last = times[0], times[-1]
    window = [t for t in times if first + _WARM <= t <= last - _COOL]
    steady = len(window) / max(1e-9, (last - _COOL) - (first + _WARM)) if window else 0.0
    pages = len(times)
    return {
        "workers": workers,
        "exitCodes": codes,
        "pages": pages,
        "stored": stored,
        "seconds": round(last - first, 2),
        "pagesPerSecond": round(pages / max(1e-9, last - first), 1),
        "steadyPagesPerSecond": round(steady, 1),
        "workerCpuMsPerPage": round(workers_cpu * 1000 / max(1, pages), 2),
        "redisScriptCallsPerPage": round((calls1 - calls0) / max(1, pages), 2),
        "redisScriptUsPerPage": round((usec1 - usec0) / max(1, pages), 1),
        "redisCpuUsPerPage": round((cpu1 - cpu0) * 1e6 / max(1, pages), 1),
    }


async def _memory(args: argparse.Namespace) -> dict[str, Any]:
    """Bytes per queued and per seen URL, through the real CREATE/LEASE/COMPLETE scripts."""
    namespace = "slbench-" + uuid.uuid4().hex[:8]
    frontier = await RedisFrontier.connect(f"{args.redis}?namespace={namespace}")
    client = aioredis.Redis.from_url(args.redis, decode_responses=True)
    n, hosts, crawl = args.memory_urls, 1000, "memory"
    try:
        before = int((await client.info("memory"))["used_memory"])
        meta = {"buckets": "1", "pages_left": "1", "delay_ms": "0"}
        max_pages = max(1, n // 32)  # sizes the seen-set as a real crawl of that budget would
        meta["buckets"] = str(bucket_count(max_pages))
        seed = FrontierItem("http://h0.bench.test/", 0)
        await frontier.create(
            NewCrawl(crawl_id=crawl, seed=seed, meta=meta, deadline_seconds=3600, seed_delay_ms=0)
        )
        lease = await frontier.lease(crawl, "bench", ttl_ms=600_000, poll_ms=100)
        assert isinstance(lease, Lease)
        lease_id, batch = lease.lease_id, 2000
        for start in range(0, n, batch):
            links = [
                FrontierItem(
                    f"http://h{i % hosts}.bench.test/docs/section-{i % 37}/page-{i:07d}.html", 2
                )
                for i in range(start, min(n, start + batch))
            ]
            await frontier.complete(
                crawl,
                "bench",
                lease_id,
                Completion(outcome=Outcome.DONE, links=links),
                int(meta["buckets"]),
            )
        after = int((await client.info("memory"))["used_memory"])
        prefix = frontier.prefix(crawl)
        seen = queued = 0
        encodings: set[str] = set()
        pattern = prefix.replace("{", "\\{").replace("}", "\\}") + ":*"
        keys = [str(key) async for key in client.scan_iter(match=pattern, count=1000)]
        for key in keys:
            size = int(await client.memory_usage(key) or 0)
            if key.startswith(prefix + ":seen:"):
                seen += size
                if len(encodings) < 3:
                    encodings.add(str(await client.object("encoding", key)))
            elif key.startswith(prefix + ":q:"):
                queued += size
        sample_len = len("http://h1.bench.test/docs/section-1/page-0000001.html")
        return {
            "urls": n,
            "origins": hosts,
            "urlChars": sample_len,
            "queuedBytesPerUrl": round(queued / n, 1),
            "seenBytesPerUrl": round(seen / n, 1),
            "seenEncoding": sorted(encodings),
            "usedMemoryBytesPerUrl": round((after - before) / n, 1),
        }
    finally:
        doomed = [key async for key in client.scan_iter(match=f"{namespace}:*", count=1000)]
        for start in range(0, len(doomed), 500):
            await client.unlink(*doomed[start : start + 500])
        await frontier.aclose()
        await client.aclose()


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    client = aioredis.Redis.from_url(args.redis)
    try:
        server = await client.info("server")
    finally:
        await client.aclose()
    with psycopg.connect(args.pg) as conn:
        pg_version = conn.execute("SHOW server_version").fetchone()
    runs = [await _crawl_run(args, w) for w in args.workers]
    base = runs[0]["steadyPagesPerSecond"] / runs[0]["workers"] if runs else 0.0
    for run in runs:
        run["efficiency"] = (
            round(run["steadyPagesPerSecond"] / (base * run["workers"]), 2) if base else None
        )
    return {
        "redis": server["redis_version"],
        "postgresql": pg_version[0] if pg_version else "?",
        "cpus": os.cpu_count(),
        "site": {
            "origins": args.origins,
            "pagesPerOrigin": args.pages + 1,
            "latencyMs": round(args.latency * 1000),
            "delayMs": round(args.delay * 1000),
            "slotsPerWorker": args.slots,
        },
        "runs": runs,
        "memory": await _memory(args),
    }


def _print(result: dict[str, Any]) -> None:
    site = result["site"]
    print(
        f"scale-out bench: Redis {result['redis']}, PostgreSQL {result['postgresql']}, "
        f"{result['cpus']} CPUs; {site['origins']} origins x {site['pagesPerOrigin']} pages, "
        f"{site['latencyMs']} ms per page, delay {site['delayMs']} ms, "
        f"{site['slotsPerWorker']} slots per worker"
    )
    print(
        f"{'workers':>7} {'pages':>6} {'stored':>6} {'s':>6} {'pages/s':>8} {'steady/s':>9} "
        f"{'effic.':>6} {'worker CPU ms/page':>18} {'scripts/page':>12} "
        f"{'script us/page':>14} {'redis CPU us/page':>17}"
    )
    for run in result["runs"]:
        print(
            f"{run['workers']:>7} {run['pages']:>6} {run['stored']:>6} {run['seconds']:>6} "
            f"{run['pagesPerSecond']:>8} {run['steadyPagesPerSecond']:>9} "
            f"{run['efficiency']!s:>6} {run['workerCpuMsPerPage']:>18} "
            f"{run['redisScriptCallsPerPage']:>12} {run['redisScriptUsPerPage']:>14} "
            f"{run['redisCpuUsPerPage']:>17}"
        )
    mem = result["memory"]
    print(
        f"redis memory ({mem['urls']:,} URLs of ~{mem['urlChars']} chars, {mem['origins']} "
        f"origins): {mem['queuedBytesPerUrl']} B per queued URL, {mem['seenBytesPerUrl']} B per "
        f"seen URL ({'/'.join(mem['seenEncoding'])}); INFO used_memory: "
        f"{mem['usedMemoryBytesPerUrl']} B per URL (queued + seen + overhead)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--origins", type=int, default=96)
    parser.add_argument("--pages", type=int, default=15, help="pages per origin besides /")
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--memory-urls", type=int, default=None, help="default 200,000")
    parser.add_argument("--quick", action="store_true", help="48 origins x 8 pages, 50k URLs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.origins, args.pages = 48, 8
    if args.memory_urls is None:
        args.memory_urls = 50_000 if args.quick else 200_000
    try:
        result = asyncio.run(_run(args))
    except (OSError, psycopg.OperationalError, aioredis.ConnectionError) as exc:
        reason = " ".join(str(exc).split())
        if args.json:
            print(json.dumps({"skipped": reason}))
        print(f"scale bench skipped: Redis or PostgreSQL unavailable: {reason}", file=sys.stderr)
        return 0
    if args.json:
        print(json.dumps(result))
    else:
        _print(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
