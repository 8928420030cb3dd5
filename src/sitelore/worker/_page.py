"""Process one leased URL: robots, guard, fetch, convert, store, links -> a Completion.

The worker-side twin of ``spider._Scheduler._visit/_fetch_page/_accept/_store``, kept
separate because the shared frontier changes three things:

* **Redirects are not followed inside a fetch.** A redirect's target is queued as its
  own item (same depth, ``hops + 1``) and fetched under its own origin's lease, so
  every request, redirect hops included, is spaced by the frontier and checked against
  robots.txt. Its links are followed only when it is in scope (as in a local crawl).
* **Retries go through the frontier.** The fetcher makes one attempt; a 429/5xx or a
  network failure is requeued (``retry``) with a backoff on its origin, up to
  ``max_attempts``.
* **robots.txt is fetched under the origin's lease** and counts as that origin's
  request: the URL goes back to its queue (``requeue``) and waits a full delay.
* **Throttles are shared.** A Retry-After longer than the crawl may wait, or a
  Crawl-delay over the cap (after the one request that needs no wait), marks the
  origin throttled in Redis; every worker then skips its URLs (``throttled``).

It never talks to Redis itself: it returns a ``Completion`` that the loop sends.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sitelore.convert import DocumentConverter
from sitelore.errors import (
    ConversionError,
    FetchError,
    FetchTimeoutError,
    HTTPStatusError,
    NetworkError,
    SiteloreError,
    StoreError,
    TooManyRedirectsError,
    UsageError,
)
from sitelore.frontier_redis import Completion, FrontierItem, Lease, split_url
from sitelore.models import CrawlOptions, Document, FetchMeta, Limits, Snapshot
from sitelore.politeness import crawl_delay_refusal, parse_retry_after, retry_after_refusal
from sitelore.ports import Clock, Converter, Fetcher, Store
from sitelore.robots import MAX_CRAWL_DELAY_MS, RobotsRules, is_allowed
from sitelore.urls import Scope, normalize_url
from sitelore.worker._robots import SharedRobots

__all__ = ["PageProcessor"]

log = logging.getLogger(__name__)

_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_RETRY_AFTER_STATUSES = frozenset({429, 503})
_LINK_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_MAX_BACKOFF_MS = 60_000
_MIN_BACKOFF_MS = 1_000
#: Links this worker already sent for this crawl are not sent again (Redis would drop them).
_SENT_CAP = 200_000


class _Redirected(Exception):  # noqa: N818 - a signal, not an error
    """Raised from the hop check to stop a fetch at its first redirect."""

    def __init__(self, target: str) -> None:
        super().__init__(target)
        self.target = target


def _count(stats: dict[str, int], name: str) -> None:
    stats[name] = stats.get(name, 0) + 1


def _error_line(url: str, exc: SiteloreError) -> str:
    kind = str(exc.kind) if exc.kind else type(exc).__name__
    message = " ".join(str(exc).split())
    return f"{url}\t{kind}\t{message}"


class PageProcessor:
    """Turns leases of one crawl into completions, on this worker's fetcher and store."""

    def __init__(
        self,
        *,
        options: CrawlOptions,
        scope: Scope,
        limits: Limits,
        fetcher: Fetcher,
        store: Store,
        robots: SharedRobots,
        clock: Clock,
        url_check: Callable[[str], object],
        max_attempts: int,
        converter: Converter | None = None,
    ) -> None:
        self._options = options
        self._scope = scope
        self._limits = limits
        self._fetcher = fetcher
        self._store = store
        self._robots = robots
        self._clock = clock
        self._url_check = url_check
        self._max_attempts = max_attempts
        # The worker's process pool; in-process (one link cache per crawl) without one.
        self._converter: Converter = converter or DocumentConverter()
        self._delay_ms = round(options.delay * 1000)
        self._sent: set[str] = set()
        self._too_deep: set[str] = set()

    async def process(self, lease: Lease, remaining: float) -> Completion:
        """Handle one leased URL within ``remaining`` seconds of crawl time."""
        item = lease.item
        try:
            self._url_check(item.url)
        except UsageError as exc:
            log.debug("skip %s: %s", item.url, exc)
            return Completion(outcome="skip", stats={"skipped_blocked": 1})
        delay_ms = self._delay_ms
        origin = split_url(item.url)[0]
        if await self._robots.throttled(origin) is not None:
            log.debug("skip %s: throttled", item.url)
            return Completion(outcome="skip", stats={"skipped_throttled": 1})
        if self._options.respect_robots:
            rules = await self._robots.cached(origin)
            if rules is None:
                try:
                    rules = await self._robots.fetch(origin)
                except UsageError as exc:  # the guard refused robots.txt itself
                    return Completion(
                        outcome="skip",
                        stats={"skipped_blocked": 1},
                        error=_error_line(item.url, exc),
                    )
                return Completion(outcome="requeue", delay_ms=self._delay_for(rules))
            delay_ms = self._delay_for(rules)
            if not is_allowed(rules, item.url):
                log.debug("skip %s: robots", item.url)
                return Completion(outcome="skip", delay_ms=delay_ms, stats={"skipped_robots": 1})
            refusal = crawl_delay_refusal(
                rules.requested_crawl_delay_ms, cap=MAX_CRAWL_DELAY_MS / 1000
            )
            if refusal is not None:  # this request needs no wait; no other one may follow
                await self._robots.throttle(origin, refusal)
        return await self._fetch(item, delay_ms, remaining)

    def _delay_for(self, rules: RobotsRules) -> int:
        return max(self._delay_ms, rules.crawl_delay_ms or 0)

    async def _fetch(self, item: FrontierItem, delay_ms: int, remaining: float) -> Completion:
        async def stop_at_redirect(target: str) -> None:
            raise _Redirected(target)

        try:
            snapshot = await self._fetcher.fetch(
                item.url,
                max_bytes=self._limits.max_page_bytes,
                timeout=max(0.001, min(self._limits.page_timeout_seconds, remaining)),
                check_hop=stop_at_redirect,
            )
        except _Redirected as redirect:
            return self._redirected(item, redirect.target, delay_ms)
        except (NetworkError, FetchTimeoutError) as exc:
            return self._failed(item, exc, delay_ms, retry=True)
        except SiteloreError as exc:
            return self._failed(item, exc, delay_ms, retry=False)
        if snapshot.status in _RETRY_STATUSES:
            backoff = self._backoff_ms(item, snapshot)
            throttled = await self._throttle_if_too_long(item, snapshot, remaining)
            if not throttled and item.attempt + 1 < self._max_attempts:
                log.info("retry later %s: HTTP %d", item.url, snapshot.status)
                return Completion(
                    outcome="retry", delay_ms=delay_ms, backoff_ms=backoff, stats={"retried": 1}
                )
        else:
            backoff = 0
        try:
            return await self._accept(item, snapshot, delay_ms, backoff)
        except (FetchError, ConversionError) as exc:
            done = self._failed(item, exc, delay_ms, retry=False)
            return Completion(
                outcome=done.outcome,
                delay_ms=delay_ms,
                backoff_ms=backoff,
                error=done.error,
                stats=done.stats,
            )

    async def _throttle_if_too_long(
        self, item: FrontierItem, snapshot: Snapshot, remaining: float
    ) -> bool:
        """Throttle the origin when its Retry-After is longer than the crawl may wait."""
        if snapshot.status not in _RETRY_AFTER_STATUSES:
            return False
        asked = parse_retry_after(snapshot.headers.get("retry-after"), self._clock.now())
        refusal = retry_after_refusal(asked, left=remaining, cap=_MAX_BACKOFF_MS / 1000)
        if refusal is None:
            return False
        log.warning("throttled %s: %s", split_url(item.url)[0], refusal)
        await self._robots.throttle(split_url(item.url)[0], refusal)
        return True

    def _backoff_ms(self, item: FrontierItem, snapshot: Snapshot) -> int:
        if snapshot.status in _RETRY_AFTER_STATUSES:
            asked = parse_retry_after(snapshot.headers.get("retry-after"), self._clock.now())
            if asked is not None:
                return min(_MAX_BACKOFF_MS, round(asked * 1000))
        base = max(_MIN_BACKOFF_MS, self._delay_ms)
        return int(min(_MAX_BACKOFF_MS, base * 2**item.attempt))

    def _redirected(self, item: FrontierItem, target: str, delay_ms: int) -> Completion:
        if item.hops + 1 > self._limits.max_redirects:
            exc = TooManyRedirectsError(
                item.url, f"more than {self._limits.max_redirects} redirects"
            )
            return self._failed(item, exc, delay_ms, retry=False)
        log.info("redirect %s -> %s (queued)", item.url, target)
        link = FrontierItem(normalize_url(target), item.depth, 0, item.hops + 1)
        self._sent.add(link.url)
        return Completion(
            outcome="done",
            delay_ms=delay_ms,
            stats={"fetched": 1, "redirected": 1},
            links=(link,),
        )

    def _failed(
        self, item: FrontierItem, exc: SiteloreError, delay_ms: int, *, retry: bool
    ) -> Completion:
        if retry and item.attempt + 1 < self._max_attempts:
            log.info("retry later %s: %s", item.url, exc)
            backoff = int(min(_MAX_BACKOFF_MS, max(_MIN_BACKOFF_MS, delay_ms) * 2**item.attempt))
            return Completion(
                outcome="retry", delay_ms=delay_ms, backoff_ms=backoff, stats={"retried": 1}
            )
        log.info("failed %s: %s", item.url, exc)
        return Completion(
            outcome="done",
            delay_ms=delay_ms,
            error=_error_line(item.url, exc),
            stats={"fetched": 1, "errors": 1},
        )

    async def _accept(
        self, item: FrontierItem, snapshot: Snapshot, delay_ms: int, backoff: int
    ) -> Completion:
        url = snapshot.final_url
        if not 200 <= snapshot.status < 300:
            raise HTTPStatusError(url, f"HTTP {snapshot.status}", status=snapshot.status)
        document = await self._convert(snapshot, url)
        stats = {"fetched": 1}
        if document.noindex:
            log.info("not indexed (noindex) %s", url)
            stats["skipped_noindex"] = 1
        else:
            try:
                await self._store.upsert(document, FetchMeta.from_snapshot(snapshot))
            except StoreError as exc:
                if item.attempt + 1 < self._max_attempts:
                    log.warning("store failed, retry later %s: %s", url, exc)
                    return Completion(outcome="retry", delay_ms=delay_ms, stats={"retried": 1})
                return self._failed(item, exc, delay_ms, retry=False)
            stats["indexed"] = 1
            log.info(
                "fetched %s %d %dB %.0fms",
                url,
                snapshot.status,
                len(snapshot.body),
                snapshot.elapsed_ms,
            )
        links = self._links(item, url, snapshot, document, stats)
        return Completion(
            outcome="done", delay_ms=delay_ms, backoff_ms=backoff, stats=stats, links=links
        )

    async def _convert(self, snapshot: Snapshot, url: str) -> Document:
        """Convert through the converter port (worker processes: heartbeats keep flowing)."""
        return await self._converter.convert(
            snapshot.body, snapshot.content_type, url, snapshot.charset
        )

    def _links(
        self,
        item: FrontierItem,
        url: str,
        snapshot: Snapshot,
        document: Document,
        stats: dict[str, int],
    ) -> list[FrontierItem]:
        if document.nofollow or snapshot.content_type not in _LINK_TYPES:
            return []
        if item.hops and self._scope.allows(url) is not None:
            log.debug("not following links of %s: redirected out of scope", url)
            return []
        depth = item.depth + 1
        too_deep = depth > self._options.max_depth
        if len(self._sent) + len(self._too_deep) > _SENT_CAP:
            self._sent.clear()
            self._too_deep.clear()
        out: list[FrontierItem] = []
        for href in dict.fromkeys(document.links):
            try:
                link = normalize_url(href)
            except UsageError:
                _count(stats, "skipped_invalid")
                continue
            if link in self._sent:
                _count(stats, "skipped_duplicate")
                continue
            if too_deep:  # it may still come back shallower, so it is not marked as sent
                known = link in self._too_deep
                self._too_deep.add(link)
                _count(stats, "skipped_duplicate" if known else "skipped_depth")
                continue
            self._sent.add(link)
            if self._scope.allows_normalized(link) is not None:
                _count(stats, "skipped_filtered")
                continue
            out.append(FrontierItem(link, depth))
        return out
