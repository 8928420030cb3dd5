"""Whole crawls where another origin misbehaves: only the start URL can fail a crawl.

Real stack on loopback (Runtime, HttpFetcher, robots loader, SQLite). 127.0.0.1 and
127.0.0.2 are allowed; ``evil.test`` resolves (injected resolver) to 127.0.0.3, which
is not, so its server must never see a request. Each test reads the servers' own
request logs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.fakes import FakeClock, FakeResolver
from tests.loopback import (
    Handler,
    html,
    links,
    oversized_robots,
    redirect,
    resetting,
    serve,
    stalling,
    text,
)
from tests.scale_support import crawl_scaled

from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.errors import RobotsRefusedError
from sitelore.core.models import CrawlSummary
from sitelore.core.options import CrawlOptions, Limits

EVIL = "evil.test"
ALLOW_ALL = text("User-agent: *\nAllow: /\n")
ANY_DOMAIN = CrawlOptions(delay=0.0, same_domain=False, max_depth=2)


async def crawl(
    tmp_path: Path,
    seed: str,
    options: CrawlOptions = ANY_DOMAIN,
    *,
    resolver: FakeResolver | None = None,
    **limits: float,
) -> CrawlSummary:
    settings = Settings(
        store=str(tmp_path / "s.db"),
        allow_private=("127.0.0.1", "127.0.0.2"),
        limits=Limits(**limits),  # type: ignore[arg-type]
    )
    runtime = Runtime(settings, resolver=resolver or FakeResolver({}), clock=FakeClock())
    async with runtime:
        return await asyncio.wait_for(runtime.crawl(seed, options), 10)


def outcome_paths(summary: CrawlSummary, origin: str) -> set[str]:
    return {p.url.removeprefix(origin) for p in summary.pages if p.url.startswith(origin)}


class TestRefusedAddresses:
    async def test_link_to_a_host_on_a_refused_address_is_blocked(self, tmp_path: Path) -> None:
        """The link's origin is skipped as blocked (looked up once); the rest is crawled."""
        resolver = FakeResolver({EVIL: ["127.0.0.3"]})
        async with serve({"/robots.txt": ALLOW_ALL, "/x": html("secret")}, "127.0.0.3") as evil:
            port = evil.origin.rsplit(":", 1)[1]
            bad = [f"http://{EVIL}:{port}/x", f"http://{EVIL}:{port}/y"]
            routes = {"/robots.txt": ALLOW_ALL, "/": links(*bad, "/ok"), "/ok": html("fine")}
            async with serve(routes) as site:
                summary = await crawl(tmp_path, site.origin + "/", resolver=resolver)
        assert evil.requests == []
        assert resolver.calls == [(EVIL, int(port))]
        assert outcome_paths(summary, site.origin) == {"/", "/ok"}
        assert summary.pages_indexed == 2
        assert summary.skipped["blocked"] == 2
        assert any(EVIL in warning and "127.0.0.3" in warning for warning in summary.warnings)

    async def test_redirect_to_a_refused_address_is_that_pages_blocked_outcome(
        self, tmp_path: Path
    ) -> None:
        resolver = FakeResolver({EVIL: ["127.0.0.3"]})
        async with serve({"/x": html("secret")}, "127.0.0.3") as evil:
            port = evil.origin.rsplit(":", 1)[1]
            routes = {
                "/robots.txt": ALLOW_ALL,
                "/": links("/go", "/ok"),
                "/go": redirect(f"http://{EVIL}:{port}/x"),
                "/ok": html("fine"),
            }
            async with serve(routes) as site:
                summary = await crawl(tmp_path, site.origin + "/", resolver=resolver)
        assert evil.requests == []
        kinds = {p.url.removeprefix(site.origin): p.error and p.error.kind for p in summary.pages}
        assert kinds == {"/": None, "/go": "blocked", "/ok": None}

    async def test_sitemap_on_a_refused_address_is_skipped(self, tmp_path: Path) -> None:
        """A ``Sitemap:`` line naming a refused host: noted, never fetched, crawl goes on."""
        resolver = FakeResolver({EVIL: ["127.0.0.3"]})
        async with serve({"/sitemap.xml": text("<urlset/>")}, "127.0.0.3") as evil:
            port = evil.origin.rsplit(":", 1)[1]
            robots = f"User-agent: *\nAllow: /\nSitemap: http://{EVIL}:{port}/sitemap.xml\n"
            routes = {"/robots.txt": text(robots), "/": links("/ok"), "/ok": html("fine")}
            async with serve(routes) as site:
                options = ANY_DOMAIN.model_copy(update={"sitemap": True})
                summary = await crawl(tmp_path, site.origin + "/", options, resolver=resolver)
        assert evil.requests == []
        assert outcome_paths(summary, site.origin) == {"/", "/ok"}
        assert any(EVIL in warning for warning in summary.warnings)


