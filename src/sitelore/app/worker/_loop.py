"""The scale-out worker: the one crawl loop over leases of active crawls in Redis.

A worker holds no crawl state of its own: every crawl lives in Redis, so any number of
workers on any machines can join or leave (or die) at any time. Per crawl a worker runs
``concurrency`` slots of the crawl loop (``crawl.loop``), each *lease one URL -> the
page pipeline (``crawl.page``, the local crawl's) -> ack*; a keep-alive task
heartbeats (extending this worker's leases) and reaps the leases of silent workers.
Slots ask for one URL at a time: leasing ahead would hold origins idle.

It never sleeps on its own clock for politeness (Redis decides when an origin is due)
and never opens sockets or databases itself: the frontier client, the store and a
fetcher factory are passed in.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from sitelore.adapters.frontier_redis import Completion, Finished, Lease, RedisFrontier, Wait
from sitelore.app.worker._leases import LinkFilter, RedisLease, completion_of
from sitelore.app.worker._meta import CrawlMeta, CrawlState
from sitelore.app.worker._robots import SharedRobots
from sitelore.core.errors import (
    ConfigError,
    ConversionFailedError,
    FrontierError,
    NotFoundError,
)
from sitelore.core.models import PageError, PageOutcome
from sitelore.core.options import Limits
from sitelore.core.ports import Clock, Converter, Fetcher, Store
from sitelore.core.robots import product_token
from sitelore.core.urls import Scope
from sitelore.crawl.loop import run_slots
from sitelore.crawl.page import PagePipeline
from sitelore.crawl.port import PageResult, Step
from sitelore.crawl.revisit import Revisit
from sitelore.crawl.robots_loader import crawl_robots_loader

__all__ = ["CrawlTally", "FetchPath", "Worker", "WorkerConfig"]

log = logging.getLogger(__name__)

#: Opens the fetch path one crawl uses: (its settings, its deadline on the clock's
#: monotonic scale) -> an async context manager yielding the Fetcher (live, capturing
#: into the crawl's archive, or replaying it).
FetchPath = Callable[[CrawlMeta, float], AbstractAsyncContextManager[Fetcher]]

_ACK_TRIES = 5


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig:
    """This worker's identity and the operator's caps it applies to every crawl."""

    worker_id: str
    limits: Limits
    url_check: Callable[[str], object]
    slots: int = 16
    poll_ms: int = 250
    discovery_seconds: float = 1.0


@dataclasses.dataclass(slots=True)
class CrawlTally:
    """What this worker did for one crawl."""

    leased: int = 0
    acked: int = 0
    stale: int = 0
    reason: str | None = None


@dataclasses.dataclass(kw_only=True, eq=False)
class Worker:
    """A scale-out worker; ``await worker.run()`` until the work is done or ``stop()``."""

    frontier: RedisFrontier
    store: Store
    fetch_path: FetchPath
    config: WorkerConfig
    clock: Clock
    #: Worker processes convert pages (bootstrap passes the pool), so a big page never
    #: holds up the event loop and its heartbeats.
    converter: Converter
    tallies: dict[str, CrawlTally] = dataclasses.field(default_factory=dict, init=False)
    slots: asyncio.Semaphore = dataclasses.field(init=False)
    _stopping: asyncio.Event = dataclasses.field(default_factory=asyncio.Event, init=False)

    def __post_init__(self) -> None:
        self.slots = asyncio.Semaphore(max(1, self.config.slots))

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stopping.is_set()

    def stop(self) -> None:
        """Lease nothing more; pages in progress are finished and acked."""
        self._stopping.set()

    async def run(self, *, crawl_id: str | None = None, exit_when_idle: bool = False) -> None:
        """Work on ``crawl_id`` until it finishes, or on every active crawl.

        Without ``crawl_id`` the worker keeps looking for crawls until :meth:`stop`, or,
        with ``exit_when_idle``, until no crawl is active.
        """
        if crawl_id is not None:
            fields = await self.frontier.meta(crawl_id)
            if not fields:
                raise NotFoundError(f"crawl {crawl_id!r}: no such crawl in {self.frontier.shown}")
            await _Session(self, crawl_id, fields).run()
            return
        sessions: dict[str, asyncio.Task[None]] = {}
        try:
            while not self.stopping:
                try:
                    active = await self.frontier.active_crawls()
                    for cid in active:
                        if cid not in sessions:
                            await self._start(cid, sessions)
                except FrontierError as exc:
                    log.warning("looking for crawls failed: %s", exc)
                    active = list(sessions)
                for cid, task in list(sessions.items()):
                    if task.done():
                        del sessions[cid]
                        if not task.cancelled() and task.exception() is not None:
                            log.error("crawl %s: worker session failed: %s", cid, task.exception())
                if exit_when_idle and not sessions and not active:
                    return
                await self.clock.sleep(self.config.discovery_seconds)
        finally:
            if sessions:
                await asyncio.gather(*sessions.values(), return_exceptions=True)

    async def _start(self, crawl_id: str, sessions: dict[str, asyncio.Task[None]]) -> None:
        fields = await self.frontier.meta(crawl_id)
        if not CrawlState(fields).running:
            await self.frontier.deactivate(crawl_id)
            return
        try:
            session = _Session(self, crawl_id, fields)
        except ConfigError as exc:
            log.error("%s", exc)
            sessions[crawl_id] = asyncio.create_task(asyncio.sleep(0))  # do not retry it
            return
        sessions[crawl_id] = asyncio.create_task(session.run())


class _Session:
    """This worker's part in one crawl: the Frontier port over Redis, and its keep-alive."""

    def __init__(self, worker: Worker, crawl_id: str, fields: dict[str, str]) -> None:
        self.worker = worker
        self.crawl_id = crawl_id
        self.state = CrawlState(fields)
        self.meta = meta = CrawlMeta.parse(crawl_id, fields)
        self.options, _ = meta.options.clamp(worker.config.limits)
        self.tally = worker.tallies.setdefault(crawl_id, CrawlTally())
        self.over = asyncio.Event()
        self._kick = asyncio.Event()  # set (and replaced) after each ack: an origin is free
        self._leasing = asyncio.Lock()
        self._links = LinkFilter(self.options, Scope.from_options(meta.seed, self.options))
        self._robots: SharedRobots | None = None
        self._pipeline: PagePipeline | None = None

    async def run(self) -> None:
        worker, meta = self.worker, self.meta
        if not self.state.running:
            self.tally.reason = self.state.truncated_reason
            return
        now_ms = await worker.frontier.server_time_ms()
        left = (self.state.deadline_ms - now_ms) / 1000
        deadline = worker.clock.monotonic() + max(0.0, left)
        async with worker.fetch_path(meta, deadline) as fetcher:
            loader = crawl_robots_loader(fetcher, worker.config.limits, meta.user_agent)
            self._robots = SharedRobots(
                worker.frontier,
                self.crawl_id,
                loader,
                worker.clock,
                ttl_ms=meta.robots_ttl_ms,
            )
            self._pipeline = PagePipeline(
                options=self.options,
                scope=self._links.scope,
                limits=worker.config.limits,
                fetcher=fetcher,
                store=worker.store,
                robots=self._robots,
                clock=worker.clock,
                url_check=worker.config.url_check,
                converter=worker.converter,
                revisit=Revisit(worker.store, worker.clock, enabled=meta.incremental),
                max_attempts=self.meta.max_attempts,
                robots_agent=product_token(meta.user_agent),
            )
            keepalive = asyncio.create_task(self._keepalive())
            try:
                slots = min(self.options.concurrency, worker.config.slots)
                await run_slots(self, self._process, slots)
            finally:
                keepalive.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keepalive

    async def _keepalive(self) -> None:
        """Heartbeat and reap every third of the heartbeat timeout."""
        frontier, worker_id, meta = self.worker.frontier, self.worker.config.worker_id, self.meta
        interval = max(0.05, meta.hb_timeout_ms / 3000)
        while not self.over.is_set():
            try:
                if await frontier.heartbeat(self.crawl_id, worker_id, ttl_ms=meta.lease_ttl_ms) < 0:
                    self.over.set()
                    return
                reclaimed, dead = await frontier.reap(
                    self.crawl_id,
                    heartbeat_timeout_ms=meta.hb_timeout_ms,
                    max_attempts=meta.max_attempts,
                )
                if reclaimed or dead:
                    log.warning(
                        "crawl %s: reclaimed %d leases of silent workers (%d given up)",
                        self.crawl_id,
                        reclaimed,
                        dead,
                    )
            except FrontierError as exc:
                log.warning("crawl %s: keep-alive failed: %s", self.crawl_id, exc)
            await self.worker.clock.sleep(interval)

    # --- the Frontier port --------------------------------------------------------------

    async def lease(self) -> RedisLease | None:
        """Lease the next due URL (one slot asks Redis at a time); None: this slot stops."""
        worker = self.worker
        if self.over.is_set() or worker.stopping:
            return None
        async with self._leasing:  # one slot at a time asks Redis, and waits if need be
            await worker.slots.acquire()
            try:
                reply = await self._lease_when_due()
            except BaseException:
                worker.slots.release()
                raise
        if isinstance(reply, Lease):
            self.tally.leased += 1
            assert self._robots is not None
            claims = functools.partial(worker.frontier.claim, self.crawl_id)
            return RedisLease(reply, self._robots, worker.clock, claims)
        worker.slots.release()
        if isinstance(reply, Finished):
            await self._finished(reply.reason)
        return None

    async def complete(self, lease: RedisLease, result: PageResult) -> None:
        """Ack the lease with the page's result (a deadline-cut page is not acked)."""
        try:
            if result.step is Step.STOP:
                log.info("crawl %s: deadline reached during %s", self.crawl_id, lease.item.url)
                return  # the crawl is over; its next lease call ends it
            if result.warning is not None:
                log.warning("crawl %s: %s", self.crawl_id, result.warning)
                await self.worker.frontier.warn(self.crawl_id, result.warning)
            if result.throttle is not None:
                assert self._robots is not None
                log.warning("throttled %s: %s", lease.origin, result.throttle)
                await self._robots.throttle(lease.origin, result.throttle)
            completion = completion_of(
                result,
                lease.item,
                self._links,
                self.meta.delay_ms,
                record_change=self.meta.incremental,
            )
            await self._ack(lease.lease, completion)
        finally:
            self.worker.slots.release()

    async def _process(self, lease: RedisLease) -> PageResult:
        """The page pipeline under the crawl's deadline; a worker never dies of one page."""
        assert self._pipeline is not None
        try:
            async with asyncio.timeout(max(0.0, lease.remaining())):
                return await self._pipeline.process(lease)
        except TimeoutError:
            return PageResult(step=Step.STOP)
        except Exception as exc:  # a FrontierError while sharing robots, or a bug
            item = lease.item
            log.exception("crawl %s: internal error on %s", self.crawl_id, item.url)
            if item.attempt + 1 < self.meta.max_attempts and not isinstance(exc, ConfigError):
                return PageResult(step=Step.RETRY)
            message = " ".join(str(exc).split()) or type(exc).__name__  # its last attempt
            failed = ConversionFailedError(item.url, f"internal: {message}")
            error = PageError.from_exception(failed)
            outcome = PageOutcome(url=item.url, depth=item.depth, error=error)
            return PageResult(step=Step.DONE, outcome=outcome)

    async def _lease_when_due(self) -> Lease | Finished | None:
        """Lease the next due URL, sleeping as Redis hints; None when told to stop."""
        worker = self.worker
        frontier, config = worker.frontier, worker.config
        while not self.over.is_set() and not worker.stopping:
            try:
                reply = await frontier.lease(
                    self.crawl_id,
                    config.worker_id,
                    ttl_ms=self.meta.lease_ttl_ms,
                    poll_ms=config.poll_ms,
                )
            except FrontierError as exc:
                log.warning("crawl %s: lease failed: %s", self.crawl_id, exc)
                reply = Wait(1000)
            if not isinstance(reply, Wait):
                return reply
            await self._pause(max(1, min(reply.ms, config.poll_ms)) / 1000)
        return None

    async def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, or less if a slot of this worker frees an origin meanwhile."""
        kicked = asyncio.ensure_future(self._kick.wait())
        slept = asyncio.ensure_future(self.worker.clock.sleep(seconds))
        over = asyncio.ensure_future(self.over.wait())
        try:
            await asyncio.wait((kicked, slept, over), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (kicked, slept, over):
                task.cancel()

    async def _ack(self, lease: Lease, completion: Completion) -> None:
        worker = self.worker
        for attempt in range(_ACK_TRIES):
            try:
                acked, _ = await worker.frontier.complete(
                    self.crawl_id,
                    worker.config.worker_id,
                    lease.lease_id,
                    completion,
                    self.meta.buckets,
                )
            except FrontierError as exc:
                log.warning("crawl %s: ack failed (try %d): %s", self.crawl_id, attempt + 1, exc)
                await worker.clock.sleep(0.2 * 2**attempt)
                continue
            kick, self._kick = self._kick, asyncio.Event()
            kick.set()
            if acked:
                self.tally.acked += 1
            else:
                self.tally.stale += 1
                log.warning("crawl %s: lease of %s was reclaimed", self.crawl_id, lease.item.url)
            return
        log.error("crawl %s: giving up on acking %s", self.crawl_id, lease.item.url)

    async def _finished(self, reason: str) -> None:
        if not self.over.is_set():
            self.over.set()
            self.tally.reason = reason
            if reason == "missing":
                log.error(
                    "crawl %s is gone from Redis (expired, or lost in a restart)", self.crawl_id
                )
            else:
                log.info("crawl %s finished%s", self.crawl_id, f" ({reason})" if reason else "")
            with contextlib.suppress(FrontierError):
                await self.worker.frontier.deactivate(self.crawl_id)
