"""Build the scale-out object graph: the Redis frontier, the store, guarded fetchers, a worker.

The composition root of ``sitelore crawl --frontier``, ``sitelore worker`` and
``sitelore crawl-status`` (the local crawl's is ``bootstrap.Runtime``). It names the
concrete adapters and owns their lifetimes; the worker and the enqueue step
(``sitelore.worker``) only see ports and the frontier client. Start-up fails fast, with
one line naming the (password-free) URL, when Redis or the store cannot be used.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

from sitelore.clock import SystemClock
from sitelore.config import Settings
from sitelore.convert_pool import ProcessConverter
from sitelore.errors import ConfigError, NotFoundError, UsageError
from sitelore.fetcher import HttpFetcher
from sitelore.frontier_redis import CrawlStatus, RedisFrontier
from sitelore.guard import AddressPolicy, check_url, parse_resolve_entry
from sitelore.models import CrawlOptions
from sitelore.ports import Clock, Fetcher, Resolver
from sitelore.store import PostgresStore, open_store
from sitelore.worker import (
    CrawlTally,
    EnqueuedCrawl,
    ScaleTimings,
    Worker,
    WorkerConfig,
    enqueue_crawl,
    new_crawl_id,
)

__all__ = ["crawl_status", "default_worker_id", "enqueue", "open_frontier", "run_worker"]

_UNSUPPORTED = (("render", "--render"), ("sitemap", "--sitemap"))


def default_worker_id() -> str:
    """``<host>-<pid>-<random>``: unique across machines and restarts, safe in Redis keys."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(2)}"


def _overrides(settings: Settings) -> dict[tuple[str, int], str]:
    table: dict[tuple[str, int], str] = {}
    for entry in settings.resolve:
        host, port, address = parse_resolve_entry(entry)
        table[(host, port)] = address
    return table


@contextlib.asynccontextmanager
async def open_frontier(url: str) -> AsyncIterator[RedisFrontier]:
    """Connect to the frontier and check the server (ConfigError when it cannot be used)."""
    frontier = await RedisFrontier.connect(url)
    try:
        yield frontier
    finally:
        await frontier.aclose()


async def enqueue(
    settings: Settings,
    frontier_url: str,
    seed: str,
    options: CrawlOptions,
    *,
    timings: ScaleTimings | None = None,
    crawl_id: str | None = None,
    resolver: Resolver | None = None,
) -> EnqueuedCrawl:
    """Check ``seed`` as a local crawl would and queue a crawl of it for the workers."""
    for field, flag in _UNSUPPORTED:
        if getattr(options, field, False):  # options other features add to CrawlOptions
            raise UsageError(f"{flag} is not supported with --frontier (scale-out workers)")
    policy = AddressPolicy(settings.allow_private)
    overrides = _overrides(settings)
    clock = SystemClock()
    async with (
        open_frontier(frontier_url) as frontier,
        HttpFetcher(
            user_agent=settings.user_agent,
            policy=policy,
            resolver=resolver,
            resolve_overrides=overrides,
            clock=clock,
            limits=settings.limits,
        ) as fetcher,
    ):
        return await enqueue_crawl(
            frontier=frontier,
            fetcher=fetcher,
            seed=seed,
            options=options,
            limits=settings.limits,
            user_agent=settings.user_agent,
            url_check=lambda url: check_url(url, policy=policy),
            crawl_id=crawl_id or new_crawl_id(datetime.now(UTC)),
            timings=timings,
        )


async def run_worker(
    settings: Settings,
    frontier_url: str,
    *,
    crawl_id: str | None = None,
    exit_when_idle: bool = False,
    slots: int = 16,
    worker_id: str | None = None,
    resolver: Resolver | None = None,
    clock: Clock | None = None,
    handle_signals: bool = True,
) -> dict[str, CrawlTally]:
    """Run one worker until its crawl ends (or, without ``crawl_id``, until stopped).

    SIGTERM and SIGINT stop it gracefully: no new leases, pages in progress are acked.
    """
    clock = clock or SystemClock()
    policy = AddressPolicy(settings.allow_private)
    overrides = _overrides(settings)
    limits = settings.limits

    def make_fetcher(
        user_agent: str, deadline: float
    ) -> contextlib.AbstractAsyncContextManager[Fetcher]:
        return HttpFetcher(
            user_agent=user_agent,
            policy=policy,
            resolver=resolver,
            resolve_overrides=overrides,
            clock=clock,
            limits=limits,
            deadline=deadline,
            max_retries=0,  # the frontier retries, spaced by the origin's delay
        )

    conf = settings.convert
    pool = ProcessConverter(
        workers=conf.workers, page_timeout=conf.page_timeout_seconds, memory_mib=conf.memory_mib
    )
    async with open_frontier(frontier_url) as frontier, pool:
        store = open_store(settings.store)
        try:
            if isinstance(store, PostgresStore):
                await store.open()  # fail now, not on the first page
            worker = Worker(
                frontier=frontier,
                store=store,
                make_fetcher=make_fetcher,
                config=WorkerConfig(
                    worker_id=worker_id or default_worker_id(),
                    limits=limits,
                    url_check=lambda url: check_url(url, policy=policy),
                    slots=slots,
                ),
                clock=clock,
                converter=pool,
            )
            with _stop_on_signals(worker, enabled=handle_signals):
                await worker.run(crawl_id=crawl_id, exit_when_idle=exit_when_idle)
            return worker.tallies
        finally:
            await store.close()


@contextlib.contextmanager
def _stop_on_signals(worker: Worker, *, enabled: bool) -> Iterator[None]:
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    if enabled:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, worker.stop)
                installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def crawl_status(frontier_url: str, crawl_id: str) -> CrawlStatus:
    """Progress of one crawl, read from Redis; NotFoundError for an unknown id."""
    async with open_frontier(frontier_url) as frontier:
        meta = await frontier.meta(crawl_id)
        if not meta:
            raise NotFoundError(f"crawl {crawl_id!r}: no such crawl in {frontier.shown}")
        try:
            timeout = int(meta.get("hb_timeout_ms", "5000"))
        except ValueError as exc:
            raise ConfigError(f"crawl {crawl_id!r}: corrupt metadata in Redis") from exc
        return await frontier.status(crawl_id, heartbeat_timeout_ms=timeout)