@pytest.fixture(name="unreachable_robots", params=["slow", "reset"])
async def _unreachable_robots(request: pytest.FixtureRequest) -> AsyncIterator[Handler]:
    """A robots.txt that times out (stalls past 0.3 s) or is cut by a connection reset."""
    release = asyncio.Event()
    yield stalling(release) if request.param == "slow" else resetting
    release.set()


class TestUnreachableRobots:
    async def test_start_origin_fails_the_crawl_naming_the_opt_out(
        self, unreachable_robots: Handler, tmp_path: Path
    ) -> None:
        """Timeout or reset on the start origin's robots.txt: refused like a 5xx."""
        routes = {"/robots.txt": unreachable_robots, "/": html("<h1>never</h1>")}
        async with serve(routes) as site:
            with pytest.raises(RobotsRefusedError) as info:
                await crawl(tmp_path, site.origin + "/", page_timeout_seconds=0.3)
        # Tried again (the loader once, the fetcher on network errors too), never the page.
        assert set(site.paths) == {"/robots.txt"}
        assert len(site.paths) >= 2
        assert "--no-robots" in str(info.value)
        assert "robots.txt could not be read" in str(info.value)

    async def test_other_origin_is_disallowed_and_the_crawl_goes_on(
        self, unreachable_robots: Handler, tmp_path: Path
    ) -> None:
        other_routes = {"/robots.txt": unreachable_robots, "/page": html("never")}
        async with serve(other_routes, "127.0.0.2") as other:
            routes = {"/robots.txt": ALLOW_ALL, "/": links(other.origin + "/page", "/ok")}
            routes["/ok"] = html("fine")
            async with serve(routes) as site:
                summary = await crawl(tmp_path, site.origin + "/", page_timeout_seconds=0.3)
        assert "/page" not in other.paths
        assert outcome_paths(summary, site.origin) == {"/", "/ok"}
        assert summary.skipped["robots"] == 1
        # Said why: not a rule of that robots.txt, but no robots.txt to read.
        named = [line for line in summary.warnings if other.origin in line]
        assert len(named) == 1
        assert "could not be read" in named[0]
        assert "skipped as robots" in named[0]

    async def test_many_unreadable_origins_are_named_ten_times_then_once(
        self, tmp_path: Path
    ) -> None:
        """Twelve origins answering 503 for robots.txt: ten named, then one line for the rest."""
        down = {"/robots.txt": html("down", status=503), "/page": html("never")}
        async with contextlib.AsyncExitStack() as stack:
            others = [await stack.enter_async_context(serve(down, "127.0.0.2")) for _ in range(12)]
            routes = {"/robots.txt": ALLOW_ALL, "/": links(*(o.origin + "/page" for o in others))}
            async with serve(routes) as site:
                summary = await crawl(tmp_path, site.origin + "/")
        assert summary.skipped["robots"] == 12
        assert all("/page" not in other.paths for other in others)
        unreadable = [line for line in summary.warnings if "could not be read" in line]
        assert len(unreadable) == 11
        assert sum("127.0.0.2:" in line for line in unreadable) == 10
        assert "more origins" in unreadable[-1]

    @pytest.mark.slow
    async def test_a_scaled_out_crawl_keeps_the_warning_for_crawl_status(
        self, tmp_path: Path
    ) -> None:
        """Workers keep warnings in Redis, once each, for ``crawl-status``."""
        down = {"/robots.txt": html("down", status=503), "/a": html("a"), "/b": html("b")}
        async with serve(down, "127.0.0.2") as other:
            page_links = links(other.origin + "/a", other.origin + "/b")
            async with serve({"/robots.txt": ALLOW_ALL, "/": page_links}) as site:
                settings = Settings(
                    store=str(tmp_path / "s.db"), allow_private=("127.0.0.1", "127.0.0.2")
                )
                status = await crawl_scaled(settings, site.origin + "/", ANY_DOMAIN)
        assert status.stats["skipped_robots"] == 2
        assert len(status.warnings) == 1
        assert other.origin in status.warnings[0]
        assert "could not be read" in status.warnings[0]

    async def test_oversized_robots_parsed_up_to_the_cap(self, tmp_path: Path) -> None:
        """600 KiB: the Disallow near the start holds, the one past 512 KiB is not read."""
        routes = {
            "/robots.txt": text(oversized_robots()),
            "/": links("/private/x", "/late/x"),
            "/private/x": html("never"),
            "/late/x": html("fine"),
        }
        async with serve(routes) as site:
            summary = await crawl(tmp_path, site.origin + "/")
        assert "/private/x" not in site.paths
        assert "/late/x" in site.paths
        assert summary.skipped["robots"] == 1


