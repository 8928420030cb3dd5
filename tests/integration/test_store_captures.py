"""SQLite store: links from documents to their capture records, and the migration that adds them."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from sitelore.adapters.store import SCHEMA_VERSION, SQLiteStore
from sitelore.adapters.store._sqlite_captures import CAPTURES_MIGRATION
from sitelore.adapters.store.sqlite import _MIGRATIONS
from sitelore.core.models import CaptureRef, Document, FetchMeta
from sitelore.core.ports import CaptureLinks

WHEN = datetime(2026, 1, 1, tzinfo=UTC)
META = FetchMeta(status=200, content_type="text/html", fetched_at=WHEN)


def ref(n: int) -> CaptureRef:
    return CaptureRef(
        warc_file=f"/archive/f{n}.warc.gz",
        offset=100 * n,
        length=50 + n,
        digest=f"sha1:DIGEST{n}",
        record_id=f"<urn:uuid:{n}>",
        page_id=f"seed::https://x.test/{n}",
    )


def doc(n: int) -> Document:
    return Document(url=f"https://x.test/{n}", title=f"T{n}", markdown=f"body {n}")


class TestCaptureLinks:
    async def test_link_read_replace_and_unlink(self, tmp_path: Path) -> None:
        """A document links to one record; linking again replaces it; None removes it."""
        store = SQLiteStore(tmp_path / "s.db")
        try:
            assert isinstance(store, CaptureLinks)
            first = await store.upsert(doc(1), META)
            assert await store.capture_of(first.id) is None
            assert await store.link_capture(first.id, ref(1)) is True
            assert await store.capture_of(first.id) == ref(1)
            assert await store.capture_of("https://x.test/1") == ref(1)
            assert await store.link_capture("https://x.test/1", ref(2)) is True
            assert await store.capture_of(first.id) == ref(2)
            assert await store.captures() == [(first.id, ref(2))]
            assert await store.link_capture(first.id, None) is True
            assert await store.capture_of(first.id) is None
            assert await store.captures() == []
        finally:
            await store.close()

    async def test_linking_a_missing_document_says_so(self, tmp_path: Path) -> None:
        """No document, no link: False, and nothing is written."""
        store = SQLiteStore(tmp_path / "s.db")
        try:
            assert await store.link_capture("https://x.test/none", ref(1)) is False
            assert await store.captures() == []
        finally:
            await store.close()

    async def test_deleting_a_document_drops_its_link(self, tmp_path: Path) -> None:
        """The link goes with its document (ON DELETE CASCADE)."""
        store = SQLiteStore(tmp_path / "s.db")
        try:
            kept = await store.upsert(doc(1), META)
            gone = await store.upsert(doc(2), META)
            await store.link_capture(kept.id, ref(1))
            await store.link_capture(gone.id, ref(2))
            assert await store.delete(gone.id)
            assert await store.captures() == [(kept.id, ref(1))]
        finally:
            await store.close()

    async def test_an_upsert_leaves_the_link_alone(self, tmp_path: Path) -> None:
        """Re-storing a document (changed or not) does not touch its link; the spider decides."""
        store = SQLiteStore(tmp_path / "s.db")
        try:
            result = await store.upsert(doc(1), META)
            await store.link_capture(result.id, ref(1))
            await store.upsert(Document(url="https://x.test/1", title="T", markdown="new"), META)
            assert await store.capture_of(result.id) == ref(1)
        finally:
            await store.close()


class TestMigration:
    async def test_the_captures_step_is_idempotent(self, tmp_path: Path) -> None:
        """Running the step again on a migrated store (renumbered after a merge) is harmless."""
        path = tmp_path / "s.db"
        store = SQLiteStore(path)
        await store.count()  # the first use creates and migrates
        await store.close()
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            for statement in CAPTURES_MIGRATION:
                conn.execute(statement)
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            assert "document_captures" in names
        finally:
            conn.close()

    async def test_a_store_one_step_behind_is_migrated_with_its_data(self, tmp_path: Path) -> None:
        """A store from before the captures step opens, keeps its documents and can link them."""
        path = tmp_path / "s.db"
        store = SQLiteStore(path)
        result = await store.upsert(doc(1), META)
        await store.close()
        conn = sqlite3.connect(path)
        conn.execute("DROP TABLE document_captures")
        # Back to the version before the captures step (later steps may follow it).
        conn.execute(f"PRAGMA user_version = {_MIGRATIONS.index(CAPTURES_MIGRATION)}")
        conn.commit()
        conn.close()
        store = SQLiteStore(path)
        try:
            assert await store.count() == 1
            assert await store.link_capture(result.id, ref(1))
            assert await store.capture_of(result.id) == ref(1)
        finally:
            await store.close()
