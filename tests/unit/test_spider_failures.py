"""Whole-crawl failures inside the spider's workers surface as themselves, not as groups."""

from __future__ import annotations

import pytest
from tests.fakes import FakeClock
from tests.unit.test_spider import TREE, FakeFetcher

from sitelore.errors import StoreError
from sitelore.models import CrawlOptions, Document, FetchMeta, UpsertResult
from sitelore.robots import allow_all_policy
from sitelore.spider import Spider
from sitelore.store import open_store


class BrokenStore:
    """A store whose writes fail as a database that went away would."""

    def __init__(self) -> None:
        self._inner = open_store(":memory:")

    async def upsert(self, document: Document, meta: FetchMeta) -> UpsertResult:
        raise StoreError("postgresql://db/x: connection lost")

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


async def test_a_store_failure_in_a_worker_is_raised_as_itself() -> None:
    """A StoreError in a worker ends the crawl with that StoreError, not an ExceptionGroup."""
    clock = FakeClock()
    spider = Spider(
        fetcher=FakeFetcher(clock, TREE),
        store=BrokenStore(),  # type: ignore[arg-type]
        robots=allow_all_policy(),
        clock=clock,
    )
    with pytest.raises(StoreError, match="connection lost"):
        await spider.crawl("https://docs.test/", CrawlOptions(delay=0, concurrency=4)).finish()
