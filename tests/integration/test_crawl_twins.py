"""One document under two URLs: a directory and its index file, served with the same bytes.

A loopback site answers ``/guide/`` and ``/guide/index.html`` with identical bodies (no
redirect), as ``python3 -m http.server`` and most static hosts do, and links both. The
crawl must store one document and report the other page as ``duplicate``, whichever it
reaches first, locally (in-memory frontier, SQLite) and scaled out (Redis frontier,
PostgreSQL); the twin's request counts against ``max_pages`` (the cap bounds requests),
and a re-crawl that meets the two
in the other order keeps the document under the URL it kept before.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web
from tests.loopback import Handler, Site, serve
from tests.scale_support import crawl_scaled, delete_namespace, namespace_url, temp_database

from sitelore.adapters.store import open_store
from sitelore.app.bootstrap import Runtime
from sitelore.app.refresh import update_source, update_source_scaled
from sitelore.app.service import submit_page
from sitelore.core.config import Settings, SourceSpec
from sitelore.core.models import CrawlSummary
from sitelore.core.options import CrawlOptions

GUIDE = (
    b"<html><head><title>Guide</title></head><body><main><h1>Guide</h1>"
    b"<p>Read the <a href='intro.html'>introduction</a> first.</p></main></body></html>"
)
DIR_FIRST = ("/guide/", "/guide/index.html")
INDEX_FIRST = ("/guide/index.html", "/guide/")


def _page(body: bytes) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="text/html")

    return handler


def _root(order: list[str]) -> Handler:
    """The start page: links to the twins in ``order`` (a list the test may reverse)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        hrefs = [*order, "/v1/x", "/v2/x"]
        anchors = "".join(f"<p><a href='{href}'>{href}</a></p>" for href in hrefs)
        body = f"<html><head><title>Home</title></head><body><main>{anchors}</main></body></html>"
        return web.Response(text=body, content_type="text/html")

    return handler


@asynccontextmanager
async def _twin_site(order: list[str]) -> AsyncIterator[Site]:
    same = _page(GUIDE)
    version = _page(b"<html><head><title>X</title></head><body><main><p>Same in v1 and v2.</p>")
    intro = _page(b"<html><head><title>Intro</title></head><body><main><p>Hello.</p>")
    routes = {
        "/robots.txt": _page(b""),
        "/": _root(order),
        "/guide/": same,
        "/guide/index.html": same,
        "/guide/intro.html": intro,
        "/v1/x": version,
        "/v2/x": version,
    }
    async with serve(routes) as site:
        yield site


def _settings(store: str) -> Settings:
    return Settings(store=store, allow_private=("127.0.0.0/8",))


async def _stored(location: str, origin: str) -> set[str]:
    store = open_store(location)
    try:
        return {doc.url.removeprefix(origin) for doc in await store.list(limit=100)}
    finally:
        await store.close()


#: Stored whichever twin comes first: the one linked first (fetched first).
def _expected(first: str) -> set[str]:
    return {"/", first, "/guide/intro.html", "/v1/x", "/v2/x"}


# --- local crawls (in-memory frontier, SQLite) ----------------------------------------------


@pytest.mark.parametrize("order", [DIR_FIRST, INDEX_FIRST], ids=["dir-first", "index-first"])
async def test_a_local_crawl_stores_one_document_for_twin_urls(
    tmp_path: Path, order: tuple[str, str]
) -> None:
    store = str(tmp_path / "t.db")
    async with _twin_site(list(order)) as site, Runtime(_settings(store)) as runtime:
        summary = await runtime.crawl(site.origin + "/", CrawlOptions(delay=0))

        twin = next(page for page in summary.pages if page.url == site.origin + order[1])
        stored = await runtime.store.get(site.origin + order[0])

    assert (summary.pages_crawled, summary.pages_indexed) == (6, 5)
    # The twin itself, and its link to intro.html (known already, as on any page).
    assert summary.skipped_by_reason()["duplicate"] == 2
    assert summary.to_json()["skipped"]["duplicate"] == 2
    assert await _stored(store, site.origin) == _expected(order[0])
    assert stored is not None
    assert (twin.indexed, twin.error, twin.document_id) == (False, None, stored.id)
    assert twin.duplicate_of == stored.id
    assert site.paths.count("/guide/intro.html") == 1


@pytest.mark.parametrize("order", [DIR_FIRST, INDEX_FIRST], ids=["dir-first", "index-first"])
async def test_a_twin_spends_its_page_slot(tmp_path: Path, order: tuple[str, str]) -> None:
    """``max_pages`` bounds requests: the twin's request uses a page of the budget."""
    store = str(tmp_path / "t.db")
    async with _twin_site(list(order)) as site, Runtime(_settings(store)) as runtime:
        summary = await runtime.crawl(site.origin + "/", CrawlOptions(delay=0, max_pages=5))

    assert (summary.pages_crawled, summary.pages_indexed) == (5, 4)
    assert (summary.truncated, summary.unfetched) == (True, 1)
    assert len(site.paths) - site.paths.count("/robots.txt") == 5


