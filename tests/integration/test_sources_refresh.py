"""Named sources kept fresh, through the real stack on the bundled site (a loopback copy):
conditional re-crawls, change reports, removals, a site that goes down, sitemap seeding."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.fakes import FakeClock

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.adapters.store import SQLiteStore
from sitelore.app.bootstrap import Runtime
from sitelore.app.refresh import UpdateOutcome, source_status, update_source
from sitelore.core.config import Settings, SourceSpec
from sitelore.core.models import ChangeKind
from sitelore.core.options import CrawlOptions

BROKEN = {"/guide/upgrading.html", "/concepts/priorities.html", "/reference/api/backends.html"}
ORPHAN = "/howto/graceful-shutdown.html"


class Site:
    """A copy of the bundled site on loopback that a test may edit, plus what it answered."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.served: list[tuple[str, int]] = []
        self.base = ""
        self._stack = contextlib.AsyncExitStack()

    async def start(self) -> None:
        self.base = await self._stack.enter_async_context(serve_site(self.root, served=self.served))

    async def stop(self) -> None:
        await self._stack.aclose()

    def statuses(self, status: int) -> list[str]:
        return [path for path, code in self.served if code == status]


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    root = tmp_path / "site"
    shutil.copytree(bundled_site_path(), root)
    served = Site(root)
    await served.start()
    yield served
    await served.stop()


def make_settings(tmp_path: Path, base: str, **options: object) -> tuple[Settings, SourceSpec]:
    spec = SourceSpec.model_validate(
        {"url": base + "/", "max_pages": 100, "max_depth": 5, "delay": 0.0, **options}
    )
    settings = Settings(
        store=str(tmp_path / "s.db"), allow_private=("127.0.0.1",), sources={"lumen": spec}
    )
    return settings, spec


async def update(settings: Settings, spec: SourceSpec, clock: FakeClock) -> UpdateOutcome:
    async with Runtime(settings, clock=clock) as runtime:
        return await update_source(runtime, "lumen", spec)


def paths(urls: tuple[str, ...], base: str) -> set[str]:
    return {url.removeprefix(base) for url in urls}


