"""The SQLite store's writer thread: batched commits that never half-write a page.

A file store writes on its own thread, several writes per transaction, each in a
savepoint (a write alone in its transaction in none). These tests hold the writer on a
gate so that the writes they start land in one batch, then check what each caller got
and what the file holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.unit.test_spider_failures import HOSTILE, by_url, crawl

from sitelore.adapters.store import SQLiteStore
from sitelore.adapters.store import _sqlite_sections as sections
from sitelore.adapters.store._sqlite_writer import Writer
from sitelore.core.errors import StoreError
from sitelore.core.models import Document, FetchMeta, Section

META = FetchMeta(status=200, content_type="text/html", fetched_at=datetime(2026, 1, 1, tzinfo=UTC))


def section(ordinal: int, path: tuple[str, ...], text: str) -> Section:
    return Section(
        ordinal=ordinal, heading_path=path, anchor=None, start=0, end=1, text=text, link_ratio=0
    )


def doc(n: int, *, body: str = "") -> Document:
    return Document(
        url=f"https://docs.test/p{n}",
        title=f"Page {n}",
        markdown=f"# Page {n}\n\nText of page {n} about gears.\n\n## More\n\nWidgets {n}.",
        sections=(
            section(0, (f"Page {n}",), f"Text of page {n} about gears."),
            section(1, (f"Page {n}", "More"), body or f"Widgets {n}."),
        ),
    )


def rows(db: Path) -> tuple[list[str], dict[str, int]]:
    """(document URLs, sections per document URL) as another reader sees the file."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO sections_fts(sections_fts) VALUES ('integrity-check')")
        urls = [r[0] for r in conn.execute("SELECT url FROM documents ORDER BY url")]
        counts = dict(
            conn.execute(
                "SELECT d.url, count(s.pk) FROM documents AS d"
                " LEFT JOIN sections AS s ON s.document_pk = d.pk GROUP BY d.url"
            ).fetchall()
        )
    return urls, counts


