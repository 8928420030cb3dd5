"""The SQLite store against real database files: upserts, search, migrations, failures."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import re
import sqlite3
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from tests.fakes import FakeClock

from sitelore.adapters.store import (
    MEMORY,
    SCHEMA_VERSION,
    SQLiteStore,
    content_hash,
    document_id,
    open_store,
)
from sitelore.core.errors import (
    EXIT_CONFIG,
    EXIT_USAGE,
    ConfigError,
    NoStoreError,
    SchemaVersionError,
    StoreError,
    StoreLocationError,
)
from sitelore.core.models import Document, FetchMeta
from sitelore.core.ports import Store

_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _doc(url: str, title: str = "A page", markdown: str = "Some body text.") -> Document:
    return Document(url=url, title=title, markdown=markdown)


def _meta(status: int = 200, etag: str | None = None, fetched_at: datetime = _T0) -> FetchMeta:
    return FetchMeta(status=status, content_type="text/html", fetched_at=fetched_at, etag=etag)


def _raw(path: Path) -> sqlite3.Connection:
    """A second, independent connection to the store's file."""
    return sqlite3.connect(path, isolation_level=None)


def _fts_blocks(path: Path) -> list[tuple[int, bytes]]:
    """Every block of the FTS5 index; any write to the index changes this list."""
    with contextlib.closing(_raw(path)) as conn:
        return [
            (int(row[0]), bytes(row[1]))
            for row in conn.execute("SELECT id, block FROM sections_fts_data ORDER BY id")
        ]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SQLiteStore]:
    opened = SQLiteStore(db_path, now=FakeClock(start=0, tick=1).now)
    yield opened
    await opened.close()


# -- upsert ------------------------------------------------------------------------------


async def test_upsert_new_document_is_created_with_an_id_derived_from_the_url(
    store: SQLiteStore,
) -> None:
    result = await store.upsert(_doc("https://a.test/x", "Title", "Body"), _meta(etag='"v1"'))

    assert result.created
    assert result.changed
    assert result.id == document_id("https://a.test/x")
    assert len(result.id) == 16
    assert int(result.id, 16) >= 0
    stored = await store.get(result.id)
    assert stored is not None
    assert (stored.url, stored.title, stored.markdown) == ("https://a.test/x", "Title", "Body")
    assert stored.content_hash == content_hash("Title", "Body")
    assert stored.etag == '"v1"'
    assert stored.status == 200
    assert stored.created_at == stored.updated_at


async def test_upsert_same_content_updates_fetch_metadata_only_and_leaves_the_index(
    store: SQLiteStore, db_path: Path
) -> None:
    first = await store.upsert(_doc("https://a.test/x"), _meta(etag='"v1"'))
    before = await store.get(first.id)
    blocks = _fts_blocks(db_path)

    later = _T0 + timedelta(days=1)
    again = await store.upsert(
        _doc("https://a.test/x"), _meta(status=203, etag='"v2"', fetched_at=later)
    )

    assert again.id == first.id
    assert not again.created
    assert not again.changed
    assert _fts_blocks(db_path) == blocks
    after = await store.get(first.id)
    assert before is not None
    assert after is not None
    assert (after.etag, after.status, after.fetched_at) == ('"v2"', 203, later)
    assert after.updated_at == before.updated_at
    assert after.created_at == before.created_at


async def test_upsert_changed_content_keeps_the_id_and_reindexes(
    store: SQLiteStore, db_path: Path
) -> None:
    first = await store.upsert(_doc("https://a.test/x", "Old", "walrus"), _meta())
    blocks = _fts_blocks(db_path)

    again = await store.upsert(_doc("https://a.test/x", "New", "pelican"), _meta())

    assert again.id == first.id
    assert not again.created
    assert again.changed
    assert _fts_blocks(db_path) != blocks
    assert await store.search("walrus") == []
    assert [hit.id for hit in await store.search("pelican")] == [first.id]
    assert await store.count() == 1
    stored = await store.get(first.id)
    assert stored is not None
    assert stored.updated_at > stored.created_at


