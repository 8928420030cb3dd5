"""Scrape pages and keep their bodies, and map a site's URLs, through the one crawl path.

The operations behind the Firecrawl-compatible routes that the native surfaces can use
too. Each runs :meth:`Runtime.open_crawl` (guard, robots.txt, the operator's caps and
delay, the store) and adds only what a crawl does not keep: the final response bodies
(:class:`KeptBodies`, a live ``Snapshots`` mode), a stored copy younger than a maximum
age, and the URLs a page and its sitemaps point at. Never imports a web library.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Unpack

from sitelore.adapters.fetcher import header_problem
from sitelore.app.bootstrap import Runtime
from sitelore.app.service import PageFailedError, submit_page
from sitelore.core.errors import ErrorKind, UsageError
from sitelore.core.models import PageOutcome, Snapshot, SnapshotMode, StoredDocument
from sitelore.core.options import CrawlOptions
from sitelore.core.ports import Fetcher, LiveFetcher
from sitelore.core.robots import MAX_CRAWL_DELAY_MS, parse_robots_txt, robots_origin
from sitelore.core.urls import normalize_url

if TYPE_CHECKING:
    from sitelore.adapters.fetcher import FetchOptions

__all__ = [
    "MAX_MAP_URLS",
    "SAFE_HEADERS",
    "KeptBodies",
    "Scraped",
    "check_headers",
    "map_urls",
    "scrape",
    "stored_copy",
]

#: Request headers a caller may add to its fetches (lower case). Credentials
#: (Authorization, Cookie) would put private pages into a shared store; Host,
#: User-Agent and the hop-by-hop ones belong to the fetcher and the operator.
SAFE_HEADERS = frozenset({"accept", "accept-language", "cache-control", "dnt", "pragma", "referer"})
_KEPT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain", "text/markdown"})
_ROBOTS_PATH = "/robots.txt"


def check_headers(field: str, headers: Mapping[str, str]) -> dict[str, str]:
    """The headers, lower-cased; UsageError naming the first one not in SAFE_HEADERS."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        key = name.strip().lower()
        if key not in SAFE_HEADERS:
            allowed = ", ".join(sorted(SAFE_HEADERS))
            raise UsageError(f"{field}.{name}: not a header this server sends (allowed: {allowed})")
        problem = header_problem(name, value)
        if problem is not None:
            raise UsageError(f"{field}.{name}: {problem}")
        out[key] = value
    return out


class KeptBodies:
    """``ports.Snapshots`` for crawls whose callers want the pages' bodies: live, kept.

    Keeps the final response of each page fetch (HTML and text only, by requested URL)
    and of robots.txt, and adds the caller's ``headers`` to every request. Memory: at
    most the crawl's pages times the operator's page-size cap.
    """

    def __init__(
        self,
        headers: Mapping[str, str] | None = None,
        *,
        on_fetch: Callable[[str], None] | None = None,
    ) -> None:
        self.headers = dict(headers or {})
        self.bodies: dict[str, Snapshot] = {}
        #: Told each URL as its fetch starts (robots.txt and sitemaps included).
        self.on_fetch = on_fetch

    mode = SnapshotMode.LIVE  #: always ``live``

    @contextlib.asynccontextmanager
    async def fetch_path(self, seed_id: str, live: LiveFetcher) -> AsyncIterator[Fetcher]:
        """The real fetcher, wrapped so bodies are kept."""
        async with live(None) as inner:
            yield _KeepingFetcher(inner, self)

    def body_of(self, url: str) -> Snapshot | None:
        """The final response kept for a page fetched as ``url``, if any."""
        return self.bodies.get(url)

    def crawl_delay(self, url: str, user_agent: str) -> float:
        """The ``Crawl-delay`` (seconds, capped) the robots.txt of ``url``'s origin gave
        ``user_agent`` in this crawl; 0 when it said none or was not read."""
        robots = self.bodies.get(robots_origin(url) + _ROBOTS_PATH)
        if robots is None or not 200 <= robots.status < 300:
            return 0.0
        rules = parse_robots_txt(robots.body.decode("utf-8", "replace"), user_agent)
        return min(MAX_CRAWL_DELAY_MS, rules.crawl_delay_ms or 0) / 1000


