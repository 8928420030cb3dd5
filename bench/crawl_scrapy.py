"""The peer: a minimal Scrapy CrawlSpider obeying robots.txt, optionally with markdownify + SQLite.

Settings are the ones a user writes for "crawl this site as fast as politeness allows":
``ROBOTSTXT_OBEY``, ``DOWNLOAD_DELAY = 0``, ``CONCURRENT_REQUESTS`` and
``CONCURRENT_REQUESTS_PER_DOMAIN`` = the concurrency, ``DEPTH_LIMIT`` and BFS order (FIFO
queues, ``DEPTH_PRIORITY = 1``). ``--markdownify`` converts every page with markdownify
and inserts it into SQLite with FTS5 (commit per page), like sitelore's store::

    python bench/crawl_scrapy.py http://127.0.0.1:PORT/ --pages 1000 --concurrency 16
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchlib import CrawlClock, emit_result
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

__all__ = ["main"]

_SCHEMA = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "CREATE TABLE docs (pk INTEGER PRIMARY KEY, url TEXT UNIQUE, title TEXT, markdown TEXT)",
    "CREATE VIRTUAL TABLE docs_fts USING fts5(title, markdown, content='docs',"
    " content_rowid='pk', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN INSERT INTO docs_fts"
    " (rowid, title, markdown) VALUES (new.pk, new.title, new.markdown); END",
)


class DocsSpider(CrawlSpider):
    """Follow every in-site link; record each page that answered 200."""

    name = "docs"
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)

    def __init__(self, seed: str, ok: list[str], db: sqlite3.Connection | None, **kw: Any) -> None:
        self.start_urls = [seed]
        self.allowed_domains = [urlsplit(seed).hostname or ""]
        super().__init__(**kw)
        self.ok = ok
        self.db = db
        if db is not None:
            from markdownify import markdownify

            self.markdownify = markdownify

    def parse_start_url(self, response: Response, **kwargs: Any) -> Iterator[dict[str, Any]]:
        return self.parse_item(response)

    def parse_item(self, response: Response) -> Iterator[dict[str, Any]]:
        self.ok.append(response.url)
        if self.db is not None:
            title = response.css("title::text").get() or ""
            markdown = self.markdownify(response.text)
            self.db.execute(
                "INSERT OR IGNORE INTO docs (url, title, markdown) VALUES (?, ?, ?)",
                (response.url, title, markdown),
            )
            self.db.commit()
        return iter(())


def main(argv: list[str] | None = None) -> int:
    """Crawl, then print the result line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("seed")
    parser.add_argument("--pages", type=int, required=True, help="pages the site has")
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--markdownify", action="store_true")
    parser.add_argument("--db-dir", default=None)
    parser.add_argument("--urls-out", default=None)
    args = parser.parse_args(argv)
    settings = {
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
        "DEPTH_LIMIT": args.depth,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "USER_AGENT": "scrapy-bench/1.0",
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
    }
    ok: list[str] = []
    with tempfile.TemporaryDirectory(dir=args.db_dir) as tmp:
        db = None
        if args.markdownify:
            db = sqlite3.connect(Path(tmp) / "scrapy.db")
            for statement in _SCHEMA:
                db.execute(statement)
            db.commit()
        clock = CrawlClock()
        process = CrawlerProcess(settings)
        crawler = process.create_crawler(DocsSpider)
        _ = process.crawl(crawler, seed=args.seed, ok=ok, db=db)
        process.start()
        if db is not None:
            db.close()
        stats = crawler.stats.get_stats()
        emit_result(
            crawler="scrapy+markdownify" if args.markdownify else "scrapy",
            ok_urls=ok,
            responses=int(stats.get("downloader/response_count", 0)),
            clock=clock,
            urls_out=args.urls_out,
            extra={
                "callbacks": len(ok),
                "statuses": {
                    key.rsplit("/", 1)[1]: value
                    for key, value in stats.items()
                    if key.startswith("downloader/response_status_count/")
                },
                "dupefilter_filtered": stats.get("dupefilter/filtered", 0),
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