async def test_upsert_keeps_an_existing_row_id_even_if_it_was_made_differently(
    store: SQLiteStore, db_path: Path
) -> None:
    await store.upsert(_doc("https://a.test/x"), _meta())
    with contextlib.closing(_raw(db_path)) as conn:
        conn.execute("UPDATE documents SET id = 'legacy-id' WHERE url = 'https://a.test/x'")

    result = await store.upsert(_doc("https://a.test/x", markdown="changed"), _meta())

    assert result.id == "legacy-id"


async def test_datetimes_are_stored_in_utc_and_returned_timezone_aware(
    store: SQLiteStore,
) -> None:
    plus_two = timezone(timedelta(hours=2))
    aware = datetime(2026, 3, 1, 14, 0, tzinfo=plus_two)
    result = await store.upsert(_doc("https://a.test/aware"), _meta(fetched_at=aware))
    naive = datetime(2026, 3, 1, 12, 0)  # noqa: DTZ001 - naive input is read as UTC
    naive_result = await store.upsert(_doc("https://a.test/naive"), _meta(fetched_at=naive))

    stored = await store.get(result.id)
    naive_stored = await store.get(naive_result.id)
    assert stored is not None
    assert naive_stored is not None
    assert stored.fetched_at == aware
    assert stored.fetched_at.tzinfo is not None
    assert stored.fetched_at.utcoffset() == timedelta(0)
    assert naive_stored.fetched_at == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert stored.created_at.tzinfo is not None


# -- failures leave nothing half-written -------------------------------------------------


async def test_a_failed_insert_leaves_the_store_unchanged_and_usable(
    store: SQLiteStore, db_path: Path
) -> None:
    await store.upsert(_doc("https://a.test/keep", "Keep", "kept body"), _meta())
    with contextlib.closing(_raw(db_path)) as conn:
        conn.execute(
            "CREATE TRIGGER fail_insert AFTER INSERT ON documents "
            "WHEN new.url LIKE '%boom%' BEGIN SELECT RAISE(ABORT, 'injected'); END"
        )
    blocks = _fts_blocks(db_path)

    with pytest.raises(StoreError, match="injected"):
        await store.upsert(_doc("https://a.test/boom", "Boom", "exploding body"), _meta())

    assert await store.count() == 1
    assert await store.get("https://a.test/boom") is None
    assert await store.search("exploding") == []
    assert _fts_blocks(db_path) == blocks
    ok = await store.upsert(_doc("https://a.test/after"), _meta())
    assert ok.created


async def test_a_failed_update_keeps_the_previous_version_searchable(
    store: SQLiteStore, db_path: Path
) -> None:
    first = await store.upsert(_doc("https://a.test/x", "Old", "walrus"), _meta())
    with contextlib.closing(_raw(db_path)) as conn:
        conn.execute(
            "CREATE TRIGGER fail_update AFTER UPDATE ON documents "
            "BEGIN SELECT RAISE(ABORT, 'injected'); END"
        )

    with pytest.raises(StoreError):
        await store.upsert(_doc("https://a.test/x", "New", "pelican"), _meta())

    stored = await store.get(first.id)
    assert stored is not None
    assert (stored.title, stored.markdown) == ("Old", "walrus")
    assert [hit.id for hit in await store.search("walrus")] == [first.id]
    assert await store.search("pelican") == []


async def test_text_that_cannot_be_encoded_raises_store_error_and_writes_nothing(
    store: SQLiteStore,
) -> None:
    with pytest.raises(StoreError, match="invalid text"):
        await store.upsert(_doc("https://a.test/x", "bad \ud800 title"), _meta())

    assert await store.count() == 0


# -- search ------------------------------------------------------------------------------


