"""The one page pipeline: guard, robots, fetch, Retry-After, convert, noindex, store, links.

Local crawls and scale-out workers run every leased URL through
:meth:`PagePipeline.process`; only the frontier behind the lease differs
(``crawl.port``). It never raises for a page: whatever happens to one URL is a
:class:`~sitelore.crawl.port.PageResult` (a typed error in its outcome when the page
failed, ``conversion-failed`` "internal: ..." for an exception no stage expected).
Only an unusable store location (exit 78), a configuration error and a failing
shared frontier escape, as the crawl's problems.

One page, in order::

    guard (literal) -> throttled origin? -> robots.txt (load under the lease = REQUEUE;
    refused origin = blocked; disallowed = robots) -> stored validators (update) ->
    turn (spacing) -> fetch, stopping at the first redirect (HOP) -> Retry-After /
    retryable status (RETRY) -> 304 (unchanged) -> 2xx -> render -> convert ->
    X-Robots-Tag -> noindex / twin of a kept document (duplicate) / store (+ WARC link)
    -> links to follow (DONE)
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from sitelore.core.changes import KnownPage
from sitelore.core.errors import (
    EXIT_CONFIG,
    BlockedURLError,
    ConfigError,
    ConversionError,
    ConversionFailedError,
    FetchError,
    FetchTimeoutError,
    FrontierError,
    HTTPStatusError,
    InvalidURLError,
    NetworkError,
    PageStoreError,
    RobotsDeniedError,
    SiteloreError,
    StoreError,
    TooManyRedirectsError,
    UsageError,
)
from sitelore.core.models import (
    ChangeKind,
    Document,
    FetchMeta,
    PageError,
    PageOutcome,
    SkipReason,
    Snapshot,
    UpsertResult,
    content_hash,
    document_id,
)
from sitelore.core.options import CrawlOptions, Limits
from sitelore.core.politeness import crawl_delay_refusal, parse_retry_after, retry_after_refusal
from sitelore.core.ports import CaptureLinks, Clock, Converter, Fetcher, Renderer, Store, SubFetch
from sitelore.core.robots import MAX_CRAWL_DELAY_MS, RobotsRules, is_allowed
from sitelore.core.twins import claim_key, twin_urls
from sitelore.core.urls import Scope, normalize_url
from sitelore.core.xrobots import apply_robots_tag
from sitelore.crawl.port import CrawlItem, Lease, PageResult, Step, Turn
from sitelore.crawl.revisit import Prepared, Revisit, change_of

__all__ = ["PagePipeline", "RobotsSource"]

log = logging.getLogger(__name__)

_RETRY_STATUSES = frozenset({429, 502, 503, 504})
_RETRY_AFTER_STATUSES = frozenset({429, 503})
_LINK_TYPES = frozenset({"text/html", "application/xhtml+xml"})
#: The longest Retry-After (or backoff) the crawl waits for; longer ones throttle.
MAX_BACKOFF_SECONDS = 60.0
_MIN_BACKOFF_SECONDS = 1.0
#: Origins with an unreadable robots.txt named one by one in the warnings; after them, one
#: line says there are more (a page linking thousands of dead hosts floods nothing).
_UNREADABLE_NAMED = 10
_T = TypeVar("_T")


class RobotsSource(Protocol):
    """robots.txt rules per origin, shared as widely as the frontier is."""

    async def cached(self, url: str) -> RobotsRules | None:
        """The rules of ``url``'s origin if already loaded, else None."""
        ...

    async def load(self, url: str) -> RobotsRules:
        """Fetch the rules of ``url``'s origin now (under its lease) and keep them.

        Raises ``BlockedURLError``/``InvalidURLError`` when the guard refuses the
        robots.txt URL itself.
        """
        ...


class _Redirected(Exception):  # noqa: N818 - a signal, not an error
    """Raised from the hop check to end an exchange at its first redirect (``args[0]``:
    the redirect target)."""


