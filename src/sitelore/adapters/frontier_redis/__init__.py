"""The shared crawl frontier on Redis: atomic Lua scripts plus a small async client.

Many workers on many machines take URLs from it. It keeps, per crawl: a ready queue per
origin, the origins ordered by the time they may next be fetched (Redis's clock), at
most one request in flight per origin, leases with heartbeats (a dead worker's URLs
come back within seconds), exact dedup in compact int64 fingerprint sets, robots.txt
rules cached per origin, and the page budget and deadline. It never fetches, parses or
stores pages: ``sitelore.app.worker`` does, through this client.
"""

from __future__ import annotations

from sitelore.adapters.frontier_redis._client import (
    Completion,
    CrawlStatus,
    Finished,
    Lease,
    NewCrawl,
    Outcome,
    RedisFrontier,
    Stat,
    Wait,
)
from sitelore.adapters.frontier_redis._codec import (
    FrontierItem,
    bucket_count,
    decode_item,
    fingerprint,
    split_url,
)

__all__ = [
    "Completion",
    "CrawlStatus",
    "Finished",
    "FrontierItem",
    "Lease",
    "NewCrawl",
    "Outcome",
    "RedisFrontier",
    "Stat",
    "Wait",
    "bucket_count",
    "decode_item",
    "fingerprint",
    "split_url",
]