async def test_a_title_hit_outranks_a_body_hit(store: SQLiteStore) -> None:
    for i in range(3):
        await store.upsert(_doc(f"https://a.test/other{i}", "Other", "nothing to see"), _meta())
    # Unweighted BM25 ranks the short body hit first (the long filler body dilutes the
    # title hit); the title weight must reverse that.
    body = await store.upsert(
        _doc("https://a.test/body", "Unrelated notes", "The crawler visits pages."),
        _meta(),
    )
    filler = " ".join(f"filler{i}" for i in range(60))
    title = await store.upsert(_doc("https://a.test/title", "Crawler guide", filler), _meta())

    hits = await store.search("crawler")

    assert [hit.id for hit in hits] == [title.id, body.id]
    assert hits[0].score < hits[1].score
    assert hits[0].url == "https://a.test/title"
    assert hits[0].title == "Crawler guide"


async def test_the_snippet_marks_the_matched_term(store: SQLiteStore) -> None:
    filler = " ".join(f"word{i}" for i in range(200))
    await store.upsert(
        _doc("https://a.test/x", "Title", f"{filler} the robots file {filler}"), _meta()
    )

    (hit,) = await store.search("robots")

    assert "**robots**" in hit.snippet
    assert len(hit.snippet) < 300


async def test_any_word_may_match_and_more_words_rank_higher(store: SQLiteStore) -> None:
    """Questions rank by their words instead of requiring all of them (was: implicit AND)."""
    both = await store.upsert(_doc("https://a.test/1", markdown="alpha beta"), _meta())
    one = await store.upsert(_doc("https://a.test/2", markdown="alpha gamma"), _meta())
    await store.upsert(_doc("https://a.test/3", markdown="delta"), _meta())

    assert [hit.id for hit in await store.search("alpha beta")] == [both.id, one.id]
    assert [hit.id for hit in await store.search("how do I find a beta")] == [both.id]


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("we are running the crawler", "run"),
        ("a café on the corner", "cafe"),
        ("a cafe on the corner", "CAFÉ"),
        ("Straße und Weg", "straße"),
        ("Tiếng Việt", "viet"),
    ],
)
async def test_search_stems_and_folds_case_and_accents(
    store: SQLiteStore, stored: str, query: str
) -> None:
    result = await store.upsert(_doc("https://a.test/x", markdown=stored), _meta())

    assert [hit.id for hit in await store.search(query)] == [result.id]


#: (query, found): the document is "Alpha" / "alpha beta x title". A query finds it exactly
#: when any word in it but a stop word (FTS syntax being plain text) is a word of the document.
HOSTILE_QUERIES = [
    # The document's words wrapped in FTS5 syntax: the syntax is ignored, the word found.
    ('"alpha', True),
    ('alpha"', True),
    ("alpha*", True),
    ("(alpha", True),
    ("alpha)", True),
    ("alpha:", True),
    ("-alpha", True),
    ("^alpha", True),
    ("+alpha", True),
    ("-x", True),
    ("{title}: alpha", True),
    ("alpha\0beta", True),
    ("alpha\ud800", True),
    ('"alpha beta"', True),
    # Operator words are plain words (stop words, here): any other word still matches.
    ("NOT alpha", True),
    ("alpha NOT", True),
    ("alpha OR", True),
    ("title:x", True),  # "title x" as a phrase, or either word
    ("markdown:alpha", True),
    # Operator words alone are words the document does not hold: nothing found or raised.
    ("NOT", False),
    ("a OR", False),
    ("OR", False),
    ("AND", False),
    ("NEAR", False),
    ("NEAR(a b)", False),
    ('al"pha', False),  # two words, al and pha
    ("日本語のテキスト", False),
    ("émoji 🕷️", False),
    ("' ; DROP TABLE documents; --", False),
    ("a" * 5000, False),
    # Pure syntax: no word at all, nothing found.
    ('"', False),
    ('""', False),
    ("*", False),
    ("(", False),
    (")", False),
    ("-", False),
    ("+", False),
    (":", False),
    ("\0", False),
    ("\ud800", False),
]


