"""Run one local crawl: seed checks, sitemaps, the crawl loop over the memory frontier.

The spider never throws for a page: each page ends as a :class:`PageOutcome` holding
a stored document or a typed error, streamed to the caller as it happens and stored
as it comes (an interrupted crawl keeps what it fetched). Problems the user must fix
(a bad seed, a seed the guard or robots.txt refuses) raise a ``UsageError`` before any
page is fetched.

It owns no sockets, files or clocks: the fetcher, store, robots policy and clock are
passed in, so tests run it on fakes and loopback servers.

Scheduling: ``concurrency`` slots run the one crawl loop (``crawl.loop``) over a
:class:`~sitelore.crawl.memory.MemoryFrontier` (BFS order, one request in flight per
origin, spacing shared by every crawl of the process) and the one page pipeline
(``crawl.page``), the same pipeline the scale-out workers run over Redis. The origin
is let go after the exchange, so its next request overlaps this page's conversion (in
the :class:`~sitelore.core.ports.Converter` worker processes); a rendered page keeps its
origin until it is stored (its own requests go to that origin too).

Per-page errors: anything raised while converting or storing one page (a
converter's bug, a crash of its worker, a database error) is that page's typed
outcome (``conversion-failed``, ``store-failed``); only an unusable store location
(exit 78) or a bug outside page handling ends the crawl.

The whole crawl runs under the deadline: in-flight requests and sleeps are
cancelled when it passes and what was fetched is kept.

Re-crawls: an ``incremental`` spider sends each stored document's validators and
lets :class:`~sitelore.crawl.revisit.Revisit` say what a ``304`` or ``404``/``410`` means;
each outcome names its change kind. With ``options.sitemap`` the site's sitemaps
seed the frontier at depth 1 before the workers start (scope, caps, robots apply).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections import Counter
from collections.abc import Callable

from sitelore.core.errors import (
    FetchTimeoutError,
    RobotsDeniedError,
    SiteloreError,
)
from sitelore.core.models import CrawlSummary, PageError, PageOutcome, SkipReason, Snapshot
from sitelore.core.options import CrawlOptions, Limits
from sitelore.core.ports import Clock, Converter, Fetcher, Renderer, Store
from sitelore.core.robots import RobotsPolicy
from sitelore.core.sitemaps import SitemapLoader
from sitelore.core.urls import Scope, normalize_url, origin
from sitelore.crawl.frontier import Frontier
from sitelore.crawl.loop import run_slots
from sitelore.crawl.memory import MemoryFrontier, Origins
from sitelore.crawl.page import PagePipeline
from sitelore.crawl.revisit import Revisit
from sitelore.crawl.seeding import check_seed_rules, read_sitemaps

__all__ = ["CrawlRun", "Spider", "UrlCheck"]

log = logging.getLogger(__name__)

#: Raises ``InvalidURLError`` / ``BlockedURLError`` for a URL refused before any I/O.
UrlCheck = Callable[[str], object]


@dataclasses.dataclass(kw_only=True, eq=False)
class Spider:
    """Runs crawls over injected ports; one Spider may run several crawls in turn.

    Args:
        fetcher: the one egress path (already entered).
        store: where documents go.
        robots: the per-crawl robots policy (``allow_all_policy()`` without robots).
        clock: monotonic time, wall time and sleep.
        limits: the operator's caps (page bytes, page timeout).
        url_check: refuses a discovered URL before any I/O (guard literal checks).
        convert: the converter port (default: in this process; a real crawl passes
            the pool of worker processes).
        sitemaps: reads a seed's sitemaps when ``options.sitemap`` asks for them.
        incremental: re-crawl: send the stored validators, keep documents on 304,
            flag documents whose URL answers 404/410 as removed.
        robots_agent: our product token, for ``X-Robots-Tag: <token>: ...`` values.
        paced: keep per-origin spacing (False when replaying an archive: no server).
        origins: per-origin locks and spacing shared with other crawls of the process
            (default: this spider's own).
        renderer: runs a page's scripts (``--render``).
    """

    fetcher: Fetcher
    store: Store
    robots: RobotsPolicy
    clock: Clock
    limits: Limits = dataclasses.field(default_factory=Limits)
    url_check: UrlCheck | None = None
    renderer: Renderer | None = None
    convert: Converter | None = None
    sitemaps: SitemapLoader | None = None
    incremental: bool = False
    robots_agent: str = "sitelore"
    paced: bool = True
    origins: Origins = dataclasses.field(default_factory=Origins)
    #: ``convert``, else in this process: one converter per spider remembers resolved links.
    converter: Converter = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        if self.convert is not None:
            self.converter = self.convert
            return
        from sitelore.core.convert import DocumentConverter  # not loaded beside a pool

        self.converter = DocumentConverter()

    def crawl(self, seed: str, options: CrawlOptions, *, deadline: float | None = None) -> CrawlRun:
        """Start a crawl of ``seed``; iterate the result for outcomes, then read ``summary``.

        ``options`` must already be clamped to the operator's limits. ``deadline`` is
        the monotonic time the crawl must end by (default: its start plus
        ``options.deadline_seconds``); pass the fetcher's own deadline so both agree.
        """
        return CrawlRun(self, seed, options, deadline)


class CrawlRun(contextlib.AbstractAsyncContextManager["CrawlRun"]):
    """One crawl in progress: an async iterator of :class:`PageOutcome`, then a summary.

    ::

        run = spider.crawl("https://docs.example.com/", options)
        async for outcome in run:
            ...
        print(run.summary.to_json())

    Leaving the loop early (or cancelling) stops the crawl; pages stored so far stay.
    """

    def __init__(
        self, spider: Spider, seed: str, options: CrawlOptions, deadline: float | None = None
    ) -> None:
        self._spider = spider
        self._options = options
        self._deadline = deadline
        self.summary = CrawlSummary(seed=seed, options=options)
        self._queue: asyncio.Queue[PageOutcome | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._frontier: Frontier | None = None
        self._refusal: PageError | None = None

    def refuse(self, error: SiteloreError) -> None:
        """Make this crawl end, before any fetch, as one page outcome holding ``error``.

        For a whole-crawl problem that is reported rather than raised (replay with no
        archive: one ``invalid-config`` outcome). Call before iterating.
        """
        self._refusal = PageError.from_exception(error)

    async def finish(self) -> CrawlSummary:
        """Run the crawl to its end and return the summary."""
        async for _ in self:
            pass
        return self.summary

    def __aiter__(self) -> CrawlRun:
        return self

    async def __anext__(self) -> PageOutcome:
        if self._task is None:
            self._task = asyncio.create_task(self._run())
        if self._closed:
            raise StopAsyncIteration
        outcome = await self._queue.get()
        if outcome is None:
            self._closed = True
            await self._task  # re-raises a UsageError from before the first page
            raise StopAsyncIteration
        return outcome

    async def aclose(self) -> None:
        """Stop the crawl if it is still running; pages stored so far stay stored."""
        self._closed = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _run(self) -> None:
        clock = self._spider.clock
        started = clock.monotonic()
        try:
            await self._crawl(started)
        except BaseExceptionGroup as group:
            # A worker's store or configuration failure: report it as itself.
            first = _first_sitelore_error(group)
            if first is None:
                raise
            raise first from group
        finally:
            self.summary.elapsed_ms = (clock.monotonic() - started) * 1000
            self._finish_summary()
            self._queue.put_nowait(None)

    def skipped_so_far(self) -> dict[str, int]:
        """URLs skipped until now, by reason (while running; the summary has them after)."""
        merged = Counter(self._frontier.skipped if self._frontier is not None else {})
        merged.update(self.summary.skipped)
        return dict(merged)

    def _finish_summary(self) -> None:
        frontier = self._frontier
        if frontier is None:
            return
        summary = self.summary
        summary.skipped = self.skipped_so_far()
        for reason, urls in frontier.skipped_urls.items():
            for url in urls:
                summary.note_skipped(reason, url)
        summary.unfetched = frontier.unfetched
        if summary.truncated_reason is None and frontier.truncated:
            summary.truncated = True
            summary.truncated_reason = frontier.truncated_reason
        if summary.truncated:
            why = summary.truncated_reason
            cap = f" (max_pages={self._options.max_pages})" if why == "max_pages" else ""
            unfetched = f"{summary.unfetched} discovered URLs were not fetched"
            summary.warnings.append(f"stopped at {why}{cap}; {unfetched}")

    async def _crawl(self, started: float) -> None:
        spider, options = self._spider, self._options
        seed = normalize_url(self.summary.seed)  # InvalidURLError: a usage error
        check = spider.url_check or str  # none: every URL (the fetcher still guards each)
        check(seed)
        self.summary.seed = seed
        if self._refusal is not None:
            self.emit(PageOutcome(url=seed, depth=0, error=self._refusal))
            return
        scope = Scope.from_options(seed, options)
        frontier = Frontier(seed, options, scope)
        deadline = (
            self._deadline if self._deadline is not None else started + options.deadline_seconds
        )
        memory = MemoryFrontier(
            frontier,
            spider.origins,
            self,
            clock=spider.clock,
            delay=options.delay,
            deadline=deadline,
            paced=spider.paced,
        )
        seed_checked = await self._check_seed_robots(seed, memory)
        self._frontier = frontier
        if not seed_checked:
            self.truncate("deadline")  # as for any URL: the seed stays unfetched
            return
        pipeline = PagePipeline(
            options=options,
            scope=scope,
            limits=spider.limits,
            fetcher=spider.fetcher,
            store=spider.store,
            robots=spider.robots,
            clock=spider.clock,
            url_check=check,
            converter=spider.converter,
            revisit=Revisit(spider.store, spider.clock, enabled=spider.incremental),
            robots_agent=spider.robots_agent,
            renderer=spider.renderer,
            sub_fetch=_SubRequests(spider, memory).fetch if spider.renderer else None,
        )
        try:
            async with asyncio.timeout(max(0.0, deadline - spider.clock.monotonic())):
                if options.sitemap and spider.sitemaps is not None:
                    await self._seed_from_sitemaps(seed, frontier, memory)
                await run_slots(memory, pipeline.process, options.concurrency)
        except TimeoutError:
            self.truncate("deadline")

    async def _check_seed_robots(self, seed: str, memory: MemoryFrontier) -> bool:
        """Raise if robots.txt refuses the seed; False if the deadline came before its turn."""
        if not self._options.respect_robots:
            return True
        robots, key = self._spider.robots, origin(seed)
        if await robots.cached(seed) is None:
            # Fetching robots.txt is a request to the origin: spaced, one at a time.
            async with memory.origins.lock(key):
                if await robots.cached(seed) is None:
                    if not await memory.wait_turn(key):
                        return False
                    try:
                        loaded = await robots.load(seed)
                        memory.origins.politeness.set_crawl_delay(key, loaded.crawl_delay_ms)
                    finally:
                        memory.record_request(key)
        rules = await robots.rules_for(seed)
        check_seed_rules(seed, rules)
        memory.origins.politeness.set_crawl_delay(key, rules.crawl_delay_ms)
        return True

    async def _seed_from_sitemaps(
        self, seed: str, frontier: Frontier, memory: MemoryFrontier
    ) -> None:
        """Offer the sitemaps' URLs at depth 1 (scope, caps and robots still apply)."""
        spider = self._spider
        assert spider.sitemaps is not None

        async def wait_turn(key: str) -> bool:
            return key not in memory.throttles and await memory.wait_turn(key)

        urls, warnings = await read_sitemaps(
            seed,
            loader=spider.sitemaps,
            robots=spider.robots if self._options.respect_robots else None,
            wait_turn=wait_turn,
        )
        for url in urls:
            frontier.offer(url, 1)
        self.summary.sitemap_urls = len(urls)
        self.summary.warnings.extend(warnings)

    # --- the memory frontier's reporter ---------------------------------------------------

    def truncate(self, reason: str) -> None:
        """Stop early for ``reason`` (the first reason stays)."""
        if not self.summary.truncated:
            self.summary.truncated = True
            self.summary.truncated_reason = reason

    def emit(self, outcome: PageOutcome) -> None:
        """Count one page's outcome and hand it to the iterator."""
        self.summary.record(outcome)
        self._queue.put_nowait(outcome)

    def skipped(self, reason: SkipReason, url: str) -> None:
        """Count a skip the frontier does not (``noindex``, ``duplicate``)."""
        skipped = self.summary.skipped
        skipped[str(reason)] = skipped.get(str(reason), 0) + 1
        if reason is not SkipReason.DUPLICATE:
            self.summary.note_skipped(str(reason), url)

    def warn(self, line: str) -> None:
        """Add a line to the summary's warnings."""
        self.summary.warnings.append(line)


@dataclasses.dataclass(slots=True)
class _SubRequests:
    """A rendered page's own requests, as politely as pages.

    robots.txt first; then one at a time per origin (their own locks: the page's slot
    already holds the page's origin), spaced by the origin's delay from the end of the
    previous exchange.
    """

    spider: Spider
    memory: MemoryFrontier
    _locks: dict[str, asyncio.Lock] = dataclasses.field(default_factory=dict)

    async def fetch(self, url: str) -> Snapshot:
        spider = self.spider
        if not await spider.robots.is_allowed(url):
            raise RobotsDeniedError(url, "page resource disallowed by robots.txt")
        key = origin(url)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if not await self.memory.wait_turn(key):
                raise FetchTimeoutError(url, "no time left before the crawl deadline")
            try:
                return await spider.fetcher.fetch(
                    url,
                    max_bytes=spider.limits.max_page_bytes,
                    timeout=spider.limits.page_timeout_seconds,
                    check_hop=self._check_hop,
                )
            finally:
                self.memory.record_request(key)

    async def _check_hop(self, url: str) -> None:
        if not await self.spider.robots.is_allowed(url):
            raise RobotsDeniedError(url, "redirect target disallowed by robots.txt")


def _first_sitelore_error(group: BaseExceptionGroup[BaseException]) -> SiteloreError | None:
    """The first SiteloreError among an exception group's leaves, if any."""
    found: BaseException | None = group.subgroup(lambda exc: isinstance(exc, SiteloreError))
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found if isinstance(found, SiteloreError) else None
