"""The in-process frontier adapter: origins shared by crawls, and never left held."""

from __future__ import annotations

import asyncio

from tests.fakes import FakeClock

from sitelore.core.models import PageOutcome, SkipReason
from sitelore.core.options import CrawlOptions
from sitelore.core.urls import Scope
from sitelore.crawl.frontier import Frontier
from sitelore.crawl.memory import MemoryFrontier, Origins
from sitelore.crawl.port import Turn

SEED = "https://docs.test/"


class StuckClock(FakeClock):
    """A clock whose sleeps never end (until cancelled)."""

    async def sleep(self, seconds: float) -> None:
        await asyncio.Event().wait()


class Quiet:
    def emit(self, outcome: PageOutcome) -> None: ...
    def skipped(self, reason: SkipReason, url: str) -> None: ...
    def warn(self, line: str) -> None: ...
    def truncate(self, reason: str) -> None: ...


def _memory(origins: Origins, clock: FakeClock, delay: float) -> MemoryFrontier:
    options = CrawlOptions(delay=delay)
    frontier = Frontier(SEED, options, Scope.from_options(SEED, options))
    return MemoryFrontier(
        frontier, origins, Quiet(), clock=clock, delay=delay, deadline=clock.time + 600
    )


async def test_a_turn_cancelled_while_waiting_leaves_the_origin_free() -> None:
    """A cancelled job must not keep an origin every other crawl of the process needs."""
    origins, clock = Origins(), StuckClock()
    memory = _memory(origins, clock, delay=5.0)
    origins.politeness.record_request("https://docs.test", clock.monotonic(), delay=5.0)
    lease = await memory.lease()
    assert lease is not None
    waiting = asyncio.create_task(lease.turn())
    await asyncio.sleep(0)
    assert origins.lock("https://docs.test").locked()
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert not origins.lock("https://docs.test").locked()


async def test_two_crawls_share_one_origin_lock_and_its_spacing() -> None:
    origins, clock = Origins(), FakeClock()
    first, second = _memory(origins, clock, 2.0), _memory(origins, clock, 0.0)
    a, b = await first.lease(), await second.lease()
    assert a is not None
    assert b is not None
    assert await a.turn() is Turn.GO
    started = clock.monotonic()
    waiting = asyncio.create_task(b.turn())
    await asyncio.sleep(0)
    assert not waiting.done()  # one request in flight per origin, across crawls
    await a.free()
    assert await waiting is Turn.GO
    assert clock.monotonic() - started >= 2.0  # spaced by the larger delay
    await b.free()


async def test_a_stopped_crawl_throttles_no_origin() -> None:
    """Once the crawl stops, an origin with a long Crawl-delay is not blamed for it
    (it was throttled, "reaches the crawl's deadline", with time still left)."""
    origins, clock = Origins(), FakeClock()
    memory = _memory(origins, clock, delay=1.0)
    origins.politeness.set_crawl_delay("https://docs.test", 5000)
    lease = await memory.lease()
    assert lease is not None
    memory.stopped = True
    assert await lease.turn() is Turn.DEADLINE
    assert memory.throttles == {}
    assert not origins.lock("https://docs.test").locked()
