"""Scale-out crawls on real Redis and PostgreSQL: several worker processes, one fixture site.

The fixture hosts (127.0.0.1/.2/.3) log every request's arrival; that log is the ground
truth for politeness, robots.txt fetches and refetches.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from tests.scale_support import (
    SiteSpec,
    arrivals,
    fresh_frontier,
    held_urls,
    min_gaps,
    serve_hosts,
    start_worker,
    temp_database,
)

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.adapters.frontier_redis import RedisFrontier
from sitelore.adapters.store import PostgresStore, SQLiteStore
from sitelore.app.bootstrap import Runtime
from sitelore.app.bootstrap_scale import enqueue, run_worker
from sitelore.app.worker import ScaleTimings
from sitelore.core.config import Settings
from sitelore.core.options import CrawlOptions

pytestmark = pytest.mark.slow

DELAY = 0.1
WAIT = 90.0  # seconds a worker process may take at most (a hang fails, never a slow pass)


@pytest.fixture
def database() -> Iterator[str]:
    with temp_database() as url:
        yield url


@pytest.fixture
async def frontier() -> AsyncIterator[tuple[str, RedisFrontier]]:
    async with fresh_frontier() as pair:
        yield pair


def _settings(store: str) -> Settings:
    return Settings(store=store, allow_private=("127.0.0.0/8",))


def _options(**changes: object) -> CrawlOptions:
    base = {"max_pages": 100, "max_depth": 4, "same_domain": False, "delay": DELAY}
    return CrawlOptions.model_validate({**base, "concurrency": 4, **changes})


async def _stored(database: str) -> dict[str, int]:
    """How many times each URL was stored (a redelivery shows as a count above 1)."""
    async with await psycopg.AsyncConnection.connect(database) as conn:
        cur = await conn.execute("SELECT url, fetch_count FROM sitelore_documents")
        return {str(url): int(count) for url, count in await cur.fetchall()}


def _worker_logs(directory: Path) -> str:
    """The tail of each worker's stderr, to explain a failed run."""
    return "\n".join(f"{p.name}: {p.read_text()[-2000:]}" for p in directory.glob("*.log"))


def _assert_polite(site_gaps: dict[str, float], origins: list[str], crawl_delay: float) -> None:
    for index, origin in enumerate(origins):
        wanted = crawl_delay if index == 2 else DELAY
        assert site_gaps[origin] >= wanted, (origin, site_gaps[origin], wanted)


async def test_three_workers_store_every_page_once_and_stay_polite(
    tmp_path: Path, database: str, frontier: tuple[str, RedisFrontier]
) -> None:
    url, client = frontier
    spec = SiteSpec(pages=6, crawl_delay=0.25)
    async with serve_hosts(spec) as site:
        queued = await enqueue(
            _settings(database),
            url,
            site.origins[0] + "/",
            _options(),
            timings=ScaleTimings(heartbeat_timeout=2.0),
        )
        workers = [
            await start_worker(url, database, queued.crawl_id, f"w{i}", tmp_path) for i in range(3)
        ]
        codes = [await asyncio.wait_for(w.wait(), WAIT) for w in workers]
        status = await client.status(queued.crawl_id)

    assert codes == [0, 0, 0], _worker_logs(tmp_path)
    stored = await _stored(database)
    assert set(stored) == site.expected_documents()
    assert set(stored.values()) == {1}  # one upsert per page: nothing stored twice
    requested = arrivals(site)
    for page in site.expected_documents():
        assert requested[page] == 1, page
    for origin in site.origins:
        assert requested[origin + "/robots.txt"] == 1, origin
    assert site.origins[1] + "/private/secret.html" not in requested
    assert requested[site.origins[0] + "/old.html"] == 1
    _assert_polite(min_gaps(site), site.origins, spec.crawl_delay)
    assert status.meta["state"] == "finished"
    assert status.meta["truncated_reason"] == ""
    assert status.stats["skipped_robots"] == 1
    assert status.stats["indexed"] == len(site.expected_documents())


