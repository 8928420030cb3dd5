"""The SQLite store's re-crawl side on real files: validators by URL, removal flags, links,
change reports, and the migration that adds them to an existing store."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sitelore.adapters.store import SCHEMA_VERSION, SQLiteStore
from sitelore.adapters.store.sqlite import _MIGRATIONS
from sitelore.core.changes import ChangeReport
from sitelore.core.models import Document, FetchMeta

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def doc(url: str, title: str = "Page", markdown: str = "Body text.", *links: str) -> Document:
    return Document(url=url, title=title, markdown=markdown, links=links)


def meta(etag: str | None = '"v1"', last_modified: str | None = None) -> FetchMeta:
    return FetchMeta(
        status=200,
        content_type="text/html",
        fetched_at=T0,
        etag=etag,
        last_modified=last_modified,
    )


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "s.db", now=lambda: T0)
    yield opened
    await opened.close()


def fts_blocks(path: Path) -> list[tuple[int, bytes]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return [
            (int(r[0]), bytes(r[1]))
            for r in conn.execute("SELECT id, block FROM sections_fts_data")
        ]


class TestKnownPages:
    async def test_validators_links_and_ids_by_exact_url(self, store: SQLiteStore) -> None:
        result = await store.upsert(
            doc("https://d.test/a", "A", "Text", "https://d.test/b", "https://d.test/c"),
            meta('"e1"', "Sun, 01 Mar 2026 00:00:00 GMT"),
        )
        known = await store.known_page("https://d.test/a")
        assert known is not None
        assert known.id == result.id
        assert known.links == ("https://d.test/b", "https://d.test/c")
        assert known.conditional_headers() == {
            "If-None-Match": '"e1"',
            "If-Modified-Since": "Sun, 01 Mar 2026 00:00:00 GMT",
        }
        assert await store.known_page("https://d.test/a/") is None
        assert await store.known_page(result.id) is None  # a URL, never an id

    async def test_no_validators_means_no_conditional_request(self, store: SQLiteStore) -> None:
        await store.upsert(doc("https://d.test/a"), meta(None))
        known = await store.known_page("https://d.test/a")
        assert known is not None
        assert known.conditional_headers() == {}

    async def test_mark_verified_touches_fetch_time_not_content_or_index(
        self, store: SQLiteStore, tmp_path: Path
    ) -> None:
        await store.upsert(doc("https://d.test/a"), meta('"e1"'))
        before = await store.get("https://d.test/a")
        assert before is not None
        blocks = fts_blocks(tmp_path / "s.db")
        later = FetchMeta(status=304, content_type="", fetched_at=T0 + timedelta(hours=1))
        assert await store.mark_verified("https://d.test/a", later) == before.id
        after = await store.get("https://d.test/a")
        assert after is not None
        assert after.fetched_at == T0 + timedelta(hours=1)
        assert (after.etag, after.status, after.updated_at) == ('"e1"', 200, before.updated_at)
        assert fts_blocks(tmp_path / "s.db") == blocks
        assert await store.mark_verified("https://d.test/missing", later) is None

    async def test_a_new_validator_on_a_304_is_kept(self, store: SQLiteStore) -> None:
        await store.upsert(doc("https://d.test/a"), meta('"e1"'))
        fresh = FetchMeta(status=304, content_type="", fetched_at=T0, etag='"e2"')
        await store.mark_verified("https://d.test/a", fresh)
        known = await store.known_page("https://d.test/a")
        assert known is not None
        assert known.etag == '"e2"'

    async def test_an_upsert_replaces_the_links(self, store: SQLiteStore) -> None:
        await store.upsert(doc("https://d.test/a", "A", "Text", "https://d.test/b"), meta())
        await store.upsert(doc("https://d.test/a", "A", "Text", "https://d.test/c"), meta())
        known = await store.known_page("https://d.test/a")
        assert known is not None
        assert known.links == ("https://d.test/c",)


class TestRemoval:
    async def test_removed_documents_are_kept_flagged_and_out_of_search(
        self, store: SQLiteStore
    ) -> None:
        await store.upsert(doc("https://d.test/a", "Alpha", "unique zebra words"), meta())
        assert [h.url for h in await store.search("zebra")] == ["https://d.test/a"]
        removed_id = await store.mark_removed("https://d.test/a", status=404, at=T0)
        stored = await store.get("https://d.test/a")
        assert stored is not None
        assert stored.id == removed_id
        assert stored.removed_at == T0
        assert stored.status == 404
        assert stored.markdown == "unique zebra words"
        assert await store.search("zebra") == []
        assert await store.count() == 1
        assert await store.mark_removed("https://d.test/a", status=404, at=T0) is None
        known = await store.known_page("https://d.test/a")
        assert known is not None
        assert known.removed
        assert known.conditional_headers() == {}

    async def test_a_good_fetch_brings_a_removed_page_back(self, store: SQLiteStore) -> None:
        await store.upsert(doc("https://d.test/a", "Alpha", "zebra"), meta())
        await store.mark_removed("https://d.test/a", status=410, at=T0)
        result = await store.upsert(doc("https://d.test/a", "Alpha", "zebra"), meta())
        assert result.changed is False
        stored = await store.get("https://d.test/a")
        assert stored is not None
        assert stored.removed_at is None
        assert [h.url for h in await store.search("zebra")] == ["https://d.test/a"]

    async def test_marking_an_unknown_url_does_nothing(self, store: SQLiteStore) -> None:
        assert await store.mark_removed("https://d.test/none", status=404, at=T0) is None
        assert await store.count() == 0


class TestChangeReports:
    def report(self, source: str, minute: int, error: str | None = None) -> ChangeReport:
        start = T0 + timedelta(minutes=minute)
        return ChangeReport(
            source=source,
            seed="https://d.test/",
            started_at=start,
            finished_at=start + timedelta(seconds=5),
            pages_crawled=4,
            new=("https://d.test/n",),
            changed=("https://d.test/c",),
            unchanged=("https://d.test/u1", "https://d.test/u2"),
            removed=(),
            failed=("https://d.test/ünïcode",),
            error=error,
            truncated=True,
        )

    async def test_reports_round_trip_newest_first(self, store: SQLiteStore) -> None:
        first, second = self.report("docs", 0), self.report("docs", 10, error="seed down")
        await store.record_change_report(first)
        await store.record_change_report(second)
        await store.record_change_report(self.report("other", 20))
        assert await store.change_reports("docs") == [second, first]
        assert await store.change_reports("docs", limit=1) == [second]
        assert await store.change_reports("docs", ok_only=True) == [first]
        assert await store.change_reports("nothing") == []

    async def test_report_json_has_the_pinned_keys(self) -> None:
        data = self.report("docs", 0).to_json()
        pinned = {"name", "pagesCrawled", "new", "changed", "unchanged", "removed", "failed"}
        assert pinned | {"error"} <= set(data)
        assert (data["new"], data["unchanged"], data["failed"], data["error"]) == (1, 2, 1, None)
        assert data["urls"]["unchanged"] == ["https://d.test/u1", "https://d.test/u2"]


async def test_a_version_1_store_is_migrated_in_place(tmp_path: Path) -> None:
    """A file written before the sources step keeps its documents and gains the new columns."""
    path = tmp_path / "old.db"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        for statement in _MIGRATIONS[0]:
            assert isinstance(statement, str)
            conn.execute(statement)
        conn.execute(
            "INSERT INTO documents (id, url, title, markdown, content_hash, content_type, status,"
            " etag, fetched_at, created_at, updated_at) VALUES ('x1', 'https://d.test/a', 'Old',"
            " 'kept words', 'h', 'text/html', 200, '\"e0\"', ?, ?, ?)",
            (T0.isoformat(),) * 3,
        )
        conn.execute("PRAGMA user_version = 1")
    reopened = SQLiteStore(path, now=lambda: T0)
    try:
        known = await reopened.known_page("https://d.test/a")
        assert known is not None
        assert known.etag == '"e0"'
        assert known.links is None  # never recorded: fetched in full once, not revalidated
        assert known.conditional_headers() == {}
        assert known.removed_at is None
        await reopened.upsert(
            doc("https://d.test/a", "Old", "kept words", "https://d.test/b"), meta()
        )
        again = await reopened.known_page("https://d.test/a")
        assert again is not None
        assert again.links == ("https://d.test/b",)
        assert again.conditional_headers() == {"If-None-Match": '"v1"'}
        assert [h.url for h in await reopened.search("kept")] == ["https://d.test/a"]
        with contextlib.closing(sqlite3.connect(path)) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        await reopened.close()