class TestThrottled:
    async def test_retry_after_a_day_ends_that_origin_at_once(self, tmp_path: Path) -> None:
        """503 + Retry-After 86400 on another origin: its other URLs are throttled."""
        busy = html("busy", status=503, headers={"Retry-After": "86400"})
        other_routes = {"/robots.txt": ALLOW_ALL, "/a": busy, "/b": html("b"), "/c": html("c")}
        async with serve(other_routes, "127.0.0.2") as other:
            pages = [other.origin + path for path in ("/a", "/b", "/c")]
            routes = {"/robots.txt": ALLOW_ALL, "/": links(*pages, "/ok"), "/ok": html("ok")}
            async with serve(routes) as site:
                started = time.monotonic()
                summary = await crawl(tmp_path, site.origin + "/")
        assert time.monotonic() - started < 5
        assert other.paths == ["/robots.txt", "/a"]
        assert summary.skipped["throttled"] == 2
        assert outcome_paths(summary, site.origin) == {"/", "/ok"}
        assert any("throttled" in w and "86400" in w for w in summary.warnings)

    async def test_429_with_a_date_years_away_on_the_start_origin(self, tmp_path: Path) -> None:
        busy = html(
            "slow down", status=429, headers={"Retry-After": "Wed, 01 Jan 2031 00:00:00 GMT"}
        )
        routes = {
            "/robots.txt": ALLOW_ALL,
            "/": links("/a", "/b", "/c"),
            "/a": busy,
            "/b": html("b"),
            "/c": html("c"),
        }
        async with serve(routes) as site:
            summary = await crawl(tmp_path, site.origin + "/")
        assert site.paths == ["/robots.txt", "/", "/a"]
        assert summary.skipped["throttled"] == 2
        assert summary.to_json()["skipped"]["throttled"] == 2

    async def test_retry_after_past_the_deadline_ends_that_origin(self, tmp_path: Path) -> None:
        """A wait within the cap that would end after the crawl's deadline: throttled too."""
        busy = html("busy", status=503, headers={"Retry-After": "30"})
        routes = {"/robots.txt": ALLOW_ALL, "/": links("/a", "/b"), "/a": busy, "/b": html("b")}
        async with serve(routes) as site:
            options = ANY_DOMAIN.model_copy(update={"deadline_seconds": 20.0})
            summary = await crawl(tmp_path, site.origin + "/", options)
        assert site.paths == ["/robots.txt", "/", "/a"]
        assert summary.skipped["throttled"] == 1
        assert not summary.truncated

    @pytest.mark.parametrize(
        "value",
        ["²", "¹²³", "01 Jan 99999999999999999999 00:00:00 GMT", "1 Jan 2026 0:0:0 +" + "9" * 20],
    )
    async def test_a_retry_after_parsers_trip_on_is_ignored(
        self, tmp_path: Path, value: str
    ) -> None:
        """Digits ``float`` refuses, dates that overflow: a 503 without a usable wait,
        retried as such; the crawl goes on (these ended it: exit 70)."""
        busy = html("busy", status=503, headers={"Retry-After": value})
        async with serve({"/robots.txt": ALLOW_ALL, "/a": busy}, "127.0.0.2") as other:
            routes = {"/robots.txt": ALLOW_ALL, "/": links(other.origin + "/a", "/ok")}
            routes["/ok"] = html("ok")
            async with serve(routes) as site:
                summary = await crawl(tmp_path, site.origin + "/")
        assert other.paths == ["/robots.txt", "/a", "/a", "/a"]
        assert outcome_paths(summary, site.origin) == {"/", "/ok"}
        assert summary.pages_indexed == 2
        assert "throttled" not in summary.skipped

    async def test_a_retry_after_too_large_for_a_float_throttles(self, tmp_path: Path) -> None:
        busy = html("busy", status=503, headers={"Retry-After": "1e309"})
        other_routes = {"/robots.txt": ALLOW_ALL, "/a": busy, "/b": html("b")}
        async with serve(other_routes, "127.0.0.2") as other:
            pages = [other.origin + "/a", other.origin + "/b"]
            async with serve({"/robots.txt": ALLOW_ALL, "/": links(*pages)}) as site:
                summary = await crawl(tmp_path, site.origin + "/")
        assert other.paths == ["/robots.txt", "/a"]
        assert summary.skipped["throttled"] == 1

    async def test_crawl_delay_past_the_deadline_ends_that_origin_only(
        self, tmp_path: Path
    ) -> None:
        """Crawl-delay 8 s with 6 s left: that origin is throttled and the others go on
        (the first wait past the deadline stopped the whole crawl, 'deadline')."""
        other_routes = {
            "/robots.txt": text("User-agent: *\nCrawl-delay: 8\n"),
            "/a": html("a"),
            "/b": html("b"),
        }
        async with serve(other_routes, "127.0.0.2") as other:
            pages = [other.origin + "/a", other.origin + "/b"]
            routes = {"/robots.txt": ALLOW_ALL, "/": links(*pages, "/p1", "/p2")}
            routes |= {"/p1": links("/p3"), "/p2": html("p2"), "/p3": html("p3")}
            async with serve(routes) as site:
                options = ANY_DOMAIN.model_copy(update={"deadline_seconds": 6.0})
                summary = await crawl(tmp_path, site.origin + "/", options)
        assert other.paths == ["/robots.txt"]
        assert outcome_paths(summary, site.origin) == {"/", "/p1", "/p2", "/p3"}
        assert summary.skipped["throttled"] == 2
        assert not summary.truncated
        assert any("Crawl-delay 8s reaches the crawl's deadline" in w for w in summary.warnings)

    async def test_crawl_delay_of_a_day_allows_one_request(self, tmp_path: Path) -> None:
        other_routes = {
            "/robots.txt": text("User-agent: *\nCrawl-delay: 86400\n"),
            "/a": html("a"),
            "/b": html("b"),
        }
        async with serve(other_routes, "127.0.0.2") as other:
            pages = [other.origin + "/a", other.origin + "/b"]
            routes = {"/robots.txt": ALLOW_ALL, "/": links(*pages)}
            async with serve(routes) as site:
                summary = await crawl(tmp_path, site.origin + "/")
        assert other.paths == ["/robots.txt", "/a"]
        assert summary.skipped["throttled"] == 1