async def _stop_at_redirect(target: str) -> None:
    raise _Redirected(target)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PagePipeline:
    """Turns one lease into a :class:`PageResult`, over the crawl's ports.

    Args:
        options: the crawl's (clamped) options.
        scope: which discovered links the crawl follows.
        limits: the operator's caps (page bytes, page timeout, redirects).
        fetcher: the one egress path.
        store: where documents go.
        robots: robots.txt rules (only used when ``options.respect_robots``).
        clock: monotonic and wall time.
        url_check: refuses a URL before any I/O (guard literal checks).
        converter: the converter port (the pool of worker processes in a real crawl).
        revisit: validators and change kinds (``update``).
        max_attempts: requests per URL before a retryable failure is final.
        robots_agent: our product token, for ``X-Robots-Tag: <token>: ...``.
        renderer / sub_fetch: run a page's scripts (local crawls with ``--render``).
    """

    options: CrawlOptions
    scope: Scope
    limits: Limits
    fetcher: Fetcher
    store: Store
    robots: RobotsSource
    clock: Clock
    url_check: Callable[[str], object]
    converter: Converter
    revisit: Revisit
    max_attempts: int = 3
    robots_agent: str = "sitelore"
    renderer: Renderer | None = None
    sub_fetch: SubFetch | None = None
    #: Origins whose robots.txt URL the guard refused, with why (never asked again).
    blocked: dict[str, str] = dataclasses.field(default_factory=dict)
    #: Origins whose unreadable robots.txt a warning named (the first few only).
    unreadable: set[str] = dataclasses.field(default_factory=set)

    async def process(self, lease: Lease) -> PageResult:
        """Handle one leased URL: what happened to it, as a value.

        An exception no stage expected (a hostile header meeting a bug, a library's
        surprise) is this page's ``conversion-failed`` error, as in a worker: one page
        never ends a crawl. The crawl's own failures pass: an unusable store location,
        a configuration error, the shared frontier failing.
        """
        try:
            return await self._process(lease)
        except (ConfigError, FrontierError):
            raise
        except StoreError as exc:
            if exc.exit_code == EXIT_CONFIG:
                raise
            return self._internal(lease.item, exc)
        except Exception as exc:  # noqa: BLE001 - one page never ends a crawl
            return self._internal(lease.item, exc)

    def _internal(self, item: CrawlItem, exc: Exception) -> PageResult:
        log.warning("failed %s: internal error: %s: %s", item.url, type(exc).__name__, exc)
        log.debug("internal error on %s", item.url, exc_info=exc)
        message = " ".join(str(exc).split())
        detail = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
        return self._done(item, None, ConversionFailedError(item.url, f"internal: {detail}"))

    async def _process(self, lease: Lease) -> PageResult:
        item = lease.item
        try:
            self.url_check(item.url)
        except UsageError as exc:
            log.debug("skip %s: %s", item.url, exc)
            return self._refused(item, exc, SkipReason.BLOCKED)
        why = await lease.throttled()
        if why is not None:
            log.debug("skip %s: throttled (%s)", item.url, why)
            return PageResult(step=Step.SKIP, skip=SkipReason.THROTTLED)
        crawl_delay: int | None = None
        throttle: str | None = None
        spacing = self.options.delay
        if self.options.respect_robots:
            checked = await self._robots_check(lease)
            if isinstance(checked, PageResult):
                return checked
            crawl_delay = checked.requested_crawl_delay_ms
            throttle = crawl_delay_refusal(crawl_delay, cap=MAX_CRAWL_DELAY_MS / 1000)
            spacing = max(spacing, min(crawl_delay or 0, MAX_CRAWL_DELAY_MS) / 1000)
        result = await self._exchange(lease, spacing, throttle)  # it carries no Crawl-delay
        return dataclasses.replace(
            result, crawl_delay_ms=crawl_delay, throttle=result.throttle or throttle
        )

    # --- robots.txt ---------------------------------------------------------------------

    async def _robots_check(self, lease: Lease) -> RobotsRules | PageResult:
        """The origin's rules when ``lease``'s URL may be fetched, else the result to give."""
        item, key = lease.item, lease.origin
        try:
            rules = await self._rules(lease, key)
        except (BlockedURLError, InvalidURLError) as exc:
            if key not in self.blocked:
                self.blocked[key] = str(exc)
                log.warning("skip %s: its robots.txt is refused: %s", key, exc)
                warned = self._refused(item, exc, SkipReason.BLOCKED)
                return dataclasses.replace(warned, warning=f"blocked {key}: {exc}")
            return self._refused(item, exc, SkipReason.BLOCKED)
        if isinstance(rules, PageResult):
            return rules
        if not is_allowed(rules, item.url):
            log.debug("skip %s: robots", item.url)
            denied = RobotsDeniedError(item.url, "redirect target disallowed by robots.txt")
            return dataclasses.replace(
                self._refused(item, denied, SkipReason.ROBOTS),
                crawl_delay_ms=rules.requested_crawl_delay_ms,
                warning=self._unreadable_warning(key, rules),
            )
        return rules

    def _unreadable_warning(self, key: str, rules: RobotsRules) -> str | None:
        """Say once that ``key``'s URLs count as ``robots`` because its robots.txt could
        not be read (RFC 9309: disallow all), not because it disallows them."""
        if not rules.unreachable or key in self.unreadable:
            return None
        named = len(self.unreadable)
        if named > _UNREADABLE_NAMED:
            return None  # said "more" already; the set stops growing
        self.unreadable.add(key)
        if named < _UNREADABLE_NAMED:
            detail = rules.source.removeprefix("unreachable (").removesuffix(")")
            return (
                f"robots.txt of {key} could not be read ({detail}): its URLs are skipped "
                "as robots (RFC 9309: disallow all; --no-robots overrides)"
            )
        if named == _UNREADABLE_NAMED:
            return "robots.txt of more origins could not be read: their URLs count as robots too"
        return None

    async def _rules(self, lease: Lease, key: str) -> RobotsRules | PageResult:
        """The origin's rules; loading them under the lease is this lease's request."""
        rules = await self._known_rules(lease.item.url, key)
        if rules is not None:
            return rules
        turn = await lease.turn()
        if turn is not Turn.GO:
            return self._not_now(turn)
        requested = False
        try:
            rules = await self._known_rules(lease.item.url, key)  # another slot's, meanwhile
            if rules is not None:
                return rules
            requested = True
            rules = await self.robots.load(lease.item.url)
        finally:
            await lease.free(requested=requested)
        return PageResult(step=Step.REQUEUE, crawl_delay_ms=rules.requested_crawl_delay_ms)

    async def _known_rules(self, url: str, key: str) -> RobotsRules | None:
        """The origin's rules if some slot loaded them; raise if its robots.txt was refused."""
        refused = self.blocked.get(key)
        if refused is not None:
            raise BlockedURLError(key + "/robots.txt", refused)
        return await self.robots.cached(url)

    def _refused(self, item: CrawlItem, exc: SiteloreError, reason: SkipReason) -> PageResult:
        """A URL that may not be requested: skipped; a redirect target ends its page."""
        if item.hops:
            return self._done(item, None, exc)
        return PageResult(step=Step.SKIP, skip=reason)

    @staticmethod
    def _not_now(turn: Turn) -> PageResult:
        if turn is Turn.THROTTLED:
            return PageResult(step=Step.SKIP, skip=SkipReason.THROTTLED)
        return PageResult(step=Step.STOP)

    # --- the exchange -------------------------------------------------------------------

    async def _exchange(self, lease: Lease, spacing: float, throttle: str | None) -> PageResult:
        """Fetch, then settle; ``spacing`` (the origin's delay) is the base of a backoff.

        ``throttle``: the origin asked for a Crawl-delay the crawl cannot keep: this
        request goes, and the origin is throttled before anyone else may ask.
        """
        item = lease.item
        try:
            prepared = await _storing(item.url, self.revisit.prepare(item.url))
        except StoreError as exc:
            if exc.exit_code == EXIT_CONFIG:
                raise
            return self._done(item, None, exc)
        turn = await lease.turn()
        if turn is not Turn.GO:
            return self._not_now(turn)
        freed = False
        try:
            try:
                snapshot = await self.fetcher.fetch(
                    item.url,
                    max_bytes=self.limits.max_page_bytes,
                    headers=prepared.headers or None,
                    timeout=max(0.001, min(self.limits.page_timeout_seconds, lease.remaining())),
                    check_hop=_stop_at_redirect,
                )
            except _Redirected as redirect:
                if throttle is not None:
                    await lease.hold_off(0.0, throttle)
                return self._hop(item, redirect.args[0])
            except SiteloreError as exc:
                if throttle is not None:
                    await lease.hold_off(0.0, throttle)
                if lease.remaining() <= 0:
                    return PageResult(step=Step.STOP)  # cut by the deadline: unfetched
                retryable = isinstance(exc, NetworkError | FetchTimeoutError)
                if not retryable or not self._may_retry(item):
                    return self._done(item, None, exc)
                log.info("retry later %s: %s", item.url, exc)
                backoff = self._backoff(item, None, spacing)
                await lease.hold_off(backoff, None)
                return PageResult(step=Step.RETRY, backoff=backoff)
            if throttle is not None:
                await lease.hold_off(0.0, throttle)
            held = await self._hold_off(lease, snapshot, spacing)
            if held.step is Step.RETRY:
                return held
            if self.renderer is None or snapshot.content_type not in _LINK_TYPES:
                await lease.free()  # the origin's next request overlaps this conversion
                freed = True
            page = await self._page(lease, snapshot, prepared)
            if held.backoff or held.throttle:
                page = dataclasses.replace(page, backoff=held.backoff, throttle=held.throttle)
            return page
        finally:
            if not freed:
                await lease.free()

    def _hop(self, item: CrawlItem, target: str) -> PageResult:
        try:
            target = normalize_url(target)
        except InvalidURLError as exc:
            return self._done(item, None, exc)
        if target in (item.url, item.via):
            # Back to itself or to the URL first asked for: a loop, not a page fetched
            # elsewhere (it was a silent duplicate, and a 400 'usage' on REST).
            loop = TooManyRedirectsError(item.url, f"redirect loop back to {target}")
            return self._done(item, None, loop)
        if item.hops + 1 > self.limits.max_redirects:
            over = TooManyRedirectsError(
                item.url, f"more than {self.limits.max_redirects} redirects"
            )
            return self._done(item, None, over)
        log.info("redirect %s -> %s", item.url, target)
        outcome = PageOutcome(url=item.via or item.url, depth=item.depth, final_url=target)
        return PageResult(step=Step.HOP, hop=target, outcome=outcome)

    def _may_retry(self, item: CrawlItem) -> bool:
        return item.attempt + 1 < self.max_attempts

    def _backoff(self, item: CrawlItem, asked: float | None, spacing: float) -> float:
        """Seconds the origin waits before this URL's next try: asked, else exponential."""
        if asked is not None:
            return min(MAX_BACKOFF_SECONDS, asked)
        base = max(_MIN_BACKOFF_SECONDS, spacing)
        return float(min(MAX_BACKOFF_SECONDS, base * 2**item.attempt))

    # --- a final response ---------------------------------------------------------------

    async def _hold_off(self, lease: Lease, snapshot: Snapshot, spacing: float) -> PageResult:
        """Honour a Retry-After while the origin is held: a ``RETRY`` of a busy answer, or
        a ``DONE`` stub carrying the backoff and throttle for the page's result.

        A wait the crawl cannot make throttles the origin: the page is not retried.
        """
        item = lease.item
        asked: float | None = None  # the wait a 429/503 asks for...
        throttle: str | None = None  # ... and the throttle when the crawl cannot give it
        if snapshot.status in _RETRY_AFTER_STATUSES:
            asked = parse_retry_after(snapshot.headers.get("retry-after"), self.clock.now())
            throttle = retry_after_refusal(asked, left=lease.remaining(), cap=MAX_BACKOFF_SECONDS)
        retry = snapshot.status in _RETRY_STATUSES and throttle is None and self._may_retry(item)
        # Capped as a retry's is: an ``inf`` asked for (``1e309``) is no wait a worker can ack.
        waited = min(MAX_BACKOFF_SECONDS, max(0.0, asked or 0.0))
        backoff = self._backoff(item, asked, spacing) if retry else waited
        if throttle is not None:
            log.warning("throttled %s: %s", lease.origin, throttle)
            await lease.hold_off(0.0, throttle)
        elif backoff:
            await lease.hold_off(backoff, None)
        if retry:
            log.info("retry later %s: HTTP %d", item.url, snapshot.status)
            return PageResult(step=Step.RETRY, backoff=backoff)
        return PageResult(step=Step.DONE, backoff=backoff, throttle=throttle)

    async def _page(self, lease: Lease, snapshot: Snapshot, prepared: Prepared) -> PageResult:
        """Stored, unchanged, noindex, a twin's duplicate or failed: the page's ``DONE`` result."""
        item = lease.item
        try:
            unchanged = await _storing(
                item.url,
                self.revisit.not_modified(item.url, item.depth, snapshot, prepared),
            )
            if unchanged is not None:
                assert prepared.known is not None
                log.info("not modified %s", item.url)
                if twin_urls(item.url):  # the document stays this URL's in this crawl
                    await lease.claim(claim_key(item.url, prepared.known.content_hash), item.url)
                outcome = dataclasses.replace(unchanged, url=item.via or item.url)
                return PageResult(step=Step.DONE, outcome=outcome, links=prepared.known.links or ())
            return await self._accept(lease, snapshot, prepared)
        except (FetchError, ConversionError, StoreError) as exc:
            if exc.exit_code == EXIT_CONFIG:
                raise  # the store location is unusable: the whole crawl's problem (78)
            return await self._failed(item, snapshot, exc, prepared)

    async def _failed(
        self, item: CrawlItem, snapshot: Snapshot, exc: SiteloreError, prepared: Prepared
    ) -> PageResult:
        result = self._done(item, snapshot, exc)
        assert result.outcome is not None
        try:
            kind, removed = await self.revisit.failure_kind(
                item.via or item.url, snapshot, exc, prepared
            )
        except Exception:
            log.warning("could not record the failure of %s", item.url, exc_info=True)
            return result
        outcome = dataclasses.replace(result.outcome, change=kind, document_id=removed)
        return dataclasses.replace(result, outcome=outcome)

    def _done(self, item: CrawlItem, snapshot: Snapshot | None, exc: SiteloreError) -> PageResult:
        """A page that failed: its typed error as the outcome."""
        log.info("failed %s: %s", item.url, exc)
        outcome = PageOutcome(
            url=item.via or item.url,
            depth=item.depth,
            final_url=snapshot.final_url if snapshot is not None else None,
            status=snapshot.status if snapshot is not None else None,
            error=PageError.from_exception(exc),
            bytes=len(snapshot.body) if snapshot is not None else 0,
            elapsed_ms=snapshot.elapsed_ms if snapshot is not None else 0.0,
            change=ChangeKind.FAILED,
        )
        return PageResult(step=Step.DONE, outcome=outcome)

    async def _accept(self, lease: Lease, snapshot: Snapshot, prepared: Prepared) -> PageResult:
        item = lease.item
        final = snapshot.final_url
        if not 200 <= snapshot.status < 300:
            raise HTTPStatusError(final, f"HTTP {snapshot.status}", status=snapshot.status)
        if self.renderer is not None and snapshot.content_type in _LINK_TYPES:
            # A rendered document is not a function of the captured bytes: never linked.
            rendered = await self.renderer.render(snapshot, fetch=self.sub_fetch)
            snapshot = dataclasses.replace(rendered, capture=None)
        try:
            document = await self.converter.convert(
                snapshot.body, snapshot.content_type, final, snapshot.charset
            )
            document = apply_robots_tag(document, snapshot.headers, self.robots_agent)
            links = self._links_to_follow(item, final, snapshot, document)
        except (FetchError, ConversionError):
            raise
        except Exception as exc:  # a converter's bug costs this page, not the crawl
            log.debug("converting %s failed", final, exc_info=True)
            raise ConversionFailedError(final, f"{type(exc).__name__}: {exc}") from exc
        plain = PageOutcome(
            url=item.via or item.url,
            depth=item.depth,
            final_url=final,
            status=snapshot.status,
            title=document.title,
            bytes=len(snapshot.body),
            elapsed_ms=snapshot.elapsed_ms,
        )
        if document.noindex:
            log.info("not indexed (noindex) %s", final)
            return PageResult(step=Step.DONE, outcome=plain, links=links, skip=SkipReason.NOINDEX)
        holder = await _storing(final, self._twin_holder(lease, final, document, prepared))
        if holder is not None:
            log.info("duplicate %s: the same document as %s", final, holder)
            # Its links are offered all the same: the holder may be one this crawl never
            # reaches (stored by an earlier crawl), and its navigation may differ.
            outcome = dataclasses.replace(plain, document_id=document_id(holder))
            return PageResult(
                step=Step.DONE, outcome=outcome, links=links, skip=SkipReason.DUPLICATE
            )
        # Stored with the links it offers, so a later 304 can offer them again.
        document = dataclasses.replace(document, links=links)
        result = await _storing(
            final, self.store.upsert(document, FetchMeta.from_snapshot(snapshot))
        )
        await _storing(final, self._link_capture(result, snapshot))
        log.info(
            "fetched %s %d %dB %.0fms",
            final,
            snapshot.status,
            len(snapshot.body),
            snapshot.elapsed_ms,
        )
        outcome = dataclasses.replace(
            plain,
            document_id=result.id,
            indexed=True,
            change=change_of(result, prepared.known),
        )
        return PageResult(step=Step.DONE, outcome=outcome, links=links)

    async def _twin_holder(
        self, lease: Lease, url: str, document: Document, prepared: Prepared
    ) -> str | None:
        """The URL that keeps this document when ``url`` is a twin of it (``core.twins``).

        None: ``url`` stores it. A URL that
        already holds a live document stays a document (it is refreshed, never dropped
        nor deleted); a new one is a duplicate of a live stored twin with the same
        text, or of the twin that claimed that text first in this crawl. Claiming in
        the stored twin's name keeps a re-crawl on the URL it kept before, whichever
        of the two it reaches first.
        """
        twins = twin_urls(url)
        if not twins:
            return None
        text = content_hash(document.title, document.markdown)
        key = claim_key(url, text)
        if prepared.known is not None and prepared.known.url == url:
            own: KnownPage | None = prepared.known
        else:
            own = await self.store.known_page(url)
        if own is not None and not own.removed:
            await lease.claim(key, url)
            return None
        candidate = url
        for twin in twins:
            known = await self.store.known_page(twin)
            if known is not None and not known.removed and known.content_hash == text:
                candidate = twin
                break
        holder = await lease.claim(key, candidate)
        return None if holder == url else holder

    async def _link_capture(self, result: UpsertResult, snapshot: Snapshot) -> None:
        """Link the document to the WARC record it was built from (capture and replay).

        A stored document whose text changed from bytes that were not captured loses
        its old link, so a link always names bytes that give the current text; an
        unchanged document keeps it.
        """
        store = self.store
        if not isinstance(store, CaptureLinks):
            return
        if snapshot.capture is not None:
            await store.link_capture(result.id, snapshot.capture)
        elif result.changed and not result.created:
            await store.link_capture(result.id, None)

    def _links_to_follow(
        self, item: CrawlItem, final: str, snapshot: Snapshot, document: Document
    ) -> tuple[str, ...]:
        if document.nofollow or snapshot.content_type not in _LINK_TYPES:
            return ()
        if item.hops and self.scope.allows(final) is not None:
            log.debug("not following links of %s: redirected out of scope", final)
            return ()
        return document.links


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
