"""robots.txt is read alike by a local crawl, the enqueue step and the Redis workers.

A scripted fetcher records each request's time budget; the Redis side runs on a real
Redis (a namespace per test): ``enqueue_crawl`` reads the seed origin's robots.txt,
the worker the other origin's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.fakes import FakeFetcher, Route, page
from tests.scale_support import fresh_frontier

from sitelore.adapters.clock import SystemClock
from sitelore.adapters.frontier_redis import RedisFrontier
from sitelore.adapters.store import SQLiteStore
from sitelore.app.bootstrap import Runtime
from sitelore.app.worker import QueueRequest, Worker, WorkerConfig, enqueue_crawl
from sitelore.core.config import Settings
from sitelore.core.convert import DocumentConverter
from sitelore.core.models import SnapshotMode
from sitelore.core.options import CrawlOptions, Limits
from sitelore.core.ports import Fetcher, LiveFetcher

#: A page budget shorter than robots.txt's own 10 s: each robots.txt request gets it.
LIMITS = Limits(page_timeout_seconds=3.0)
SEED = "https://docs.test/"
ROBOTS = "User-agent: *\nAllow: /\n"
ROUTES = {
    "https://docs.test/robots.txt": Route(ROBOTS, content_type="text/plain"),
    "https://docs.test/": Route(page("Home", "https://other.test/")),
    "https://other.test/robots.txt": Route(ROBOTS, content_type="text/plain"),
    "https://other.test/": Route(page("Other")),
}
OPTIONS = CrawlOptions(delay=0.0, same_domain=False, max_depth=1)
EXPECTED = {"https://docs.test/robots.txt": 3.0, "https://other.test/robots.txt": 3.0}


class _Scripted:
    """``ports.Snapshots`` handing every crawl the one scripted fetcher."""

    mode = SnapshotMode.LIVE

    def __init__(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher

    def fetch_path(
        self, seed_id: str, live: LiveFetcher
    ) -> contextlib.AbstractAsyncContextManager[Fetcher]:
        return contextlib.nullcontext(self.fetcher)


def _robots_budgets(fetcher: FakeFetcher) -> dict[str, float | None]:
    return {c.url: c.timeout for c in fetcher.calls if c.url.endswith("/robots.txt")}


@pytest.fixture
async def frontier() -> AsyncIterator[RedisFrontier]:
    async with fresh_frontier() as (_, client):
        yield client


async def test_a_local_crawl_gives_robots_txt_the_page_budget(tmp_path: Path) -> None:
    fetcher = FakeFetcher(ROUTES)
    settings = Settings(store=str(tmp_path / "local.db"), limits=LIMITS)
    async with Runtime(settings) as runtime:
        summary = await runtime.crawl(SEED, OPTIONS, snapshots=_Scripted(fetcher))
    assert summary.pages_indexed == 2
    assert _robots_budgets(fetcher) == EXPECTED


async def test_enqueue_and_workers_give_robots_txt_the_page_budget(
    tmp_path: Path, frontier: RedisFrontier
) -> None:
    fetcher = FakeFetcher(ROUTES)
    clock = SystemClock()
    store = SQLiteStore(tmp_path / "redis.db")
    try:
        await enqueue_crawl(
            QueueRequest(seed=SEED, options=OPTIONS, crawl_id="robots-budget"),
            frontier=frontier,
            fetcher=fetcher,
            limits=LIMITS,
            user_agent="sitelore-test",
            url_check=str,
            clock=clock,
        )
        worker = Worker(
            frontier=frontier,
            store=store,
            fetch_path=lambda meta, deadline: contextlib.nullcontext(fetcher),
            config=WorkerConfig(worker_id="w1", limits=LIMITS, url_check=str),
            clock=clock,
            converter=DocumentConverter(),
        )
        await worker.run(crawl_id="robots-budget")
        assert await store.count() == 2
    finally:
        await store.close()
    assert _robots_budgets(fetcher) == EXPECTED
