"""Start a scale-out crawl: check the seed as a local crawl would, then queue it in Redis.

The checks are the local crawl's (``crawl.engine.CrawlRun._check_seed_robots``): a seed
the guard refuses, or that robots.txt disallows (or whose robots.txt answers 5xx), is a
``UsageError`` before anything is queued. robots.txt comes from the namespace's shared
rules when another crawl read it recently; else it is fetched here and shared, so no
worker fetches it again, and it counts as the seed origin's first request.
It never fetches a page: the workers do.
"""

from __future__ import annotations

import dataclasses
import functools
import secrets
from collections.abc import Callable
from datetime import UTC, datetime

from sitelore.adapters.frontier_redis import (
    FrontierItem,
    NewCrawl,
    RedisFrontier,
    Stat,
    bucket_count,
    split_url,
)
from sitelore.app.worker._leases import LinkFilter
from sitelore.app.worker._meta import CrawlMeta
from sitelore.app.worker._robots import rules_from_json, rules_to_json
from sitelore.core.models import SnapshotMode
from sitelore.core.options import CrawlOptions, Limits
from sitelore.core.ports import Clock, Fetcher
from sitelore.core.robots import (
    RobotsMemo,
    RobotsPolicy,
    create_robots_policy,
)
from sitelore.core.urls import Scope, normalize_url
from sitelore.crawl.memory import Origins
from sitelore.crawl.robots_loader import crawl_robots_loader
from sitelore.crawl.seeding import check_seed_rules, read_sitemaps
from sitelore.crawl.sitemap_loader import make_sitemap_loader

__all__ = ["EnqueuedCrawl", "QueueRequest", "ScaleTimings", "enqueue_crawl", "new_crawl_id"]

_ROBOTS_TTL_MS = 24 * 3600 * 1000
_KEEP_MS = 7 * 24 * 3600 * 1000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ScaleTimings:
    """How fast a dead worker's URLs come back, and how often a URL is tried."""

    heartbeat_timeout: float = 5.0  #: seconds of silence before a worker counts as dead
    max_attempts: int = 3  #: tries per URL (failures and reclaims) before giving up


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EnqueuedCrawl:
    """A crawl now waiting in Redis for workers."""

    crawl_id: str
    seed: str
    options: CrawlOptions
    clamped: tuple[str, ...]
    created_ms: int
    deadline_ms: int
    sitemap_urls: int = 0
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        """What ``sitelore crawl --frontier ... --json`` prints."""
        return {
            "crawlId": self.crawl_id,
            "seed": self.seed,
            "createdAt": datetime.fromtimestamp(self.created_ms / 1000, UTC).isoformat(),
            "deadlineAt": datetime.fromtimestamp(self.deadline_ms / 1000, UTC).isoformat(),
            "applied": self.options.model_dump(mode="json", by_alias=True),
            "clamped": list(self.clamped),
            "sitemapUrls": self.sitemap_urls,
            "warnings": list(self.warnings),
        }


def new_crawl_id(now: datetime) -> str:
    """A sortable, unique crawl id: ``20260130T101500-3f9a1c``."""
    return f"{now.astimezone(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class QueueRequest:
    """What to queue: the seed, the asked options, and how its pages are fetched."""

    seed: str
    options: CrawlOptions
    crawl_id: str
    timings: ScaleTimings = dataclasses.field(default_factory=ScaleTimings)
    #: ``capture`` into, or ``replay`` from, the archive directory ``archive``.
    snapshots: SnapshotMode = SnapshotMode.LIVE
    archive: str = ""
    #: ``update`` of a source: validators, 304s, removals, change records.
    incremental: bool = False


async def enqueue_crawl(
    request: QueueRequest,
    *,
    frontier: RedisFrontier,
    fetcher: Fetcher,
    limits: Limits,
    user_agent: str,
    url_check: Callable[[str], object],
    clock: Clock,
) -> EnqueuedCrawl:
    """Check the seed and queue a crawl of it; ``fetcher`` reads robots.txt and sitemaps.

    Raises ``UsageError`` (InvalidURLError, BlockedURLError, RobotsRefusedError) for a
    seed a local crawl would refuse. With ``options.sitemap`` the sitemaps are read
    here, before the crawl is created (so the origin's spacing counts from the last of
    them), and their URLs queued at depth 1.
    """
    applied, notes = request.options.clamp(limits)
    url = normalize_url(request.seed)
    url_check(url)
    origin = split_url(url)[0]
    delay_ms = 0 if request.snapshots is SnapshotMode.REPLAY else round(applied.delay * 1000)
    seed_delay_ms = delay_ms
    robots_json: str | None = None
    policy: RobotsPolicy | None = None
    if applied.respect_robots:
        loader = crawl_robots_loader(fetcher, limits, user_agent)
        shared = await frontier.robots(request.crawl_id, origin)
        rules = rules_from_json(shared) if shared is not None else await loader(origin)
        check_seed_rules(url, rules)
        robots_json = None if shared is not None else rules_to_json(rules)
        seed_delay_ms = max(delay_ms, rules.crawl_delay_ms or 0)
        memo = RobotsMemo(clock.monotonic)
        memo.put(origin, rules)
        policy = create_robots_policy(loader, memo)
    found: list[FrontierItem] = []  # the sitemaps' URLs, as depth-1 queue items
    stats: dict[str, int] = {}
    warnings: list[str] = []
    if applied.sitemap:
        listed, warnings = await read_sitemaps(
            url,
            loader=make_sitemap_loader(fetcher, max_bytes=limits.max_page_bytes),
            robots=policy,
            wait_turn=functools.partial(Origins().wait_turn, clock=clock, delay=applied.delay),
        )
        found = LinkFilter(applied, Scope.from_options(url, applied)).items(listed, 1, stats)
        if listed:
            stats[Stat.SITEMAP_URLS] = len(listed)
    hb_ms = max(100, round(request.timings.heartbeat_timeout * 1000))
    meta = CrawlMeta(
        seed=url,
        options=applied,
        clamped=notes,
        user_agent=user_agent,
        buckets=bucket_count(applied.max_pages),
        delay_ms=delay_ms,
        lease_ttl_ms=hb_ms,
        hb_timeout_ms=hb_ms,
        max_attempts=max(1, request.timings.max_attempts),
        robots_ttl_ms=_ROBOTS_TTL_MS,
        keep_ms=_KEEP_MS,
        snapshots=request.snapshots,
        archive=request.archive,
        incremental=request.incremental,
    )
    created, deadline = await frontier.create(
        NewCrawl(
            crawl_id=request.crawl_id,
            seed=FrontierItem(url, 0),
            meta=meta.fields(),
            deadline_seconds=applied.deadline_seconds,
            seed_delay_ms=seed_delay_ms,
            robots_json=robots_json,
            robots_ttl_ms=_ROBOTS_TTL_MS,
        )
    )
    if found or stats:
        await frontier.add(request.crawl_id, found, stats, meta.buckets)
    return EnqueuedCrawl(
        crawl_id=request.crawl_id,
        seed=url,
        options=applied,
        clamped=notes,
        created_ms=created,
        deadline_ms=deadline,
        sitemap_urls=len(found),
        warnings=tuple(warnings),
    )
