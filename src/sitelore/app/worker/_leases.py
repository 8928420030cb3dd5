"""The Redis adapter of the Frontier port: leases from the shared frontier, results as acks.

A :class:`RedisLease` wraps one lease of the Lua frontier for the page pipeline
(``crawl.page``), which is the local crawl's; :func:`completion_of` turns the page's
typed result into the ``Completion`` the ``COMPLETE`` script applies. Redis only
leases an origin that is due and free, so a lease's turn never waits; the origin is
let go when the completion is acked. Discovered links are filtered here (normalised,
depth, scope, not sent twice by this worker) before they travel to Redis, which
drops the ones any worker already queued.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable

from sitelore.adapters.frontier_redis import (
    Completion,
    FrontierItem,
    Lease,
    Outcome,
    Stat,
    split_url,
)
from sitelore.app.worker._robots import SharedRobots
from sitelore.core.errors import UsageError
from sitelore.core.models import SkipReason
from sitelore.core.options import CrawlOptions
from sitelore.core.ports import Clock
from sitelore.core.robots import MAX_CRAWL_DELAY_MS
from sitelore.core.urls import Scope, normalize_url
from sitelore.crawl.frontier import LinkJudge
from sitelore.crawl.port import CrawlItem, PageResult, Step, Turn

__all__ = ["Claims", "LinkFilter", "RedisLease", "completion_of"]

#: Links this worker already sent for this crawl are not sent again (Redis would drop them).
_SENT_CAP = 200_000


#: Claims a twin URL's document for the whole crawl: ``(key, url) -> the URL holding it``
#: (``RedisFrontier.claim`` bound to the crawl).
Claims = Callable[[str, str], Awaitable[str]]


class RedisLease:
    """One leased URL of a scale-out crawl, as the page pipeline sees it."""

    def __init__(self, lease: Lease, robots: SharedRobots, clock: Clock, claims: Claims) -> None:
        self.lease = lease
        self._claims = claims
        found = lease.item
        self.item = CrawlItem(found.url, found.depth, found.attempt, found.hops)  #: the URL
        self.origin = split_url(found.url)[0]  #: the origin Redis leased (its queue's key)
        self._robots = robots
        self._clock = clock
        self._end = clock.monotonic() + (lease.deadline_ms - lease.now_ms) / 1000

    def remaining(self) -> float:
        """Seconds of crawl time left (from Redis's deadline at lease time)."""
        return self._end - self._clock.monotonic()

    async def throttled(self) -> str | None:
        """Why no worker may request this origin any more, or None."""
        return await self._robots.throttled(self.origin)

    async def turn(self) -> Turn:
        """Redis leased a due origin: the request may go now, unless the deadline passed."""
        return Turn.GO if self.remaining() > 0 else Turn.DEADLINE

    async def hold_off(self, seconds: float, throttle: str | None) -> None:
        """Throttle the origin for every worker now; a backoff travels with the ack."""
        if throttle is not None:
            await self._robots.throttle(self.origin, throttle)

    async def free(self, *, requested: bool = True) -> None:
        """Nothing to do here: the origin is let go when the completion is acked."""

    async def claim(self, key: str, url: str) -> str:
        """Claim document ``key`` for ``url`` across the crawl's workers (Redis)."""
        return await self._claims(key, url)


class LinkFilter:
    """Which discovered links one worker sends to Redis, counting the others as skips.

    The crawl's own link judgement (``crawl.frontier.LinkJudge``): a link this worker
    already sent (or found out of scope, or too deep) is not sent again.
    """

    def __init__(self, options: CrawlOptions, scope: Scope) -> None:
        self.scope = scope
        self._judge = LinkJudge(scope, options.max_depth)

    def items(self, links: Iterable[str], depth: int, stats: dict[str, int]) -> list[FrontierItem]:
        """The links worth queueing at ``depth``; the rest counted in ``stats``."""
        judge = self._judge
        if len(judge.known) + len(judge.too_deep) > _SENT_CAP:
            judge.known.clear()
            judge.too_deep.clear()
        out: list[FrontierItem] = []
        for href in dict.fromkeys(links):
            try:
                link = normalize_url(href)
            except UsageError:
                _count(stats, Stat.skipped(SkipReason.INVALID))
                continue
            reason = judge.judge(link, depth)
            if reason is None:
                out.append(FrontierItem(link, depth))
            else:
                _count(stats, Stat.skipped(reason))
        return out

    def hop(self, item: CrawlItem, target: str) -> FrontierItem:
        """The queue item of a redirect target (any scope; its page's depth)."""
        self._judge.claim(target)
        return FrontierItem(target, item.depth, 0, item.hops + 1)


def completion_of(
    result: PageResult,
    item: CrawlItem,
    links: LinkFilter,
    delay_ms: int,
    *,
    record_change: bool = False,
) -> Completion:
    """The ack of one leased URL, from its page result.

    ``record_change``: an incremental crawl keeps each page's change for its report.
    """
    if result.crawl_delay_ms is not None:
        delay_ms = max(delay_ms, min(result.crawl_delay_ms, MAX_CRAWL_DELAY_MS))
    elif result.step is Step.SKIP:
        delay_ms = -1  # no request, and robots.txt not read: the origin's delay stays
    # No request (skip, requeue) has a backoff: every ack carries the same two timings.
    ack = functools.partial(Completion, delay_ms=delay_ms, backoff_ms=round(result.backoff * 1000))
    step = result.step
    if step is Step.SKIP:
        assert result.skip is not None
        return ack(outcome=Outcome.SKIP, stats={Stat.skipped(result.skip): 1})
    if step is Step.REQUEUE or step is Step.STOP:
        return ack(outcome=Outcome.REQUEUE)
    if step is Step.RETRY:
        return ack(outcome=Outcome.RETRY, stats={Stat.RETRIED: 1})
    if step is Step.HOP:
        assert result.hop is not None
        hop = links.hop(item, result.hop)
        return ack(outcome=Outcome.DONE, stats={Stat.FETCHED: 1, Stat.REDIRECTED: 1}, links=(hop,))
    outcome = result.outcome
    assert outcome is not None
    stats: dict[str, int] = {Stat.FETCHED: 1}
    error = ""
    if outcome.error is not None:
        stats[Stat.ERRORS] = 1
        message = " ".join(outcome.error.message.split())
        error = f"{item.url}\t{outcome.error.kind}\t{message}"
    if outcome.indexed:
        stats[Stat.INDEXED] = 1
    if result.skip is not None:
        _count(stats, Stat.skipped(result.skip))
    found = links.items(result.links, item.depth + 1, stats) if result.links else []
    change = ""
    if record_change and outcome.change is not None:
        change = f"{outcome.change}\t{outcome.url}"
    return ack(outcome=Outcome.DONE, error=error, change=change, stats=stats, links=found)


def _count(stats: dict[str, int], name: str) -> None:
    stats[name] = stats.get(name, 0) + 1
