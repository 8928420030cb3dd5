"""Scale-out crawls do what local ones do: capture, replay, incremental update of a source.

Real Redis (a namespace per test), loopback sites, SQLite stores; the worker runs in
this process (``run_worker`` / ``run_and_wait``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from tests.loopback import Handler, html, links, serve, text
from tests.scale_support import delete_namespace, namespace_url, require_redis

from sitelore.adapters.store import SQLiteStore
from sitelore.app.bootstrap import Runtime
from sitelore.app.bootstrap_scale import enqueue, run_worker
from sitelore.app.refresh import update_source_scaled
from sitelore.core.config import Settings, SourceSpec
from sitelore.core.options import CrawlOptions

pytestmark = pytest.mark.slow

OPTIONS = CrawlOptions(delay=0.0, concurrency=2)


@pytest.fixture
async def frontier() -> AsyncIterator[str]:
    require_redis()
    url, namespace = namespace_url()
    try:
        yield url
    finally:
        await delete_namespace(namespace)


def _settings(store: Path) -> Settings:
    return Settings(store=str(store), allow_private=("127.0.0.0/8",))


async def _urls(path: Path) -> set[str]:
    store = SQLiteStore(path)
    try:
        return {d.url for d in await store.list(limit=100)}
    finally:
        await store.close()


SITE: dict[str, Handler] = {
    "/robots.txt": text("User-agent: *\nAllow: /\n"),
    "/": links("/a", "/b"),
    "/a": html("<h1>A</h1><p>Alpha.</p>"),
    "/b": html("<h1>B</h1><p>Beta.</p>"),
}


async def test_a_scaled_crawl_captures_and_a_scaled_replay_needs_no_network(
    tmp_path: Path, frontier: str
) -> None:
    archive = tmp_path / "archive"
    async with serve(SITE) as site:
        seed = site.origin + "/"
        queued = await enqueue(
            _settings(tmp_path / "live.db"), frontier, seed, OPTIONS, capture=archive
        )
        await run_worker(
            _settings(tmp_path / "live.db"),
            frontier,
            crawl_id=queued.crawl_id,
            handle_signals=False,
        )
        live_requests = len(site.requests)
    assert list(archive.glob("*.warc.gz"))
    # The server is gone: a replay that touched the network would fail every page.
    replayed = await enqueue(
        _settings(tmp_path / "replay.db"), frontier, seed, OPTIONS, replay=archive
    )
    await run_worker(
        _settings(tmp_path / "replay.db"),
        frontier,
        crawl_id=replayed.crawl_id,
        handle_signals=False,
    )

    assert live_requests >= 4  # robots.txt and three pages
    assert await _urls(tmp_path / "replay.db") == await _urls(tmp_path / "live.db")
    assert len(await _urls(tmp_path / "live.db")) == 3


async def test_update_through_the_frontier_reports_new_changed_unchanged_removed(
    tmp_path: Path, frontier: str
) -> None:
    version: dict[str, str] = {"a": "Alpha.", "b": "200"}

    async def page_a(request: web.Request) -> web.StreamResponse:
        return web.Response(
            text=f"<html><head><title>A</title></head><body><main><p>{version['a']}</p>"
            "</main></body></html>",
            content_type="text/html",
        )

    async def page_b(request: web.Request) -> web.StreamResponse:
        body = "<html><head><title>B</title></head><body><main><p>Beta.</p></main></body></html>"
        return web.Response(text=body, content_type="text/html", status=int(version["b"]))

    routes = {**SITE, "/a": page_a, "/b": page_b}
    async with serve(routes) as site, Runtime(_settings(tmp_path / "s.db")) as runtime:
        spec = SourceSpec(url=site.origin + "/", delay=0.0)
        first = await update_source_scaled(runtime, frontier, "docs", spec)
        version.update(a="Alpha, rewritten.", b="404")
        second = await update_source_scaled(runtime, frontier, "docs", spec)
        stored = await runtime.store.change_reports("docs", limit=1)

    origin = site.origin
    assert first.report.ok
    assert set(first.report.new) == {origin + "/", origin + "/a", origin + "/b"}
    assert second.report.changed == (origin + "/a",)
    assert second.report.removed == (origin + "/b",)
    assert second.report.unchanged == (origin + "/",)
    assert stored[0].changed == (origin + "/a",)


async def test_update_through_the_frontier_records_a_refused_seed_as_a_failed_refresh(
    tmp_path: Path, frontier: str
) -> None:
    routes = {"/robots.txt": text("User-agent: *\nDisallow: /\n"), "/": html("never")}
    async with serve(routes) as site, Runtime(_settings(tmp_path / "s.db")) as runtime:
        outcome = await update_source_scaled(
            runtime, frontier, "docs", SourceSpec(url=site.origin + "/")
        )
    assert not outcome.report.ok
    assert "disallowed by robots.txt" in (outcome.report.error or "")
    assert site.paths == ["/robots.txt"]
