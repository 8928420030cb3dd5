"""Section vectors as a store contract: the same pending sets, counts and fused order on both.

Each test runs on SQLite and on PostgreSQL (skipped without one, failed under
``CI=true``). Vectors come from a keyword table (no model needed), so the expected
orders are written out; ranking needs numpy, part of the ``semantic`` extra: without
it these tests skip, saying so.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from sitelore.adapters.store import PostgresStore, SQLiteStore
from sitelore.adapters.store import _pg_vectors as pg_vectors
from sitelore.adapters.store._sqlite_vectors import MatrixCache, search_vectors
from sitelore.core.models import Document, FetchMeta
from sitelore.core.ports import SectionVectors

pytest.importorskip(
    "numpy", reason="the semantic extra is not installed (pip install 'sitelore[semantic]')"
)

#: Both stores, typed as the ports they implement (mypy checks both do).
Both = SQLiteStore | PostgresStore


def _both_keep_vectors(sqlite: SQLiteStore, postgres: PostgresStore) -> list[SectionVectors]:
    """The static check (mypy --strict) that both stores implement the port."""
    return [sqlite, postgres]


MODEL = "keywords"
CATS = "https://v.test/cats"
DOGS = "https://v.test/dogs"
BOATS = "https://v.test/boats"
PAGES = {
    CATS: ("Feline care", "## Grooming {#grooming}\n\nBrush a kitten gently every week."),
    DOGS: ("Canine care", "## Walks {#walks}\n\nA puppy needs a walk twice a day."),
    BOATS: ("Sailing", "## Rigging {#rigging}\n\nA boat needs care: check the rigging."),
}
#: The keyword table: a text's vector has 1 on each axis one of whose words it holds.
_AXES = (("kitten", "feline", "cat"), ("puppy", "canine", "dog"), ("boat", "sailing", "ship"))


def embed(text: str) -> list[float]:
    words = text.lower().replace(".", " ").replace(":", " ").split()
    raw = [float(any(word in words for word in axis)) for axis in _AXES]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def _meta() -> FetchMeta:
    return FetchMeta(
        status=200, content_type="text/html", fetched_at=datetime(2026, 1, 1, tzinfo=UTC)
    )


@pytest.fixture(params=["sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Both]:
    """An empty store of each kind holding the three pages."""
    opened: Both
    if request.param == "sqlite":
        opened = SQLiteStore(tmp_path / "store.db")
    else:
        database: str = request.getfixturevalue("pg_database")
        opened = PostgresStore(database)
        await opened.open()
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute("TRUNCATE sitelore_documents CASCADE")
    try:
        for url, (title, markdown) in PAGES.items():
            await opened.upsert(Document(url=url, title=title, markdown=markdown), _meta())
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def another(store: Both, request: pytest.FixtureRequest) -> AsyncIterator[Both]:
    """A second store object on the same file or database (as another process has)."""
    other: Both
    if isinstance(store, SQLiteStore):
        other = SQLiteStore(store.location)
    else:
        other = PostgresStore(request.getfixturevalue("pg_database"))
    try:
        yield other
    finally:
        await other.close()


async def _embed_all(store: Both, model: str = MODEL) -> int:
    items = await store.pending_vectors(model, 100)
    await store.put_vectors(model, [(key, embed(text)) for key, text in items])
    return len(items)


async def test_sections_wait_for_vectors_until_they_are_put(store: Both) -> None:
    assert await store.vector_counts(MODEL) == (0, 3)
    pending = await store.pending_vectors(MODEL, 100)
    assert len(pending) == 3
    assert any("Feline care" in text and "Grooming" in text for _, text in pending)

    assert await _embed_all(store) == 3

    assert await store.pending_vectors(MODEL, 100) == []
    assert await store.vector_counts(MODEL) == (3, 3)
    assert await store.vector_counts("another-model") == (0, 3)
    assert len(await store.pending_vectors("another-model", 2)) == 2  # limit holds


async def test_hybrid_search_finds_by_meaning_what_no_word_matches(
    store: Both,
) -> None:
    await _embed_all(store)

    assert await store.search("cat", limit=5) == []
    hits = await store.hybrid_search("cat", embed("cat"), MODEL, limit=5)

    assert [hit.url for hit in hits] == [CATS, DOGS, BOATS]  # the rest: equally far
    assert hits[0].anchor_url == f"{CATS}#grooming"


async def test_fusion_ranks_a_page_both_rankings_find_first(store: Both) -> None:
    await _embed_all(store)
    # Lexically "care" is in all three pages; by meaning the question is about dogs.
    query = "canine care"

    hits = await store.hybrid_search(query, embed("dog"), MODEL, limit=5)

    assert [hit.url for hit in hits] == [DOGS, CATS, BOATS]


async def test_a_changed_page_loses_its_vectors_and_waits_again(store: Both) -> None:
    await _embed_all(store)
    assert DOGS in [hit.url for hit in await store.hybrid_search("x", embed("dog"), MODEL)]
    title, markdown = PAGES[BOATS]
    changed = Document(url=BOATS, title=title, markdown=markdown + "\n\n## Knots\n\nA ship knot.")
    await store.upsert(changed, _meta())

    assert await store.vector_counts(MODEL) == (2, 4)
    assert len(await store.pending_vectors(MODEL, 100)) == 2
    assert await store.delete(DOGS)
    assert await store.vector_counts(MODEL) == (1, 3)
    hits = await store.hybrid_search("puppy", embed("puppy"), MODEL, limit=5)
    assert DOGS not in [hit.url for hit in hits]


async def test_vectors_of_another_length_are_ignored(store: Both) -> None:
    await _embed_all(store)

    hits = await store.hybrid_search("zebra", [1.0, 0.0], MODEL, limit=5)

    assert hits == []


@pytest.mark.parametrize("limit", [0, 1])
async def test_hybrid_search_keeps_the_limit(store: Both, limit: int) -> None:
    await _embed_all(store)

    hits = await store.hybrid_search("sailing rigging", embed("boat"), MODEL, limit=limit)

    assert [hit.url for hit in hits] == [BOATS][:limit]


async def test_the_kept_matrix_ranks_as_a_fresh_read_ties_to_the_lower_key(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "v.db")
    rows = [[0.6, 0.8, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.6, 0.8, 0.0]]
    for number in range(1, len(rows) + 1):
        page = Document(url=f"https://v.test/{number}", title="t", markdown=f"page {number}")
        await store.upsert(page, _meta())
    keys = sorted(key for key, _ in await store.pending_vectors(MODEL, 10))
    await store.put_vectors(MODEL, list(zip(keys, rows, strict=True)))
    await store.close()
    conn = sqlite3.connect(tmp_path / "v.db")
    conn.row_factory = sqlite3.Row
    cache = MatrixCache()
    query = [0.8, 0.6, 0.0]

    kept = search_vectors(conn, MODEL, query, 4, cache=cache)
    fresh = search_vectors(conn, MODEL, query, 4)

    expected = ["https://v.test/1", "https://v.test/5", "https://v.test/3", "https://v.test/2"]
    assert [c.url for c in kept] == [c.url for c in fresh] == expected
    assert [c.score for c in kept] == [c.score for c in fresh]
    assert cache.matrix(conn, MODEL, 3) is cache.matrix(conn, MODEL, 3)  # read once


async def test_a_search_sees_vectors_another_process_changed(store: Both, another: Both) -> None:
    writing = another
    await _embed_all(writing)
    before = await store.hybrid_search("zebra", embed("puppy"), MODEL, limit=5)
    boats = next(key for key, text in await writing.pending_vectors("other", 5) if "Sail" in text)

    await writing.put_vectors(MODEL, [(boats, embed("dog"))])
    after = await store.hybrid_search("zebra", embed("puppy"), MODEL, limit=5)
    await writing.delete(DOGS)  # its vectors go by cascade
    gone = await store.hybrid_search("zebra", embed("puppy"), MODEL, limit=5)

    assert [hit.url for hit in before] == [DOGS, CATS, BOATS]
    assert [hit.url for hit in after] == [DOGS, BOATS, CATS]
    assert [hit.url for hit in gone] == [BOATS, CATS]


async def test_the_postgres_matrix_is_kept_until_a_vector_changes(pg_database: str) -> None:
    store = PostgresStore(pg_database)
    await store.open()
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("TRUNCATE sitelore_documents CASCADE")
    cache = pg_vectors.MatrixCache()
    try:
        for url, (title, markdown) in PAGES.items():
            await store.upsert(Document(url=url, title=title, markdown=markdown), _meta())
        await _embed_all(store)
        async with store._connection("test") as conn:
            first = await cache.matrix(conn, MODEL, 3)
            # A page stored without vectors changes no vector: the matrix is kept.
            await store.upsert(Document(url=f"{CATS}/2", title="t", markdown="Other."), _meta())
            assert await cache.matrix(conn, MODEL, 3) is first
            with psycopg.connect(pg_database, autocommit=True) as other:
                other.execute("TRUNCATE sitelore_section_vectors")
            emptied = await cache.matrix(conn, MODEL, 3)
    finally:
        await store.close()

    assert len(first.keys) == 3
    assert len(emptied.keys) == 0


async def test_has_vectors_is_per_model(store: Both) -> None:
    assert not await store.has_vectors(MODEL)
    await _embed_all(store)
    assert await store.has_vectors(MODEL)
    assert not await store.has_vectors("another-model")