def eventually(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``condition`` holds within ``seconds`` (asked every 20 ms; a thread's work)."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


@contextlib.asynccontextmanager
async def held(store: SQLiteStore) -> AsyncIterator[threading.Event]:
    """Keep ``store``'s writer busy until the event is set (so writes queue up)."""
    writer = store._writer
    assert isinstance(writer, Writer)
    entered, gate = threading.Event(), threading.Event()

    def wait(conn: sqlite3.Connection) -> None:
        entered.set()
        gate.wait(10)

    task = asyncio.ensure_future(writer.write("gate", wait))
    assert await asyncio.to_thread(entered.wait, 10)
    try:
        yield gate
    finally:
        gate.set()
        task.cancel()


async def test_writes_run_off_the_event_loop_and_commit_before_returning(tmp_path: Path) -> None:
    """An upsert of a file store runs on the writer thread; a reader sees it once it returns."""
    store = SQLiteStore(tmp_path / "s.db")
    seen: list[str] = []
    original = sections.replace_sections

    def spy(conn: sqlite3.Connection, *args: object, **kwargs: object) -> None:
        seen.append(threading.current_thread().name)
        original(conn, *args, **kwargs)  # type: ignore[arg-type]

    try:
        sections.replace_sections = spy
        result = await store.upsert(doc(1), META)
    finally:
        sections.replace_sections = original
    assert seen == ["sitelore-sqlite-writer"]
    assert result.created
    assert rows(tmp_path / "s.db") == (["https://docs.test/p1"], {"https://docs.test/p1": 2})
    assert (await store.get("https://docs.test/p1")) is not None
    await store.close()


async def test_a_failing_write_fails_its_caller_alone_and_leaves_nothing_of_its_page(
    tmp_path: Path,
) -> None:
    """Four upserts in one transaction; the third fails after its document row was written
    (a section's text cannot be encoded): it gets the store's error, its row is rolled back
    with its sections, and the other three commit whole."""
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    await store.upsert(doc(0), META)  # starts the writer
    async with held(store):
        writes = [
            asyncio.ensure_future(store.upsert(doc(n, body="bad \ud800" if n == 3 else ""), META))
            for n in (1, 2, 3, 4)
        ]
        await asyncio.sleep(0)
    results = await asyncio.gather(*writes, return_exceptions=True)
    failed = results[2]
    assert isinstance(failed, StoreError)
    assert "upsert https://docs.test/p3 failed: invalid text" in str(failed)
    stored = [r for i, r in enumerate(results) if i != 2]
    assert all(not isinstance(r, BaseException) and r.created for r in stored)
    urls, counts = rows(db)
    assert urls == [f"https://docs.test/p{n}" for n in (0, 1, 2, 4)]
    assert set(counts.values()) == {2}
    hits = await store.search("widgets", limit=10)
    assert sorted(hit.url for hit in hits) == urls
    await store.close()


async def test_a_failing_write_alone_in_its_transaction_leaves_nothing_of_its_page(
    tmp_path: Path,
) -> None:
    """A write alone in its batch runs without a savepoint: when it fails after its
    document row was written, the whole transaction is rolled back (row and sections),
    its caller gets the error, and the next write commits."""
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    await store.upsert(doc(0), META)
    with pytest.raises(StoreError, match=r"upsert https://docs\.test/p1 failed: invalid text"):
        await store.upsert(doc(1, body="bad \ud800"), META)
    assert (await store.upsert(doc(2), META)).created
    urls, counts = rows(db)
    assert urls == ["https://docs.test/p0", "https://docs.test/p2"]
    assert set(counts.values()) == {2}
    await store.close()


async def test_the_wal_reaches_the_file_from_a_background_checkpoint(tmp_path: Path) -> None:
    """Commits only append to the WAL; a checkpointer thread with its own connection
    copies it into the database file soon after, while the store stays open (SQLite's
    own checkpoint would wait for 1,000 pages of WAL, on the committing connection)."""
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    threads: list[str] = []
    original = store._checkpoint_connection

    def spy() -> sqlite3.Connection:
        threads.append(threading.current_thread().name)
        return original()

    store._checkpoint_connection = spy  # type: ignore[method-assign]
    await store.upsert(doc(0), META)
    assert await asyncio.to_thread(eventually, lambda: bool(threads))
    before = db.stat().st_size
    for n in range(1, 11):
        await store.upsert(doc(n, body="gears " * 2000), META)
    assert await asyncio.to_thread(eventually, lambda: db.stat().st_size > before)
    assert threads == ["sitelore-sqlite-checkpointer"]
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 11
    await store.close()


async def test_a_lost_transaction_fails_every_write_in_it(tmp_path: Path) -> None:
    """When SQLite itself rolls the transaction back, the writes done before in it are lost
    too: their callers get the error, and nothing of them is in the file."""
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    await store.upsert(doc(0), META)

    def abort(conn: sqlite3.Connection) -> None:
        conn.execute("ROLLBACK")  # what an I/O error or a full disk does to the transaction
        raise sqlite3.OperationalError("disk I/O error")

    assert store._writer is not None
    async with held(store):
        first = asyncio.ensure_future(store.upsert(doc(1), META))
        await asyncio.sleep(0)
        lost = asyncio.ensure_future(store._writer.write("abort", abort))
        await asyncio.sleep(0)
        after = asyncio.ensure_future(store.upsert(doc(2), META))
        await asyncio.sleep(0)
    with pytest.raises(StoreError, match=r"upsert https://docs\.test/p1 failed: disk I/O error"):
        await first
    with pytest.raises(StoreError, match="abort failed: disk I/O error"):
        await lost
    assert (await after).created  # a new transaction for the writes after it
    assert rows(db)[0] == ["https://docs.test/p0", "https://docs.test/p2"]
    await store.close()


async def test_close_commits_the_writes_already_given(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SQLiteStore(db)
    await store.upsert(doc(0), META)
    async with held(store):
        writes = [asyncio.ensure_future(store.upsert(doc(n), META)) for n in (1, 2)]
        await asyncio.sleep(0)
    await store.close()
    assert all(r.created for r in await asyncio.gather(*writes))
    assert len(rows(db)[0]) == 3
    with pytest.raises(StoreError, match="closed"):
        await store.upsert(doc(3), META)


_CRASH = textwrap.dedent(
    """
    import asyncio, os, sys
    from tests.integration.test_store_sqlite_writer import META, doc, held
    from sitelore.adapters.store import SQLiteStore
    from sitelore.adapters.store import _sqlite_sections as sections

    original = sections.replace_sections

    def crash(conn, pk, title, *args, **kwargs):
        if title == "Page 5":  # the second page of the batch: the first is written, not committed
            os._exit(9)
        original(conn, pk, title, *args, **kwargs)

    async def main():
        store = SQLiteStore(sys.argv[1])
        for n in (1, 2, 3):
            await store.upsert(doc(n), META)
        sections.replace_sections = crash
        async with held(store):
            writes = [asyncio.ensure_future(store.upsert(doc(n), META)) for n in (4, 5, 6)]
            await asyncio.sleep(0)
        await asyncio.gather(*writes)

    asyncio.run(main())
    """
)


def test_a_crash_mid_batch_leaves_no_half_written_page(tmp_path: Path) -> None:
    """The process dies while its writer is inside a batch: the pages committed before are
    whole, and nothing of the batch (not even the page already written in it) is there."""
    db = tmp_path / "s.db"
    done = subprocess.run(
        [sys.executable, "-c", _CRASH, str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 9, done.stderr
    urls, counts = rows(db)
    assert urls == [f"https://docs.test/p{n}" for n in (1, 2, 3)]
    assert set(counts.values()) == {2}


@pytest.mark.parametrize(
    "error",
    [sqlite3.OperationalError("database is locked"), ValueError("bad row")],
    ids=lambda e: type(e).__name__,
)
async def test_a_page_whose_write_fails_on_the_writer_is_that_pages_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    """A crawl into a file store: one page's write fails inside the writer thread, after
    its document row: that page is store-failed and absent, every other page is stored."""
    original = sections.replace_sections

    def failing(conn: sqlite3.Connection, pk: int, title: str, *args: object) -> None:
        if title == "A":
            raise error
        original(conn, pk, title, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(sections, "replace_sections", failing)
    store = SQLiteStore(tmp_path / "s.db")
    summary = await crawl(store=store)
    kinds = by_url(summary)
    assert kinds[HOSTILE] == "store-failed"
    assert [url for url, kind in kinds.items() if kind is not None] == [HOSTILE]
    assert summary.pages_indexed == len(kinds) - 1 == await store.count()
    assert await store.get(HOSTILE) is None
    await store.close()
    urls, counts = rows(tmp_path / "s.db")
    assert HOSTILE not in urls
    assert len(urls) == len(kinds) - 1
    assert all(counts.values())
