"""The in-process frontier adapter: BFS queue, one request in flight per origin, spacing.

:class:`MemoryFrontier` implements the ``crawl.port.Frontier`` port for one crawl over
the pure :class:`~sitelore.crawl.frontier.Frontier` (BFS order, budget, skip counts) and an
:class:`Origins` table shared by every crawl of the process: one ``asyncio.Lock`` per
origin (one request in flight, waiters served in FIFO order) and one
:class:`~sitelore.core.politeness.Politeness` (spacing, Crawl-delay, Retry-After). Two crawls
of one origin therefore queue on the same lock and are spaced by the larger delay.
Throttles stay per crawl: whether a wait can be made depends on the crawl's deadline.

Pages of one origin convert side by side but report in the order they were fetched
(each lease waits for the previous one of its origin before completing), so outcomes
and offered links keep BFS order whatever each conversion takes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections import defaultdict
from typing import Protocol

from sitelore.core.models import PageOutcome, SkipReason
from sitelore.core.politeness import Politeness, clamp_to_deadline
from sitelore.core.ports import Clock
from sitelore.core.robots import MAX_CRAWL_DELAY_MS
from sitelore.core.urls import origin
from sitelore.crawl.frontier import Frontier
from sitelore.crawl.port import CrawlItem, PageResult, Step, Turn

__all__ = ["MemoryFrontier", "Origins", "Reporter"]


@dataclasses.dataclass(eq=False)
class Origins:
    """Per-origin politeness shared by every crawl of one process."""

    politeness: Politeness = dataclasses.field(default_factory=lambda: Politeness(0.0))
    _locks: defaultdict[str, asyncio.Lock] = dataclasses.field(
        default_factory=lambda: defaultdict(asyncio.Lock)
    )

    def lock(self, key: str) -> asyncio.Lock:
        """The origin's lock: held from a request's turn to the end of its exchange."""
        return self._locks[key]

    async def wait_turn(
        self,
        key: str,
        clock: Clock,
        *,
        delay: float,
        deadline: float = math.inf,
        paced: bool = True,
    ) -> bool:
        """Wait for ``key``'s next slot and book it; False when ``deadline`` forbids it.

        ``delay``: the asking crawl's own; ``paced=False`` (replay): no wait at all.
        """
        now = clock.monotonic()
        asked = self.politeness.wait_for(key, now) if paced else 0.0
        wait = clamp_to_deadline(asked, now, deadline)
        if wait is None:
            return False
        if wait > 0:
            await clock.sleep(wait)
        self.politeness.record_request(key, clock.monotonic(), delay=delay)
        return True


class Reporter(Protocol):
    """Where a crawl's outcomes, skips and warnings go (``crawl.engine.CrawlRun``)."""

    def emit(self, outcome: PageOutcome) -> None:
        """One page ended."""
        ...

    def skipped(self, reason: SkipReason, url: str) -> None:
        """One URL was not stored, for ``reason`` (beyond the frontier's own counts)."""
        ...

    def warn(self, line: str) -> None:
        """A line for the summary's warnings."""
        ...

    def truncate(self, reason: str) -> None:
        """The crawl stops early, for ``reason``."""
        ...


