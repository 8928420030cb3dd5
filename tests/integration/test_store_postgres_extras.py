"""The PostgreSQL store's re-crawl and snapshot-link side, mirroring the SQLite store's tests:
validators by URL, removal flags, links, change reports, capture records."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from sitelore.adapters.store import PostgresStore
from sitelore.core.changes import ChangeReport
from sitelore.core.models import CaptureRef, Document, FetchMeta
from sitelore.core.ports import CaptureLinks

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def doc(url: str, title: str = "Page", markdown: str = "Body text.", *links: str) -> Document:
    return Document(url=url, title=title, markdown=markdown, links=links)


def meta(etag: str | None = '"v1"', last_modified: str | None = None) -> FetchMeta:
    return FetchMeta(
        status=200, content_type="text/html", fetched_at=T0, etag=etag, last_modified=last_modified
    )


def ref(n: int) -> CaptureRef:
    return CaptureRef(
        warc_file=f"c-{n}.warc.gz",
        offset=100 * n,
        length=50 + n,
        digest=f"sha1:{n:032d}",
        record_id=f"<urn:uuid:{n}>",
        page_id=f"seed::https://x.test/{n}",
    )


@pytest.fixture
async def store(pg_database: str) -> AsyncIterator[PostgresStore]:
    opened = PostgresStore(pg_database, now=lambda: T0)
    await opened.open()
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("TRUNCATE sitelore_documents, sitelore_change_reports CASCADE")
    yield opened
    await opened.close()


class TestKnownPages:
    async def test_validators_links_and_ids_by_exact_url(self, store: PostgresStore) -> None:
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

    async def test_mark_verified_touches_fetch_time_not_content(self, store: PostgresStore) -> None:
        await store.upsert(doc("https://d.test/a"), meta('"e1"'))
        before = await store.get("https://d.test/a")
        assert before is not None
        later = FetchMeta(
            status=304, content_type="", fetched_at=T0 + timedelta(hours=1), etag='"e2"'
        )
        assert await store.mark_verified("https://d.test/a", later) == before.id
        after = await store.get("https://d.test/a")
        assert after is not None
        assert after.fetched_at == T0 + timedelta(hours=1)
        assert (after.etag, after.status, after.updated_at) == ('"e2"', 200, before.updated_at)
        assert await store.mark_verified("https://d.test/missing", later) is None

    async def test_an_upsert_replaces_the_links(self, store: PostgresStore) -> None:
        await store.upsert(doc("https://d.test/a", "A", "Text", "https://d.test/b"), meta())
        await store.upsert(doc("https://d.test/a", "A", "Text", "https://d.test/c"), meta())
        known = await store.known_page("https://d.test/a")
        assert known is not None
        assert known.links == ("https://d.test/c",)


class TestRemoval:
    async def test_removed_documents_are_kept_flagged_and_out_of_search(
        self, store: PostgresStore
    ) -> None:
        await store.upsert(doc("https://d.test/a", "Alpha", "unique zebra words"), meta())
        assert [h.url for h in await store.search("zebra")] == ["https://d.test/a"]
        removed_id = await store.mark_removed("https://d.test/a", status=404, at=T0)
        stored = await store.get("https://d.test/a")
        assert stored is not None
        assert (stored.id, stored.removed_at, stored.status) == (removed_id, T0, 404)
        assert await store.search("zebra") == []
        assert await store.count() == 1
        assert await store.mark_removed("https://d.test/a", status=404, at=T0) is None
        known = await store.known_page("https://d.test/a")
        assert known is not None
        assert known.removed
        assert known.conditional_headers() == {}

    async def test_a_good_fetch_brings_a_removed_page_back(self, store: PostgresStore) -> None:
        await store.upsert(doc("https://d.test/a", "Alpha", "zebra"), meta())
        await store.mark_removed("https://d.test/a", status=410, at=T0)
        result = await store.upsert(doc("https://d.test/a", "Alpha", "zebra"), meta())
        assert result.changed is False
        stored = await store.get("https://d.test/a")
        assert stored is not None
        assert stored.removed_at is None
        assert [h.url for h in await store.search("zebra")] == ["https://d.test/a"]


def report(source: str, minute: int, error: str | None = None) -> ChangeReport:
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
        failed=("https://d.test/ünïcode",),
        error=error,
        truncated=True,
    )


async def test_change_reports_round_trip_newest_first(store: PostgresStore) -> None:
    first, second = report("docs", 0), report("docs", 10, error="seed down")
    await store.record_change_report(first)
    await store.record_change_report(second)
    await store.record_change_report(report("other", 20))

    assert await store.change_reports("docs") == [second, first]
    assert await store.change_reports("docs", limit=1) == [second]
    assert await store.change_reports("docs", ok_only=True) == [first]
    assert await store.change_reports("nothing") == []


async def test_capture_links_read_replace_unlink_and_cascade(store: PostgresStore) -> None:
    assert isinstance(store, CaptureLinks)
    first = await store.upsert(doc("https://x.test/1"), meta())
    other = await store.upsert(doc("https://x.test/2"), meta())

    assert await store.capture_of(first.id) is None
    assert await store.link_capture(first.id, ref(1)) is True
    assert await store.capture_of("https://x.test/1") == ref(1)
    assert await store.link_capture("https://x.test/1", ref(2)) is True
    assert await store.link_capture(other.id, ref(3)) is True
    await store.upsert(doc("https://x.test/1", markdown="changed"), meta())  # link stays
    assert await store.captures() == [(first.id, ref(2)), (other.id, ref(3))]
    assert await store.link_capture(first.id, None) is True
    assert await store.delete(other.id)
    assert await store.captures() == []
    assert await store.link_capture("https://x.test/none", ref(1)) is False
