"""Scale-out crawling: queue a crawl in the shared Redis frontier, and the worker that runs it.

``enqueue_crawl`` checks the seed like a local crawl and queues it; any number of
``Worker`` processes, on any machines, then lease URLs, fetch them through the guarded
fetcher, store documents through ``ports.Store`` and ack. The local, single-process
crawl (``sitelore.spider``) stays the default; this package never replaces it.
"""

from __future__ import annotations

from sitelore.worker._enqueue import EnqueuedCrawl, ScaleTimings, enqueue_crawl, new_crawl_id
from sitelore.worker._loop import CrawlTally, FetcherFactory, Worker, WorkerConfig
from sitelore.worker._robots import SharedRobots, rules_from_json, rules_to_json

__all__ = [
    "CrawlTally",
    "EnqueuedCrawl",
    "FetcherFactory",
    "ScaleTimings",
    "SharedRobots",
    "Worker",
    "WorkerConfig",
    "enqueue_crawl",
    "new_crawl_id",
    "rules_from_json",
    "rules_to_json",
]