async def _update(runtime: Runtime, origin: str) -> CrawlSummary:
    outcome = await update_source(runtime, "docs", SourceSpec(url=origin + "/", delay=0))
    assert outcome.summary is not None
    assert outcome.report.ok
    assert outcome.report.removed == ()
    return outcome.summary


@pytest.mark.parametrize("order", [DIR_FIRST, INDEX_FIRST], ids=["dir-first", "index-first"])
async def test_an_update_meeting_the_twins_in_the_other_order_keeps_the_same_url(
    tmp_path: Path, order: tuple[str, str]
) -> None:
    """No flip-flop: the URL stored first stays the document; nothing is removed or new."""
    store = str(tmp_path / "t.db")
    links = list(order)
    async with _twin_site(links) as site, Runtime(_settings(store)) as runtime:
        first = await _update(runtime, site.origin)
        links.reverse()  # the site now links the other twin first
        again = await _update(runtime, site.origin)
        report = (await runtime.store.change_reports("docs", limit=1))[0]

    assert await _stored(store, site.origin) == _expected(order[0])
    assert (first.pages_indexed, again.pages_indexed) == (5, 5)
    assert (first.skipped["duplicate"], again.skipped["duplicate"]) == (2, 2)
    assert (report.new, report.changed) == ((), (site.origin + "/",))  # its links moved
    assert site.origin + order[0] in report.unchanged
    assert site.origin + order[1] not in report.unchanged + report.changed + report.removed
    assert len(report.unchanged) == 4


async def test_fetching_one_twin_answers_the_document_its_twin_holds(tmp_path: Path) -> None:
    """A one-page fetch (``fetch``, REST/MCP without spider) of the other twin stores
    nothing new and answers the stored document, not "not stored"."""
    store = str(tmp_path / "t.db")
    one_page = CrawlOptions(delay=0, max_pages=1, max_depth=0)
    async with _twin_site(list(DIR_FIRST)) as site, Runtime(_settings(store)) as runtime:
        _, kept = await submit_page(runtime, site.origin + "/guide/", one_page)
        outcome, answered = await submit_page(runtime, site.origin + "/guide/index.html", one_page)
        count = await runtime.store.count()

    assert answered.id == kept.id
    assert answered.url == site.origin + "/guide/"
    assert (outcome.indexed, outcome.duplicate_of, count) == (False, kept.id, 1)


async def test_equal_pages_under_different_paths_stay_two_documents(tmp_path: Path) -> None:
    """/v1/x and /v2/x serve the same text today; each is still its own document."""
    store = str(tmp_path / "t.db")
    async with _twin_site(list(DIR_FIRST)) as site, Runtime(_settings(store)) as runtime:
        await runtime.crawl(site.origin + "/", CrawlOptions(delay=0))
        v1 = await runtime.store.get(site.origin + "/v1/x")
        v2 = await runtime.store.get(site.origin + "/v2/x")

    assert v1 is not None
    assert v2 is not None
    assert v1.markdown == v2.markdown


# --- scale-out (Redis frontier, PostgreSQL) -------------------------------------------------


async def _scaled(settings: Settings, seed: str, options: CrawlOptions) -> dict[str, int]:
    return (await crawl_scaled(settings, seed, options)).stats


@pytest.mark.slow
@pytest.mark.parametrize("order", [DIR_FIRST, INDEX_FIRST], ids=["dir-first", "index-first"])
async def test_a_scaled_out_crawl_stores_one_document_for_twin_urls(order: tuple[str, str]) -> None:
    """As locally: one document for the twins; one worker, one slot."""
    with temp_database() as database:
        async with _twin_site(list(order)) as site:
            options = CrawlOptions(delay=0, concurrency=1)
            stats = await _scaled(_settings(database), site.origin + "/", options)
        stored = await _stored(database, site.origin)

    assert (stats["fetched"], stats["indexed"]) == (6, 5)
    assert stats["skipped_duplicate"] == 2
    assert stored == _expected(order[0])


@pytest.mark.slow
async def test_a_scaled_out_update_keeps_the_url_it_stored_before() -> None:
    links = list(DIR_FIRST)
    with temp_database() as database:
        async with _twin_site(links) as site, Runtime(_settings(database)) as runtime:
            spec = SourceSpec(url=site.origin + "/", delay=0)
            url, namespace = namespace_url()
            try:
                await update_source_scaled(runtime, url, "docs", spec)
                links.reverse()
                outcome = await update_source_scaled(runtime, url, "docs", spec)
            finally:
                await delete_namespace(namespace)
        stored = await _stored(database, site.origin)

    report = outcome.report
    assert stored == _expected(DIR_FIRST[0])
    assert (report.new, report.removed, report.changed) == ((), (), (site.origin + "/",))
    assert len(report.unchanged) == 4
    assert site.origin + "/guide/" in report.unchanged
