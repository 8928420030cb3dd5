"""Drive one crawl through the ports: BFS, politeness, robots, typed per-page outcomes.

The spider never throws for a page: each page ends as a :class:`PageOutcome` holding
a stored document or a typed error, streamed to the caller as it happens and stored
as it comes (an interrupted crawl keeps what it fetched). Problems the user must fix
(a bad seed, a seed the guard or robots.txt refuses) raise a ``UsageError`` before any
page is fetched.

It owns no sockets, files or clocks: the fetcher, store, robots policy and clock are
passed in, so tests run it on fakes and loopback servers.

Scheduling: one worker task per crawl slot (``concurrency``); a worker takes the next
URL from the :class:`~sitelore.frontier.Frontier` (which keeps BFS start order), holds
that URL's origin (one request in flight per origin), waits for the origin's spacing
(:class:`~sitelore.politeness.Politeness`) and fetches; then it lets the origin go and
converts (through the :class:`~sitelore.ports.Converter` port, worker processes in a
real crawl), stores, and offers the page's links back, so the next request to the
origin overlaps this page's conversion. A rendered page keeps its origin until it is
stored (its own requests go to that origin too).

Per-page errors: anything raised while converting or storing one page (a
converter's bug, a crash of its worker, a database error) is that page's typed
outcome (``conversion-failed``, ``store-failed``); only an unusable store location
(exit 78) or a bug outside page handling ends the crawl.

The whole crawl runs under the deadline: in-flight requests and sleeps are
cancelled when it passes and what was fetched is kept.

Re-crawls: an ``incremental`` spider sends each stored document's validators and
lets :class:`~sitelore.revisit.Revisit` say what a ``304`` or ``404``/``410`` means;
each outcome names its change kind. With ``options.sitemap`` the site's sitemaps
seed the frontier at depth 1 before the workers start (scope, caps, robots apply).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sitelore.convert import DocumentConverter
from sitelore.errors import (
    EXIT_CONFIG,
    BlockedURLError,
    ConversionError,
    ConversionFailedError,
    FetchError,
    FetchTimeoutError,
    HTTPStatusError,
    InvalidURLError,
    PageStoreError,
    RobotsDeniedError,
    RobotsRefusedError,
    SiteloreError,
    StoreError,
    UsageError,
)
from sitelore.frontier import Frontier, QueueItem
from sitelore.models import (
    ChangeKind,
    CrawlOptions,
    CrawlSummary,
    Document,
    FetchMeta,
    Limits,
    PageError,
    PageOutcome,
    SkipReason,
    Snapshot,
    UpsertResult,
)
from sitelore.politeness import Politeness, clamp_to_deadline, parse_retry_after
from sitelore.ports import CaptureLinks, Clock, Converter, Fetcher, Renderer, Store
from sitelore.revisit import Prepared, Revisit, change_of
from sitelore.robots import RobotsPolicy, robots_origin, unreachable_reason
from sitelore.sitemaps import SitemapLoader
from sitelore.urls import Scope, normalize_url, origin
from sitelore.xrobots import apply_robots_tag

__all__ = ["CrawlRun", "Spider", "UrlCheck"]

log = logging.getLogger(__name__)

#: Raises ``InvalidURLError`` / ``BlockedURLError`` for a URL refused before any I/O.
UrlCheck = Callable[[str], object]

_RETRY_AFTER_STATUSES = frozenset({429, 503})
_LINK_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_DEADLINE = "deadline"
_T = TypeVar("_T")
#: What one page's failure may be raised as, to become its outcome.
_PAGE_FAILURES = (FetchError, ConversionError, StoreError)
_PageFailure = FetchError | ConversionError | StoreError


def _no_check(url: str) -> object:
    """Accept every URL (the fetcher still guards each request)."""
    return url


@dataclasses.dataclass(frozen=True, slots=True)
class _Page:
    """What one fetched page leaves behind: its outcome and the links to offer."""

    outcome: PageOutcome
    links: tuple[str, ...] = ()


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
    """

    def __init__(
        self,
        *,
        fetcher: Fetcher,
        store: Store,
        robots: RobotsPolicy,
        clock: Clock,
        limits: Limits | None = None,
        url_check: UrlCheck | None = None,
        renderer: Renderer | None = None,
        convert: Converter | None = None,
        sitemaps: SitemapLoader | None = None,
        incremental: bool = False,
        robots_agent: str = "sitelore",
        paced: bool = True,
    ) -> None:
        self._fetcher = fetcher
        self._store = store
        self._robots = robots
        self._clock = clock
        self._limits = limits or Limits()
        self._url_check = url_check or _no_check
        self._renderer = renderer
        # In-process default: one converter per spider remembers resolved links.
        self._converter: Converter = convert or DocumentConverter()
        self._sitemaps = sitemaps
        self._revisit = Revisit(store, clock, enabled=incremental)
        self._robots_agent = robots_agent
        self._paced = paced
        # Optional store capability: link each document to the WARC record it came from.
        self._capture_links = store if isinstance(store, CaptureLinks) else None

    def crawl(self, seed: str, options: CrawlOptions, *, deadline: float | None = None) -> CrawlRun:
        """Start a crawl of ``seed``; iterate the result for outcomes, then read ``summary``.

        ``options`` must already be clamped to the operator's limits. ``deadline`` is
        the monotonic time the crawl must end by (default: its start plus
        ``options.deadline_seconds``); pass the fetcher's own deadline so both agree.
        """
        return CrawlRun(self, seed, options, deadline)


