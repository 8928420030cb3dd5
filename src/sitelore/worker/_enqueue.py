"""Start a scale-out crawl: check the seed as a local crawl would, then queue it in Redis.

The checks are the local crawl's (``spider.CrawlRun._check_seed_robots``): a seed the
guard refuses, or that robots.txt disallows (or whose robots.txt answers 5xx), is a
``UsageError`` before anything is queued. The robots.txt fetched here is stored with the
crawl, so no worker fetches it again, and it counts as the seed origin's first request.
It never fetches a page: the workers do.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable
from datetime import UTC, datetime

from sitelore.errors import RobotsRefusedError
from sitelore.frontier_redis import FrontierItem, NewCrawl, RedisFrontier, bucket_count, split_url
from sitelore.models import CrawlOptions, Limits
from sitelore.ports import Fetcher
from sitelore.robots import is_allowed, unreachable_reason
from sitelore.robots_loader import make_robots_loader
from sitelore.urls import normalize_url
from sitelore.worker._robots import rules_to_json

__all__ = ["EnqueuedCrawl", "ScaleTimings", "enqueue_crawl", "new_crawl_id"]

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

    def to_json(self) -> dict[str, object]:
        """What ``sitelore crawl --frontier ... --json`` prints."""
        return {
            "crawlId": self.crawl_id,
            "seed": self.seed,
            "createdAt": datetime.fromtimestamp(self.created_ms / 1000, UTC).isoformat(),
            "deadlineAt": datetime.fromtimestamp(self.deadline_ms / 1000, UTC).isoformat(),
            "applied": self.options.model_dump(mode="json", by_alias=True),
            "clamped": list(self.clamped),
        }


def new_crawl_id(now: datetime) -> str:
    """A sortable, unique crawl id: ``20260130T101500-3f9a1c``."""
    return f"{now.astimezone(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"


async def enqueue_crawl(
    *,
    frontier: RedisFrontier,
    fetcher: Fetcher | None,
    seed: str,
    options: CrawlOptions,
    limits: Limits,
    user_agent: str,
    url_check: Callable[[str], object],
    crawl_id: str,
    timings: ScaleTimings | None = None,
) -> EnqueuedCrawl:
    """Check ``seed`` and queue a crawl of it; ``fetcher`` loads robots.txt (None: not needed).

    Raises ``UsageError`` (InvalidURLError, BlockedURLError, RobotsRefusedError) for a
    seed a local crawl would refuse.
    """
    timings = timings or ScaleTimings()
    applied, notes = options.clamp(limits)
    url = normalize_url(seed)
    url_check(url)
    origin = split_url(url)[0]
    delay_ms = round(applied.delay * 1000)
    seed_delay_ms = delay_ms
    robots_json: str | None = None
    if applied.respect_robots:
        if fetcher is None:
            raise ValueError("a fetcher is needed to check robots.txt")
        loader = make_robots_loader(
            fetcher, max_bytes=limits.max_robots_bytes, user_agent=user_agent
        )
        rules = await loader(origin)
        robots_url = origin + "/robots.txt"
        if rules.unreachable:
            raise RobotsRefusedError(url, robots_url, unreachable_reason(rules))
        if not is_allowed(rules, url):
            raise RobotsRefusedError(url, robots_url, "the start URL is disallowed by robots.txt")
        robots_json = rules_to_json(rules)
        seed_delay_ms = max(delay_ms, rules.crawl_delay_ms or 0)
    hb_ms = max(100, round(timings.heartbeat_timeout * 1000))
    meta = {
        "version": "1",
        "seed": url,
        "options": applied.model_dump_json(by_alias=True),
        "clamped": "\n".join(notes),
        "user_agent": user_agent,
        "buckets": str(bucket_count(applied.max_pages)),
        "pages_left": str(applied.max_pages),
        "delay_ms": str(delay_ms),
        "lease_ttl_ms": str(hb_ms),
        "hb_timeout_ms": str(hb_ms),
        "max_attempts": str(max(1, timings.max_attempts)),
        "robots_ttl_ms": str(_ROBOTS_TTL_MS),
        "keep_ms": str(_KEEP_MS),
    }
    created, deadline = await frontier.create(
        NewCrawl(
            crawl_id=crawl_id,
            seed=FrontierItem(url, 0),
            meta=meta,
            deadline_seconds=applied.deadline_seconds,
            seed_delay_ms=seed_delay_ms,
            robots_json=robots_json,
            robots_ttl_ms=_ROBOTS_TTL_MS,
        )
    )
    return EnqueuedCrawl(
        crawl_id=crawl_id,
        seed=url,
        options=applied,
        clamped=notes,
        created_ms=created,
        deadline_ms=deadline,
    )