@pytest.mark.parametrize(("query", "found"), HOSTILE_QUERIES)
async def test_hostile_queries_never_raise(store: SQLiteStore, query: str, found: bool) -> None:
    """FTS5 syntax in a query is plain text: it never raises, and the words still match."""
    kept = await store.upsert(_doc("https://a.test/x", "Alpha", "alpha beta x title"), _meta())
    await store.upsert(_doc("https://a.test/y", "Other", "nothing in common"), _meta())

    hits = await store.search(query)

    assert [hit.id for hit in hits] == ([kept.id] if found else [])
    assert await store.count() == 2


async def test_operator_words_are_searched_as_plain_words(store: SQLiteStore) -> None:
    hit = await store.upsert(_doc("https://a.test/x", markdown="to be or not to be"), _meta())
    await store.upsert(_doc("https://a.test/y", markdown="something else"), _meta())

    assert [h.id for h in await store.search("not")] == [hit.id]
    assert [h.id for h in await store.search("or NOT")] == [hit.id]


@pytest.mark.parametrize("query", ["", " ", "\t\n", "   \u3000"])
async def test_a_blank_query_finds_nothing(store: SQLiteStore, query: str) -> None:
    await store.upsert(_doc("https://a.test/x"), _meta())

    assert await store.search(query) == []


