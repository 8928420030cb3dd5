"""The crawl driver on fakes: a scripted fetcher, a clock that never sleeps, in-memory SQLite."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import ClassVar

import pytest
from tests.fakes import FakeClock, FakeFetcher, Route, page

from sitelore.adapters.store import open_store
from sitelore.core.errors import (
    BlockedURLError,
    FetchTimeoutError,
    InvalidURLError,
    RobotsRefusedError,
)
from sitelore.core.models import CrawlSummary
from sitelore.core.options import CrawlOptions
from sitelore.core.robots import (
    RobotsRules,
    allow_all_policy,
    create_robots_policy,
    parse_robots_txt,
)
from sitelore.crawl import Origins, Spider


def wide_tree(fanout: tuple[int, ...]) -> tuple[dict[str, Route], dict[str, int]]:
    """A tree rooted at https://docs.test/: ``fanout[d]`` children per page at depth d.

    Every page but the root is on its own subdomain (``p1.docs.test``, ``p1-2.docs.test``,
    ...), so pages never share an origin. Returns the routes and each URL's depth.
    """
    routes: dict[str, Route] = {}
    depth_of: dict[str, int] = {}

    def add(url: str, name: str, depth: int) -> None:
        depth_of[url] = depth
        count = fanout[depth] if depth < len(fanout) else 0
        names = [f"{name}-{i}" if name else f"p{i}" for i in range(1, count + 1)]
        children = [f"https://{child}.docs.test/" for child in names]
        routes[url] = Route(page(name or "Home", *children))
        for child_url, child in zip(children, names, strict=True):
            add(child_url, child, depth + 1)

    add("https://docs.test/", "", 0)
    return routes, depth_of


def robots_loader(
    text_by_origin: Mapping[str, str | RobotsRules],
) -> tuple[Callable[[str], Awaitable[RobotsRules]], list[str]]:
    loads: list[str] = []

    async def load(origin: str) -> RobotsRules:
        loads.append(origin)
        value = text_by_origin.get(origin, "")
        return value if isinstance(value, RobotsRules) else parse_robots_txt(value)

    return load, loads


async def run_crawl(
    routes: Mapping[str, Route],
    seed: str = "https://docs.test/",
    *,
    robots: Mapping[str, str | RobotsRules] | None = None,
    url_check: Callable[[str], object] | None = None,
    turns: Mapping[str, int] | None = None,
    **options: object,
) -> tuple[CrawlSummary, FakeFetcher, FakeClock]:
    clock = FakeClock()
    fetcher = FakeFetcher(routes, clock=clock, turns=turns)
    store = open_store(":memory:")
    opts = CrawlOptions.model_validate({"delay": 0.0, **options})
    policy = allow_all_policy()
    if robots is not None:
        load, _ = robots_loader(robots)
        policy = create_robots_policy(load)
    spider = Spider(
        fetcher=fetcher,
        store=store,
        robots=policy,
        clock=clock,
        url_check=url_check,
    )
    summary = await spider.crawl(seed, opts).finish()
    await store.close()
    return summary, fetcher, clock


def urls(summary: CrawlSummary) -> list[str]:
    return [p.url for p in summary.pages]


TREE = {
    "https://docs.test/": Route(page("Home", "/a", "/b", "#top", "mailto:x@y.z")),
    "https://docs.test/a": Route(page("A", "/a1", "/a2", "/")),
    "https://docs.test/b": Route(page("B", "/b1", "/a")),
    "https://docs.test/a1": Route(page("A1", "/deep")),
    "https://docs.test/a2": Route(page("A2")),
    "https://docs.test/b1": Route(page("B1")),
    "https://docs.test/deep": Route(page("Deep")),
}


class TestOrderAndLimits:
    async def test_bfs_order_visits_each_depth_before_the_next(self) -> None:
        """Pages are started level by level: seed, then its links, then theirs."""
        summary, _, _ = await run_crawl(TREE, max_depth=5, concurrency=1)
        assert urls(summary) == [
            "https://docs.test/",
            "https://docs.test/a",
            "https://docs.test/b",
            "https://docs.test/a1",
            "https://docs.test/a2",
            "https://docs.test/b1",
            "https://docs.test/deep",
        ]
        assert [p.depth for p in summary.pages] == [0, 1, 1, 2, 2, 2, 3]
        assert summary.pages_indexed == 7

    async def test_bfs_start_order_holds_with_concurrency(self) -> None:
        """Four workers, uneven latency: every depth-d request starts before any of depth d+1.

        A 4-level tree (1, 4, 12, 24 pages), each page on its own host so no worker waits
        for an origin. One depth-1 page is slow: its siblings' subtrees finish early and
        offer depth-3 links while it is still in flight. Those must wait until the slow
        page's own depth-2 children have started.
        """
        routes, depth_of = wide_tree(fanout=(4, 3, 2))
        slow = "https://p1.docs.test/"
        summary, fetcher, _ = await run_crawl(
            routes, max_depth=5, max_pages=100, concurrency=4, turns={slow: 200}
        )
        started = [depth_of[url] for url in fetcher.urls]
        assert sorted(fetcher.urls) == sorted(depth_of)  # every page once
        assert started == sorted(started), started
        assert fetcher.most_in_flight == 4  # the workers really ran side by side
        finished = [page.url for page in summary.pages]
        # The slow page finished after depth-2 pages had: the latency was adversarial.
        assert any(depth_of[url] == 2 for url in finished[: finished.index(slow)])
        assert summary.pages_indexed == len(depth_of) == 41

    async def test_depth_zero_fetches_only_the_seed(self) -> None:
        """max_depth 0 fetches the seed alone and follows nothing."""
        summary, fetcher, _ = await run_crawl(TREE, max_depth=0)
        assert urls(summary) == ["https://docs.test/"]
        assert len(fetcher.requests) == 1

    async def test_depth_limit_counts_skips(self) -> None:
        """Links beyond max_depth are not fetched and are counted as depth skips."""
        summary, _, _ = await run_crawl(TREE, max_depth=1)
        assert urls(summary) == ["https://docs.test/", "https://docs.test/a", "https://docs.test/b"]
        assert summary.skipped.get("depth", 0) >= 3

    async def test_page_cap_truncates_and_counts_unfetched(self) -> None:
        """At max_pages the crawl stops, says why and how many URLs were left."""
        summary, _, _ = await run_crawl(TREE, max_depth=5, max_pages=2, concurrency=1)
        assert len(summary.pages) == 2
        assert summary.truncated is True
        assert summary.truncated_reason == "max_pages"
        assert summary.unfetched >= 1
        assert any("max_pages=2" in w for w in summary.warnings)
        data = summary.to_json()
        assert data["truncated"] is True
        assert data["truncatedReason"] == "max_pages"

    async def test_cycles_fetch_each_url_once(self) -> None:
        """Pages linking to each other are each fetched exactly once."""
        routes = {
            "https://docs.test/": Route(page("Home", "/x")),
            "https://docs.test/x": Route(page("X", "/y", "/")),
            "https://docs.test/y": Route(page("Y", "/x", "/", "/y")),
        }
        summary, fetcher, _ = await run_crawl(routes, max_depth=5)
        assert sorted(u for _, u in fetcher.requests) == sorted({u for _, u in fetcher.requests})
        assert len(summary.pages) == 3
        assert summary.skipped["duplicate"] >= 3


class TestScope:
    async def test_other_domains_are_not_followed(self) -> None:
        """Only the seed host and its subdomains are followed by default."""
        routes = {
            "https://docs.test/": Route(
                page(
                    "Home",
                    "https://sub.docs.test/s",
                    "https://other.test/o",
                    "https://evil-docs.test/",
                )
            ),
            "https://sub.docs.test/s": Route(page("Sub")),
        }
        summary, _, _ = await run_crawl(routes)
        assert urls(summary) == ["https://docs.test/", "https://sub.docs.test/s"]
        assert summary.skipped["filtered"] == 2

    async def test_path_prefix_and_excludes_filter(self) -> None:
        """path_prefix keeps one subtree; exclude globs drop matching URLs."""
        routes = {
            "https://docs.test/docs/": Route(
                page("Docs", "/docs/a", "/blog/b", "/docs/changelog/1", "/docs/C")
            ),
            "https://docs.test/docs/a": Route(page("A")),
            "https://docs.test/docs/C": Route(page("C")),
        }
        summary, _, _ = await run_crawl(
            routes,
            "https://docs.test/docs/",
            path_prefix="/docs/",
            exclude_patterns=["*/CHANGELOG/*"],
        )
        assert urls(summary) == [
            "https://docs.test/docs/",
            "https://docs.test/docs/a",
            "https://docs.test/docs/C",
        ]

    async def test_redirect_out_of_scope_is_recorded_but_not_expanded(self) -> None:
        """A page that redirects off-domain is recorded; its links are not followed."""
        routes = {
            "https://docs.test/": Route(page("Home", "/away")),
            "https://docs.test/away": Route(redirect="https://other.test/landing"),
            "https://other.test/landing": Route(page("Landing", "https://other.test/more")),
        }
        summary, fetcher, _ = await run_crawl(routes)
        assert [p.final_url for p in summary.pages] == [
            "https://docs.test/",
            "https://other.test/landing",
        ]
        assert "https://other.test/more" not in [u for _, u in fetcher.requests]

    async def test_a_one_page_fetch_follows_its_redirect(self) -> None:
        """``fetch URL`` (one page, depth 0): the redirect target is the page, stored."""
        routes = {
            "https://docs.test/old": Route(redirect="https://docs.test/new"),
            "https://docs.test/new": Route(page("New home")),
        }
        summary, fetcher, _ = await run_crawl(
            routes, "https://docs.test/old", max_pages=1, max_depth=0
        )
        [only] = summary.pages
        assert (only.url, only.final_url, only.indexed) == (
            "https://docs.test/old",
            "https://docs.test/new",
            True,
        )
        assert [url for _, url in fetcher.requests] == [
            "https://docs.test/old",
            "https://docs.test/new",
        ]
        assert not summary.truncated

    async def test_redirect_to_fetched_page_makes_no_second_document(self) -> None:
        """A redirect landing on an already-fetched URL is counted as a duplicate."""
        routes = {
            "https://docs.test/": Route(page("Home", "/latest/")),
            "https://docs.test/latest/": Route(redirect="https://docs.test/"),
        }
        summary, _, _ = await run_crawl(routes)
        assert summary.pages_indexed == 1
        assert summary.pages[1].indexed is False
        assert summary.pages[1].error is None


class TestOutcomes:
    async def test_each_failure_is_typed_and_the_crawl_goes_on(self) -> None:
        """Timeouts, HTTP errors and unsupported types become outcomes; others are indexed."""
        routes = {
            "https://docs.test/": Route(page("Home", "/slow", "/boom", "/bin", "/ok")),
            "https://docs.test/slow": Route(
                error=FetchTimeoutError("https://docs.test/slow", "timeout")
            ),
            "https://docs.test/boom": Route("oops", status=500),
            "https://docs.test/bin": Route(b"\x00\x01", content_type="application/octet-stream"),
            "https://docs.test/ok": Route(page("OK")),
        }
        summary, _, _ = await run_crawl(routes)
        kinds = {p.url: (p.error.kind if p.error else None) for p in summary.pages}
        assert kinds == {
            "https://docs.test/": None,
            "https://docs.test/slow": "timeout",
            "https://docs.test/boom": "http-status",
            "https://docs.test/bin": "unsupported-content-type",
            "https://docs.test/ok": None,
        }
        assert summary.pages_indexed == 2
        assert summary.errors == 3
        boom = next(p for p in summary.pages if p.url.endswith("/boom"))
        assert boom.status == 500

    async def test_blocked_links_are_skipped_without_a_request(self) -> None:
        """A link the guard refuses (private address) is skipped as blocked."""

        def check(url: str) -> None:
            if "10.0.0.1" in url:
                raise BlockedURLError(url, "private address")

        routes = {"https://docs.test/": Route(page("Home", "http://10.0.0.1/admin", "/a"))}
        summary, fetcher, _ = await run_crawl(routes, url_check=check, same_domain=False)
        assert "http://10.0.0.1/admin" not in [u for _, u in fetcher.requests]
        assert summary.skipped["blocked"] == 1

    async def test_noindex_pages_are_not_stored_nofollow_links_not_followed(self) -> None:
        """Page-level robots meta: noindex is not stored, nofollow links are not followed."""
        routes = {
            "https://docs.test/": Route(
                page("Home", "/a", extra='<meta name="robots" content="noindex">')
            ),
            "https://docs.test/a": Route(
                page("A", "/b", extra='<meta name="robots" content="nofollow">')
            ),
            "https://docs.test/b": Route(page("B")),
        }
        summary, _, _ = await run_crawl(routes)
        assert urls(summary) == ["https://docs.test/", "https://docs.test/a"]
        assert [p.indexed for p in summary.pages] == [False, True]

    async def test_invalid_seed_is_a_usage_error(self) -> None:
        """A seed that is not an http(s) URL fails before anything is fetched."""
        with pytest.raises(InvalidURLError):
            await run_crawl({}, "ftp://docs.test/")


class TestPoliteness:
    async def test_requests_to_one_origin_are_spaced_by_the_delay(self) -> None:
        """No wait before the first request, then at least ``delay`` between starts."""
        summary, fetcher, clock = await run_crawl(TREE, max_depth=5, delay=0.5, concurrency=4)
        times = [t for t, _ in fetcher.requests]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert all(gap >= 0.5 - 1e-9 for gap in gaps)
        assert clock.sleeps
        assert clock.sleeps[0] == pytest.approx(0.5)
        assert len(summary.pages) == 7

    async def test_crawl_delay_wins_when_larger(self) -> None:
        """robots.txt Crawl-delay longer than the delay is honoured, per origin."""
        _, fetcher, _ = await run_crawl(
            TREE, robots={"https://docs.test": "User-agent: *\nCrawl-delay: 2\n"}, delay=0.1
        )
        times = [t for t, _ in fetcher.requests]
        assert all(b - a >= 2.0 - 1e-9 for a, b in itertools.pairwise(times))

    async def test_retry_after_pushes_the_origin_back(self) -> None:
        """A 503 with Retry-After delays the next request to that origin."""
        routes = {
            "https://docs.test/": Route(page("Home", "/busy", "/next")),
            "https://docs.test/busy": Route("busy", status=503, headers={"Retry-After": "7"}),
            "https://docs.test/next": Route(page("Next")),
        }
        _, fetcher, _ = await run_crawl(routes, concurrency=1)
        times = {u: t for t, u in fetcher.requests}
        assert times["https://docs.test/next"] - times["https://docs.test/busy"] >= 7.0

    async def test_deadline_stops_before_sleeping_past_it(self) -> None:
        """A wait that would pass the deadline ends the crawl as truncated by deadline."""
        summary, _, clock = await run_crawl(TREE, max_depth=5, delay=4.0, deadline_seconds=9.0)
        assert summary.truncated_reason == "deadline"
        assert summary.truncated is True
        assert len(summary.pages) == 3
        assert sum(clock.sleeps) < 9.0


class TestRobots:
    ROBOTS: ClassVar[dict[str, str | RobotsRules]] = {
        "https://docs.test": "User-agent: *\nDisallow: /dir/\nDisallow: /private\n"
    }

    async def test_disallowed_links_are_skipped_and_use_no_slot(self) -> None:
        """Disallowed URLs are never requested and do not count against max_pages."""
        routes = {
            "https://docs.test/": Route(page("Home", "/private/x", "/dir/a", "/dir", "/ok")),
            "https://docs.test/dir": Route(page("Dir")),
            "https://docs.test/ok": Route(page("OK")),
        }
        summary, fetcher, _ = await run_crawl(routes, robots=self.ROBOTS, max_pages=3)
        requested = [u for _, u in fetcher.requests]
        assert "https://docs.test/private/x" not in requested
        assert "https://docs.test/dir/a" not in requested
        assert "https://docs.test/dir" in requested  # Disallow: /dir/ does not cover /dir
        assert summary.skipped["robots"] == 2
        assert summary.truncated is False

    async def test_disallowed_seed_is_a_usage_error_naming_the_opt_out(self) -> None:
        """A start URL refused by robots.txt fails before any page request."""
        with pytest.raises(RobotsRefusedError) as info:
            await run_crawl(TREE, "https://docs.test/private", robots=self.ROBOTS)
        message = str(info.value)
        assert "https://docs.test/private" in message
        assert "https://docs.test/robots.txt" in message
        assert "--no-robots" in message

    async def test_unreachable_robots_on_the_seed_origin_is_a_usage_error(self) -> None:
        """robots.txt answering 5xx on the start origin refuses the crawl."""
        from sitelore.core.robots import unreachable_rules

        with pytest.raises(RobotsRefusedError, match="server error"):
            await run_crawl(TREE, robots={"https://docs.test": unreachable_rules("503")})

    async def test_no_seed_robots_request_past_the_deadline(self) -> None:
        """Another crawl's spacing puts the origin's next turn past this crawl's deadline:
        its robots.txt is not requested, and the crawl ends empty, as a deadline does."""
        clock = FakeClock()
        fetcher = FakeFetcher(TREE, clock=clock)
        load, loads = robots_loader({})
        origins = Origins()
        origins.politeness.record_request("https://docs.test", clock.monotonic(), delay=30.0)
        store = open_store(":memory:")
        spider = Spider(
            fetcher=fetcher,
            store=store,
            robots=create_robots_policy(load),
            clock=clock,
            origins=origins,
        )
        options = CrawlOptions(delay=0.0, deadline_seconds=10.0)
        summary = await spider.crawl("https://docs.test/", options).finish()
        await store.close()
        assert loads == []
        assert fetcher.requests == []
        assert clock.sleeps == []
        assert summary.pages == []
        assert (summary.truncated, summary.truncated_reason) == (True, "deadline")
        assert summary.unfetched == 1

    async def test_redirect_into_a_disallowed_path_is_dropped(self) -> None:
        """Robots is checked on each redirect hop: a hop into /private is not followed."""
        routes = {
            "https://docs.test/": Route(page("Home", "/go")),
            "https://docs.test/go": Route(redirect="https://docs.test/private/secret"),
            "https://docs.test/private/secret": Route(page("Secret")),
        }
        summary, fetcher, _ = await run_crawl(routes, robots=self.ROBOTS)
        assert "https://docs.test/private/secret" not in [u for _, u in fetcher.requests]
        go = next(p for p in summary.pages if p.url.endswith("/go"))
        assert go.error is not None
        assert go.error.kind == "robots-denied"


class TestStreaming:
    async def test_outcomes_stream_before_the_crawl_ends(self) -> None:
        """The first outcome arrives while later pages are still to be fetched."""
        clock = FakeClock()
        fetcher = FakeFetcher(TREE, clock=clock)
        store = open_store(":memory:")
        spider = Spider(fetcher=fetcher, store=store, robots=allow_all_policy(), clock=clock)
        run = spider.crawl("https://docs.test/", CrawlOptions(delay=0, max_depth=5))
        seen = 0
        async for outcome in run:
            seen += 1
            if seen == 1:
                assert outcome.url == "https://docs.test/"
                assert len(fetcher.requests) < 7
                assert await store.count() == 1  # stored as it came
        assert seen == 7
        await store.close()

    async def test_leaving_early_keeps_what_was_stored(self) -> None:
        """Breaking out of the loop stops the crawl; stored pages stay."""
        clock = FakeClock()
        fetcher = FakeFetcher(TREE, clock=clock)
        store = open_store(":memory:")
        spider = Spider(fetcher=fetcher, store=store, robots=allow_all_policy(), clock=clock)
        run = spider.crawl("https://docs.test/", CrawlOptions(delay=0, max_depth=5))
        async for _ in run:
            break
        await run.aclose()
        assert 1 <= await store.count() < 7
        await store.close()


async def test_counts_only_summary_keeps_no_pages_but_counts_them() -> None:
    """keep_pages=False: the outcomes still stream, the summary counts without keeping them."""
    clock = FakeClock()
    store = open_store(":memory:")
    spider = Spider(
        fetcher=FakeFetcher(TREE, clock=clock), store=store, robots=allow_all_policy(), clock=clock
    )
    run = spider.crawl("https://docs.test/", CrawlOptions(delay=0, max_depth=5))
    run.summary.keep_pages = False
    streamed = [outcome async for outcome in run]
    await store.close()
    assert len(streamed) == 7
    assert run.summary.pages == []
    assert run.summary.pages_crawled == 7
    assert run.summary.pages_indexed == 7
    assert run.summary.to_json()["pagesCrawled"] == 7
