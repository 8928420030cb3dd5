"""Support for scale-out tests: a multi-origin fixture site, a throw-away database, workers.

Everything runs on loopback: the fixture hosts listen on 127.0.0.1/.2/.3, PostgreSQL on
127.0.0.1:5432 (a database created and dropped per use) and Redis on 127.0.0.1:6379
(a unique key namespace per use, deleted afterwards).

Every way in to a service (:func:`temp_database`, :func:`namespace_url`, or a test
calling :func:`require_postgres` / :func:`require_redis` itself) first checks that the
service answers. When it does not, the test is skipped with the reason, so a machine
without PostgreSQL or Redis runs everything else; with ``CI=true`` in the environment
the test fails instead, loudly: CI always has both services, so a missing one there is
a broken pipeline, never a reason to skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import os
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest

if TYPE_CHECKING:
    from sitelore.adapters.frontier_redis import RedisFrontier
from aiohttp import web

from sitelore.adapters.frontier_redis import CrawlStatus, RedisFrontier, decode_item
from sitelore.core.config import Settings
from sitelore.core.options import CrawlOptions

PG_HOST, PG_PORT = "127.0.0.1", 5432
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
PG_ADMIN = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/postgres"
REDIS = f"redis://{REDIS_HOST}:{REDIS_PORT}/0"
ADDRESSES = ("127.0.0.1", "127.0.0.2", "127.0.0.3")

#: Probe results per (host, port): None when the service answered, else why not.
_PROBED: dict[tuple[str, int], str | None] = {}


def _probe(host: str, port: int, hello: bytes, expect: tuple[bytes, ...]) -> str | None:
    """Connect, say ``hello`` and check the answer starts with one of ``expect``."""
    try:
        with socket.create_connection((host, port), timeout=3.0) as conn:
            conn.sendall(hello)
            answer = conn.recv(64)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    if not answer.startswith(expect):
        return f"unexpected answer {answer[:20]!r}"
    return None


def require_service(
    name: str, host: str, port: int, hello: bytes, expect: tuple[bytes, ...]
) -> None:
    """Skip the running test when ``name`` does not answer, or fail it when ``CI=true``."""
    key = (host, port)
    if key not in _PROBED:
        _PROBED[key] = _probe(host, port, hello, expect)
    reason = _PROBED[key]
    if reason is None:
        return
    message = f"{name} is not reachable at {host}:{port} ({reason})"
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail(f"{message}; CI=true, and CI must provide {name}", pytrace=False)
    pytest.skip(f"{message}; start it to run this test (CI=true makes this a failure)")


def require_postgres() -> None:
    """Skip (or, under CI, fail) the running test unless PostgreSQL answers on 5432."""
    # An SSLRequest: any PostgreSQL answers one byte, "S" or "N".
    require_service(
        "PostgreSQL", PG_HOST, PG_PORT, b"\x00\x00\x00\x08\x04\xd2\x16\x2f", (b"S", b"N")
    )


def require_redis() -> None:
    """Skip (or, under CI, fail) the running test unless Redis answers on 6379."""
    require_service("Redis", REDIS_HOST, REDIS_PORT, b"PING\r\n", (b"+PONG", b"-NOAUTH"))


@contextlib.contextmanager
def temp_database() -> Iterator[str]:
    """Create an empty PostgreSQL database; yield its URL; drop it (even if still in use)."""
    require_postgres()
    name = "sitelore_test_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")  # name is ours: hex only
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def namespace_url() -> tuple[str, str]:
    """A Redis frontier URL with a namespace no other test uses, and that namespace."""
    require_redis()
    namespace = "sltest-" + uuid.uuid4().hex[:12]
    return f"{REDIS}?namespace={namespace}", namespace


@contextlib.asynccontextmanager
async def fresh_frontier() -> AsyncIterator[tuple[str, RedisFrontier]]:
    """A Redis frontier in a namespace of its own (and its URL); closed and deleted after."""
    from sitelore.adapters.frontier_redis import RedisFrontier

    url, namespace = namespace_url()
    client = await RedisFrontier.connect(url)
    try:
        yield url, client
    finally:
        await client.aclose()
        await delete_namespace(namespace)


async def delete_namespace(namespace: str) -> int:
    """Delete every key of ``namespace`` (tests clean up after themselves)."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS)
    try:
        keys = [key async for key in client.scan_iter(match=f"{namespace}:*", count=1000)]
        for start in range(0, len(keys), 500):
            await client.unlink(*keys[start : start + 500])
        return len(keys)
    finally:
        await client.aclose()


async def crawl_keys(frontier: RedisFrontier, crawl_id: str) -> list[str]:
    """Every Redis key of ``crawl_id``, read with a client of the test's own."""
    import redis.asyncio as aioredis

    pattern = frontier.prefix(crawl_id).replace("{", "\\{").replace("}", "\\}") + ":*"
    client = aioredis.Redis.from_url(REDIS, decode_responses=True)
    try:
        return [str(key) async for key in client.scan_iter(match=pattern, count=1000)]
    finally:
        await client.aclose()


async def held_urls(frontier: RedisFrontier, crawl_id: str, worker: str) -> list[str]:
    """The URLs ``worker`` holds leases on now: its lease set, then the in-flight records."""
    import redis.asyncio as aioredis

    key = frontier.prefix(crawl_id)
    client = aioredis.Redis.from_url(REDIS, decode_responses=True)
    try:
        ids = await client.smembers(f"{key}:wl:{worker}")
        records = await client.hmget(f"{key}:inflight", sorted(ids)) if ids else []
    finally:
        await client.aclose()
    pairs = (str(record).partition("\t") for record in records if record)
    return [decode_item(host, item).url for host, _, item in pairs]