@dataclasses.dataclass(eq=False)
class MemoryFrontier:
    """The Frontier port over one crawl's BFS frontier and the process's origins."""

    frontier: Frontier
    origins: Origins
    reporter: Reporter
    _: dataclasses.KW_ONLY
    clock: Clock
    delay: float
    deadline: float
    paced: bool = True
    #: True once the deadline stopped the crawl.
    stopped: bool = dataclasses.field(default=False, init=False)
    #: Origins this crawl makes no more requests to, and why.
    throttles: dict[str, str] = dataclasses.field(default_factory=dict, init=False)
    _wakeup: asyncio.Event = dataclasses.field(default_factory=asyncio.Event, init=False)
    # Per origin: set once the page fetched last has reported its outcome.
    _reported: dict[str, asyncio.Event] = dataclasses.field(default_factory=dict, init=False)
    # Documents claimed by a twin URL (``core.twins.claim_key`` -> the URL holding it).
    _claims: dict[str, str] = dataclasses.field(default_factory=dict, init=False)

    async def lease(self) -> MemoryLease | None:
        """The next URL in BFS order (waiting for shallower pages); None when done."""
        frontier = self.frontier
        while not self.stopped:
            item = frontier.take()
            if item is not None:
                return MemoryLease(self, item)
            if frontier.finished:
                self._wakeup.set()
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        return None

    async def complete(self, lease: MemoryLease, result: PageResult) -> None:
        """Apply ``result``: outcome, links, hop, retry, origin state; in fetch order."""
        try:
            if lease.before is not None:
                await lease.before.wait()
            self._apply(lease, result)
        finally:
            lease.reported.set()  # the origin's next page may report now
            self._wakeup.set()

    async def wait_turn(self, key: str) -> bool:
        """Wait for ``key``'s next slot and book it; False when the deadline forbids it."""
        return await self.origins.wait_turn(
            key, self.clock, delay=self.delay, deadline=self.deadline, paced=self.paced
        )

    def record_request(self, key: str) -> None:
        """A request to ``key`` starts or ends now: spacing counts from here."""
        self.origins.politeness.record_request(key, self.clock.monotonic(), delay=self.delay)

    def _apply(self, lease: MemoryLease, result: PageResult) -> None:
        frontier, reporter, item, key = self.frontier, self.reporter, lease.item, lease.origin
        if result.crawl_delay_ms is not None:  # one over the cap throttles (hold_off)
            delay_ms = min(result.crawl_delay_ms, MAX_CRAWL_DELAY_MS)
            self.origins.politeness.set_crawl_delay(key, delay_ms)
            if result.step is Step.REQUEUE:  # robots.txt was just read: space from it
                self.record_request(key)
        if result.warning is not None:
            reporter.warn(result.warning)
        if result.throttle is not None:
            self.hold_off(key, 0.0, result.throttle)
        step = result.step
        if step is Step.DONE:
            assert result.outcome is not None
            reporter.emit(result.outcome)
            if result.skip is not None:
                reporter.skipped(result.skip, result.outcome.final_url or item.url)
            if result.links:
                frontier.offer_links(result.links, item.depth + 1)
            frontier.done(item)
        elif step is Step.HOP:
            assert result.hop is not None
            assert result.outcome is not None
            frontier.done(item)
            if not frontier.offer_hop(item, result.hop):
                reporter.emit(result.outcome)  # a redirect onto a page the crawl knows
        elif step is Step.RETRY:
            frontier.requeue(item._replace(attempt=item.attempt + 1))
        elif step is Step.REQUEUE:
            frontier.requeue(item)
        elif step is Step.SKIP:
            assert result.skip is not None
            frontier.release(item, result.skip)
        else:  # STOP: the deadline came first
            frontier.requeue(item)
            self.stopped = True
            reporter.truncate("deadline")

    def claim(self, key: str, url: str) -> str:
        """The URL holding document ``key``: ``url`` unless another claimed it first."""
        return self._claims.setdefault(key, url)

    def spaced_past_deadline(self, key: str) -> str | None:
        """Why ``key``'s own Crawl-delay keeps its next request past the deadline, or None.

        None when the deadline has come, or when the wait is the crawl's own delay:
        then the crawl stops as before, its queued URLs unfetched.
        """
        now = self.clock.monotonic()
        spacing = self.origins.politeness.spacing(key, self.delay)
        if now >= self.deadline or spacing <= self.delay:
            return None
        return f"Crawl-delay {spacing:g}s reaches the crawl's deadline"

    def hold_off(self, key: str, seconds: float, throttle: str | None) -> None:
        """Push ``key``'s next request out, or throttle it (a wait the crawl cannot make)."""
        if throttle is not None:
            if key not in self.throttles:
                self.throttles[key] = throttle
                self.reporter.warn(f"throttled {key}: {throttle}; its other URLs skipped")
        elif seconds > 0:
            self.origins.politeness.push_back(key, self.clock.monotonic(), seconds)


class MemoryLease:
    """One URL of a local crawl; its origin is held from :meth:`turn` to :meth:`free`."""

    def __init__(self, memory: MemoryFrontier, item: CrawlItem) -> None:
        self._memory = memory
        self.item = item  #: the URL to process
        self.origin = origin(item.url)  #: its origin: the key of its lock and spacing
        self._held: asyncio.Lock | None = None
        self.reported = asyncio.Event()
        self.before: asyncio.Event | None = None

    def remaining(self) -> float:
        """Seconds left before the crawl's deadline."""
        memory = self._memory
        return memory.deadline - memory.clock.monotonic()

    async def throttled(self) -> str | None:
        """Why the origin takes no more requests, or None."""
        return self._memory.throttles.get(self.origin)

    async def turn(self) -> Turn:
        """Hold the origin and wait for its spacing (throttled or past the deadline: not)."""
        memory, key = self._memory, self.origin
        lock = memory.origins.lock(key)
        await lock.acquire()
        try:  # the lock is shared by every crawl of the process: never leave it held
            if key in memory.throttles:
                lock.release()
                return Turn.THROTTLED
            if memory.stopped:  # the crawl is ending: no origin is to blame
                lock.release()
                return Turn.DEADLINE
            if not await memory.wait_turn(key):
                lock.release()
                why = memory.spaced_past_deadline(key)
                if why is None:
                    return Turn.DEADLINE
                memory.hold_off(key, 0.0, why)  # this origin ends; the others go on
                return Turn.THROTTLED
        except BaseException:  # cancelled while waiting (a job cancelled, a deadline)
            lock.release()
            raise
        self._held = lock
        if self.before is None:
            self.before = memory._reported.get(key)
            memory._reported[key] = self.reported
        return Turn.GO

    async def hold_off(self, seconds: float, throttle: str | None) -> None:
        """Push the origin's next request out, or throttle it, before anyone else asks."""
        self._memory.hold_off(self.origin, seconds, throttle)

    async def free(self, *, requested: bool = True) -> None:
        """The exchange is over: spacing also counts from now; the origin is free."""
        lock, self._held = self._held, None
        if lock is not None:
            if requested:
                self._memory.record_request(self.origin)
            lock.release()

    async def claim(self, key: str, url: str) -> str:
        """Claim document ``key`` for ``url`` in this crawl; the URL that holds it.

        Claims of one origin go in fetch order (after the page fetched before this one
        has reported), so of two twins the one fetched first keeps the document.
        """
        if self.before is not None:
            await self.before.wait()
        return self._memory.claim(key, url)