def snapshot_rows(db: Path) -> tuple[dict[str, tuple[str, str]], list[bytes]]:
    """(url -> (updated_at, content_hash), the FTS index blocks): what a rewrite would change."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = {
            r[0]: (r[1], r[2])
            for r in conn.execute("SELECT url, updated_at, content_hash FROM documents")
        }
        blocks = [bytes(r[0]) for r in conn.execute("SELECT block FROM sections_fts_data")]
    return rows, blocks


class TestUpdates:
    async def test_first_update_stores_the_site_and_reports_it_new(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, spec = make_settings(tmp_path, site.base)
        outcome = await update(settings, spec, FakeClock())
        report = outcome.report
        assert report.ok
        assert len(report.new) == 33  # the 32 linked public pages and notes.txt
        assert paths(report.failed, site.base) == BROKEN
        assert report.changed == report.unchanged == report.removed == ()
        assert site.statuses(304) == []

    async def test_a_second_update_revalidates_and_rewrites_nothing(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, spec = make_settings(tmp_path, site.base)
        clock = FakeClock()
        first = await update(settings, spec, clock)
        before = snapshot_rows(tmp_path / "s.db")
        site.served.clear()

        clock.advance(3600)
        second = await update(settings, spec, clock)
        report = second.report
        assert report.ok
        assert report.new == report.changed == report.removed == ()
        assert set(report.unchanged) == set(first.report.new)
        assert paths(report.failed, site.base) == BROKEN
        not_modified = site.statuses(304)
        assert len(not_modified) == len(first.report.new)
        assert second.summary is not None
        assert sum(1 for p in second.summary.pages if p.status == 304) == len(not_modified)
        assert snapshot_rows(tmp_path / "s.db") == before

    async def test_editing_one_page_changes_exactly_that_page(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, spec = make_settings(tmp_path, site.base)
        clock = FakeClock()
        await update(settings, spec, clock)
        page = site.root / "concepts" / "retries.html"
        page.write_text(
            page.read_text(encoding="utf-8").replace(
                "</article>", "<p>Retries now back off with full jitter.</p></article>"
            ),
            encoding="utf-8",
        )
        report = (await update(settings, spec, clock)).report
        assert paths(report.changed, site.base) == {"/concepts/retries.html"}
        assert report.new == report.removed == ()
        assert len(report.unchanged) == 32
        async with Runtime(settings, clock=clock) as runtime:
            hits = await runtime.store.search('"full jitter"')  # a phrase (words alone: any)
        assert [h.url for h in hits] == [site.base + "/concepts/retries.html"]

    async def test_deleting_one_page_removes_it_but_keeps_it(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, spec = make_settings(tmp_path, site.base)
        clock = FakeClock()
        await update(settings, spec, clock)
        (site.root / "howto" / "testing.html").unlink()
        report = (await update(settings, spec, clock)).report
        assert paths(report.removed, site.base) == {"/howto/testing.html"}
        assert report.new == report.changed == ()
        assert paths(report.failed, site.base) == BROKEN
        store = SQLiteStore(tmp_path / "s.db")
        try:
            kept = await store.get(site.base + "/howto/testing.html")
            assert kept is not None
            assert kept.removed_at is not None
            assert all(h.url != kept.url for h in await store.search("testing enqueue"))
        finally:
            await store.close()

    async def test_a_site_that_goes_down_keeps_its_documents_and_says_so(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, spec = make_settings(tmp_path, site.base)
        clock = FakeClock()
        good = await update(settings, spec, clock)
        await site.stop()

        clock.advance(7 * 86400)
        down = await update(settings, spec, clock)
        assert down.report.error is not None
        # Its robots.txt is unreachable too: disallow all (RFC 9309), so no page is asked.
        assert "robots.txt could not be read" in down.report.error
        assert down.summary is None
        async with Runtime(settings, clock=clock) as runtime:
            hits = await runtime.store.search("retry backoff")
            assert hits
            assert hits[0].url == site.base + "/concepts/retries.html"
            assert await runtime.store.count() == 33
            status = await source_status(runtime.store, "lumen", spec, clock.now())
        assert status.state == "failed"
        assert status.documents == len(good.report.new)
        assert status.last_ok == good.report
        assert status.due is True
        assert status.to_json()["error"] == down.report.error

    async def test_a_start_page_that_fails_keeps_the_documents_and_says_so(
        self, site: Site, tmp_path: Path
    ) -> None:
        """robots.txt still answers, the start page is gone: the refresh failed, on record."""
        settings, spec = make_settings(tmp_path, site.base)
        clock = FakeClock()
        good = await update(settings, spec, clock)
        (site.root / "index.html").unlink()

        clock.advance(7 * 86400)
        broken = await update(settings, spec, clock)
        assert broken.report.error is not None
        assert "start page failed" in broken.report.error
        assert paths(broken.report.removed, site.base) == {"/"}  # a known page now 404
        async with Runtime(settings, clock=clock) as runtime:
            status = await source_status(runtime.store, "lumen", spec, clock.now())
        assert status.state == "failed"
        assert status.last_ok == good.report

    async def test_a_refused_start_url_is_a_recorded_failure(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, _ = make_settings(tmp_path, site.base)
        spec = SourceSpec(url=site.base + "/internal/release-checklist.html")
        outcome = await update(settings, spec, FakeClock())
        assert outcome.summary is None
        assert outcome.report.error is not None
        assert "robots.txt" in outcome.report.error
        async with Runtime(settings) as runtime:
            stored = await runtime.store.change_reports("lumen")
        assert stored == [outcome.report]


class TestSitemaps:
    async def test_a_sitemap_seeded_crawl_finds_the_orphan(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, _ = make_settings(tmp_path, site.base)
        options = CrawlOptions(max_pages=100, max_depth=5, delay=0.0, sitemap=True)
        async with Runtime(settings, clock=FakeClock()) as runtime:
            summary = await runtime.crawl(site.base + "/", options)
            orphan = await runtime.store.get(site.base + ORPHAN)
        assert orphan is not None
        assert "drain_timeout" in orphan.markdown
        assert summary.sitemap_urls == 33
        # robots.txt says "Sitemap: /sitemap.xml": resolved, and read once (not twice).
        assert [p for p, _ in site.served].count("/sitemap.xml") == 1
        assert not any(p.url.endswith("/internal/release-checklist.html") for p in summary.pages)
        assert summary.skipped["robots"] == 1

    async def test_without_sitemaps_the_orphan_stays_unknown(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, _ = make_settings(tmp_path, site.base)
        options = CrawlOptions(max_pages=100, max_depth=5, delay=0.0)
        async with Runtime(settings, clock=FakeClock()) as runtime:
            summary = await runtime.crawl(site.base + "/", options)
            assert await runtime.store.get(site.base + ORPHAN) is None
        assert "/sitemap.xml" not in [p for p, _ in site.served]
        assert summary.sitemap_urls == 0

    async def test_a_source_with_sitemap_reports_the_orphan_new(
        self, site: Site, tmp_path: Path
    ) -> None:
        settings, spec = make_settings(tmp_path, site.base, sitemap=True)
        report = (await update(settings, spec, FakeClock())).report
        assert site.base + ORPHAN in report.new
        assert report.counts()[str(ChangeKind.NEW)] == 34
