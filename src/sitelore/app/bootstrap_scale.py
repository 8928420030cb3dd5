"""Build the scale-out object graph: the Redis frontier, the store, guarded fetchers, a worker.

The composition root of ``sitelore crawl --frontier``, ``sitelore worker`` and
``sitelore crawl-status`` (the local crawl's is ``bootstrap.Runtime``). It names the
concrete adapters and owns their lifetimes; the worker and the enqueue step
(``sitelore.app.worker``) only see ports and the frontier client. Start-up fails fast, with
one line naming the (password-free) URL, when Redis or the store cannot be used.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import secrets
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

from sitelore.adapters.frontier_redis import CrawlStatus, RedisFrontier
from sitelore.app.bootstrap import Runtime
from sitelore.app.worker import (
    CrawlMeta,
    CrawlTally,
    EnqueuedCrawl,
    QueueRequest,
    ScaleTimings,
    Worker,
    WorkerConfig,
    enqueue_crawl,
    new_crawl_id,
)
from sitelore.core.config import Settings
from sitelore.core.errors import ConfigError, NotFoundError, UsageError
from sitelore.core.models import SnapshotMode
from sitelore.core.options import CrawlOptions
from sitelore.core.ports import Clock, Fetcher, Resolver

__all__ = [
    "ScaledCrawl",
    "crawl_status",
    "default_worker_id",
    "enqueue",
    "open_frontier",
    "run_and_wait",
    "run_worker",
]


def default_worker_id() -> str:
    """``<host>-<pid>-<random>``: unique across machines and restarts, safe in Redis keys."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(2)}"


@contextlib.asynccontextmanager
async def open_frontier(url: str) -> AsyncIterator[RedisFrontier]:
    """Connect to the frontier and check the server (ConfigError when it cannot be used)."""
    async with contextlib.aclosing(await RedisFrontier.connect(url)) as frontier:
        yield frontier


async def enqueue(
    settings: Settings,
    frontier_url: str,
    seed: str,
    options: CrawlOptions,
    *,
    timings: ScaleTimings | None = None,
    crawl_id: str | None = None,
    resolver: Resolver | None = None,
    capture: str | Path | None = None,
    replay: str | Path | None = None,
    incremental: bool = False,
) -> EnqueuedCrawl:
    """Check ``seed`` as a local crawl would and queue a crawl of it for the workers.

    ``capture``/``replay``: every worker writes its own WARC file into, or answers
    from, that archive directory (it must be reachable at the same path by every
    worker). ``--render`` stays local: a browser's sub-requests would need the
    origin's lease from Redis for each of them.
    """
    if options.render:
        raise UsageError("--render is not supported with --frontier (scale-out workers)")
    if capture is not None and replay is not None:
        raise UsageError("--capture and --replay cannot be used together")
    mode, archive = SnapshotMode.LIVE, ""
    if capture is not None or replay is not None:
        mode = SnapshotMode.CAPTURE if capture is not None else SnapshotMode.REPLAY
        archive = _absolute(capture or replay or "")
    async with (
        Runtime(settings, resolver=resolver, create_store=False) as runtime,
        open_frontier(frontier_url) as frontier,
        runtime.http_fetcher() as fetcher,
    ):
        request = QueueRequest(
            seed=seed,
            options=options,
            crawl_id=crawl_id or new_crawl_id(datetime.now(UTC)),
            timings=timings or ScaleTimings(),
            snapshots=mode,
            archive=archive,
            incremental=incremental,
        )
        return await enqueue_crawl(
            request,
            frontier=frontier,
            fetcher=fetcher,
            limits=settings.limits,
            user_agent=settings.user_agent,
            url_check=runtime.check_url,
            clock=runtime.clock,
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

    async with (
        Runtime(settings, resolver=resolver, clock=clock) as runtime,
        open_frontier(frontier_url) as frontier,
    ):

        def fetch_path(
            meta: CrawlMeta, deadline: float
        ) -> contextlib.AbstractAsyncContextManager[Fetcher]:
            """The crawl's fetch path: live, or capturing into / replaying its archive."""
            archive = meta.archive or None
            mode = runtime.snapshots(
                capture=archive if meta.snapshots is SnapshotMode.CAPTURE else None,
                replay=archive if meta.snapshots is SnapshotMode.REPLAY else None,
            )
            return mode.fetch_path(
                meta.seed,
                lambda observer: runtime.http_fetcher(
                    deadline=deadline, observer=observer, user_agent=meta.user_agent
                ),
            )

        worker = Worker(
            frontier=frontier,
            store=await runtime.checked_store(),  # fail now, not on the first page
            fetch_path=fetch_path,
            config=WorkerConfig(
                worker_id=worker_id or default_worker_id(),
                limits=settings.limits,
                url_check=runtime.check_url,
                slots=slots,
            ),
            clock=runtime.clock,
            converter=runtime.converter,
        )
        with _stop_on_signals(worker, enabled=handle_signals):
            await worker.run(crawl_id=crawl_id, exit_when_idle=exit_when_idle)
        return worker.tallies


@dataclasses.dataclass(frozen=True, slots=True)
class ScaledCrawl:
    """A scale-out crawl run to its end: its progress record and its pages' changes."""

    status: CrawlStatus
    changes: list[tuple[str, str]]


async def run_and_wait(
    settings: Settings,
    frontier_url: str,
    seed: str,
    options: CrawlOptions,
    *,
    incremental: bool = False,
    resolver: Resolver | None = None,
) -> ScaledCrawl:
    """Queue a crawl, work on it here (other workers may join) until it ends, and read it.

    For ``sitelore update --frontier``: the report needs the whole crawl. Raises
    ``UsageError`` for a seed a local crawl would refuse.
    """
    queued = await enqueue(
        settings, frontier_url, seed, options, incremental=incremental, resolver=resolver
    )
    await run_worker(
        settings, frontier_url, crawl_id=queued.crawl_id, resolver=resolver, handle_signals=False
    )
    async with open_frontier(frontier_url) as frontier:
        status = await frontier.status(queued.crawl_id)
        changes = await frontier.changes(queued.crawl_id)
    return ScaledCrawl(status, changes)


def _absolute(path: str | Path) -> str:
    """An archive directory as every worker must find it (no I/O: a path computation)."""
    return os.path.abspath(os.path.expanduser(path))


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
