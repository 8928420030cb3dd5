"""Build the real object graph from settings and own its lifetimes (the composition root).

This is the only module that names the concrete adapters (``HttpFetcher``,
``SQLiteStore`` through ``open_store``, the robots loader, the snapshot modes). The
edges (CLI, REST, MCP) build one :class:`Runtime` and call it; tests pass fakes or
loopback resolvers in.

The crawl stack (aiohttp, the spider, the converter, WARC) is imported by the methods
that use it, not by this module: commands that only read the store (``search``,
``list``, ``show``) start without loading it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO, Unpack, runtime_checkable

from sitelore.adapters.clock import SystemClock
from sitelore.adapters.convert_pool import ProcessConverter
from sitelore.adapters.store import open_store
from sitelore.core.config import Settings
from sitelore.core.errors import ArchiveError, ConfigError, UsageError
from sitelore.core.guard import AddressPolicy, check_url, parse_resolve_entry, resolve_problem
from sitelore.core.linkstyle import LinkStyle
from sitelore.core.models import CaptureRef, CrawlSummary, Snapshot, SnapshotMode
from sitelore.core.options import CrawlOptions, clamped_options
from sitelore.core.ports import (
    CaptureLinks,
    Clock,
    Converter,
    ExchangeObserver,
    Fetcher,
    Renderer,
    Resolver,
    Snapshots,
    Store,
)

if TYPE_CHECKING:
    from sitelore.adapters.fetcher import FetchOptions, HttpFetcher
    from sitelore.adapters.snapshots import WarcExport
    from sitelore.app.rebuild import Convert, ReconvertReport
    from sitelore.core.robots import RobotsMemo
    from sitelore.crawl import CrawlRun, Origins

__all__ = ["Runtime", "resolve_problem"]


class Runtime(contextlib.AbstractAsyncContextManager["Runtime"]):
    """Settings plus the long-lived pieces (store, address policy) of one process.

    ::

        async with Runtime(settings) as runtime:
            summary = await runtime.crawl("https://docs.example.com/", CrawlOptions())

    Each crawl gets its own fetcher session and robots policy; the store and the
    conversion workers (started on first use, ``settings.convert``) live as long as
    the runtime. A store or converter passed in is not closed by the runtime.
    ``create_store=False`` (commands that only read) never creates a store: a
    location without one raises ``NoStoreError`` on first use.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        resolver: Resolver | None = None,
        clock: Clock | None = None,
        create_store: bool = True,
        converter: Converter | None = None,
    ) -> None:
        self.settings = settings
        self._create_store = create_store
        self.clock: Clock = clock or SystemClock()
        self.policy = AddressPolicy(settings.allow_private)
        self._overrides = _resolve_overrides(settings.resolve)
        self._resolver = resolver
        self._store = store
        self._owns_store = store is None
        self._converter = converter
        self._pool: ProcessConverter | None = None
        # Per-origin politeness and robots.txt, shared by every live crawl of the process.
        self._origins: Origins | None = None
        self._robots_memo: RobotsMemo | None = None

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the conversion workers; close the store if this runtime opened it."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.aclose()
        if self._store is not None and self._owns_store:
            await self._store.close()
            self._store = None

    @property
    def store(self) -> Store:
        """The document store, opened (and migrated) on first use."""
        if self._store is None:
            self._store = open_store(self.settings.store, create=self._create_store)
        return self._store

    @property
    def converter(self) -> Converter:
        """The converter crawls use: the worker pool, unless one was passed in."""
        if self._converter is not None:
            return self._converter
        if self._pool is None:
            conf = self.settings.convert
            self._pool = ProcessConverter(
                workers=conf.workers,
                page_timeout=conf.page_timeout_seconds,
                memory_mib=conf.memory_mib,
            )
        return self._pool

    async def checked_store(self) -> Store:
        """The store, checked before a crawl fetches anything.

        An unusable location or an unreachable database fails here, as itself
        (exit 78), not as the first page's upsert inside the crawl's task group. A new
        SQLite file is still only created by the first write.
        """
        store = self.store
        if isinstance(store, _Connects):
            await store.open()
        return store

    def check_url(self, url: str) -> str:
        """Refuse a URL before any I/O (bad form, credentials, refused literal address).

        Returns the normalised URL the fetcher will request.
        """
        return check_url(url, policy=self.policy).url

    def snapshots(
        self, *, capture: str | Path | None = None, replay: str | Path | None = None
    ) -> Snapshots:
        """The snapshot mode for a crawl: capture into a directory, replay one, or live.

        Replay applies this runtime's address policy and caps to replayed redirects,
        as the live crawl did.
        """
        from sitelore.adapters.snapshots import CaptureSnapshots, LiveSnapshots, ReplaySnapshots

        if capture is not None and replay is not None:
            raise UsageError("--capture and --replay cannot be used together")
        if capture is not None:
            return CaptureSnapshots(
                Path(capture),
                clock=self.clock,
                info={"http-header-user-agent": self.settings.user_agent},
            )
        if replay is not None:
            return ReplaySnapshots(Path(replay), policy=self.policy, limits=self.settings.limits)
        return LiveSnapshots()

    def http_fetcher(
        self,
        *,
        deadline: float | None = None,
        observer: ExchangeObserver | None = None,
        user_agent: str | None = None,
    ) -> HttpFetcher:
        """The one place an ``HttpFetcher`` is built: this runtime's guard, resolver, caps.

        It makes one attempt per request: crawls retry through their frontier
        (spaced by the origin's delay).
        """
        from sitelore.adapters.fetcher import HttpFetcher

        return HttpFetcher(
            user_agent=user_agent or self.settings.user_agent,
            policy=self.policy,
            resolver=self._resolver,
            resolve_overrides=self._overrides,
            clock=self.clock,
            limits=self.settings.limits,
            deadline=deadline,
            observer=observer,
        )

    @contextlib.asynccontextmanager
    async def open_crawl(
        self,
        seed: str,
        options: CrawlOptions,
        *,
        incremental: bool = False,
        snapshots: Snapshots | None = None,
        seed_id: str | None = None,
    ) -> AsyncIterator[CrawlRun]:
        """Clamp ``options`` to the operator's caps and yield a crawl ready to iterate.

        ``incremental`` (``sitelore update``): send the stored validators, keep
        documents on ``304`` and flag those whose URL now answers 404/410 as removed.
        ``snapshots`` picks live (default), capture or replay (:meth:`snapshots`);
        ``seed_id`` names the crawl's captures (default: the normalised seed URL). An
        archive that cannot be opened ends the crawl as one ``invalid-config`` page
        outcome instead of raising.
        """
        from sitelore.adapters.snapshots import LiveSnapshots
        from sitelore.core.robots import (
            RobotsMemo,
            allow_all_policy,
            create_robots_policy,
            product_token,
        )
        from sitelore.core.urls import normalize_url
        from sitelore.crawl import Origins, Spider
        from sitelore.crawl.robots_loader import crawl_robots_loader
        from sitelore.crawl.sitemap_loader import make_sitemap_loader

        self.check_url(seed)
        store = await self.checked_store()
        converter = self.converter
        if isinstance(converter, ProcessConverter):
            await converter.warm()  # worker start-up is not crawl time
        applied, _ = options.clamp(self.settings.limits)
        limits = self.settings.limits
        deadline = self.clock.monotonic() + applied.deadline_seconds
        mode = snapshots or LiveSnapshots()
        if self._origins is None:
            self._origins = Origins()
            self._robots_memo = RobotsMemo(self.clock.monotonic)
        # A capture or a replay keeps its own robots.txt: the archive must hold it.
        memo = self._robots_memo if mode.mode is SnapshotMode.LIVE else None

        def live(observer: ExchangeObserver | None) -> HttpFetcher:
            return self.http_fetcher(deadline=deadline, observer=observer)

        async with contextlib.AsyncExitStack() as stack:
            refusal: ArchiveError | None = None
            try:
                fetcher: Fetcher = await stack.enter_async_context(
                    mode.fetch_path(seed_id if seed_id is not None else normalize_url(seed), live)
                )
            except ArchiveError as exc:
                fetcher, refusal = _NoArchive(exc), exc
            renderer = (
                await stack.enter_async_context(_renderer(fetcher, self.settings))
                if applied.render and refusal is None
                else None
            )
            robots = (
                create_robots_policy(
                    crawl_robots_loader(fetcher, limits, self.settings.user_agent), memo
                )
                if applied.respect_robots
                else allow_all_policy()
            )
            spider = Spider(
                fetcher=fetcher,
                store=store,
                robots=robots,
                clock=self.clock,
                limits=limits,
                url_check=self.check_url,
                renderer=renderer,
                convert=converter,
                sitemaps=make_sitemap_loader(fetcher, max_bytes=limits.max_page_bytes),
                incremental=incremental,
                robots_agent=product_token(self.settings.user_agent),
                paced=mode.mode is not SnapshotMode.REPLAY,
                origins=self._origins,
            )
            run = spider.crawl(seed, applied, deadline=deadline)
            run.summary.clamped = tuple(clamped_options(options, applied))
            if refusal is not None:
                run.refuse(refusal)
            async with run:
                yield run

    async def crawl(
        self,
        seed: str,
        options: CrawlOptions,
        *,
        snapshots: Snapshots | None = None,
        seed_id: str | None = None,
        keep_pages: bool = True,
    ) -> CrawlSummary:
        """Crawl ``seed`` to the end and return the summary.

        ``keep_pages=False`` keeps counts only (flat memory on very long crawls).
        """
        async with self.open_crawl(seed, options, snapshots=snapshots, seed_id=seed_id) as run:
            run.summary.keep_pages = keep_pages
            return await run.finish()

    async def capture_of(self, id_or_url: str) -> CaptureRef | None:
        """The WARC record a stored document was built from (None: none, or not tracked)."""
        store = self.store
        return await store.capture_of(id_or_url) if isinstance(store, CaptureLinks) else None

    async def reconvert(
        self, *, archive: str | Path | None = None, convert: Convert | None = None
    ) -> ReconvertReport:
        """Rebuild every captured document from its WARC record; no network.

        ``archive`` is where the WARC files are now, if they were moved.
        """
        from sitelore.adapters.snapshots import WarcReader
        from sitelore.app.rebuild import reconvert

        reader = WarcReader(Path(archive) if archive is not None else None)
        return await reconvert(self.store, reader, convert=convert)

    async def export_jsonl(self, out: TextIO, *, links: LinkStyle | None = None) -> int:
        """Write every document, with its provenance, as JSON lines to ``out``.

        ``links``: the style of the Markdown's links (default: the ``links`` setting).
        """
        from sitelore.app.rebuild import export_jsonl

        return await export_jsonl(self.store, out, style=links or self.settings.links)

    async def export_markdown(self, folder: str | Path, *, links: LinkStyle | None = None) -> int:
        """Write every document as a Markdown file with front matter under ``folder``."""
        from sitelore.app.export_markdown import export_markdown

        return await export_markdown(self.store, Path(folder), style=links or self.settings.links)

    async def export_warc(
        self, path: str | Path, *, archive: str | Path | None = None
    ) -> WarcExport:
        """Write every document's captured response and Markdown to one WARC file."""
        from sitelore.adapters.snapshots import export_warc

        return await export_warc(
            self.store, Path(path), archive=Path(archive) if archive is not None else None
        )


