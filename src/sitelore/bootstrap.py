"""Build the real object graph from settings and own its lifetimes (the composition root).

This is the only module that names the concrete adapters (``HttpFetcher``,
``SQLiteStore`` through ``open_store``, the robots loader). The edges (CLI, REST, MCP)
build one :class:`Runtime` and call it; tests pass fakes or loopback resolvers in.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Self

from sitelore.clock import SystemClock
from sitelore.config import Settings
from sitelore.errors import ConfigError, UsageError
from sitelore.fetcher import HttpFetcher
from sitelore.guard import AddressPolicy, check_url, parse_resolve_entry
from sitelore.models import CrawlOptions, CrawlSummary
from sitelore.ports import Clock, Fetcher, Renderer, Resolver, Store
from sitelore.robots import allow_all_policy, create_robots_policy
from sitelore.robots_loader import make_robots_loader
from sitelore.spider import CrawlRun, Spider
from sitelore.store import open_store

__all__ = ["Runtime"]


class Runtime:
    """Settings plus the long-lived pieces (store, address policy) of one process.

    ::

        async with Runtime(settings) as runtime:
            summary = await runtime.crawl("https://docs.example.com/", CrawlOptions())

    Each crawl gets its own fetcher session and robots policy; the store lives as
    long as the runtime. A store passed in is not closed by the runtime.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        resolver: Resolver | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.policy = AddressPolicy(settings.allow_private)
        self._overrides = _resolve_overrides(settings.resolve)
        self._resolver = resolver
        self._store = store
        self._owns_store = store is None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the store if this runtime opened it."""
        if self._store is not None and self._owns_store:
            await self._store.close()
            self._store = None

    @property
    def store(self) -> Store:
        """The document store, opened (and migrated) on first use."""
        if self._store is None:
            self._store = open_store(self.settings.store)
        return self._store

    def check_url(self, url: str) -> str:
        """Refuse a URL before any I/O (bad form, credentials, refused literal address).

        Returns the normalised URL the fetcher will request.
        """
        return check_url(url, policy=self.policy).url

    @contextlib.asynccontextmanager
    async def open_crawl(self, seed: str, options: CrawlOptions) -> AsyncIterator[CrawlRun]:
        """Clamp ``options`` to the operator's caps and yield a crawl ready to iterate."""
        self.check_url(seed)
        applied, notes = options.clamp(self.settings.limits)
        limits = self.settings.limits
        deadline = self.clock.monotonic() + applied.deadline_seconds
        async with (
            HttpFetcher(
                user_agent=self.settings.user_agent,
                policy=self.policy,
                resolver=self._resolver,
                resolve_overrides=self._overrides,
                clock=self.clock,
                limits=limits,
                deadline=deadline,
            ) as fetcher,
            contextlib.AsyncExitStack() as stack,
        ):
            renderer = (
                await stack.enter_async_context(_renderer(fetcher, self.settings))
                if applied.render
                else None
            )
            robots = (
                create_robots_policy(
                    make_robots_loader(
                        fetcher,
                        max_bytes=limits.max_robots_bytes,
                        user_agent=self.settings.user_agent,
                    )
                )
                if applied.respect_robots
                else allow_all_policy()
            )
            spider = Spider(
                fetcher=fetcher,
                store=self.store,
                robots=robots,
                clock=self.clock,
                limits=limits,
                url_check=self.check_url,
                renderer=renderer,
            )
            run = spider.crawl(seed, applied, deadline=deadline)
            run.summary.clamped = notes
            async with run:
                yield run

    async def crawl(self, seed: str, options: CrawlOptions) -> CrawlSummary:
        """Crawl ``seed`` to the end and return the summary."""
        async with self.open_crawl(seed, options) as run:
            return await run.finish()


def _renderer(
    fetcher: Fetcher, settings: Settings
) -> contextlib.AbstractAsyncContextManager[Renderer]:
    """The Playwright renderer, or a UsageError saying how to get it."""
    try:
        from sitelore.render import PlaywrightRenderer
    except ImportError as exc:
        raise UsageError(
            "--render needs the render extra: pip install 'sitelore[render]' "
            "(and a system Chromium, e.g. apt-get install chromium)"
        ) from exc
    return PlaywrightRenderer(
        fetcher=fetcher,
        user_agent=settings.user_agent,
        max_bytes=settings.limits.max_page_bytes,
    )


def _resolve_overrides(entries: tuple[str, ...]) -> dict[tuple[str, int], str]:
    overrides: dict[tuple[str, int], str] = {}
    for entry in entries:
        try:
            host, port, address = parse_resolve_entry(entry)
        except (UsageError, ConfigError, ValueError) as exc:
            raise ConfigError(f"--resolve {entry!r}: {exc}") from exc
        overrides[(host, port)] = address
    return overrides
