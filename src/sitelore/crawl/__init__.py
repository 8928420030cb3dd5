"""The crawl engine: one page pipeline and one crawl loop over a Frontier port.

* ``port``: the Frontier port, leases and the typed result of one page.
* ``page``: the page pipeline (guard, robots, fetch, convert, store, links).
* ``loop``: the slots that lease, process and complete.
* ``memory``: the in-process frontier adapter (BFS, per-origin locks and spacing).
* ``engine``: a local crawl (``Spider``/``CrawlRun``): seed checks, sitemaps, summary.

The Redis adapter lives in ``sitelore.app.worker`` (it needs the Redis client).
"""

from __future__ import annotations

from sitelore.crawl.engine import CrawlRun, Spider
from sitelore.crawl.memory import Origins

__all__ = ["CrawlRun", "Origins", "Spider"]
