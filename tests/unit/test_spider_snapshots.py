"""The spider's part in snapshots: capture links, unpaced replay, and a refused crawl."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from tests.fakes import FakeClock, FakeFetcher, Route, page

from sitelore.adapters.store import SQLiteStore
from sitelore.core.errors import ArchiveError
from sitelore.core.models import CaptureRef
from sitelore.core.options import CrawlOptions
from sitelore.core.robots import allow_all_policy
from sitelore.crawl import Spider

SEED = "https://docs.example.com/"


def archive(clock: FakeClock, bodies: Mapping[str, str], *, captured: bool) -> FakeFetcher:
    """Serves fixed bodies; tags each snapshot with a capture ref unless told not to."""
    routes = {
        url: Route(body, capture=ref_for(url) if captured else None) for url, body in bodies.items()
    }
    return FakeFetcher(routes, clock=clock)


def ref_for(url: str) -> CaptureRef:
    return CaptureRef(
        warc_file="/a/x.warc.gz",
        offset=len(url),
        length=10,
        digest="sha1:" + url,
        record_id=f"<urn:{url}>",
        page_id="seed::" + url,
    )


SITE = {SEED: page("Home", "/a", "/b"), SEED + "a": page("A"), SEED + "b": page("B")}


def spider(
    store: SQLiteStore, fetcher: FakeFetcher, clock: FakeClock, *, paced: bool = True
) -> Spider:
    return Spider(fetcher=fetcher, store=store, robots=allow_all_policy(), clock=clock, paced=paced)


class TestCaptureLinks:
    async def test_documents_link_to_the_record_they_were_built_from(self, tmp_path: Path) -> None:
        """A captured or replayed page's document is linked to its snapshot's record."""
        clock = FakeClock()
        store = SQLiteStore(tmp_path / "s.db")
        try:
            fetcher = archive(clock, SITE, captured=True)
            summary = await spider(store, fetcher, clock).crawl(SEED, CrawlOptions()).finish()
            assert summary.pages_indexed == 3
            for url in SITE:
                assert await store.capture_of(url) == ref_for(url)
        finally:
            await store.close()

    async def test_a_live_change_drops_the_old_link_and_no_change_keeps_it(
        self, tmp_path: Path
    ) -> None:
        """Text rebuilt from uncaptured bytes unlinks; an unchanged document stays linked."""
        clock = FakeClock()
        store = SQLiteStore(tmp_path / "s.db")
        try:
            await (
                spider(store, archive(clock, SITE, captured=True), clock)
                .crawl(SEED, CrawlOptions())
                .finish()
            )
            changed = dict(SITE) | {SEED + "a": page("A, rewritten")}
            live = archive(clock, changed, captured=False)
            await spider(store, live, clock).crawl(SEED, CrawlOptions()).finish()
            assert await store.capture_of(SEED + "a") is None
            assert await store.capture_of(SEED + "b") == ref_for(SEED + "b")
            assert await store.capture_of(SEED) == ref_for(SEED)
        finally:
            await store.close()


class TestReplayPacing:
    async def test_unpaced_crawl_never_waits(self, tmp_path: Path) -> None:
        """paced=False (replay): no per-origin spacing, even with a delay asked for."""
        clock = FakeClock()
        store = SQLiteStore(tmp_path / "s.db")
        try:
            fetcher = archive(clock, SITE, captured=True)
            options = CrawlOptions(delay=5.0, concurrency=1)
            await spider(store, fetcher, clock, paced=False).crawl(SEED, options).finish()
            assert clock.sleeps == []
            paced_clock = FakeClock()
            paced = archive(paced_clock, SITE, captured=True)
            await spider(store, paced, paced_clock).crawl(SEED, options).finish()
            assert paced_clock.sleeps
        finally:
            await store.close()


class TestRefusedCrawl:
    async def test_a_refused_crawl_is_one_outcome_and_fetches_nothing(self, tmp_path: Path) -> None:
        """run.refuse(error): exactly one page outcome with the error's kind; no fetch."""
        clock = FakeClock()
        store = SQLiteStore(tmp_path / "s.db")
        try:
            fetcher = archive(clock, SITE, captured=False)
            run = spider(store, fetcher, clock).crawl(SEED, CrawlOptions())
            run.refuse(ArchiveError("/nowhere: no such snapshot archive"))
            outcomes = [outcome async for outcome in run]
            assert fetcher.calls == []
            assert [dataclasses.astuple(o.error) for o in outcomes if o.error] == [
                ("invalid-config", "/nowhere: no such snapshot archive", None)
            ]
            assert [o.url for o in outcomes] == [SEED]
            assert run.summary.pages_crawled == 1
            assert run.summary.pages_indexed == 0
        finally:
            await store.close()
