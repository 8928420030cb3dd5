"""Whole crawls through the real stack (fetcher, robots loader, converter, SQLite) on loopback."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from tests.fakes import FakeClock
from tests.samples import tiny_pdf

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.adapters.store import open_store
from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.errors import BlockedURLError, RobotsRefusedError
from sitelore.core.models import CrawlSummary
from sitelore.core.options import CrawlOptions, Limits

SITE = bundled_site_path()

#: What a crawl of the bundled site with default options (25 pages, depth 2) fetches, in
#: BFS start order. Kept by hand: a change here is a change in crawl behaviour.
EXPECTED_DEFAULT = [
    "/",
    "/guide/",
    "/concepts/",
    "/reference/",
    "/howto/",
    "/faq.html",
    "/changelog.html",
    "/guide/installation.html",
    "/guide/quickstart.html",
    "/guide/first-project.html",
    "/guide/scheduling.html",
    "/guide/deployment.html",
    "/concepts/tasks.html",
    "/concepts/queues.html",
    "/concepts/workers.html",
    "/concepts/retries.html",
    "/concepts/results.html",
    "/concepts/serialization.html",
    "/reference/api/",
    "/reference/cli.html",
    "/reference/configuration.html",
    "/reference/environment.html",
    "/howto/testing.html",
    "/howto/web-apps.html",
    "/howto/monitoring.html",
]


def settings(tmp_path: Path, **limits: int) -> Settings:
    return Settings(
        store=str(tmp_path / "s.db"),
        allow_private=("127.0.0.1",),
        limits=Limits(**limits) if limits else Limits(),
    )


async def crawl(
    tmp_path: Path, seed: str, options: CrawlOptions, *, fake_clock: bool = True, **limits: int
) -> CrawlSummary:
    clock = FakeClock() if fake_clock else None
    async with Runtime(settings(tmp_path, **limits), clock=clock) as runtime:
        return await runtime.crawl(seed, options)


def paths(summary: CrawlSummary, base: str) -> list[str]:
    return [page.url.removeprefix(base) for page in summary.pages]


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async with serve_site(SITE) as base:
        yield base


class TestBundledSite:
    async def test_default_options_fetch_the_expected_pages(
        self, site: str, tmp_path: Path
    ) -> None:
        """Defaults (25 pages, depth 2, robots on) give a known page set, truncated at the cap."""
        summary = await crawl(tmp_path, site + "/", CrawlOptions())
        assert paths(summary, site) == EXPECTED_DEFAULT
        assert summary.truncated is True
        assert summary.truncated_reason == "max_pages"
        assert summary.unfetched > 0
        assert summary.errors == 0
        store = open_store(str(tmp_path / "s.db"))
        assert await store.count() == summary.pages_indexed == 25
        hits = await store.search("retry backoff")
        assert hits[0].url == site + "/concepts/retries.html"
        await store.close()

    async def test_max_pages_five_stops_at_five(self, site: str, tmp_path: Path) -> None:
        """--max-pages 5 fetches exactly five pages and says it was truncated."""
        summary = await crawl(tmp_path, site + "/", CrawlOptions(max_pages=5))
        assert len(summary.pages) == 5
        assert summary.to_json()["truncated"] is True

    async def test_max_depth_zero_fetches_only_the_seed(self, site: str, tmp_path: Path) -> None:
        """--max-depth 0 fetches the seed and nothing else."""
        summary = await crawl(tmp_path, site + "/", CrawlOptions(max_depth=0))
        assert paths(summary, site) == ["/"]
        assert summary.skipped["depth"] >= 6

    async def test_robots_disallow_and_broken_links(self, site: str, tmp_path: Path) -> None:
        """Deep crawl: skips /internal/ (robots), reports 404s as http-status, follows redirects."""
        summary = await crawl(tmp_path, site + "/", CrawlOptions(max_pages=100, max_depth=5))
        fetched = paths(summary, site)
        assert not any(p.startswith("/internal/") for p in fetched)
        assert summary.skipped["robots"] == 1
        # Which URL robots.txt kept out, said in the summary as well as counted.
        assert summary.to_json()["skippedUrls"]["robots"] == [
            site + "/internal/release-checklist.html"
        ]
        broken = sorted(p.url.removeprefix(site) for p in summary.pages if p.error)
        assert broken == [
            "/concepts/priorities.html",
            "/guide/upgrading.html",
            "/reference/api/backends.html",
        ]
        assert {p.error.kind for p in summary.pages if p.error} == {"http-status"}
        old = next(p for p in summary.pages if p.url.endswith("/old/quickstart.html"))
        assert old.final_url == site + "/guide/quickstart.html"
        assert summary.truncated is False
        assert summary.pages_indexed == 33  # the 32 public pages and the plain-text notes

    async def test_path_prefix_and_exclude(self, site: str, tmp_path: Path) -> None:
        """--path-prefix keeps one section; --exclude drops matching URLs."""
        options = CrawlOptions(
            max_pages=100, max_depth=5, path_prefix="/concepts/", exclude_patterns=("*/q*",)
        )
        summary = await crawl(tmp_path, site + "/concepts/", options)
        fetched = paths(summary, site)
        assert fetched[0] == "/concepts/"
        assert all(p.startswith("/concepts/") for p in fetched)
        assert "/concepts/queues.html" not in fetched
        assert "/concepts/tasks.html" in fetched

    async def test_operator_cap_clamps_a_larger_ask(self, tmp_path: Path) -> None:
        """Asking 10 000 pages of a deep crawl under an operator cap of 7: exactly 7 fetched.

        The site has far more than 7 pages within depth 5, so the cap is what stops the
        crawl; the server's own log counts the requests, and the summary says what was
        applied and why.
        """
        arrivals: list[tuple[float, str]] = []
        async with serve_site(SITE, log=arrivals) as base:
            summary = await crawl(
                tmp_path, base + "/", CrawlOptions(max_pages=10_000, max_depth=5), max_pages=7
            )
        fetched = paths(summary, base)
        assert len(fetched) == 7
        assert set(fetched) == set(EXPECTED_DEFAULT[:7])  # the seed and its six links (BFS)
        requested = [path for _, path in arrivals if path != "/robots.txt"]
        assert sorted(requested) == sorted(fetched)  # seven page requests reached the server
        assert summary.pages_indexed == 7
        assert await _count(tmp_path) == 7
        assert (summary.truncated, summary.truncated_reason) == (True, "max_pages")
        assert summary.unfetched > 0
        data = summary.to_json()
        assert data["truncated"] is True
        assert (data["applied"]["maxPages"], data["applied"]["maxDepth"]) == (7, 5)
        assert data["clamped"] == [{"field": "maxPages", "requested": 10_000, "applied": 7}]

    async def test_crawl_delay_spaces_requests_on_the_server_clock(self, tmp_path: Path) -> None:
        """Crawl-delay 0.05 gives gaps of at least 50 ms between page requests, server-measured."""
        root = tmp_path / "site"
        shutil.copytree(SITE, root)
        (root / "robots.txt").write_text("User-agent: *\nCrawl-delay: 0.05\n")
        arrivals: list[tuple[float, str]] = []
        async with serve_site(root, log=arrivals) as base:
            summary = await crawl(
                tmp_path,
                base + "/",
                CrawlOptions(max_pages=6, delay=0.0, concurrency=4),
                fake_clock=False,
            )
        assert len(summary.pages) == 6
        times = [t for t, path in arrivals if path != "/robots.txt"]
        assert len(times) == 6
        assert min(b - a for a, b in itertools.pairwise(times)) >= 0.05

    async def test_disallowed_start_url_is_refused_before_fetching(self, tmp_path: Path) -> None:
        """A start URL under Disallow fails as a usage error naming the opt-out.

        The server's log proves it: robots.txt was asked for, once, and nothing else.
        """
        arrivals: list[tuple[float, str]] = []
        async with serve_site(SITE, log=arrivals) as base:
            with pytest.raises(RobotsRefusedError, match="--no-robots"):
                await crawl(tmp_path, base + "/internal/release-checklist.html", CrawlOptions())
        assert [path for _, path in arrivals] == ["/robots.txt"]
        assert not (tmp_path / "s.db").exists() or await _count(tmp_path) == 0


async def _count(tmp_path: Path) -> int:
    store = open_store(str(tmp_path / "s.db"))
    try:
        return await store.count()
    finally:
        await store.close()


# --- hostile fixture site --------------------------------------------------------------


def _hostile_app() -> web.Application:
    page = (
        "<html><head><title>Home</title></head><body><main><h1>Home</h1><p>Links:</p>"
        '<a href="/slow">slow</a> <a href="/boom">boom</a> <a href="/huge">huge</a> '
        '<a href="/doc.pdf">pdf</a> <a href="/ok">ok</a> '
        '<a href="http://10.1.2.3/admin">private</a> <a href="http://127.0.0.1:9/x">loop</a>'
        "</main></body></html>"
    )

    async def home(request: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    async def slow(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        await response.write(b"<html>")
        import asyncio

        await asyncio.sleep(5)
        return response

    async def boom(request: web.Request) -> web.Response:
        return web.Response(status=500, text="internal error")

    async def huge(request: web.Request) -> web.Response:
        body = gzip.compress(b"<p>" + b"x" * (12 * 1024 * 1024) + b"</p>")
        return web.Response(
            body=body, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )

    async def pdf(request: web.Request) -> web.Response:
        return web.Response(body=tiny_pdf(), content_type="application/pdf")

    async def ok(request: web.Request) -> web.Response:
        return web.Response(
            text="<html><title>OK</title><main><h1>OK</h1><p>fine</p></main></html>",
            content_type="text/html",
        )

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nAllow: /\n")

    app = web.Application()
    app.router.add_get("/", home)
    app.router.add_get("/slow", slow)
    app.router.add_get("/boom", boom)
    app.router.add_get("/huge", huge)
    app.router.add_get("/doc.pdf", pdf)
    app.router.add_get("/ok", ok)
    app.router.add_get("/robots.txt", robots)
    return app


class TestHostileSite:
    async def test_each_failure_is_reported_and_the_rest_indexed(self, tmp_path: Path) -> None:
        """Timeout, 500, a 12 MB body and private links each end typed; the others are indexed."""
        server = TestServer(_hostile_app(), host="127.0.0.1")
        await server.start_server()
        try:
            base = str(server.make_url("")).rstrip("/")
            summary = await crawl(
                tmp_path,
                base + "/",
                CrawlOptions(delay=0.0, same_domain=False),
                fake_clock=False,
                page_timeout_seconds=1,
            )
        finally:
            await server.close()
        kinds = {
            p.url.removeprefix(base): (p.error.kind if p.error else None) for p in summary.pages
        }
        assert kinds["/slow"] == "timeout"
        assert kinds["/boom"] == "http-status"
        assert kinds["/huge"] == "too-large"
        assert kinds["/doc.pdf"] is None
        assert kinds["/ok"] is None
        assert summary.skipped["blocked"] == 1  # 10.1.2.3 refused before any request
        # Nothing listens on :9, so its robots.txt is unreachable: disallow all (RFC 9309).
        assert not [p for p in summary.pages if ":9/x" in p.url]
        assert summary.skipped["robots"] == 1
        store = open_store(str(tmp_path / "s.db"))
        pdf = await store.get(base + "/doc.pdf")
        assert pdf is not None
        assert "Hello PDF world" in pdf.markdown
        await store.close()

    async def test_private_seed_is_blocked(self, tmp_path: Path) -> None:
        """A start URL on a private address fails before anything is fetched."""
        async with Runtime(Settings(store=str(tmp_path / "s.db"))) as runtime:
            with pytest.raises(BlockedURLError):
                await runtime.crawl("http://10.0.0.1/", CrawlOptions())


async def test_deadline_cancels_in_flight_requests_and_keeps_pages(tmp_path: Path) -> None:
    """At the deadline a hanging request is cancelled; pages fetched before it are kept."""
    server = TestServer(_hostile_app(), host="127.0.0.1")
    await server.start_server()
    try:
        base = str(server.make_url("")).rstrip("/")
        summary = await crawl(
            tmp_path,
            base + "/",
            CrawlOptions(delay=0.0, concurrency=1, deadline_seconds=0.5),
            fake_clock=False,
        )
    finally:
        await server.close()
    assert summary.truncated is True
    assert summary.truncated_reason == "deadline"
    assert summary.pages_indexed >= 1  # the home page, stored before the hang
    assert summary.elapsed_ms < 5000  # the 5 s hang was cut short, not waited out
    assert await _count(tmp_path) == summary.pages_indexed


# --- two origins: one request in flight per origin, both origins at once ------------------


class InFlight:
    """Counts, in the servers' handlers, requests in flight per origin (robots.txt
    included) and page requests in flight overall (robots.txt left out)."""

    def __init__(self) -> None:
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.pages = 0
        self.most_pages = 0
        self.requests: list[str] = []

    def enter(self, origin: str, path: str) -> None:
        self.requests.append(origin + path)
        self.now[origin] = self.now.get(origin, 0) + 1
        self.most[origin] = max(self.most.get(origin, 0), self.now[origin])
        if path != "/robots.txt":
            self.pages += 1
            self.most_pages = max(self.most_pages, self.pages)

    def leave(self, origin: str, path: str) -> None:
        self.now[origin] -= 1
        if path != "/robots.txt":
            self.pages -= 1


def _two_origin_app(index: int, origins: list[str], meter: InFlight) -> web.Application:
    """Host ``index`` serves /, /p1../p4 (0.1 s each); host 0's home links host 1's."""

    async def handle(request: web.Request) -> web.StreamResponse:
        origin = origins[index]
        meter.enter(origin, request.path)
        try:
            if request.path == "/robots.txt":
                return web.Response(text="User-agent: *\nAllow: /\n")
            await asyncio.sleep(0.1)  # server-side latency, so requests overlap
            pages = [f"/p{k}" for k in range(1, 5)]
            if request.path not in ("/", *pages):
                return web.Response(status=404, text="no")
            links = pages + ([origins[1] + "/"] if index == 0 else [])
            anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
            body = (
                f"<html><head><title>Host {index} {request.path}</title></head><body><main>"
                f"<h1>Host {index}</h1><p>Page {request.path} of host {index}.</p>{anchors}"
                "</main></body></html>"
            )
            return web.Response(text=body, content_type="text/html")
        finally:
            meter.leave(origin, request.path)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


async def test_one_request_per_origin_and_both_origins_at_once(tmp_path: Path) -> None:
    """Concurrency 4 over two origins (127.0.0.1, 127.0.0.2): at most one request in flight
    per origin, and the two origins overlap, as the servers themselves counted."""
    meter = InFlight()
    origins: list[str] = []
    servers = [
        TestServer(_two_origin_app(i, origins, meter), host=host)
        for i, host in enumerate(("127.0.0.1", "127.0.0.2"))
    ]
    for server in servers:
        await server.start_server()
        origins.append(str(server.make_url("")).rstrip("/"))
    settings = Settings(store=str(tmp_path / "s.db"), allow_private=("127.0.0.1", "127.0.0.2"))
    options = CrawlOptions(max_pages=50, max_depth=3, delay=0.0, concurrency=4, same_domain=False)
    try:
        async with Runtime(settings) as runtime:
            summary = await runtime.crawl(origins[0] + "/", options)
    finally:
        for server in servers:
            await server.close()

    pages = {origin + path for origin in origins for path in ("/", "/p1", "/p2", "/p3", "/p4")}
    assert {page.url for page in summary.pages} == pages
    assert summary.pages_indexed == 10
    assert summary.errors == 0
    assert sorted(meter.requests) == sorted([*pages, *(o + "/robots.txt" for o in origins)])
    assert meter.most == {origins[0]: 1, origins[1]: 1}
    assert meter.most_pages == 2  # page requests to the two origins overlapped