async def test_search_honours_the_limit(store: SQLiteStore) -> None:
    for i in range(5):
        await store.upsert(_doc(f"https://a.test/{i}", markdown=f"common {i}"), _meta())

    assert len(await store.search("common", limit=3)) == 3
    assert await store.search("common", limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        await store.search("common", limit=-1)


# -- get, list, delete, count ------------------------------------------------------------


async def test_get_finds_by_id_or_url_and_returns_none_when_missing(store: SQLiteStore) -> None:
    result = await store.upsert(_doc("https://a.test/x"), _meta())

    by_id = await store.get(result.id)
    by_url = await store.get("https://a.test/x")

    assert by_id is not None
    assert by_id == by_url
    assert await store.get("0123456789abcdef") is None
    assert await store.get("https://a.test/missing") is None


async def test_list_pages_most_recently_updated_first(store: SQLiteStore) -> None:
    ids = [(await store.upsert(_doc(f"https://a.test/{i}"), _meta())).id for i in range(5)]
    # Changing the oldest document makes it the most recently updated.
    await store.upsert(_doc("https://a.test/0", markdown="new text"), _meta())
    # An unchanged re-fetch does not move a document.
    await store.upsert(_doc("https://a.test/1"), _meta())
    expected = [ids[0], ids[4], ids[3], ids[2], ids[1]]

    first = await store.list(limit=2)
    second = await store.list(limit=2, offset=2)
    rest = await store.list(limit=10, offset=4)

    assert [d.id for d in first + second + rest] == expected
    assert await store.list(limit=10, offset=5) == []
    assert await store.list(limit=0) == []
    with pytest.raises(ValueError, match="offset"):
        await store.list(offset=-1)


async def test_delete_by_id_or_url_removes_the_document_and_its_index_entry(
    store: SQLiteStore,
) -> None:
    one = await store.upsert(_doc("https://a.test/1", markdown="walrus"), _meta())
    await store.upsert(_doc("https://a.test/2", markdown="walrus"), _meta())

    assert await store.delete(one.id) is True
    assert await store.delete("https://a.test/2") is True
    assert await store.delete(one.id) is False

    assert await store.count() == 0
    assert await store.search("walrus") == []
    assert await store.get(one.id) is None


async def test_count_counts_documents_not_upserts(store: SQLiteStore) -> None:
    assert await store.count() == 0
    await store.upsert(_doc("https://a.test/1"), _meta())
    await store.upsert(_doc("https://a.test/1"), _meta())
    await store.upsert(_doc("https://a.test/2"), _meta())

    assert await store.count() == 2


# -- files, versions, lifecycle ----------------------------------------------------------


async def test_a_new_file_is_migrated_to_the_current_version_in_wal_mode(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    assert await store.count() == 0  # first use creates the file
    await store.close()

    with contextlib.closing(_raw(db_path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"documents", "sections", "sections_fts"} <= names
    # Search reads sections only; the page-level index (step 1) is dropped by step 6.
    assert not names & {"documents_fts", "documents_ai", "documents_ad", "documents_au"}


@pytest.fixture
def empty_file(db_path: Path) -> Path:
    db_path.write_bytes(b"")
    return db_path


async def test_an_empty_existing_file_is_migrated(empty_file: Path) -> None:
    store = SQLiteStore(empty_file)
    try:
        assert await store.count() == 0
    finally:
        await store.close()


async def test_reopening_keeps_documents_and_the_index(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    result = await store.upsert(_doc("https://a.test/x", "Kept", "persistent walrus"), _meta())
    await store.close()

    reopened = SQLiteStore(db_path)
    try:
        assert await reopened.count() == 1
        assert [hit.id for hit in await reopened.search("walrus")] == [result.id]
        again = await reopened.upsert(
            _doc("https://a.test/x", "Kept", "persistent walrus"), _meta()
        )
        assert not again.created
        assert not again.changed
    finally:
        await reopened.close()


async def test_two_stores_on_one_file_see_each_others_writes(db_path: Path) -> None:
    writer = SQLiteStore(db_path)
    reader = SQLiteStore(db_path)
    try:
        await writer.upsert(_doc("https://a.test/x", markdown="shared walrus"), _meta())
        assert len(await reader.search("walrus")) == 1
    finally:
        await writer.close()
        await reader.close()


def test_a_newer_schema_version_is_refused_and_left_untouched(db_path: Path) -> None:
    with contextlib.closing(_raw(db_path)) as conn:
        conn.execute("CREATE TABLE future (x)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = db_path.read_bytes()

    with pytest.raises(SchemaVersionError, match="newer") as caught:
        SQLiteStore(db_path)

    assert str(db_path) in str(caught.value)
    assert db_path.read_bytes() == before


def test_a_file_that_is_not_sqlite_raises_store_error_naming_the_path(
    db_path: Path,
) -> None:
    junk = b"this is not a database, just some text\n" * 200
    db_path.write_bytes(junk)

    with pytest.raises(StoreError) as caught:
        SQLiteStore(db_path)

    assert not isinstance(caught.value, SchemaVersionError)
    assert str(db_path) in str(caught.value)
    assert db_path.read_bytes() == junk


def test_a_directory_in_the_way_raises_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=str(tmp_path)):
        SQLiteStore(tmp_path)


# -- where a store may be created, and when ----------------------------------------------


async def test_a_new_store_creates_its_file_and_folders_on_first_use_not_before(
    tmp_path: Path,
) -> None:
    """Building the store checks the location; the first use creates the file."""
    path = tmp_path / "made" / "later" / "s.db"
    store = SQLiteStore(path)
    try:
        assert not (tmp_path / "made").exists()
        assert "new" in repr(store)
        await store.upsert(_doc("https://a.test/x"), _meta())
        assert path.is_file()
    finally:
        await store.close()


async def test_closing_an_unused_new_store_leaves_nothing_behind(tmp_path: Path) -> None:
    """A crawl refused before its first page (robots.txt) must not leave an empty store."""
    store = SQLiteStore(tmp_path / "sub" / "s.db")
    await store.close()

    assert os.listdir(tmp_path) == []
    with pytest.raises(StoreError, match="closed"):
        await store.count()


def test_a_location_under_a_file_is_refused_at_once_as_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")

    with pytest.raises(StoreLocationError, match="is a file") as caught:
        SQLiteStore(blocker / "sub" / "s.db")

    assert caught.value.exit_code == EXIT_CONFIG
    assert blocker.read_text() == "x"


def test_a_file_that_is_not_sqlite_is_a_config_error(db_path: Path) -> None:
    """Pointing --db at some other file is the operator's mistake (exit 78), not a crash."""
    db_path.write_text("root:x:0:0:root:/root:/bin/bash\n" * 40)

    with pytest.raises(StoreLocationError, match="not an SQLite database") as caught:
        SQLiteStore(db_path)

    assert caught.value.exit_code == EXIT_CONFIG


def test_another_programs_database_is_refused_untouched(db_path: Path) -> None:
    with contextlib.closing(_raw(db_path)) as conn:
        conn.execute("CREATE TABLE contacts (name TEXT)")
    before = db_path.read_bytes()

    with pytest.raises(StoreLocationError, match="not a sitelore store"):
        SQLiteStore(db_path)

    assert db_path.read_bytes() == before


def test_create_false_refuses_a_missing_store_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "nodir" / "s.db"

    with pytest.raises(NoStoreError, match="no sitelore store here") as caught:
        SQLiteStore(path, create=False)

    assert caught.value.exit_code == EXIT_USAGE
    assert str(path) in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_create_false_refuses_an_empty_file_and_leaves_it_empty(empty_file: Path) -> None:
    with pytest.raises(NoStoreError):
        SQLiteStore(empty_file, create=False)

    assert empty_file.read_bytes() == b""
    assert sorted(p.name for p in empty_file.parent.iterdir()) == [empty_file.name]


async def test_create_false_opens_an_existing_store(db_path: Path) -> None:
    writer = SQLiteStore(db_path)
    await writer.upsert(_doc("https://a.test/x", markdown="kept walrus"), _meta())
    await writer.close()

    reader = open_store(str(db_path), create=False)
    try:
        assert len(await reader.search("walrus")) == 1
    finally:
        await reader.close()


def test_open_store_with_create_false_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(NoStoreError):
        open_store(f"sqlite:///{tmp_path}/missing.db", create=False)
    assert list(tmp_path.iterdir()) == []


async def test_close_is_idempotent_and_later_calls_raise_store_error(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    await store.close()
    await store.close()

    assert "closed" in repr(store)
    with pytest.raises(StoreError, match="closed"):
        await store.count()
    with pytest.raises(StoreError, match="closed"):
        await store.upsert(_doc("https://a.test/x"), _meta())


async def test_a_memory_store_works_and_is_private(db_path: Path) -> None:
    one = SQLiteStore(MEMORY)
    two = SQLiteStore(MEMORY)
    try:
        await one.upsert(_doc("https://a.test/x", markdown="walrus"), _meta())
        assert len(await one.search("walrus")) == 1
        assert await two.count() == 0
    finally:
        await one.close()
        await two.close()


# -- open_store --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "relative_file"),
    [
        ("{tmp}/plain.db", "plain.db"),
        ("{tmp}/made/on/demand/nested.db", "made/on/demand/nested.db"),
        ("sqlite:///{tmp}/url.db", "url.db"),
        ("sqlite:///{tmp}/with%20space.db", "with space.db"),
        ("relative.db", "relative.db"),
        ("sqlite:///relative-url.db", "relative-url.db"),
    ],
)
async def test_open_store_accepts_paths_and_sqlite_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, location: str, relative_file: str
) -> None:
    monkeypatch.chdir(tmp_path)
    # "sqlite:///" + an absolute path gives the SQLAlchemy four-slash form.
    store: Store = open_store(location.format(tmp=tmp_path))
    try:
        await store.upsert(_doc("https://a.test/x"), _meta())
    finally:
        await store.close()

    assert (tmp_path / relative_file).is_file()


@pytest.mark.parametrize("location", [":memory:", "sqlite://", "sqlite:///:memory:"])
async def test_open_store_memory_forms(location: str) -> None:
    store = open_store(location)
    try:
        assert isinstance(store, SQLiteStore)
        assert store.location == MEMORY
        await store.upsert(_doc("https://a.test/x"), _meta())
        assert await store.count() == 1
    finally:
        await store.close()


@pytest.mark.parametrize(
    "location",
    ["", "   ", "mysql://db/x", "sqlite://host/x.db", "sqlite:///x.db?mode=ro"],
)
def test_open_store_refuses_locations_it_cannot_serve(location: str) -> None:
    with pytest.raises(ConfigError):
        open_store(location)


async def test_a_store_made_before_sections_is_sectioned_when_opened(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteStore(db_path)
    await store.upsert(_doc("https://a.test/x", "Old", "# Walrus {#w}\n\nold walrus text"), _meta())
    await store.close()
    with contextlib.closing(_raw(db_path)) as conn:  # as a version 3 store leaves it
        conn.execute("DELETE FROM sections")
        conn.execute("UPDATE documents SET sections_version = 0")
        conn.commit()

    reopened = SQLiteStore(db_path)
    try:
        with caplog.at_level(logging.WARNING):
            (hit,) = await reopened.search("walrus")
        assert hit.anchor_url == "https://a.test/x#w"
        # The one-off re-cut says so (a large store would seem to hang); reindex does not.
        assert [r.getMessage() for r in caplog.records] == [
            f"{db_path}: cutting 1 documents into search sections again "
            "(this sitelore splits them differently; once)"
        ]
        caplog.clear()
        assert await reopened.reindex() == 1
        assert len(await reopened.search("walrus")) == 1
        assert caplog.records == []
    finally:
        await reopened.close()


async def test_two_stores_writing_one_url_at_once_leave_one_page(db_path: Path) -> None:
    """Each upsert is one IMMEDIATE transaction: the second writer sees the first's row."""

    def write(markdown: str) -> tuple[bool, str]:
        async def go() -> tuple[bool, str]:
            store = SQLiteStore(db_path)
            try:
                result = await store.upsert(_doc("https://a.test/race", "R", markdown), _meta())
                return result.created, result.id
            finally:
                await store.close()

        return asyncio.run(go())

    SQLiteStore(db_path)  # checks the location only
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(write, ["same text", "same text"]))

    assert sorted(created for created, _ in results) == [False, True]
    store = SQLiteStore(db_path)
    try:
        assert await store.count() == 1
        assert len(await store.search("same")) == 1
    finally:
        await store.close()


_WRITER = """
import asyncio, sys
from datetime import UTC, datetime
from sitelore.core.models import Document, FetchMeta
from sitelore.adapters.store import SQLiteStore

async def main() -> None:
    store = SQLiteStore(sys.argv[1])
    meta = FetchMeta(status=200, content_type="text/html", fetched_at=datetime.now(UTC))
    for round_ in range(int(sys.argv[3])):
        text = f"# Part\\n\\nwriter{sys.argv[2]} round{round_} " + "filler " * 2000
        await store.upsert(Document(url="https://a.test/race", title="R", markdown=text), meta)
    await store.close()

asyncio.run(main())
"""


async def test_processes_writing_one_url_at_once_all_succeed_and_leave_one_page(
    db_path: Path,
) -> None:
    """Issue 14, SQLite side: four processes upserting one URL over and over all exit 0;
    one row is left and its sections are those of the text stored last."""
    await SQLiteStore(db_path).close()  # created once, so the writers only write
    writers = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", _WRITER, str(db_path), str(n), "8", stderr=asyncio.subprocess.PIPE
        )
        for n in range(4)
    ]
    outcomes = [(await w.wait(), (await w.stderr.read()).decode()) for w in writers if w.stderr]
    assert outcomes == [(0, "")] * 4

    store = SQLiteStore(db_path)
    try:
        assert await store.count() == 1
        (hit,) = await store.search("filler")
        kept = await store.get(hit.id)
        assert kept is not None
        (winner,) = re.findall(r"writer\d", kept.markdown)
        found = {f"writer{n}": len(await store.search(f"writer{n}")) for n in range(4)}
        assert found == {f"writer{n}": int(f"writer{n}" == winner) for n in range(4)}
    finally:
        await store.close()