async def test_a_killed_worker_loses_nothing_and_only_its_leases_are_fetched_again(
    tmp_path: Path, database: str, frontier: tuple[str, RedisFrontier]
) -> None:
    url, client = frontier
    spec = SiteSpec(pages=8, latency=0.3, crawl_delay=0.2)
    loop = asyncio.get_running_loop()
    async with serve_hosts(spec) as site:
        queued = await enqueue(
            _settings(database),
            url,
            site.origins[0] + "/",
            _options(),
            timings=ScaleTimings(heartbeat_timeout=1.5),
        )
        crawl_id = queued.crawl_id
        workers = [await start_worker(url, database, crawl_id, f"w{i}", tmp_path) for i in range(3)]
        victim = workers[0]
        give_up = loop.time() + WAIT
        # Kill the victim while the server is answering one of its requests.
        while not any(arrivals(site).get(u, 0) for u in await held_urls(client, crawl_id, "w0")):
            assert loop.time() < give_up, "the victim never held a lease"
            await asyncio.sleep(0.005)
        victim.kill()
        await victim.wait()
        held_at_death = set(await held_urls(client, crawl_id, "w0"))
        codes = [await asyncio.wait_for(w.wait(), WAIT) for w in workers[1:]]
        status = await client.status(crawl_id)

    assert codes == [0, 0], _worker_logs(tmp_path)
    assert held_at_death  # the kill came mid-lease, so there was something to recover
    stored = await _stored(database)
    assert set(stored) == site.expected_documents()  # no URL lost
    refetched = {page for page, count in arrivals(site).items() if count > 1}
    assert refetched <= held_at_death
    assert max(arrivals(site).values()) <= 2
    assert status.stats["reclaimed"] == len(held_at_death)
    assert status.meta["state"] == "finished"
    _assert_polite(min_gaps(site), site.origins, spec.crawl_delay)


async def test_sqlite_and_postgresql_find_the_same_documents_for_the_same_crawl(
    tmp_path: Path, database: str, frontier: tuple[str, RedisFrontier]
) -> None:
    url, _ = frontier
    options = CrawlOptions(max_pages=100, max_depth=5, delay=0.0, concurrency=4)
    queries = [
        "install",
        "retry",
        "worker queue",
        "running tasks",
        "api reference",
        "SIGTERM",
        "python 3.13",
        "exponential backoff",
        "not",
        "robots.txt",
    ]
    async with serve_site(bundled_site_path()) as base:
        async with Runtime(_settings(str(tmp_path / "local.db"))) as runtime:
            local = await runtime.crawl(base + "/", options)
        queued = await enqueue(_settings(database), url, base + "/", options)
        await run_worker(_settings(database), url, crawl_id=queued.crawl_id, handle_signals=False)

    sqlite, postgres = SQLiteStore(tmp_path / "local.db"), PostgresStore(database)
    try:
        assert local.pages_indexed > 20
        assert {d.url for d in await sqlite.list(limit=500)} == {
            d.url for d in await postgres.list(limit=500)
        }
        for query in queries:
            in_sqlite = {hit.id for hit in await sqlite.search(query, limit=100)}
            in_postgres = {hit.id for hit in await postgres.search(query, limit=100)}
            assert in_sqlite == in_postgres, query
        assert await postgres.search("install", limit=100)  # the comparison is not vacuous
    finally:
        await sqlite.close()
        await postgres.close()


async def test_a_worker_without_a_crawl_id_serves_every_active_crawl_then_exits(
    tmp_path: Path, frontier: tuple[str, RedisFrontier]
) -> None:
    url, client = frontier
    settings = _settings(str(tmp_path / "shared.db"))
    async with serve_hosts(SiteSpec(pages=2)) as site:
        first = await enqueue(settings, url, site.origins[0] + "/", _options(same_domain=True))
        second = await enqueue(settings, url, site.origins[1] + "/", _options(same_domain=True))
        tallies = await run_worker(settings, url, exit_when_idle=True, handle_signals=False)

    assert set(tallies) == {first.crawl_id, second.crawl_id}
    assert await client.active_crawls() == []
    store = SQLiteStore(tmp_path / "shared.db")
    try:
        stored = {d.url for d in await store.list(limit=100)}
    finally:
        await store.close()
    for origin in site.origins[:2]:
        assert {origin + "/", origin + "/p1.html", origin + "/p2.html"} <= stored
    assert not any(u.startswith(site.origins[2]) for u in stored)  # same-domain crawls
