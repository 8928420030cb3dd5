"""One engine, two frontiers: the same loopback sites crawled locally and through Redis.

Each fixture site is crawled twice, by ``Runtime.crawl`` (the in-memory frontier) and by
``enqueue`` + ``run_worker`` (the Redis frontier), each into its own SQLite store. Both
must store the same documents, skip the same URLs for the same reasons and report the
same page errors: the page pipeline and the crawl loop are shared, so a difference
here is a difference between the two frontier adapters.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
from aiohttp import web
from tests.loopback import Handler, html, links, redirect, serve, text
from tests.scale_support import crawl_scaled, delete_namespace, namespace_url, require_redis

from sitelore.adapters.store import SQLiteStore
from sitelore.app.bootstrap import Runtime
from sitelore.app.bootstrap_scale import crawl_status, enqueue, run_worker
from sitelore.core.config import Settings
from sitelore.core.options import CrawlOptions

pytestmark = pytest.mark.slow

ALLOW = "User-agent: *\nDisallow: /private/\n"


@dataclasses.dataclass(frozen=True)
class Crawled:
    """What one crawl left: stored URLs (origin-relative), skips by reason, error kinds."""

    documents: frozenset[str]
    skipped: Mapping[str, int]
    errors: Mapping[str, int]


def _relative(url: str, origins: list[str]) -> str:
    for index, origin in enumerate(origins):
        if url.startswith(origin):
            return f"o{index}{url.removeprefix(origin)}"
    return url


async def _documents(path: Path, origins: list[str]) -> frozenset[str]:
    store = SQLiteStore(path)
    try:
        return frozenset(_relative(d.url, origins) for d in await store.list(limit=500))
    finally:
        await store.close()


def _settings(store: Path) -> Settings:
    return Settings(store=str(store), allow_private=("127.0.0.0/8",))


async def _local(tmp: Path, seed: str, options: CrawlOptions, origins: list[str]) -> Crawled:
    async with Runtime(_settings(tmp / "local.db")) as runtime:
        summary = await runtime.crawl(seed, options)
    errors = collections.Counter(str(p.error.kind) for p in summary.pages if p.error is not None)
    skipped = {reason: n for reason, n in summary.skipped.items() if n and reason != "duplicate"}
    return Crawled(await _documents(tmp / "local.db", origins), skipped, dict(errors))


async def _redis(tmp: Path, seed: str, options: CrawlOptions, origins: list[str]) -> Crawled:
    status = await crawl_scaled(_settings(tmp / "redis.db"), seed, options)
    errors = collections.Counter(line.split("\t")[1] for line in status.errors)
    skipped = {
        name.removeprefix("skipped_"): n
        for name, n in status.stats.items()
        if name.startswith("skipped_") and n and name != "skipped_duplicate"
    }
    if status.meta.get("truncated_reason") == "max_pages":
        skipped["cap"] = int(status.meta["unfetched"])
    return Crawled(await _documents(tmp / "redis.db", origins), skipped, dict(errors))


def _flaky(body: str) -> Handler:
    """503 on the first request, the page after that (a retry must get it)."""
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        if calls == 1:
            return web.Response(status=503, headers={"Retry-After": "0"})
        return web.Response(body=body, content_type="text/html")

    return handler


def _main_site(other: str) -> dict[str, Handler]:
    return {
        "/robots.txt": text(ALLOW + "Sitemap: /sitemap.xml\n"),
        "/sitemap.xml": text(
            "<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>"
            "<url><loc>/orphan</loc></url></urlset>"
        ),
        "/orphan": html("only the sitemap links here"),
        "/": links("/a", "/private/x", "/go", "/dup", "/missing", "/flaky", "/hidden"),
        "/a": links("/b", other + "/outside"),
        "/b": html("b page"),
        "/private/x": html("never"),
        "/go": redirect(other + "/landing"),
        "/dup": redirect("/a"),
        "/flaky": _flaky("<html><body><main><h1>Flaky</h1><p>At last.</p></main></body></html>"),
        "/hidden": html(
            "<p>Hidden</p><a href='/never-followed'>x</a>",
            headers={"X-Robots-Tag": "noindex, nofollow"},
        ),
    }


def _other_site() -> dict[str, Handler]:
    return {
        "/robots.txt": text("User-agent: *\nAllow: /\n"),
        "/landing": links("/deeper"),
        "/deeper": html("deeper"),
        "/outside": html("outside"),
    }


@pytest.fixture
async def sites() -> AsyncIterator[list[str]]:
    require_redis()
    async with (
        serve(_other_site(), "127.0.0.2") as other,
        serve(_main_site(other.origin)) as main,
    ):
        yield [main.origin, other.origin]


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(CrawlOptions(delay=0.0, max_depth=3, concurrency=2), id="same-domain"),
        pytest.param(
            CrawlOptions(delay=0.0, max_depth=3, concurrency=2, same_domain=False), id="any-domain"
        ),
        pytest.param(CrawlOptions(delay=0.0, max_depth=1, concurrency=1), id="shallow"),
        pytest.param(
            CrawlOptions(delay=0.0, max_depth=3, concurrency=2, sitemap=True), id="sitemap"
        ),
    ],
)
async def test_both_frontiers_store_skip_and_fail_alike(
    tmp_path: Path, sites: list[str], options: CrawlOptions
) -> None:
    seed = sites[0] + "/"
    local = await _local(tmp_path, seed, options, sites)
    scaled = await _redis(tmp_path, seed, options, sites)

    assert local.documents == scaled.documents
    assert local.skipped == scaled.skipped
    assert local.errors == scaled.errors
    assert ("o0/orphan" in local.documents) == options.sitemap
    assert {"o0/", "o0/a", "o0/flaky"} <= local.documents  # the comparison is not vacuous
    assert "o0/hidden" not in local.documents
    assert local.errors == {"http-status": 1}
    assert local.skipped["robots"] == 1
    assert local.skipped["noindex"] == 1


async def test_both_frontiers_stop_at_the_page_cap(tmp_path: Path, sites: list[str]) -> None:
    """Which pages fit under the cap depends on each frontier's order; the cap does not."""
    seed = sites[0] + "/"
    (tmp_path / "all").mkdir()
    everything = await _local(tmp_path / "all", seed, CrawlOptions(delay=0.0), sites)
    capped = CrawlOptions(delay=0.0, max_pages=4, concurrency=1)
    local = await _local(tmp_path, seed, capped, sites)
    scaled = await _redis(tmp_path, seed, capped, sites)

    for crawled in (local, scaled):
        assert crawled.skipped["cap"] > 0
        assert 0 < len(crawled.documents) <= 4
        assert crawled.documents <= everything.documents