@dataclasses.dataclass(frozen=True, slots=True)
class SiteSpec:
    """The fixture: ``pages`` pages per host, cross-host links, robots rules, a redirect.

    Host 0 links ``/old.html``, which redirects to ``/p1.html``. Host 1 disallows
    ``/private/`` (and links there). Host 2 asks for ``Crawl-delay: crawl_delay``.
    """

    pages: int = 6
    latency: float = 0.0
    crawl_delay: float = 0.25

    def robots(self, index: int) -> str:
        if index == 1:
            return "User-agent: *\nDisallow: /private/\n"
        if index == 2:
            return f"User-agent: *\nCrawl-delay: {self.crawl_delay}\n"
        return "User-agent: *\nAllow: /\n"


@dataclasses.dataclass(slots=True)
class FixtureSite:
    """The running fixture: origins and, per origin, ``(monotonic arrival, path)`` of requests."""

    spec: SiteSpec
    origins: list[str] = dataclasses.field(default_factory=list)
    logs: dict[str, list[tuple[float, str]]] = dataclasses.field(default_factory=dict)

    def expected_documents(self) -> set[str]:
        """Every URL the crawl must store (the redirect source and disallowed pages excluded)."""
        return {
            origin + path
            for origin in self.origins
            for path in ["/", *(f"/p{k}.html" for k in range(1, self.spec.pages + 1))]
        }

    def page(self, index: int, path: str) -> str | None:
        origins, n = self.origins, self.spec.pages
        others = [o for i, o in enumerate(origins) if i != index]
        if path == "/":
            links = [f"/p{k}.html" for k in range(1, n + 1)] + [o + "/" for o in others]
            if index == 0:
                links.append("/old.html")
            if index == 1:
                links.append("/private/secret.html")
            return _html(f"Host {index} home", "Welcome to the fixture site.", links)
        for k in range(1, n + 1):
            if path == f"/p{k}.html":
                links = ["/", f"/p{k % n + 1}.html", *(o + f"/p{k}.html" for o in others)]
                body = f"Page {k} of host {index}. Topic word{k} and shared crawler text."
                return _html(f"Host {index} page {k}", body, links)
        if path == "/private/secret.html":
            return _html("Secret", "Never fetched.", [])
        return None


def _html(title: str, text: str, links: list[str]) -> str:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body><main>"
        f"<h1>{title}</h1><p>{text}</p><ul>{anchors}</ul></main></body></html>"
    )


@contextlib.asynccontextmanager
async def serve_hosts(spec: SiteSpec) -> AsyncIterator[FixtureSite]:
    """Serve the fixture on 127.0.0.1/.2/.3 (free ports); log every request's arrival."""
    site = FixtureSite(spec)
    runners: list[web.AppRunner] = []
    try:
        for index, address in enumerate(ADDRESSES):
            log: list[tuple[float, str]] = []
            runner = web.AppRunner(_app(site, index, log), access_log=None)
            await runner.setup()
            runners.append(runner)
            tcp = web.TCPSite(runner, address, 0)
            await tcp.start()
            origin = f"http://{address}:{runner.addresses[0][1]}"
            site.origins.append(origin)
            site.logs[origin] = log
        yield site
    finally:
        for runner in runners:
            await runner.cleanup()


def _app(site: FixtureSite, index: int, log: list[tuple[float, str]]) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        log.append((time.monotonic(), request.raw_path))
        if request.path == "/robots.txt":
            return web.Response(text=site.spec.robots(index))
        if index == 0 and request.path == "/old.html":
            return web.Response(status=301, headers={"Location": "/p1.html"})
        if site.spec.latency:
            await asyncio.sleep(site.spec.latency)
        html = site.page(index, request.path)
        if html is None:
            return web.Response(status=404, text="not found")
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


def min_gaps(site: FixtureSite) -> dict[str, float]:
    """Per origin, the smallest time between two consecutive request arrivals."""
    out: dict[str, float] = {}
    for origin, log in site.logs.items():
        times = sorted(t for t, _ in log)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        out[origin] = min(gaps, default=float("inf"))
    return out


def arrivals(site: FixtureSite) -> dict[str, int]:
    """How many times each URL (origin + path) was requested."""
    counts: dict[str, int] = {}
    for origin, log in site.logs.items():
        for _, path in log:
            counts[origin + path] = counts.get(origin + path, 0) + 1
    return counts


async def start_worker(
    frontier: str, db: str, crawl_id: str, worker_id: str, log_dir: Path
) -> asyncio.subprocess.Process:
    """Start ``sitelore worker`` as its own process (stderr goes to ``log_dir/<id>.log``)."""
    stderr = (log_dir / f"{worker_id}.log").open("wb")
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "sitelore",
            "worker",
            "--frontier",
            frontier,
            "--db",
            db,
            "--crawl",
            crawl_id,
            "--worker-id",
            worker_id,
            "--allow-private",
            "127.0.0.0/8",
            "--slots",
            "4",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    finally:
        stderr.close()


async def crawl_scaled(settings: Settings, seed: str, options: CrawlOptions) -> CrawlStatus:
    """Queue one crawl in a fresh namespace, run one worker until it ends; its status."""
    from sitelore.app.bootstrap_scale import crawl_status, enqueue, run_worker

    url, namespace = namespace_url()
    try:
        queued = await enqueue(settings, url, seed, options)
        await run_worker(settings, url, crawl_id=queued.crawl_id, handle_signals=False)
        return await crawl_status(url, queued.crawl_id)
    finally:
        await delete_namespace(namespace)
