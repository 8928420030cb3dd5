"""The crawl frontier: which URL to fetch next, in BFS order, within the depth and page budgets.

One :class:`Frontier` per crawl holds the queue, the set of URLs already known, the
page budget and the skip counters. It never fetches, never checks robots.txt, never
reads a clock and never awaits: the spider asks it what to do and tells it what
happened.

Life of a URL::

    offer(url, depth) / offer_links(links, depth)     a link was discovered
        -> skipped: invalid, duplicate, depth, filtered   (counted in ``skipped``)
        -> admitted: queued at its depth
    take() -> CrawlItem                                the crawl may start it now;
                                                       one page slot is used
        -> release(item, SkipReason.ROBOTS)             no request was made after all:
                                                       the slot comes back
        -> requeue(item)                                back at the head of its depth,
                                                       slot back (robots.txt fetched
                                                       first, a retry, the deadline)
        -> done(item)                                   the page's links have been offered
        -> done(item) + offer_hop(item, target)         it redirected: the target is
                                                       queued as its own item on the
                                                       page's slot (taken first), or
                                                       False when the crawl knows it

Guarantees:

* **BFS start order.** ``take`` never returns a depth-d item while a shallower one is
  queued, nor while a page at depth d-2 or shallower is still in flight (it could
  still discover depth d-1 links). So, with any concurrency, every depth-d page is
  started before any depth d+1 page. ``take`` returns None when nothing may start
  *now*; :attr:`finished` says whether anything ever will.
* **Each URL at most once.** URLs are keyed by :func:`~sitelore.core.urls.normalize_url`;
  a URL is queued once. A redirect target is queued like a link (at its page's depth,
  whatever the scope), unless the crawl already knows it: queued, fetched or released.
* **The seed is always admitted** at depth 0, whatever the scope (the guard and robots
  still apply; the spider checks them).
* **Budget.** At most ``max_pages`` items are taken, minus those released. When the
  budget is spent with URLs still queued, :attr:`truncated` is True,
  :attr:`truncated_reason` is ``"max_pages"`` and :attr:`unfetched` counts them.

Counting: every offer is counted once, as admitted or under the reason it was
skipped. The first offer of a URL gets its real reason; later offers of a URL already
admitted or filtered (or already too deep) count as ``duplicate``. Strings that are not
valid URLs count as ``invalid`` every time. ``cap`` is the number left unfetched when
the budget ran out; ``robots`` (and any other reason) comes from :meth:`release`.

Hot path: :meth:`offer_links` normalises each distinct link string once per crawl
(a per-frontier cache), and tests the known set before depth and scope. Memory per
queued URL is one string (shared by the queue, the known table and the cache) plus a
deque slot; depth is implied by which queue holds it.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final, NamedTuple

from sitelore.core.errors import InvalidURLError
from sitelore.core.models import SKIPPED_URLS_PER_REASON, SkipReason
from sitelore.core.urls import normalize_url

if TYPE_CHECKING:
    from sitelore.core.options import CrawlOptions
    from sitelore.core.urls import Scope

__all__ = ["CrawlItem", "Frontier", "LinkJudge"]

# States in the known table (one small int per URL).
_QUEUED: Final = 0
_FETCHED: Final = 1  # taken (requested)
_REJECTED: Final = 2  # released without a request
_FILTERED: Final = 3  # out of scope (a redirect may still lead there)

_TRUNCATED_MAX_PAGES: Final = "max_pages"
#: A kept example of a skipped string is cut to this many characters (invalid ones may be long).
_EXAMPLE_CHARS: Final = 300


class CrawlItem(NamedTuple):
    """One URL to fetch: its normalised form, depth, tries so far and redirect hops.

    ``via`` is the URL first asked for when this item is a redirect target: the page's
    outcome is reported under it.
    """

    url: str
    depth: int
    attempt: int = 0
    hops: int = 0
    via: str | None = None


class LinkJudge:
    """Which discovered links a crawl admits: not known yet, within the depth, in scope.

    ``known`` maps every URL judged (and any the caller adds) to its state; a URL
    too deep is remembered apart, as it may still come back shallower. Local crawls
    (:class:`Frontier`) and scale-out workers (before sending links to Redis) judge
    links here, so both count the same skips.
    """

    __slots__ = ("known", "max_depth", "scope", "too_deep")

    def __init__(self, scope: Scope, max_depth: int) -> None:
        self.scope = scope
        self.max_depth = max_depth
        self.known: dict[str, int] = {}
        self.too_deep: set[str] = set()

    def judge(self, url: str, depth: int) -> SkipReason | None:
        """Admit a valid normalised URL (None), or say why not (the caller counts it)."""
        if url in self.known:
            return SkipReason.DUPLICATE
        if depth > self.max_depth:
            if url in self.too_deep:
                return SkipReason.DUPLICATE
            self.too_deep.add(url)
            return SkipReason.DEPTH
        if self.scope.allows_normalized(url) is not None:
            self.known[url] = _FILTERED
            return SkipReason.FILTERED
        self.too_deep.discard(url)
        self.known[url] = _QUEUED
        return None

    def claim(self, url: str) -> None:
        """Know ``url`` from now on, whatever its scope (a redirect target being fetched)."""
        self.known[url] = _FETCHED
        self.too_deep.discard(url)


class Frontier:
    """BFS queue, known-URL table, depth limit and page budget of one crawl.

    >>> from sitelore.core.options import CrawlOptions
    >>> from sitelore.core.urls import Scope
    >>> options = CrawlOptions(max_pages=10, max_depth=1)
    >>> frontier = Frontier("https://docs.example.com/", options,
    ...                     Scope.from_options("https://docs.example.com/", options))
    >>> seed = frontier.take()
    >>> frontier.offer_links(["https://docs.example.com/a", "https://other.example/"], 1)
    1
    >>> frontier.done(seed)
    >>> frontier.take()
    CrawlItem(url='https://docs.example.com/a', depth=1, attempt=0, hops=0, via=None)
    """

    __slots__ = (
        "_attempts",
        "_cache",
        "_counts",
        "_examples",
        "_hops",
        "_in_flight",
        "_known",
        "_levels",
        "_links",
        "_max_pages",
        "_queued",
        "_taken",
        "seed",
    )

    def __init__(self, seed: str, options: CrawlOptions, scope: Scope) -> None:
        """Admit ``seed`` at depth 0 (raises InvalidURLError if it is not a crawlable URL)."""
        self.seed: str = normalize_url(seed)
        self._links = LinkJudge(scope, options.max_depth)
        self._max_pages = options.max_pages
        self._cache: dict[str, str | None] = {seed: self.seed}
        self._known = self._links.known
        self._known[self.seed] = _QUEUED
        self._levels: list[deque[str]] = [deque((self.seed,))]
        self._in_flight: list[int] = [0]
        self._counts: dict[SkipReason, int] = {}
        self._examples: dict[SkipReason, list[str]] = {}
        self._queued = 1
        self._taken = 0
        # Queued URLs to try again, and their tries so far (redirect targets queue apart).
        self._attempts: dict[str, int] = {}
        # Redirect targets: they go on with their page, on its page slot, before the rest.
        self._hops: deque[CrawlItem] = deque()

    # --- discovering ---------------------------------------------------------------------

    def offer(self, url: str, depth: int) -> SkipReason | None:
        """Admit one discovered link at ``depth``; return None if queued, else why not.

        Checks, cheapest first: valid URL, not already known, depth within the limit,
        in scope.
        """
        normalized = self._normalized(url)
        reason = SkipReason.INVALID if normalized is None else self._judge(normalized, depth)
        if reason is not None:
            self._count(reason, url=normalized or url)
        return reason

    def offer_links(self, links: Iterable[str], depth: int) -> int:
        """Offer many absolute links found on one page; return how many were queued."""
        cache = self._cache
        known = self._known
        admitted = duplicates = 0
        for href in links:
            try:
                normalized = cache[href]
            except KeyError:
                normalized = self._normalized(href)
            if normalized is None:
                self._count(SkipReason.INVALID, url=href)
            elif normalized in known:
                duplicates += 1
            else:
                reason = self._judge(normalized, depth)
                if reason is None:
                    admitted += 1
                else:
                    self._count(reason, url=normalized)
        if duplicates:
            self._count(SkipReason.DUPLICATE, duplicates)
        return admitted

    # --- scheduling ----------------------------------------------------------------------

    def take(self) -> CrawlItem | None:
        """Return the next URL to fetch and use one page slot, or None if none may start now.

        None means: the queue is empty, the page budget is spent, or the next URL must
        wait for shallower pages still in flight (BFS order). Call again after a
        :meth:`done` or :meth:`release`; :attr:`finished` tells when to stop.
        """
        if self._hops:
            hop = self._hops.popleft()
            self._queued -= 1
            self._in_flight[hop.depth] += 1
            return hop
        if self._taken >= self._max_pages:
            return None
        for depth, level in enumerate(self._levels):
            while level and self._known.get(level[0]) != _QUEUED:
                level.popleft()  # no longer queued
            if not level:
                continue
            if any(self._in_flight[: max(0, depth - 1)]):
                return None
            url = level.popleft()
            self._known[url] = _FETCHED
            self._queued -= 1
            self._taken += 1
            self._in_flight[depth] += 1
            return CrawlItem(url, depth, self._attempts.pop(url, 0))
        return None

    def release(self, item: CrawlItem, reason: SkipReason = SkipReason.ROBOTS) -> None:
        """Record that ``item`` was skipped without a request; its page slot comes back."""
        self._known[item.url] = _REJECTED
        if not item.hops:  # a redirect target used its page's slot
            self._taken -= 1
        self._in_flight[item.depth] -= 1
        self._count(reason, url=item.url)

    def requeue(self, item: CrawlItem) -> None:
        """Put ``item`` back at the head of its depth; its page slot comes back.

        For an item to try again (its ``attempt`` as given), or taken but not started
        (robots.txt was fetched first, the deadline came): until taken again it counts
        in :attr:`unfetched`, not in ``skipped``.
        """
        self._queued += 1
        self._in_flight[item.depth] -= 1
        if item.hops:  # on its page's slot, first again
            self._hops.appendleft(item)
            return
        self._known[item.url] = _QUEUED
        self._levels[item.depth].appendleft(item.url)
        if item.attempt:
            self._attempts[item.url] = item.attempt
        self._taken -= 1

    def offer_hop(self, item: CrawlItem, target: str) -> bool:
        """Queue the redirect target of ``item`` at its depth; False if the crawl knows it.

        The target is queued whatever the scope (its links are followed only if it is
        in scope) and goes on with its page: on the page's slot (past the budget too),
        before any other URL. A target already queued, fetched or released is counted
        as a ``duplicate``.
        """
        normalized = self._normalized(target)
        if normalized is None:
            self._count(SkipReason.INVALID, url=target)
            return False
        if self._known.get(normalized, _FILTERED) != _FILTERED:
            self._count(SkipReason.DUPLICATE)
            return False
        self._links.claim(normalized)
        self._hops.append(CrawlItem(normalized, item.depth, 0, item.hops + 1, item.via or item.url))
        self._queued += 1
        return True

    def done(self, item: CrawlItem) -> None:
        """Record that ``item`` is finished and its links have been offered."""
        self._in_flight[item.depth] -= 1

    # --- questions -----------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Items taken and not yet done or released."""
        return sum(self._in_flight)

    @property
    def finished(self) -> bool:
        """True when no item will ever be taken again: nothing in flight, nothing startable."""
        return (
            self.in_flight == 0
            and not self._hops
            and (self._queued == 0 or self._taken >= self._max_pages)
        )

    @property
    def truncated(self) -> bool:
        """True when the page budget is spent and URLs are still queued."""
        return self._taken >= self._max_pages and self._queued > 0

    @property
    def truncated_reason(self) -> str | None:
        """``"max_pages"`` when :attr:`truncated`, else None."""
        return _TRUNCATED_MAX_PAGES if self.truncated else None

    @property
    def unfetched(self) -> int:
        """Admitted URLs queued and not yet taken (once the crawl stops: never fetched)."""
        return self._queued

    @property
    def skipped(self) -> dict[str, int]:
        """Skips by reason (``SkipReason`` values as keys; zero counts left out)."""
        out = {str(reason): count for reason, count in self._counts.items() if count}
        if self.truncated:
            out[str(SkipReason.CAP)] = self._queued
        return out

    @property
    def skipped_urls(self) -> dict[str, list[str]]:
        """Some skipped URLs by reason: the first few of each, and of ``cap`` the next queued."""
        out = {str(reason): list(urls) for reason, urls in self._examples.items() if urls}
        if self.truncated:
            queued = (
                url for level in self._levels for url in level if self._known.get(url) == _QUEUED
            )
            out[str(SkipReason.CAP)] = list(itertools.islice(queued, SKIPPED_URLS_PER_REASON))
        return out

    def __repr__(self) -> str:
        return (
            f"<Frontier seed={self.seed!r} pending={self._queued} in_flight={self.in_flight} "
            f"taken={self._taken}/{self._max_pages} skipped={self.skipped}>"
        )

    # --- internals -----------------------------------------------------------------------

    def _normalized(self, url: str) -> str | None:
        """``normalize_url`` through the per-crawl cache; None for an invalid URL."""
        cache = self._cache
        if url in cache:
            return cache[url]
        try:
            normalized: str | None = normalize_url(url)
        except InvalidURLError:
            normalized = None
        else:
            if normalized == url:
                normalized = url  # share one string object between cache, table and queue
        cache[url] = normalized
        return normalized

    def _judge(self, url: str, depth: int) -> SkipReason | None:
        """Admit a valid normalised URL and queue it, or return why not (the caller counts it)."""
        reason = self._links.judge(url, depth)
        if reason is not None:
            return reason
        levels = self._levels
        while len(levels) <= depth:
            levels.append(deque())
            self._in_flight.append(0)
        levels[depth].append(url)
        self._queued += 1
        return None

    def _count(self, reason: SkipReason, n: int = 1, *, url: str | None = None) -> None:
        self._counts[reason] = self._counts.get(reason, 0) + n
        if url is not None:
            kept = self._examples.setdefault(reason, [])
            if len(kept) < SKIPPED_URLS_PER_REASON:
                kept.append(url[:_EXAMPLE_CHARS])