class CrawlRun:
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

    async def __aenter__(self) -> CrawlRun:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _run(self) -> None:
        clock = self._spider._clock
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
        merged = dict(self._frontier.skipped) if self._frontier is not None else {}
        for reason, count in self.summary.skipped.items():
            merged[reason] = merged.get(reason, 0) + count
        return merged

    def _finish_summary(self) -> None:
        frontier = self._frontier
        if frontier is None:
            return
        summary = self.summary
        summary.skipped = self.skipped_so_far()
        for reason, urls in frontier.skipped_urls.items():
            for url in urls:
                summary.note_skipped(reason, url)
        summary.unfetched = frontier.pending
        if summary.truncated_reason is None and frontier.truncated:
            summary.truncated = True
            summary.truncated_reason = frontier.truncated_reason
        if summary.truncated:
            summary.warnings.append(
                f"stopped at {summary.truncated_reason}"
                + (
                    f" (max_pages={self._options.max_pages})"
                    if summary.truncated_reason == "max_pages"
                    else ""
                )
                + f"; {summary.unfetched} discovered URLs were not fetched"
            )

    async def _crawl(self, started: float) -> None:
        spider, options = self._spider, self._options
        seed = normalize_url(self.summary.seed)  # InvalidURLError: a usage error
        spider._url_check(seed)
        self.summary.seed = seed
        if self._refusal is not None:
            self._emit(PageOutcome(url=seed, depth=0, error=self._refusal))
            return
        scope = Scope.from_options(seed, options)
        frontier = Frontier(seed, options, scope)
        deadline = (
            self._deadline if self._deadline is not None else started + options.deadline_seconds
        )
        politeness = Politeness(options.delay, deadline=deadline)
        await self._check_seed_robots(seed, politeness)
        self._frontier = frontier
        scheduler = _Scheduler(self, frontier, politeness, scope, deadline)
        try:
            async with asyncio.timeout(max(0.0, deadline - spider._clock.monotonic())):
                if options.sitemap and spider._sitemaps is not None:
                    await self._seed_from_sitemaps(seed, frontier, scheduler)
                await scheduler.run()
        except TimeoutError:
            self._truncate(_DEADLINE)

    async def _check_seed_robots(self, seed: str, politeness: Politeness) -> None:
        if not self._options.respect_robots:
            return
        rules = await self._spider._robots.rules_for(seed)
        robots_url = robots_origin(seed) + "/robots.txt"
        if rules.unreachable:
            raise RobotsRefusedError(seed, robots_url, unreachable_reason(rules))
        if not await self._spider._robots.is_allowed(seed):
            raise RobotsRefusedError(seed, robots_url, "the start URL is disallowed by robots.txt")
        politeness.set_crawl_delay(origin(seed), rules.requested_crawl_delay_ms)

    async def _seed_from_sitemaps(
        self, seed: str, frontier: Frontier, scheduler: _Scheduler
    ) -> None:
        """Offer the sitemaps' URLs at depth 1 (scope, caps and robots still apply)."""
        spider = self._spider
        assert spider._sitemaps is not None
        declared = (
            (await spider._robots.rules_for(seed)).sitemaps if self._options.respect_robots else ()
        )
        found = await spider._sitemaps(seed, declared, scheduler.before_sitemap)
        for url in found.urls:
            frontier.offer(url, 1)
        self.summary.sitemap_urls = len(found.urls)
        self.summary.warnings.extend(f"sitemap: {error}" for error in found.errors)
        if found.truncated:
            self.summary.warnings.append("sitemap: URL cap reached; the rest were not read")

    def _truncate(self, reason: str) -> None:
        if not self.summary.truncated:
            self.summary.truncated = True
            self.summary.truncated_reason = reason

    def _emit(self, outcome: PageOutcome) -> None:
        self.summary.record(outcome)
        self._queue.put_nowait(outcome)

    def _skip(self, reason: SkipReason, url: str) -> None:
        skipped = self.summary.skipped
        skipped[str(reason)] = skipped.get(str(reason), 0) + 1
        if reason is not SkipReason.DUPLICATE:
            self.summary.note_skipped(str(reason), url)


