"""One page's content never ends a crawl: converting or storing it fails that page alone.

Fakes of the converter and store ports raise inside one stage for one URL; every
other page is still stored, and the crawl finishes. Only an unusable store location
(a configuration problem, exit 78) still ends the whole crawl, as itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

import pytest
from tests.fakes import FakeClock, FakeFetcher, Route
from tests.unit.test_spider import TREE

from sitelore.adapters.store import open_store
from sitelore.core.convert import DocumentConverter
from sitelore.core.errors import StoreError, StoreLocationError
from sitelore.core.models import CrawlSummary, Document, FetchMeta, UpsertResult
from sitelore.core.options import CrawlOptions
from sitelore.core.ports import Converter
from sitelore.core.robots import allow_all_policy
from sitelore.crawl import Spider

HOSTILE = "https://docs.test/a"


class RaisingConverter:
    """Converts every page but raises ``error`` for one URL."""

    def __init__(self, error: BaseException, url: str = HOSTILE) -> None:
        self._inner = DocumentConverter()
        self._error = error
        self._url = url

    async def convert(
        self, body: bytes, content_type: str, url: str, charset: str | None
    ) -> Document:
        if url == self._url:
            raise self._error
        return await self._inner.convert(body, content_type, url, charset)


class HostileLinks:
    """Converts every page, adding links no page should have."""

    LINKS = (
        "http://[::1",
        "http://exa mple.test/x",
        "\x00",
        "",
        "javascript:alert(1)",
        "https://docs.test/" + "x" * 100_000,
        "https://docs.test/%zz",
        "https://user:pw@docs.test/",
        "https://docs.test:99999/",
    )

    def __init__(self) -> None:
        self._inner = DocumentConverter()

    async def convert(
        self, body: bytes, content_type: str, url: str, charset: str | None
    ) -> Document:
        document = await self._inner.convert(body, content_type, url, charset)
        return Document(
            url=document.url,
            title=document.title,
            markdown=document.markdown,
            links=(*self.LINKS, *document.links),
        )


class FailingStore:
    """A real in-memory store whose writes (or reads) raise ``error`` for one URL."""

    def __init__(self, error: Exception, *, on_read: bool = False) -> None:
        self._inner = open_store(":memory:")
        self._error = error
        self._on_read = on_read

    async def upsert(self, document: Document, meta: FetchMeta) -> UpsertResult:
        if document.url == HOSTILE and not self._on_read:
            raise self._error
        return await self._inner.upsert(document, meta)

    async def known_page(self, url: str) -> object:
        if url == HOSTILE and self._on_read:
            raise self._error
        return await self._inner.known_page(url)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


async def crawl(
    *,
    converter: Converter | None = None,
    store: object = None,
    incremental: bool = False,
    routes: Mapping[str, Route] = TREE,
) -> CrawlSummary:
    clock = FakeClock()
    spider = Spider(
        fetcher=FakeFetcher(routes, clock=clock),
        store=store if store is not None else open_store(":memory:"),  # type: ignore[arg-type]
        robots=allow_all_policy(),
        clock=clock,
        convert=converter,
        incremental=incremental,
    )
    return await spider.crawl(
        "https://docs.test/", CrawlOptions(delay=0, concurrency=4, max_depth=5)
    ).finish()


def by_url(summary: CrawlSummary) -> dict[str, str | None]:
    return {p.url: (str(p.error.kind) if p.error else None) for p in summary.pages}


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("lexbor gave up"),
        LookupError("unknown encoding: punycode"),
        UnicodeDecodeError("punycode", b"\xff", 0, 1, "invalid"),
        ValueError("bad"),
        RecursionError("maximum recursion depth exceeded"),
        MemoryError(),
        KeyError("href"),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_a_converter_that_raises_fails_that_page_alone(error: Exception) -> None:
    """Any exception of the converter is that page's conversion-failed; the rest is stored."""
    summary = await crawl(converter=RaisingConverter(error))
    kinds = by_url(summary)
    assert kinds[HOSTILE] == "conversion-failed"
    failed = next(p for p in summary.pages if p.url == HOSTILE)
    assert failed.error is not None
    assert type(error).__name__ in failed.error.message
    assert [url for url, kind in kinds.items() if kind is not None] == [HOSTILE]
    # /a's links are lost with it, the rest of the tree is crawled.
    assert "https://docs.test/b1" in kinds
    assert summary.pages_indexed == len(kinds) - 1


@pytest.mark.parametrize(
    "error",
    [RuntimeError("untranslated"), ValueError("could not convert string to float: '²'")],
    ids=lambda e: type(e).__name__,
)
async def test_an_exception_no_stage_expected_fails_that_page_alone(error: Exception) -> None:
    """Outside the converter and the store too (here the fetch): the page's internal
    conversion-failed error, never the crawl's (it ended the crawl: exit 70)."""
    summary = await crawl(routes={**TREE, HOSTILE: Route(error=error)})
    kinds = by_url(summary)
    assert kinds[HOSTILE] == "conversion-failed"
    failed = next(p for p in summary.pages if p.url == HOSTILE)
    assert failed.error is not None
    assert f"internal: {type(error).__name__}" in failed.error.message
    assert [url for url, kind in kinds.items() if kind is not None] == [HOSTILE]
    assert "https://docs.test/b1" in kinds


async def test_hostile_links_are_skipped_not_fatal() -> None:
    """Links that are not URLs, or not fetchable ones, are counted and skipped."""
    summary = await crawl(converter=HostileLinks())
    kinds = by_url(summary)
    assert {kind for kind in kinds.values() if kind is not None} <= {"http-status"}
    assert summary.pages_indexed == len(TREE)
    assert summary.skipped.get("invalid", 0) >= 1


@pytest.mark.parametrize(
    "error",
    [
        StoreError("postgresql://db/x: connection lost"),
        sqlite3.OperationalError("database is locked"),
        ValueError("A string literal cannot contain NUL (0x00) characters."),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_a_store_write_that_fails_fails_that_page_alone(error: Exception) -> None:
    """An exception while storing one page is its store-failed error; the crawl goes on."""
    summary = await crawl(store=FailingStore(error))
    kinds = by_url(summary)
    assert kinds[HOSTILE] == "store-failed"
    assert [url for url, kind in kinds.items() if kind is not None] == [HOSTILE]
    assert summary.pages_indexed == len(kinds) - 1
    assert "https://docs.test/b1" in kinds


async def test_a_store_read_that_fails_fails_that_page_alone() -> None:
    """A re-crawl whose stored-page lookup fails for one URL fails that page only."""
    store = FailingStore(RuntimeError("bad row"), on_read=True)
    summary = await crawl(store=store, incremental=True)
    kinds = by_url(summary)
    assert kinds[HOSTILE] == "store-failed"
    assert summary.pages_indexed == len(kinds) - 1


async def test_an_unusable_store_location_still_ends_the_crawl_as_itself() -> None:
    """A store location error is the operator's to fix (exit 78): raised, not a group."""
    with pytest.raises(StoreLocationError, match="not a sitelore store"):
        await crawl(store=FailingStore(StoreLocationError("x.db: not a sitelore store")))
