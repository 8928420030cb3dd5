"""Incremental re-crawls in the spider, on fakes: validators, 304s, removals, change kinds,
X-Robots-Tag, and sitemap seeding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.fakes import FakeClock, FakeFetcher, Route, page

from sitelore.adapters.store import MEMORY, SQLiteStore
from sitelore.core.errors import NetworkError
from sitelore.core.models import ChangeKind, CrawlSummary
from sitelore.core.options import CrawlOptions
from sitelore.core.robots import (
    RobotsRules,
    allow_all_policy,
    create_robots_policy,
    parse_robots_txt,
)
from sitelore.core.sitemaps import BeforeFetch, SitemapResult
from sitelore.crawl import Spider

SEED = "https://docs.test/"


def conditional(fetcher: FakeFetcher) -> list[str]:
    """The URLs fetched with an ``If-None-Match`` validator."""
    return [call.url for call in fetcher.calls if "If-None-Match" in call.headers]


def site() -> dict[str, Route]:
    return {
        SEED: Route(page("Home", "/a", "/b")),
        SEED + "a": Route(page("A", "/a1")),
        SEED + "b": Route(page("B")),
        SEED + "a1": Route(page("A1")),
    }


class World:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.routes = site()
        self.store = SQLiteStore(MEMORY, now=self.clock.now)
        self.fetcher = FakeFetcher(self.routes, clock=self.clock, conditional=True)

    async def crawl(
        self,
        *,
        incremental: bool = True,
        sitemaps: SitemapLoaderFake | None = None,
        robots: str | None = None,
        **options: object,
    ) -> CrawlSummary:
        self.fetcher.calls.clear()
        self.clock.advance(60)
        policy = allow_all_policy()
        if robots is not None:
            text = robots

            async def load(origin: str) -> RobotsRules:
                return parse_robots_txt(text)

            policy = create_robots_policy(load)
        spider = Spider(
            fetcher=self.fetcher,
            store=self.store,
            robots=policy,
            clock=self.clock,
            incremental=incremental,
            sitemaps=sitemaps,
        )
        opts = CrawlOptions.model_validate({"delay": 0.0, **options})
        return await spider.crawl(SEED, opts).finish()


def kinds(summary: CrawlSummary) -> dict[str, ChangeKind | None]:
    return {p.url.removeprefix(SEED): p.change for p in summary.pages}


class TestRevalidation:
    async def test_a_second_crawl_revalidates_every_page_and_changes_nothing(self) -> None:
        world = World()
        first = await world.crawl()
        assert set(kinds(first).values()) == {ChangeKind.NEW}
        assert conditional(world.fetcher) == []
        before = {d.url: d for d in await world.store.list()}

        second = await world.crawl()
        assert kinds(second) == dict.fromkeys(["", "a", "b", "a1"], ChangeKind.UNCHANGED)
        assert sorted(conditional(world.fetcher)) == sorted(before)
        assert {p.status for p in second.pages} == {304}
        assert [p.document_id for p in second.pages] == [p.document_id for p in first.pages]
        after = {d.url: d for d in await world.store.list()}
        for url, doc in after.items():
            assert doc.updated_at == before[url].updated_at
            assert doc.content_hash == before[url].content_hash
            assert doc.fetched_at > before[url].fetched_at  # verified, not rewritten

    async def test_an_edited_page_is_the_only_change(self) -> None:
        world = World()
        await world.crawl()
        world.routes[SEED + "b"] = Route(page("B revised", "/c"))
        world.routes[SEED + "c"] = Route(page("C"))
        summary = await world.crawl()
        assert kinds(summary) == {
            "": ChangeKind.UNCHANGED,
            "a": ChangeKind.UNCHANGED,
            "b": ChangeKind.CHANGED,
            "a1": ChangeKind.UNCHANGED,
            "c": ChangeKind.NEW,
        }

    async def test_a_change_outside_the_main_content_is_unchanged(self) -> None:
        """Only the Markdown of the main content counts; the new nav link is still followed."""
        world = World()
        await world.crawl()
        world.routes[SEED + "b"] = Route(page("B", "/c"))
        world.routes[SEED + "c"] = Route(page("C"))
        summary = await world.crawl()
        assert kinds(summary)["b"] is ChangeKind.UNCHANGED
        assert kinds(summary)["c"] is ChangeKind.NEW

    async def test_a_new_etag_on_the_same_content_is_unchanged(self) -> None:
        world = World()
        await world.crawl()
        world.routes[SEED + "b"] = Route(world.routes[SEED + "b"].data + b"\n")
        summary = await world.crawl()
        assert kinds(summary)["b"] is ChangeKind.UNCHANGED
        assert next(p.status for p in summary.pages if p.url == SEED + "b") == 200

    async def test_a_page_that_now_answers_404_is_removed_but_kept(self) -> None:
        world = World()
        await world.crawl()
        stored = await world.store.get(SEED + "b")
        assert stored is not None
        assert await world.store.search('"Text about B"')
        del world.routes[SEED + "b"]

        summary = await world.crawl()
        assert kinds(summary)["b"] is ChangeKind.REMOVED
        gone = next(p for p in summary.pages if p.url == SEED + "b")
        assert gone.document_id == stored.id
        assert gone.error is not None
        assert gone.error.status == 404
        kept = await world.store.get(SEED + "b")
        assert kept is not None
        assert kept.removed_at is not None
        assert kept.markdown == stored.markdown
        assert [h.url for h in await world.store.search('"Text about B"')] == []

        again = await world.crawl()
        assert kinds(again)["b"] is ChangeKind.UNCHANGED
        assert SEED + "b" not in conditional(world.fetcher)

        world.routes[SEED + "b"] = Route(page("B"))
        back = await world.crawl()
        assert kinds(back)["b"] is ChangeKind.CHANGED
        revived = await world.store.get(SEED + "b")
        assert revived is not None
        assert revived.removed_at is None
        assert [h.url for h in await world.store.search('"Text about B"')] == [SEED + "b"]

    async def test_a_410_removes_too_and_a_500_only_fails(self) -> None:
        world = World()
        await world.crawl()
        world.routes[SEED + "a"] = Route("gone", status=410)
        world.routes[SEED + "b"] = Route("oops", status=500)
        summary = await world.crawl()
        assert kinds(summary)["a"] is ChangeKind.REMOVED
        assert kinds(summary)["b"] is ChangeKind.FAILED
        kept = await world.store.get(SEED + "b")
        assert kept is not None
        assert kept.removed_at is None

    async def test_a_network_failure_keeps_the_document(self) -> None:
        world = World()
        await world.crawl()
        world.routes[SEED + "b"] = Route(error=NetworkError(SEED + "b", "connection refused"))
        summary = await world.crawl()
        assert kinds(summary)["b"] is ChangeKind.FAILED
        assert await world.store.get(SEED + "b") is not None

    async def test_a_broken_link_never_stored_is_failed_not_removed(self) -> None:
        world = World()
        world.routes[SEED] = Route(page("Home", "/a", "/b", "/missing"))
        summary = await world.crawl()
        assert kinds(summary)["missing"] is ChangeKind.FAILED

    async def test_a_plain_crawl_sends_no_validators_and_flags_nothing(self) -> None:
        world = World()
        await world.crawl(incremental=False)
        del world.routes[SEED + "b"]
        summary = await world.crawl(incremental=False)
        assert conditional(world.fetcher) == []
        assert kinds(summary)["b"] is ChangeKind.FAILED
        kept = await world.store.get(SEED + "b")
        assert kept is not None
        assert kept.removed_at is None
        assert kinds(summary)["a"] is ChangeKind.UNCHANGED


class TestRobotsTagHeader:
    async def test_noindex_header_is_not_stored(self) -> None:
        world = World()
        world.routes[SEED + "b"] = Route(page("B"), headers={"X-Robots-Tag": "noindex"})
        summary = await world.crawl()
        assert await world.store.get(SEED + "b") is None
        assert summary.skipped.get("noindex") == 1

    async def test_nofollow_header_stops_link_following(self) -> None:
        world = World()
        world.routes[SEED + "a"] = Route(page("A", "/a1"), headers={"X-Robots-Tag": "nofollow"})
        summary = await world.crawl()
        assert "a1" not in kinds(summary)
        assert await world.store.get(SEED + "a") is not None

    async def test_a_header_for_another_crawler_is_ignored(self) -> None:
        world = World()
        world.routes[SEED + "b"] = Route(page("B"), headers={"X-Robots-Tag": "otherbot: noindex"})
        await world.crawl()
        assert await world.store.get(SEED + "b") is not None


@dataclass
class SitemapLoaderFake:
    urls: Sequence[str]
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    allowed: list[bool] = field(default_factory=list)

    async def __call__(
        self, seed: str, declared: Sequence[str], before_fetch: BeforeFetch
    ) -> SitemapResult:
        self.calls.append((seed, tuple(declared)))
        self.allowed.append(await before_fetch(seed + "sitemap.xml"))
        return SitemapResult(urls=tuple(self.urls), files=(seed + "sitemap.xml",))


class TestSitemapSeeding:
    async def test_sitemap_urls_seed_the_frontier_within_scope_and_robots(self) -> None:
        world = World()
        world.routes[SEED + "orphan"] = Route(page("Orphan"))
        world.routes[SEED + "private/x"] = Route(page("Private"))
        loader = SitemapLoaderFake(
            [SEED + "orphan", "https://elsewhere.test/x", SEED + "private/x", SEED + "a"]
        )
        robots = "User-agent: *\nDisallow: /private/\nSitemap: https://docs.test/s.xml\n"
        summary = await world.crawl(sitemap=True, sitemaps=loader, robots=robots)
        fetched = kinds(summary)
        assert "orphan" in fetched
        assert "private/x" not in fetched
        assert not any("elsewhere" in p.url for p in summary.pages)
        assert loader.calls == [(SEED, ("https://docs.test/s.xml",))]
        assert loader.allowed == [True]
        assert summary.sitemap_urls == 4
        assert summary.skipped["robots"] == 1
        assert summary.skipped["filtered"] >= 1

    async def test_no_sitemap_option_no_sitemap_reading(self) -> None:
        world = World()
        loader = SitemapLoaderFake([SEED + "orphan"])
        await world.crawl(sitemaps=loader)
        assert loader.calls == []

    async def test_depth_zero_keeps_the_crawl_to_the_seed(self) -> None:
        world = World()
        world.routes[SEED + "orphan"] = Route(page("Orphan"))
        loader = SitemapLoaderFake([SEED + "orphan"])
        summary = await world.crawl(sitemap=True, sitemaps=loader, max_depth=0)
        assert list(kinds(summary)) == [""]