class _Scheduler:
    """Workers that take URLs from the frontier, one origin at a time each."""

    def __init__(
        self,
        run: CrawlRun,
        frontier: Frontier,
        politeness: Politeness,
        scope: Scope,
        deadline: float,
    ) -> None:
        self._run = run
        self._spider = run._spider
        self._options = run._options
        self._frontier = frontier
        self._politeness = politeness
        self._scope = scope
        self._deadline = deadline
        self._origin_locks: dict[str, asyncio.Lock] = {}
        # Rendered pages' own requests, one at a time per origin (the page's worker
        # already holds that page's origin lock, so these take their own).
        self._sub_request_locks: dict[str, asyncio.Lock] = {}
        # Per origin: set once the page fetched last has reported its outcome.
        self._reported: dict[str, asyncio.Event] = {}
        self._wakeup = asyncio.Event()
        self._known_delays: set[str] = set()
        # Origins whose robots.txt URL the guard refused, and throttled origins already
        # reported in the summary's warnings.
        self._blocked_origins: set[str] = set()
        self._noted_throttles: set[str] = set()
        self._stopped = False

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            for _ in range(self._options.concurrency):
                group.create_task(self._worker())

    def _notify(self) -> None:
        self._wakeup.set()

    async def _worker(self) -> None:
        frontier = self._frontier
        while not self._stopped:
            item = frontier.take()
            if item is None:
                if frontier.finished:
                    self._notify()
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            reported = asyncio.Event()
            try:
                page = await self._visit(item, origin(item.url), reported)
                if page is not None:
                    self._run._emit(page.outcome)
                    if page.links:
                        frontier.offer_links(page.links, item.depth + 1)
                    frontier.done(item)
            finally:
                reported.set()  # the origin's next page may report now
            self._notify()

    async def _visit(self, item: QueueItem, key: str, reported: asyncio.Event) -> _Page | None:
        """Check, wait, fetch, convert and store one page; None if no request was made.

        Pages of one origin convert side by side but report in the order they were
        fetched (``reported`` is set once this one has), so the outcomes and the links
        offered keep BFS order whatever each conversion takes.
        """
        spider, frontier = self._spider, self._frontier
        try:
            spider._url_check(item.url)
        except UsageError as exc:
            log.debug("skip %s: %s", item.url, exc)
            frontier.release(item, SkipReason.BLOCKED)
            return None
        if self._options.respect_robots and item.depth > 0:
            refusal = await self._robots_refusal(item.url, key)
            if refusal is not None:
                log.debug("skip %s: %s", item.url, refusal)
                frontier.release(item, refusal)
                return None
        lock = self._origin_locks.setdefault(key, asyncio.Lock())
        async with lock:  # one request in flight per origin; waiters start in FIFO order
            if self._skip_throttled(item, key):
                return None
            if self._stopped or not await self._wait_turn(key):
                self._stop_at_deadline(item)
                return None
            fetched = await self._fetch_page(item, key)
            before = self._reported.get(key)
            self._reported[key] = reported
            if spider._renderer is not None and isinstance(fetched, _Fetched):
                fetched = await self._settle(item, fetched)  # renders under the origin's lock
        # The origin is free again: its next request overlaps this page's conversion.
        page = await self._settle(item, fetched) if isinstance(fetched, _Fetched) else fetched
        if before is not None:
            await before.wait()
        return page

    async def before_sitemap(self, url: str) -> bool:
        """May a sitemap file be fetched now? Robots.txt first, then the origin's spacing."""
        key = origin(url)
        if self._options.respect_robots and await self._robots_refusal(url, key) is not None:
            return False
        return await self._wait_turn(key)

    async def _robots_refusal(self, url: str, key: str) -> SkipReason | None:
        """Why robots.txt keeps ``url`` from being fetched (``robots``, ``blocked``), or None.

        When the guard refuses the robots.txt URL of a discovered origin (its host
        resolves to a refused address), that origin's URLs are ``blocked``: the crawl
        goes on, the origin is noted once in the warnings and never looked up again.
        """
        if key in self._blocked_origins:
            return SkipReason.BLOCKED
        try:
            if not await self._spider._robots.is_allowed(url):
                return SkipReason.ROBOTS
            await self._learn_crawl_delay(key, url)
        except (BlockedURLError, InvalidURLError) as exc:
            self._blocked_origins.add(key)
            log.warning("skip %s: its robots.txt is refused: %s", key, exc)
            self._run.summary.warnings.append(f"blocked {key}: {exc}")
            return SkipReason.BLOCKED
        return None

    def _skip_throttled(self, item: QueueItem, key: str) -> bool:
        """Skip ``item`` as ``throttled`` if its origin asked for a wait the crawl cannot make."""
        why = self._politeness.throttled(key)
        if why is None:
            return False
        if key not in self._noted_throttles:
            self._noted_throttles.add(key)
            log.warning("throttled %s: %s; its other URLs are skipped", key, why)
            self._run.summary.warnings.append(f"throttled {key}: {why}; its other URLs skipped")
        self._frontier.release(item, SkipReason.THROTTLED)
        return True

    def _stop_at_deadline(self, item: QueueItem) -> None:
        self._frontier.requeue(item)
        self._run._truncate(_DEADLINE)
        self._stopped = True

    async def _learn_crawl_delay(self, key: str, url: str) -> None:
        if key in self._known_delays:
            return
        self._known_delays.add(key)
        self._politeness.set_crawl_delay(
            key, (await self._spider._robots.rules_for(url)).requested_crawl_delay_ms
        )

    async def _wait_turn(self, key: str) -> bool:
        """Wait for the origin's next slot; False when the deadline or a throttle forbids it."""
        if self._politeness.throttled(key) is not None:
            return False
        clock = self._spider._clock
        now = clock.monotonic()
        asked = self._politeness.wait_for(key, now) if self._spider._paced else 0.0
        wait = clamp_to_deadline(asked, now, self._deadline)
        if wait is None:
            return False
        if wait > 0:
            await clock.sleep(wait)
        self._politeness.record_request(key, clock.monotonic())
        return True

    async def _fetch_page(self, item: QueueItem, key: str) -> _Page | _Fetched | None:
        """The exchange: a final response to settle, a failed page, or None (deadline)."""
        spider = self._spider
        try:
            prepared = await _storing(item.url, spider._revisit.prepare(item.url))
        except StoreError as exc:
            if exc.exit_code == EXIT_CONFIG:
                raise
            log.info("failed %s: %s", item.url, exc)
            error = PageError.from_exception(exc)
            return _Page(
                PageOutcome(url=item.url, depth=item.depth, error=error, change=ChangeKind.FAILED)
            )
        try:
            snapshot = await spider._fetcher.fetch(
                item.url,
                max_bytes=spider._limits.max_page_bytes,
                headers=prepared.headers or None,
                timeout=spider._limits.page_timeout_seconds,
                check_hop=self._check_hop,
            )
        except SiteloreError as exc:
            self._politeness.record_request(key, spider._clock.monotonic())
            if spider._clock.monotonic() >= self._deadline:
                # Cut short by the crawl deadline: not a failure of the page, just unfetched.
                self._stop_at_deadline(item)
                return None
            log.info("failed %s: %s", item.url, exc)
            return _Page(
                PageOutcome(
                    url=item.url,
                    depth=item.depth,
                    error=PageError.from_exception(exc),
                    change=ChangeKind.FAILED,
                )
            )
        # Spacing also counts from the end of this exchange, so the server never sees two
        # requests closer than the delay, however long the request took to send.
        self._politeness.record_request(key, spider._clock.monotonic())
        self._honour_retry_after(key, snapshot)
        return _Fetched(snapshot, prepared)

    async def _settle(self, item: QueueItem, fetched: _Fetched) -> _Page:
        """A fetched page's outcome: not modified, stored, or its typed error."""
        spider, snapshot, prepared = self._spider, fetched.snapshot, fetched.prepared
        try:
            unchanged = await _storing(
                item.url, spider._revisit.not_modified(item.url, item.depth, snapshot, prepared)
            )
            if unchanged is not None:
                assert prepared.known is not None
                log.info("not modified %s", item.url)
                return _Page(unchanged, prepared.known.links or ())
            return await self._accept(item, snapshot, prepared)
        except _PAGE_FAILURES as exc:
            if exc.exit_code == EXIT_CONFIG:
                raise  # the store location is unusable: the whole crawl's problem (78)
            outcome = self._failed(item, snapshot, exc)
            try:
                kind, removed = await spider._revisit.failure_kind(
                    item.url, snapshot, exc, prepared
                )
            except Exception:
                log.warning("could not record the failure of %s", item.url, exc_info=True)
                return _Page(dataclasses.replace(outcome, change=ChangeKind.FAILED))
            return _Page(dataclasses.replace(outcome, change=kind, document_id=removed))

    async def _fetch_sub_request(self, url: str) -> Snapshot:
        """Fetch a rendered page's own request as politely as a page.

        robots.txt first; then one at a time per origin, spaced by the origin's delay
        from the end of the previous exchange.
        """
        spider = self._spider
        if self._options.respect_robots and not await spider._robots.is_allowed(url):
            raise RobotsDeniedError(url, "page resource disallowed by robots.txt")
        key = origin(url)
        lock = self._sub_request_locks.setdefault(key, asyncio.Lock())
        async with lock:
            if not await self._wait_turn(key):
                raise FetchTimeoutError(url, "no time left before the crawl deadline")
            try:
                return await spider._fetcher.fetch(
                    url,
                    max_bytes=spider._limits.max_page_bytes,
                    timeout=spider._limits.page_timeout_seconds,
                    check_hop=self._check_hop,
                )
            finally:
                self._politeness.record_request(key, spider._clock.monotonic())

    async def _check_hop(self, url: str) -> None:
        """Before each redirect hop: refuse it if robots.txt disallows it."""
        if self._options.respect_robots and not await self._spider._robots.is_allowed(url):
            raise RobotsDeniedError(url, "redirect target disallowed by robots.txt")

    def _honour_retry_after(self, key: str, snapshot: Snapshot) -> None:
        if snapshot.status not in _RETRY_AFTER_STATUSES:
            return
        clock = self._spider._clock
        seconds = parse_retry_after(snapshot.headers.get("retry-after"), clock.now())
        self._politeness.push_back(key, clock.monotonic(), seconds)

    def _failed(self, item: QueueItem, snapshot: Snapshot, exc: _PageFailure) -> PageOutcome:
        log.info("failed %s: %s", item.url, exc)
        return PageOutcome(
            url=item.url,
            depth=item.depth,
            final_url=snapshot.final_url,
            status=snapshot.status,
            error=PageError.from_exception(exc),
            bytes=len(snapshot.body),
            elapsed_ms=snapshot.elapsed_ms,
        )

    async def _accept(self, item: QueueItem, snapshot: Snapshot, prepared: Prepared) -> _Page:
        """Turn a final response into a stored document (or a typed error) plus links."""
        spider, frontier = self._spider, self._frontier
        final = snapshot.final_url
        if not frontier.land(item, final, snapshot.redirects):
            log.debug("skip %s: redirect to %s, already fetched", item.url, final)
            self._run._skip(SkipReason.DUPLICATE, item.url)
            return _Page(self._plain(item, snapshot))
        if (
            final != item.url
            and self._options.respect_robots
            and not await spider._robots.is_allowed(final)
        ):
            raise RobotsDeniedError(final, "final URL disallowed by robots.txt")
        if not 200 <= snapshot.status < 300:
            raise HTTPStatusError(final, f"HTTP {snapshot.status}", status=snapshot.status)
        if spider._renderer is not None and snapshot.content_type in _LINK_TYPES:
            # A rendered document is not a function of the captured bytes: never linked.
            rendered = await spider._renderer.render(snapshot, fetch=self._fetch_sub_request)
            snapshot = dataclasses.replace(rendered, capture=None)
        try:
            document = await spider._converter.convert(
                snapshot.body, snapshot.content_type, final, snapshot.charset
            )
            document = apply_robots_tag(document, snapshot.headers, spider._robots_agent)
            links = self._links_to_follow(item, final, snapshot, document)
        except (FetchError, ConversionError):
            raise
        except Exception as exc:  # a converter's bug costs this page, not the crawl
            log.debug("converting %s failed", final, exc_info=True)
            raise ConversionFailedError(final, f"{type(exc).__name__}: {exc}") from exc
        # Stored with the links it offers, so a later 304 can offer them again.
        document = dataclasses.replace(document, links=links)
        outcome = await _storing(final, self._store(item, snapshot, document, prepared))
        return _Page(outcome, links)

    def _plain(self, item: QueueItem, snapshot: Snapshot) -> PageOutcome:
        return PageOutcome(
            url=item.url,
            depth=item.depth,
            final_url=snapshot.final_url,
            status=snapshot.status,
            bytes=len(snapshot.body),
            elapsed_ms=snapshot.elapsed_ms,
        )

    async def _store(
        self, item: QueueItem, snapshot: Snapshot, document: Document, prepared: Prepared
    ) -> PageOutcome:
        if document.noindex:
            log.info("not indexed (noindex) %s", snapshot.final_url)
            self._run._skip(SkipReason.NOINDEX, snapshot.final_url)
            return dataclasses.replace(self._plain(item, snapshot), title=document.title)
        result = await self._spider._store.upsert(document, FetchMeta.from_snapshot(snapshot))
        await self._link_capture(result, snapshot)
        log.info(
            "fetched %s %d %dB %.0fms",
            snapshot.final_url,
            snapshot.status,
            len(snapshot.body),
            snapshot.elapsed_ms,
        )
        return PageOutcome(
            url=item.url,
            depth=item.depth,
            final_url=snapshot.final_url,
            status=snapshot.status,
            title=document.title,
            document_id=result.id,
            bytes=len(snapshot.body),
            elapsed_ms=snapshot.elapsed_ms,
            indexed=True,
            change=change_of(result, prepared.known),
        )

    async def _link_capture(self, result: UpsertResult, snapshot: Snapshot) -> None:
        """Link the document to the WARC record it was built from (capture and replay).

        A stored document whose text changed from bytes that were not captured loses
        its old link, so a link always names bytes that give the current text; an
        unchanged document keeps it.
        """
        links = self._spider._capture_links
        if links is None:
            return
        if snapshot.capture is not None:
            await links.link_capture(result.id, snapshot.capture)
        elif result.changed and not result.created:
            await links.link_capture(result.id, None)

    def _links_to_follow(
        self, item: QueueItem, final: str, snapshot: Snapshot, document: Document
    ) -> tuple[str, ...]:
        if document.nofollow or snapshot.content_type not in _LINK_TYPES:
            return ()
        if final != item.url and self._scope.allows(final) is not None:
            log.debug("not following links of %s: redirected out of scope", item.url)
            return ()
        return document.links


@dataclasses.dataclass(frozen=True, slots=True)
class _Fetched:
    """A final response, fetched under its origin's lock, waiting to be settled."""

    snapshot: Snapshot
    prepared: Prepared


async def _storing(url: str, step: Awaitable[_T]) -> _T:
    """Await one store step of a page; its failure is the page's ``PageStoreError``.

    An unusable store location (exit 78) and errors that are not the store's (a fetch
    or conversion error raised inside the step) pass through as themselves.
    """
    try:
        return await step
    except StoreError as exc:
        if exc.exit_code == EXIT_CONFIG or isinstance(exc, PageStoreError):
            raise
        raise PageStoreError(url, str(exc)) from exc
    except SiteloreError:
        raise
    except Exception as exc:
        log.debug("storing %s failed", url, exc_info=True)
        raise PageStoreError(url, f"{type(exc).__name__}: {exc}") from exc


def _first_sitelore_error(group: BaseExceptionGroup[BaseException]) -> SiteloreError | None:
    """The first SiteloreError among an exception group's leaves, if any."""
    for exc in group.exceptions:
        if isinstance(exc, SiteloreError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_sitelore_error(exc)
            if found is not None:
                return found
    return None