async def test_a_redirect_across_origins_is_stored_under_its_target(
    tmp_path: Path, sites: list[str]
) -> None:
    options = CrawlOptions(delay=0.0, max_depth=3, concurrency=2)
    local = await _local(tmp_path, sites[0] + "/", options, sites)
    assert "o1/landing" in local.documents  # followed into the other origin, and stored
    assert "o1/deeper" not in local.documents  # but not expanded: out of scope


CRAWL_DELAY = 0.2


@pytest.fixture
async def timed_site() -> AsyncIterator[tuple[str, list[tuple[float, str]]]]:
    """One origin asking for ``Crawl-delay: 0.2``; every request's arrival time is logged."""
    log: list[tuple[float, str]] = []
    pages = {f"/p{i}": html(f"page {i}") for i in range(5)}
    routes: dict[str, Handler] = {
        "/robots.txt": text(f"User-agent: *\nCrawl-delay: {CRAWL_DELAY}\n"),
        "/": links(*pages),
        **pages,
    }

    def timed(path: str, handler: Handler) -> Handler:
        async def logged(request: web.Request) -> web.StreamResponse:
            log.append((time.monotonic(), path))
            return await handler(request)

        return logged

    async with serve({path: timed(path, h) for path, h in routes.items()}) as site:
        yield site.origin, log


def _assert_one_origin_politely(log: list[tuple[float, str]]) -> None:
    paths = [path for _, path in log]
    assert paths.count("/robots.txt") == 1, paths
    assert paths.count("/") == 2  # both crawls fetched their seed
    times = sorted(at for at, _ in log)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= CRAWL_DELAY * 0.95, gaps  # spaced across both crawls


async def test_two_local_crawls_of_one_origin_share_its_robots_and_spacing(
    tmp_path: Path, timed_site: tuple[str, list[tuple[float, str]]]
) -> None:
    origin, log = timed_site
    options = CrawlOptions(delay=0.0, concurrency=4)
    async with Runtime(_settings(tmp_path / "one.db")) as runtime:
        first, second = await asyncio.gather(
            runtime.crawl(origin + "/", options), runtime.crawl(origin + "/", options)
        )
    assert first.pages_indexed == second.pages_indexed == 6
    _assert_one_origin_politely(log)


async def test_two_redis_crawls_of_one_origin_share_its_robots_and_spacing(
    tmp_path: Path, timed_site: tuple[str, list[tuple[float, str]]]
) -> None:
    require_redis()
    origin, log = timed_site
    options = CrawlOptions(delay=0.0, concurrency=4)
    url, namespace = namespace_url()
    settings = _settings(tmp_path / "one.db")
    try:
        first = await enqueue(settings, url, origin + "/", options)
        second = await enqueue(settings, url, origin + "/", options)
        tallies = await run_worker(settings, url, exit_when_idle=True, handle_signals=False)
        done = [await crawl_status(url, crawl.crawl_id) for crawl in (first, second)]
    finally:
        await delete_namespace(namespace)
    assert set(tallies) == {first.crawl_id, second.crawl_id}
    assert [status.stats.get("indexed") for status in done] == [6, 6]
    _assert_one_origin_politely(log)


async def test_a_one_page_crawl_of_a_redirect_stores_its_target_in_both(
    tmp_path: Path, sites: list[str]
) -> None:
    """``fetch URL`` semantics: the hop goes on with its page, on the page's one slot."""
    options = CrawlOptions(delay=0.0, max_pages=1, max_depth=0)
    local = await _local(tmp_path, sites[0] + "/go", options, sites)
    scaled = await _redis(tmp_path, sites[0] + "/go", options, sites)
    assert local.documents == scaled.documents == {"o1/landing"}
