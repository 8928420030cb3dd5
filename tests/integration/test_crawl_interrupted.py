"""Killing a crawl process mid-way leaves a consistent store with the pages fetched so far."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer

PAGES = 200


def _site() -> web.Application:
    async def page(request: web.Request) -> web.Response:
        n = int(request.match_info.get("n", "0"))
        await asyncio.sleep(0.02)  # slow enough that the kill lands mid-crawl
        links = "".join(f'<a href="/p/{k}">page {k}</a> ' for k in range(n + 1, min(n + 6, PAGES)))
        body = (
            f"<html><head><title>Page {n}</title></head><body><main><h1>Page {n}</h1>"
            f"<p>Body text of page {n} about widgets and gears.</p>{links}</main></body></html>"
        )
        return web.Response(text=body, content_type="text/html")

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nAllow: /\n")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/p/{n}", page)
    app.router.add_get("/robots.txt", robots)
    return app


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


async def test_kill_9_mid_crawl_keeps_a_consistent_store(tmp_path: Path) -> None:
    """SIGKILL after a few pages: the store opens, passes integrity checks and keeps them."""
    server = TestServer(_site(), host="127.0.0.1")
    await server.start_server()
    db = tmp_path / "s.db"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sitelore", "crawl", str(server.make_url("/")),
        "--db", str(db), "--allow-private", "127.0.0.1", "--delay", "0",
        "--max-pages", "150", "--max-depth", "5", "--concurrency", "1",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, env=env,
    )  # fmt: skip
    try:
        for _ in range(600):  # up to ~30 s for a slow machine; usually well under 2 s
            if _count(db) >= 5:
                break
            await asyncio.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()
    finally:
        await server.close()
    assert proc.returncode == -signal.SIGKILL

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO sections_fts(sections_fts) VALUES ('integrity-check')")
        rows = conn.execute("SELECT url, title, markdown, content_hash FROM documents").fetchall()
    assert 5 <= len(rows) < 150
    for url, title, markdown, content_hash in rows:
        assert url.startswith("http://127.0.0.1:")
        assert title.startswith("Page ")
        assert "widgets and gears" in markdown
        assert len(content_hash) == 64

    from sitelore.adapters.store import open_store

    store = open_store(str(db))
    try:
        hits = await store.search("widgets", limit=500)
        assert len(hits) == len(rows)
    finally:
        await store.close()