@runtime_checkable
class _Connects(Protocol):
    """A store that connects on demand and can be told to now (PostgreSQL)."""

    async def open(self) -> None:
        """Connect (and migrate); raise ConfigError when the database is unreachable."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class _NoArchive:
    """The fetcher of a crawl whose archive could not be opened: every fetch fails."""

    error: ArchiveError

    async def fetch(self, url: str, **options: Unpack[FetchOptions]) -> Snapshot:
        """Raise the archive's error (the crawl is refused before any fetch anyway)."""
        raise self.error


def _renderer(
    fetcher: Fetcher, settings: Settings
) -> contextlib.AbstractAsyncContextManager[Renderer]:
    """The Playwright renderer, or a UsageError saying how to get it."""
    try:
        from sitelore.adapters.render import PlaywrightRenderer
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
    """The settings' ``resolve`` entries as a map; a malformed one is a ConfigError.

    The CLI has already refused a bad ``--resolve`` flag (exit 2) and a bad entry of
    the settings file (naming it); this is the backstop for settings built in code.
    """
    overrides: dict[tuple[str, int], str] = {}
    for entry in entries:
        try:
            host, port, address = parse_resolve_entry(entry)
        except UsageError as exc:  # its message names the entry already
            raise ConfigError(f"settings: resolve {resolve_problem(exc)}") from exc
        overrides[(host, port)] = address
    return overrides
