"""The ceiling: a bare asyncio + aiohttp BFS crawler, optionally converting and storing each page.

No guard, no politeness bookkeeping, no content selection, no typed outcomes: the
least a Python crawler can do on this site. ``--store`` adds what sitelore does per
page in its simplest form: html-to-markdown on the whole page and one SQLite (WAL,
FTS5, commit per page) insert. Robots via the stdlib parser, links via selectolax::

    python bench/crawl_aio.py http://127.0.0.1:PORT/ --pages 1000 --concurrency 16 --store
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import urllib.robotparser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import aiohttp
from benchlib import CrawlClock, emit_result
from html_to_markdown import convert
from selectolax.lexbor import LexborHTMLParser

__all__ = ["main"]

USER_AGENT = "aio-bench/1.0"
_SCHEMA = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "CREATE TABLE docs (pk INTEGER PRIMARY KEY, url TEXT UNIQUE, title TEXT, markdown TEXT)",
    "CREATE VIRTUAL TABLE docs_fts USING fts5(title, markdown, content='docs',"
    " content_rowid='pk', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN INSERT INTO docs_fts"
    " (rowid, title, markdown) VALUES (new.pk, new.title, new.markdown); END",
)


class _Crawl:
    def __init__(self, seed: str, depth: int, db: sqlite3.Connection | None) -> None:
        self.seed = seed
        self.host = urlsplit(seed).netloc
        self.max_depth = depth
        self.db = db
        self.queue: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
        self.seen = {seed}
        self.ok: list[str] = []
        self.ok_set: set[str] = set()
        self.responses = 0
        self.robots = urllib.robotparser.RobotFileParser()

    async def load_robots(self, session: aiohttp.ClientSession) -> None:
        async with session.get(urljoin(self.seed, "/robots.txt")) as resp:
            text = await resp.text() if resp.status == 200 else ""
        self.robots.parse(text.splitlines())

    async def worker(self, session: aiohttp.ClientSession) -> None:
        while True:
            url, depth = await self.queue.get()
            try:
                await self.visit(session, url, depth)
            except aiohttp.ClientError as exc:
                print(f"failed {url}: {exc}")
            finally:
                self.queue.task_done()

    async def visit(self, session: aiohttp.ClientSession, url: str, depth: int) -> None:
        async with session.get(url) as resp:
            body = await resp.read()
            status = resp.status
            final = str(resp.url)
            content_type = resp.headers.get("content-type", "")
        self.responses += 1
        if status != 200 or final in self.ok_set or not content_type.startswith("text/html"):
            return
        self.ok_set.add(final)
        self.ok.append(final)
        html = body.decode("utf-8", "replace")
        tree = LexborHTMLParser(html)
        if depth < self.max_depth:
            self.offer(tree, final, depth + 1)
        if self.db is not None:
            title_node = tree.css_first("title")
            title = title_node.text() if title_node is not None else ""
            markdown = convert(html).content or ""
            self.db.execute(
                "INSERT INTO docs (url, title, markdown) VALUES (?, ?, ?)", (final, title, markdown)
            )
            self.db.commit()

    def offer(self, tree: LexborHTMLParser, base: str, depth: int) -> None:
        seen, host, robots = self.seen, self.host, self.robots
        for node in tree.css("a[href]"):
            href = node.attributes.get("href")
            if not href:
                continue
            url = urldefrag(urljoin(base, href))[0]
            if url in seen:
                continue
            seen.add(url)
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or parts.netloc != host:
                continue
            if robots.can_fetch(USER_AGENT, url):
                self.queue.put_nowait((url, depth))


async def crawl(seed: str, depth: int, concurrency: int, db: sqlite3.Connection | None) -> _Crawl:
    """BFS from ``seed`` with ``concurrency`` workers until the queue is drained."""
    state = _Crawl(seed, depth, db)
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency)
    headers = {"User-Agent": USER_AGENT}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        await state.load_robots(session)
        state.queue.put_nowait((seed, 0))
        workers = [asyncio.create_task(state.worker(session)) for _ in range(concurrency)]
        await state.queue.join()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return state


def main(argv: list[str] | None = None) -> int:
    """Crawl, then print the result line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("seed")
    parser.add_argument("--pages", type=int, required=True, help="pages the site has")
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--store", action="store_true", help="convert and store every page")
    parser.add_argument("--db-dir", default=None)
    parser.add_argument("--urls-out", default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.db_dir) as tmp:
        db = None
        if args.store:
            db = sqlite3.connect(Path(tmp) / "aio.db")
            for statement in _SCHEMA:
                db.execute(statement)
            db.commit()
        clock = CrawlClock()
        state = asyncio.run(crawl(args.seed, args.depth, args.concurrency, db))
        if db is not None:
            db.close()
        emit_result(
            crawler="aio+store" if args.store else "aio",
            ok_urls=state.ok,
            responses=state.responses,
            clock=clock,
            urls_out=args.urls_out,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
