"""Component figures, each beside one alternative library, on pages of the bench site.

* link extraction: sitelore (selectolax + ``resolve_links``) vs Scrapy's ``LinkExtractor``
* HTML to Markdown: sitelore's ``to_document`` (content selection, clean-up, links,
  html-to-markdown) vs markdownify on the whole page (html-to-markdown alone for scale)
* store: sitelore's ``SQLiteStore`` (upsert, search) vs bare ``sqlite3`` with the same
  FTS5 index (no ids, hashes or metadata)
* frontier memory per queued URL vs a Scrapy ``Request`` per URL

Single thread, best of 3 rounds; wall time (these are CPU-bound)::

    python bench/components.py --pages 200
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchlib import format_table
from docsite import DocSite, page_path
from html_to_markdown import convert
from markdownify import markdownify
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from selectolax.lexbor import LexborHTMLParser

from sitelore.adapters.store import SQLiteStore
from sitelore.core.convert import to_document
from sitelore.core.links import resolve_links
from sitelore.core.models import Document, FetchMeta
from sitelore.core.options import CrawlOptions
from sitelore.core.urls import Scope
from sitelore.crawl.frontier import Frontier

__all__ = ["main"]

ORIGIN = "http://127.0.0.1:8000"
HTML = "text/html; charset=utf-8"


def _best(fn: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def _row(name: str, seconds: float, count: int, size: int, base: float | None) -> tuple[str, ...]:
    per = seconds / count
    return (
        name,
        f"{1 / per:,.0f}",
        f"{size / seconds / 1e6:.1f}" if size else "-",
        f"{1000 * per:.3f}",
        f"{seconds / base:.2f}x" if base else "1.00x",
    )


#: The last column: how many times as fast sitelore is as the row (its time ÷ sitelore's).
_HEADERS = ["", "per s", "MB/s in", "ms each", "sitelore speed-up"]


def links_table(pages: Sequence[tuple[str, bytes]]) -> str:
    size = sum(len(body) for _, body in pages)

    def ours() -> int:
        total = 0
        for url, body in pages:
            tree = LexborHTMLParser(body.decode())
            hrefs = (node.attributes.get("href") or "" for node in tree.css("a[href], area[href]"))
            total += len(resolve_links(hrefs, url))
        return total

    extractor = LinkExtractor()

    def scrapy_links() -> int:
        total = 0
        for url, body in pages:
            response = HtmlResponse(url, body=body, encoding="utf-8")
            total += len(extractor.extract_links(response))
        return total

    mine = _best(ours)
    theirs = _best(scrapy_links)
    print(
        f"links per page: sitelore {ours() / len(pages):.0f} (all http(s), deduplicated), "
        f"Scrapy {scrapy_links() / len(pages):.0f} (same host, deny-listed extensions dropped)"
    )
    return format_table(
        ["link extraction", *_HEADERS[1:]],
        [
            _row("sitelore (selectolax + resolve_links)", mine, len(pages), size, None),
            _row("Scrapy LinkExtractor (lxml)", theirs, len(pages), size, mine),
        ],
    )


def markdown_table(pages: Sequence[tuple[str, bytes]]) -> str:
    size = sum(len(body) for _, body in pages)
    texts = [body.decode() for _, body in pages]
    mine = _best(lambda: [to_document(body, HTML, url) for url, body in pages])
    bare = _best(lambda: [convert(text) for text in texts])
    theirs = _best(lambda: [markdownify(text) for text in texts], rounds=1)
    return format_table(
        ["HTML to Markdown", *_HEADERS[1:]],
        [
            _row("sitelore to_document (select + clean + links + convert)", mine, len(pages),
                 size, None),
            _row("markdownify (whole page)", theirs, len(pages), size, mine),
            _row("html-to-markdown alone (whole page, no selection)", bare, len(pages), size,
                 mine),
        ],
    )  # fmt: skip


_BARE_SCHEMA = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "CREATE TABLE docs (pk INTEGER PRIMARY KEY, url TEXT UNIQUE, title TEXT, markdown TEXT)",
    "CREATE VIRTUAL TABLE docs_fts USING fts5(title, markdown, content='docs',"
    " content_rowid='pk', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN INSERT INTO docs_fts"
    " (rowid, title, markdown) VALUES (new.pk, new.title, new.markdown); END",
)
_BARE_SEARCH = (
    "SELECT d.url, d.title, snippet(docs_fts, -1, '**', '**', '…', 16) FROM docs_fts"
    " JOIN docs AS d ON d.pk = docs_fts.rowid WHERE docs_fts MATCH ? ORDER BY rank LIMIT 10"
)
_QUERIES = (
    "cache timeout",
    "request handler",
    "schema migration",
    "deploy",
    "token session",
    "plugin hook",
    "worker queue",
    "certificate",
    "stream buffer",
    "render template",
)


def store_table(docs: Sequence[Document], queries: int) -> str:
    meta = FetchMeta(status=200, content_type="text/html", fetched_at=datetime.now(UTC))
    phrases = [_QUERIES[k % len(_QUERIES)] for k in range(queries)]
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "sitelore.db")

        async def ours_insert() -> None:
            for doc in docs:
                await store.upsert(doc, meta)

        async def ours_search() -> int:
            return sum([len(await store.search(q, limit=10)) for q in phrases])

        started = time.perf_counter()
        asyncio.run(ours_insert())
        mine_insert = time.perf_counter() - started
        mine_search = _best(lambda: asyncio.run(ours_search()))
        asyncio.run(store.close())

        db = sqlite3.connect(Path(tmp) / "bare.db")
        for statement in _BARE_SCHEMA:
            db.execute(statement)
        started = time.perf_counter()
        for doc in docs:
            db.execute(
                "INSERT INTO docs (url, title, markdown) VALUES (?, ?, ?)",
                (doc.url, doc.title, doc.markdown),
            )
            db.commit()
        bare_insert = time.perf_counter() - started

        def bare_search() -> int:
            total = 0
            for q in phrases:
                match = " ".join(f'"{word}"' for word in q.split())
                total += len(db.execute(_BARE_SEARCH, (match,)).fetchall())
            return total

        bare = _best(bare_search)
        db.close()
    size = sum(len(doc.markdown) for doc in docs)
    return format_table(
        ["store (SQLite + FTS5, commit per document)", *_HEADERS[1:]],
        [
            _row("sitelore SQLiteStore.upsert (new)", mine_insert, len(docs), size, None),
            _row("bare sqlite3 INSERT", bare_insert, len(docs), size, mine_insert),
            _row("sitelore SQLiteStore.search (limit 10)", mine_search, queries, 0, None),
            _row("bare sqlite3 MATCH ... ORDER BY rank", bare, queries, 0, mine_search),
        ],
    )


def frontier_table(count: int) -> str:
    urls = [f"{ORIGIN}{page_path(i)}" for i in range(1, count + 1)]
    options = CrawlOptions(max_pages=10 * count, max_depth=10)
    seed = ORIGIN + "/"
    results: list[tuple[str, ...]] = []

    def measure(name: str, build: Callable[[list[str]], Any]) -> None:
        tracemalloc.start()
        fresh = [url.encode().decode() for url in urls]  # new string objects, counted
        keep = build(fresh)
        del fresh
        current, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        results.append((name, f"{count:,}", f"{current / count:.0f}"))
        del keep

    def sitelore_frontier(fresh: list[str]) -> Frontier:
        frontier = Frontier(seed, options, Scope.from_options(seed, options))
        frontier.offer_links(fresh, 1)
        assert frontier.unfetched == count + 1
        return frontier

    measure("sitelore Frontier (queued, string included)", sitelore_frontier)
    measure("just the URL strings", list)
    measure("Scrapy Request objects (no scheduler, no dupefilter)",
            lambda fresh: [Request(url) for url in fresh])  # fmt: skip
    return format_table(["memory per queued URL", "URLs", "bytes each"], results)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the component tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=200, help="sample pages of the 10k site")
    parser.add_argument("--docs", type=int, default=1000, help="documents for the store")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--urls", type=int, default=100_000, help="URLs for the frontier")
    args = parser.parse_args(argv)
    site = DocSite(10_000)
    step = max(1, 10_000 // args.pages)
    pages = [(ORIGIN + page_path(i), site.render_page(i)) for i in range(1, 10_000, step)]
    pages = pages[: args.pages]
    size = sum(len(body) for _, body in pages) / len(pages)
    print(f"\n{len(pages)} pages, {size / 1024:.1f} KiB on average\n")
    print(links_table(pages))
    print()
    print(markdown_table(pages))
    print()
    docs = [
        to_document(site.render_page(i), HTML, ORIGIN + page_path(i))
        for i in range(1, args.docs + 1)
    ]
    print(store_table(docs, args.queries))
    print()
    print(frontier_table(args.urls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