@dataclasses.dataclass(frozen=True, slots=True)
class _KeepingFetcher:
    inner: Fetcher
    keeper: KeptBodies

    async def fetch(self, url: str, **options: Unpack[FetchOptions]) -> Snapshot:
        """Fetch through the real fetcher with the caller's headers; keep page bodies."""
        if self.keeper.on_fetch is not None:
            self.keeper.on_fetch(url)
        options["headers"] = {**self.keeper.headers, **(options.get("headers") or {})} or None
        snapshot = await self.inner.fetch(url, **options)
        if snapshot.content_type in _KEPT_TYPES or url.endswith(_ROBOTS_PATH):
            self.keeper.bodies[url] = snapshot
        return snapshot


@dataclasses.dataclass(frozen=True, slots=True)
class Scraped:
    """One scraped page: its outcome, the stored document, and the response kept.

    A page that answered an HTTP error status has no document; its outcome says why.
    ``crawl_delay`` is the site's Crawl-delay for this server (seconds; 0 if none), for
    a caller that scrapes the same site again.
    """

    outcome: PageOutcome
    document: StoredDocument | None
    snapshot: Snapshot | None
    crawl_delay: float = 0.0


async def scrape(
    runtime: Runtime, url: str, options: CrawlOptions, *, headers: Mapping[str, str] | None = None
) -> Scraped:
    """Fetch, convert and store one page (like a native one-page submit), keeping its body.

    Raises:
        UsageError: a bad or refused URL, or robots.txt refuses it.
        PageFailedError: no response (its error kind says why; an HTTP error status is
            returned as a Scraped without document instead).
    """
    keeper = KeptBodies(headers)
    single = options.model_copy(update={"max_pages": 1, "max_depth": 0, "concurrency": 1})
    agent = runtime.settings.user_agent
    try:
        outcome, document = await submit_page(runtime, url, single, snapshots=keeper)
    except PageFailedError as exc:
        if exc.kind is not ErrorKind.HTTP_STATUS:
            raise
        page = exc.page
        return Scraped(page, None, keeper.body_of(page.url), keeper.crawl_delay(page.url, agent))
    delay = keeper.crawl_delay(outcome.url, agent)
    return Scraped(outcome, document, keeper.body_of(outcome.url), delay)


async def stored_copy(runtime: Runtime, url: str, max_age_ms: int) -> StoredDocument | None:
    """The stored document of ``url`` if it was fetched less than ``max_age_ms`` ago."""
    if max_age_ms <= 0:
        return None
    doc = await runtime.store.get(normalize_url(runtime.check_url(url)))
    if doc is None or doc.removed_at is not None:
        return None
    age = runtime.clock.now() - doc.fetched_at
    return doc if age < timedelta(milliseconds=max_age_ms) else None


#: The most URLs one map remembers (the sitemap loader has its own, lower, cap).
MAX_MAP_URLS = 100_000


@dataclasses.dataclass(slots=True)
class _Collect:
    """A crawl's URL filter that follows nothing and remembers the URLs it is asked about.

    Sitemap URLs are offered before the start page is fetched; once it is (``seen``),
    the URLs that follow are the page's links, remembered only with ``links``.
    """

    seed: str
    links: bool
    page_fetched: bool = False
    urls: dict[str, None] = dataclasses.field(default_factory=dict)

    def seen(self, url: str) -> None:
        if url == self.seed:
            self.page_fetched = True

    def __call__(self, url: str) -> bool:
        if (self.links or not self.page_fetched) and len(self.urls) < MAX_MAP_URLS:
            self.urls[url] = None
        return False


async def map_urls(
    runtime: Runtime, url: str, options: CrawlOptions, *, links: bool = True
) -> list[str]:
    """The start URL, the URLs its site's sitemaps list (with ``options.sitemap``) and,
    with ``links``, the URLs the page links to; in that order, each once.

    One crawl of the start page whose scope follows nothing: every URL discovered is
    noted instead (the crawl's own scope, ``options``, still decides first). The start
    page is fetched, and stored, like any scraped page; nothing else is fetched but
    robots.txt and the sitemaps.

    Raises:
        UsageError: a bad or refused URL, or robots.txt refuses it.
    """
    seed = normalize_url(runtime.check_url(url))
    collect = _Collect(seed, links=links)
    first = options.model_copy(
        update={"max_pages": 1, "max_depth": 1, "concurrency": 1, "url_filter": collect}
    )
    async with runtime.open_crawl(url, first, snapshots=KeptBodies(on_fetch=collect.seen)) as run:
        await run.finish()
    return [seed, *(u for u in collect.urls if u != seed)]
