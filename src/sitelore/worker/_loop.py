"""The scale-out worker loop: lease URLs of active crawls from Redis, process them, ack.

A worker holds no crawl state of its own: every crawl lives in Redis, so any number of
workers on any machines can join or leave (or die) at any time. Per crawl a worker runs
``concurrency`` slots, each looping *lease one URL -> process -> complete*; a keep-alive
task heartbeats (extending this worker's leases) and reaps the leases of silent
workers. Slots ask for one URL at a time: leasing ahead would hold origins idle.

It never sleeps on its own clock for politeness (Redis decides when an origin is due)
and never opens sockets or databases itself: the frontier client, the store and a
fetcher factory are passed in.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from sitelore.errors import ConfigError, FrontierError, NotFoundError, SiteloreError
from sitelore.frontier_redis import Completion, Finished, Lease, RedisFrontier, Wait
from sitelore.models import CrawlOptions, Limits
from sitelore.ports import Clock, Converter, Fetcher, Store
from sitelore.robots_loader import make_robots_loader
from sitelore.urls import Scope
from sitelore.worker._page import PageProcessor
from sitelore.worker._robots import SharedRobots

__all__ = ["CrawlTally", "FetcherFactory", "Worker", "WorkerConfig"]

log = logging.getLogger(__name__)

#: Opens the fetcher one crawl uses: (User-Agent, crawl deadline on the clock's monotonic
#: scale) -> an async context manager yielding the Fetcher.
FetcherFactory = Callable[[str, float], AbstractAsyncContextManager[Fetcher]]

_ACK_TRIES = 5
_META_VERSION = "1"  #: the crawl metadata layout ``worker._enqueue`` writes


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


class Worker:
    """A scale-out worker; ``await worker.run()`` until the work is done or ``stop()``."""

    def __init__(
        self,
        *,
        frontier: RedisFrontier,
        store: Store,
        make_fetcher: FetcherFactory,
        config: WorkerConfig,
        clock: Clock,
        converter: Converter,
    ) -> None:
        self.frontier = frontier
        self.store = store
        self.make_fetcher = make_fetcher
        self.config = config
        self.clock = clock
        self.slots = asyncio.Semaphore(max(1, config.slots))
        self.tallies: dict[str, CrawlTally] = {}
        self._stopping = asyncio.Event()
        # Worker processes convert pages (bootstrap passes the pool), so a big page never
        # holds up the event loop and its heartbeats.
        self.converter = converter

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
        await self._run(crawl_id, exit_when_idle)

    async def _run(self, crawl_id: str | None, exit_when_idle: bool) -> None:
        if crawl_id is not None:
            meta = await self.frontier.meta(crawl_id)
            if not meta:
                raise NotFoundError(f"crawl {crawl_id!r}: no such crawl in {self.frontier.shown}")
            await _Session(self, crawl_id, meta).run()
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
        meta = await self.frontier.meta(crawl_id)
        if meta.get("state") != "running":
            await self.frontier.deactivate(crawl_id)
            return
        try:
            session = _Session(self, crawl_id, meta)
        except ConfigError as exc:
            log.error("%s", exc)
            sessions[crawl_id] = asyncio.create_task(asyncio.sleep(0))  # do not retry it
            return
        sessions[crawl_id] = asyncio.create_task(session.run())


class _Session:
    """This worker's part in one crawl: its slots, keep-alive and page processor."""

    def __init__(self, worker: Worker, crawl_id: str, meta: dict[str, str]) -> None:
        self.worker = worker
        self.crawl_id = crawl_id
        self.meta = meta
        try:
            if meta.get("version") != _META_VERSION:
                raise ValueError(f"metadata version {meta.get('version')!r}")
            asked = CrawlOptions.model_validate_json(meta["options"])
            self.seed = meta["seed"]
            self.buckets = int(meta["buckets"])
            self.lease_ttl_ms = int(meta["lease_ttl_ms"])
            self.hb_timeout_ms = int(meta["hb_timeout_ms"])
            self.max_attempts = int(meta["max_attempts"])
        except (KeyError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise ConfigError(
                f"crawl {crawl_id!r}: cannot read its settings in Redis ({exc}); "
                "was it queued by another sitelore version?"
            ) from exc
        self.options, _ = asked.clamp(worker.config.limits)
        self.tally = worker.tallies.setdefault(crawl_id, CrawlTally())
        self.over = asyncio.Event()
        self._kick = asyncio.Event()  # set (and replaced) after each ack: an origin is free
        self._leasing = asyncio.Lock()

    async def run(self) -> None:
        worker = self.worker
        if self.meta.get("state") != "running":
            self.tally.reason = self.meta.get("truncated_reason", "")
            return
        now_ms = await worker.frontier.server_time_ms()
        left = (int(self.meta["deadline_ms"]) - now_ms) / 1000
        deadline = worker.clock.monotonic() + max(0.0, left)
        user_agent = self.meta["user_agent"]
        async with worker.make_fetcher(user_agent, deadline) as fetcher:
            loader = make_robots_loader(
                fetcher, max_bytes=worker.config.limits.max_robots_bytes, user_agent=user_agent
            )
            robots = SharedRobots(
                worker.frontier,
                self.crawl_id,
                loader,
                worker.clock,
                ttl_ms=int(self.meta["robots_ttl_ms"]),
            )
            processor = PageProcessor(
                options=self.options,
                scope=Scope.from_options(self.seed, self.options),
                limits=worker.config.limits,
                fetcher=fetcher,
                store=worker.store,
                robots=robots,
                clock=worker.clock,
                url_check=worker.config.url_check,
                max_attempts=self.max_attempts,
                converter=worker.converter,
            )
            keepalive = asyncio.create_task(self._keepalive())
            try:
                slots = min(self.options.concurrency, worker.config.slots)
                async with asyncio.TaskGroup() as group:
                    for _ in range(slots):
                        group.create_task(self._slot(processor))
            finally:
                keepalive.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keepalive

    async def _keepalive(self) -> None:
        """Heartbeat and reap every third of the heartbeat timeout."""
        frontier, worker_id = self.worker.frontier, self.worker.config.worker_id
        interval = max(0.05, self.hb_timeout_ms / 3000)
        while not self.over.is_set():
            try:
                if await frontier.heartbeat(self.crawl_id, worker_id, ttl_ms=self.lease_ttl_ms) < 0:
                    self.over.set()
                    return
                reclaimed, dead = await frontier.reap(
                    self.crawl_id,
                    heartbeat_timeout_ms=self.hb_timeout_ms,
                    max_attempts=self.max_attempts,
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

    async def _slot(self, processor: PageProcessor) -> None:
        """Lease, process, ack, until the crawl ends or the worker stops."""
        while not self.over.is_set() and not self.worker.stopping:
            async with self._leasing:  # one slot at a time asks Redis, and waits if need be
                await self.worker.slots.acquire()
                try:
                    reply = await self._lease_when_due()
                except BaseException:
                    self.worker.slots.release()
                    raise
            try:
                if isinstance(reply, Lease):
                    self.tally.leased += 1
                    await self._handle(processor, reply)
                elif isinstance(reply, Finished):
                    await self._finished(reply.reason)
            finally:
                self.worker.slots.release()

    async def _lease_when_due(self) -> Lease | Finished | None:
        """Lease the next due URL, sleeping as Redis hints; None when told to stop."""
        worker = self.worker
        frontier, config = worker.frontier, worker.config
        while not self.over.is_set() and not worker.stopping:
            try:
                reply = await frontier.lease(
                    self.crawl_id,
                    config.worker_id,
                    ttl_ms=self.lease_ttl_ms,
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

    async def _handle(self, processor: PageProcessor, lease: Lease) -> None:
        remaining = (lease.deadline_ms - lease.now_ms) / 1000
        try:
            async with asyncio.timeout(remaining):
                completion = await processor.process(lease, remaining)
        except TimeoutError:
            log.info("crawl %s: deadline reached during %s", self.crawl_id, lease.item.url)
            return  # not acked: the crawl is over; its next lease call ends it
        except SiteloreError as exc:  # a FrontierError while sharing robots, say
            log.warning("crawl %s: %s failed: %s", self.crawl_id, lease.item.url, exc)
            completion = self._again(lease, exc)
        except Exception as exc:  # one page must never stop the worker (logged with traceback)
            log.exception("crawl %s: internal error on %s", self.crawl_id, lease.item.url)
            completion = self._again(lease, exc)
        await self._ack(lease, completion)

    def _again(self, lease: Lease, exc: Exception) -> Completion:
        """Retry a page that failed unexpectedly, or give it up on its last attempt."""
        if lease.item.attempt + 1 < self.max_attempts:
            return Completion(outcome="retry", stats={"retried": 1})
        message = " ".join(str(exc).split()) or type(exc).__name__
        return Completion(
            outcome="done",
            error=f"{lease.item.url}\tinternal\t{message}",
            stats={"errors": 1},
        )

    async def _ack(self, lease: Lease, completion: Completion) -> None:
        worker = self.worker
        for attempt in range(_ACK_TRIES):
            try:
                acked, _ = await worker.frontier.complete(
                    self.crawl_id,
                    worker.config.worker_id,
                    lease.lease_id,
                    completion,
                    self.buckets,
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
