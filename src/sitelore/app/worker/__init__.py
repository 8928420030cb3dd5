"""Scale-out crawling: queue a crawl in the shared Redis frontier, and the worker that runs it.

``enqueue_crawl`` checks the seed like a local crawl and queues it; any number of
``Worker`` processes, on any machines, then run the one crawl loop and page pipeline
(``sitelore.crawl``) over leases of the Redis frontier (``_leases``: the Redis adapter of
the Frontier port) and ack. The local, single-process crawl stays the default.
"""

from __future__ import annotations

from sitelore.app.worker._enqueue import (
    EnqueuedCrawl,
    QueueRequest,
    ScaleTimings,
    enqueue_crawl,
    new_crawl_id,
)
from sitelore.app.worker._loop import CrawlTally, Worker, WorkerConfig
from sitelore.app.worker._meta import CrawlMeta
from sitelore.app.worker._robots import SharedRobots, rules_from_json, rules_to_json

__all__ = [
    "CrawlMeta",
    "CrawlTally",
    "EnqueuedCrawl",
    "QueueRequest",
    "ScaleTimings",
    "SharedRobots",
    "Worker",
    "WorkerConfig",
    "enqueue_crawl",
    "new_crawl_id",
    "rules_from_json",
    "rules_to_json",
]
