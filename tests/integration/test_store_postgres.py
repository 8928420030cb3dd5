"""The PostgreSQL store on a real server: upserts, search like SQLite's, migrations, failures.

Each module run creates its own database and drops it at the end; every test starts
from an empty table. The last tests check the word splitting behind search and
snippets (``_pg_text``) and need no database.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import unicodedata
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fakes import FakeClock
from tests.scale_support import temp_database

from sitelore.adapters.store import PostgresStore, SQLiteStore, document_id, open_store
from sitelore.adapters.store._pg_text import (
    MAX_WORD_CHARS,
    index_text,
    split_words,
    stem_prefix,
)
from sitelore.adapters.store._snippet import CHUNK_CHARS, chunks
from sitelore.adapters.store.postgres import PG_SCHEMA_VERSION
from sitelore.core.errors import ConfigError, SchemaVersionError
from sitelore.core.models import Document, FetchMeta

_T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _doc(url: str, title: str = "A page", markdown: str = "Some body text.") -> Document:
    return Document(url=url, title=title, markdown=markdown)


def _meta(status: int = 200, etag: str | None = None) -> FetchMeta:
    return FetchMeta(status=status, content_type="text/html", fetched_at=_T0, etag=etag)


@pytest.fixture
async def store(pg_database: str) -> AsyncIterator[PostgresStore]:
    opened = PostgresStore(pg_database, now=FakeClock(start=0, tick=1).now)
    await opened.open()
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("TRUNCATE sitelore_documents CASCADE")
    yield opened
    await opened.close()


#: How many times each URL was upserted (a redelivery shows as a count above 1).
FETCH_COUNTS = "SELECT url, fetch_count FROM sitelore_documents ORDER BY url"


def _sql(pg_database: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        cur = conn.execute(query)
        return cur.fetchall() if cur.description is not None else []


# -- upsert ------------------------------------------------------------------------------


async def test_a_new_document_gets_the_same_id_as_in_sqlite(store: PostgresStore) -> None:
    result = await store.upsert(_doc("https://a.test/x", "Title", "Body"), _meta(etag='"v1"'))

    assert result.id == document_id("https://a.test/x")
    assert (result.created, result.changed) == (True, True)
    stored = await store.get("https://a.test/x")
    assert stored is not None
    assert (stored.title, stored.markdown, stored.etag) == ("Title", "Body", '"v1"')
    assert stored.fetched_at == _T0
    assert stored.fetched_at.tzinfo is not None


async def test_an_unchanged_page_updates_fetch_metadata_only(
    store: PostgresStore, pg_database: str
) -> None:
    await store.upsert(_doc("https://a.test/x"), _meta(etag='"v1"'))
    before = _sql(pg_database, "SELECT tsv::text, updated_at FROM sitelore_documents")

    result = await store.upsert(_doc("https://a.test/x"), _meta(status=203, etag='"v2"'))

    assert (result.created, result.changed) == (False, False)
    assert _sql(pg_database, "SELECT tsv::text, updated_at FROM sitelore_documents") == before
    stored = await store.get("https://a.test/x")
    assert stored is not None
    assert (stored.status, stored.etag) == (203, '"v2"')
    assert _sql(pg_database, FETCH_COUNTS) == [("https://a.test/x", 2)]


async def test_changed_content_keeps_the_id_and_reindexes(store: PostgresStore) -> None:
    first = await store.upsert(_doc("https://a.test/x", markdown="old words"), _meta())
    second = await store.upsert(_doc("https://a.test/x", markdown="new words"), _meta())

    assert second.id == first.id
    assert (second.created, second.changed) == (False, True)
    assert await store.search("old") == []
    assert [hit.id for hit in await store.search("new")] == [first.id]


async def test_racing_upserts_of_one_url_leave_one_row(
    store: PostgresStore, pg_database: str
) -> None:
    others = [PostgresStore(pg_database) for _ in range(4)]
    try:
        results = await asyncio.gather(
            *(
                s.upsert(_doc("https://a.test/race", markdown=f"v{i}"), _meta())
                for i, s in enumerate(others)
            )
        )
    finally:
        for other in others:
            await other.close()

    assert sum(result.created for result in results) == 1
    assert {result.id for result in results} == {document_id("https://a.test/race")}
    assert await store.count() == 1
    assert _sql(pg_database, FETCH_COUNTS) == [("https://a.test/race", 4)]


async def test_a_huge_body_is_stored_whole_and_indexed_up_to_the_cap(
    store: PostgresStore,
) -> None:
    words = " ".join(f"w{i:07d}" for i in range(250_000))  # ~2.25 MB of distinct words
    result = await store.upsert(_doc("https://a.test/big", markdown="early " + words), _meta())

    stored = await store.get(result.id)
    assert stored is not None
    assert len(stored.markdown) == len("early " + words)
    assert [hit.id for hit in await store.search("early")] == [result.id]
    assert await store.search("w0249999") == []  # past the indexing cap


# -- search ------------------------------------------------------------------------------


async def test_a_title_hit_outranks_a_body_hit(store: PostgresStore) -> None:
    body = await store.upsert(
        _doc("https://a.test/b", "Notes", "The crawler visits pages."), _meta()
    )
    filler = " ".join(f"filler{i}" for i in range(60))
    title = await store.upsert(_doc("https://a.test/t", "Crawler guide", filler), _meta())

    hits = await store.search("crawler")

    assert [hit.id for hit in hits] == [title.id, body.id]
    assert hits[0].score < hits[1].score


async def test_the_snippet_marks_the_matched_word(store: PostgresStore) -> None:
    filler = " ".join(f"word{i}" for i in range(200))
    await store.upsert(_doc("https://a.test/x", "T", f"{filler} the robots file {filler}"), _meta())

    (hit,) = await store.search("robots")

    assert "**robots**" in hit.snippet
    assert len(hit.snippet) < 300


# -- snippets ----------------------------------------------------------------------------

_W = " ".join(f"w{i}" for i in range(40))


@pytest.mark.parametrize(
    ("title", "markdown", "query"),
    [
        pytest.param("T", f"{_W} the robots.txt file; {_W}", "robots.txt", id="middle-phrase"),
        pytest.param("T", f"{_W} robots end. ", "robots", id="near-the-end"),
        pytest.param("T", f"  ...start robots then {_W}", "robots", id="at-the-start"),
        pytest.param("Robots", f"nothing here {_W}", "robots", id="title-only"),
        pytest.param("Robots guide", f"{_W} robots {_W}", "robots", id="title-wins-ties"),
        pytest.param("T", f"One. {_W}. Then: a crawler, {_W}", "crawler", id="sentence-start"),
        pytest.param("T", f"{_W}, the robots.txt file; w1 w2", "w1 robots", id="two-words"),
        pytest.param("T", f"robots {'x ' * 5}robots txt {_W}", "robots", id="repeats"),
        pytest.param("T", f"{_W} robots robots.txt robots {_W}", "robots.txt robots", id="overlap"),
        pytest.param("T", f"{_W} Le CAFÉ, les cafés. Tiếng Việt {_W}", "cafe viet", id="folded"),
        pytest.param(
            "T", unicodedata.normalize("NFD", f"{_W} Tiếng Việt {_W}"), "viet", id="decomposed"
        ),
        pytest.param("T", f"{_W} running runners ran {_W}", "runs", id="stemmed"),
        pytest.param("T", f"{_W} version 1e9e here", "1e9e", id="split-by-postgresql"),
        pytest.param("T", f"{_W} 3.14, pi {_W}", "3.14", id="number"),
    ],
)
async def test_snippets_are_the_ones_sqlite_cuts(
    store: PostgresStore, title: str, markdown: str, query: str
) -> None:
    sqlite = SQLiteStore(":memory:")
    try:
        await sqlite.upsert(_doc("https://a.test/x", title, markdown), _meta())
        (expected,) = await sqlite.search(query)
    finally:
        await sqlite.close()
    await store.upsert(_doc("https://a.test/x", title, markdown), _meta())

    (hit,) = await store.search(query)

    assert "**" in expected.snippet or query not in markdown  # a title-only hit: text unmarked
    assert hit.snippet == expected.snippet


async def test_a_match_far_into_a_long_page_is_shown_and_marked(store: PostgresStore) -> None:
    far = " ".join(f"w{i}" for i in range(6000))  # ~40,000 characters: past the first pieces
    await store.upsert(_doc("https://a.test/x", "T", f"{far} the Café {far}"), _meta())

    (hit,) = await store.search("cafe")

    assert "**Café**" in hit.snippet
    assert len(hit.snippet) < 200


async def test_a_word_deep_in_a_long_page_is_shown_in_its_section(
    store: PostgresStore,
) -> None:
    """Snippets come from the matching section, however far into the page it starts."""
    filler = "\n\n".join("filler words here " * 30 for _ in range(400))
    markdown = f"# Top\n\n{filler}\n\n## Deep {{#deep}}\n\nthe late word\n"
    await store.upsert(_doc("https://a.test/x", "T", markdown), _meta())

    (hit,) = await store.search("late")

    assert hit.snippet == "the **late** word"
    assert hit.anchor_url == "https://a.test/x#deep"
    assert hit.heading_path == ("Top", "Deep")


async def test_a_snippet_stays_short_whatever_the_page_holds(store: PostgresStore) -> None:
    markdown = "=" * 5000 + " robots " + "-" * 5000 + " " + "y" * 5000
    await store.upsert(_doc("https://a.test/x", "T", markdown), _meta())

    (hit,) = await store.search("robots")

    assert "**robots**" in hit.snippet
    assert len(hit.snippet) < 300  # long runs of one character are cut short with "…"


async def test_a_stem_keeps_the_start_of_its_word(store: PostgresStore, pg_database: str) -> None:
    """stem_prefix() trusts Porter to keep all but the stem's last letter from the word."""
    words = [
        "sensibility", "happiness", "happy", "hoping", "hopping", "generalizations",
        "relational", "agreed", "ies", "being", "running", "conflated", "controlling",
        "formalities", "electrical", "hopefulness", "3", "v1", "a", "Việt",
    ]  # fmt: skip
    rows = _sql(
        pg_database,
        "SELECT w, array_to_string(tsvector_to_array(to_tsvector('sitelore_text', w)), ' ') "
        "FROM unnest(ARRAY[" + ", ".join(f"'{word.lower()}'" for word in words) + "]) AS w",
    )

    assert len(rows) == len(words)
    for word, stem in rows:
        prefix = stem_prefix(str(stem))
        assert prefix is not None, (word, stem)
        assert str(word).startswith(prefix), (word, stem)


# -- the words behind search and snippets (no pg_database) ------------------------------------

#: Letters that fold into two words (a letter and a spacing mark): split_words() folds
#: them one by one, so its words stay lined up with the text but differ from the index's.
_TWO_WORD_LETTERS = "\u0b94\u1b06\u1b08\u1b0a\u1b0c\u1b0e\u1b12"


def _reference_fold(text: str) -> str:
    """The folding rule, written plainly: lower case, decompose, drop nonspacing marks."""
    decomposed = unicodedata.normalize("NFD", text.lower())
    return "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")


def test_folding_is_lower_case_without_combining_marks_for_every_character() -> None:
    every = " ".join(chr(i) for i in range(0x30000) if not 0xD800 <= i < 0xE000)

    expected = [w for w in re.findall(r"[^\W_]+", _reference_fold(every)) if len(w) <= 255]
    assert index_text(every, max_chars=10**9).split() == expected


@given(st.text(alphabet=st.characters(blacklist_characters=_TWO_WORD_LETTERS), max_size=60))
def test_split_words_gives_back_the_text_and_the_indexed_words(text: str) -> None:
    words = split_words(text)

    assert len(words.gaps) == len(words.tokens) + 1 == len(words.folded) + 1
    rebuilt = "".join(
        gap + token for gap, token in zip(words.gaps, [*words.tokens, ""], strict=True)
    )
    assert rebuilt == text
    kept = [word for word in words.folded if len(word) <= MAX_WORD_CHARS]
    assert kept == index_text(text, max_chars=10**9).split()


@pytest.mark.parametrize("more", [False, True])
def test_a_long_body_is_read_in_pieces_cut_between_words(more: bool) -> None:
    rng = random.Random(7)
    spellings = ["word", "Vie\u0323\u0302t", "café", "x" * 300, "a.b", "\u0301", "  ", ".\n\n"]
    text = "".join(rng.choice(spellings) + rng.choice(" ,;") for _ in range(3000))

    pieces = list(chunks(text, more=more))

    assert [(piece.head, piece.whole) for piece in pieces] == [
        (i == 0, i == len(pieces) - 1 and not more) for i in range(len(pieces))
    ]
    rebuilt = [
        "".join(g + t for g, t in zip(p.words.gaps, [*p.words.tokens, ""], strict=True))
        for p in pieces
    ]
    assert "".join(rebuilt) == text
    assert all(CHUNK_CHARS - 400 < len(piece) <= CHUNK_CHARS for piece in rebuilt[:-1])
    assert [w for p in pieces for w in p.words.folded] == split_words(text).folded


@pytest.mark.parametrize(
    ("text", "tokens", "folded"),
    [
        ("Robots.txt: the Café's", ["Robots", "txt", "the", "Café", "s"], None),
        ("Vie\u0323\u0302t nam", ["Vie\u0323\u0302t", "nam"], ["viet", "nam"]),
        ("\u0301a \u0301", ["a"], ["a"]),
        ("ΛΟΓΟΣ, ΛΟΓΟΣ.Λ", ["ΛΟΓΟΣ", "ΛΟΓΟΣ", "Λ"], ["λογος", "λογοσ", "λ"]),  # as lower()
        ("x\u0b94y z", ["x\u0b94y", "z"], ["x\u0b92\u0bd7y", "z"]),
        ("", [], []),
    ],
)
def test_split_words_keeps_each_word_as_written(
    text: str, tokens: list[str], folded: list[str] | None
) -> None:
    words = split_words(text)

    assert words.tokens == tokens
    if folded is not None:
        assert words.folded == folded


@pytest.mark.parametrize(
    ("stored", "query"),
    [
        ("we are running the crawler", "run"),
        ("a café on the corner", "cafe"),
        ("a cafe on the corner", "CAFÉ"),
        ("Straße und Weg", "straße"),
        ("Tiếng Việt", "viet"),
        ("to be or not to be", "not"),
        ("read robots.txt first", "robots.txt"),
    ],
)
async def test_search_matches_what_the_sqlite_store_matches(
    store: PostgresStore, stored: str, query: str
) -> None:
    result = await store.upsert(_doc("https://a.test/x", markdown=stored), _meta())
    sqlite = SQLiteStore(":memory:")
    try:
        in_sqlite = await sqlite.upsert(_doc("https://a.test/x", markdown=stored), _meta())
        assert [h.id for h in await sqlite.search(query)] == [in_sqlite.id]
    finally:
        await sqlite.close()

    assert [hit.id for hit in await store.search(query)] == [result.id]


async def test_more_words_and_whole_phrases_rank_first(store: PostgresStore) -> None:
    """Any word may match (was: every word); the phrase of a dotted name ranks first."""
    both = await store.upsert(_doc("https://a.test/1", markdown="alpha beta robots txt"), _meta())
    one = await store.upsert(
        _doc("https://a.test/2", markdown="alpha gamma txt of robots"), _meta()
    )

    assert [hit.id for hit in await store.search("alpha beta")] == [both.id, one.id]
    assert [hit.id for hit in await store.search("robots.txt")] == [both.id, one.id]


@pytest.mark.parametrize(
    "query",
    [
        "NOT",
        "a OR",
        '"',
        "alpha*",
        "title:x",
        "(",
        "-x",
        "!",
        "&",
        "|",
        "<->",
        "'",
        "\\",
        "alpha\0beta",
        "\ud800",
        "日本語のテキスト",
        "' ; DROP TABLE sitelore_documents; --",
        "a" * 5000,
    ],
)
async def test_hostile_queries_never_raise(store: PostgresStore, query: str) -> None:
    await store.upsert(_doc("https://a.test/x", "Alpha", "alpha beta x title"), _meta())

    assert isinstance(await store.search(query), list)
    assert await store.count() == 1


@pytest.mark.parametrize("query", ["", " ", "\t\n", "!!!", "🕷️"])
async def test_a_query_without_words_finds_nothing(store: PostgresStore, query: str) -> None:
    await store.upsert(_doc("https://a.test/x"), _meta())

    assert await store.search(query) == []


async def test_search_honours_the_limit(store: PostgresStore) -> None:
    for i in range(5):
        await store.upsert(_doc(f"https://a.test/{i}", markdown=f"common {i}"), _meta())

    assert len(await store.search("common", limit=3)) == 3
    assert await store.search("common", limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        await store.search("common", limit=-1)


# -- get, list, delete, count --------------------------------------------------------------


async def test_get_list_delete_and_count(store: PostgresStore) -> None:
    a = await store.upsert(_doc("https://a.test/a"), _meta())
    b = await store.upsert(_doc("https://a.test/b"), _meta())

    assert [d.id for d in await store.list()] == [b.id, a.id]  # most recently updated first
    assert [d.id for d in await store.list(limit=1, offset=1)] == [a.id]
    assert (await store.get(a.id)) == (await store.get("https://a.test/a"))
    assert await store.get("https://a.test/none") is None
    assert await store.delete(a.id) is True
    assert await store.delete("https://a.test/a") is False
    assert await store.count() == 1
    with pytest.raises(ValueError, match="limit"):
        await store.list(limit=-1)


# -- schema, connections ---------------------------------------------------------------------


async def test_documents_without_sections_are_sectioned_on_open_and_by_reindex(
    store: PostgresStore, pg_database: str, caplog: pytest.LogCaptureFixture
) -> None:
    await store.upsert(_doc("https://a.test/x", "Old", "# Walrus {#w}\n\nold walrus"), _meta())
    _sql(pg_database, "DELETE FROM sitelore_sections")  # as a store made before sections
    _sql(pg_database, "UPDATE sitelore_documents SET sections_version = 0")

    reopened = PostgresStore(pg_database)
    try:
        with caplog.at_level(logging.WARNING):
            await reopened.open()
        (notice,) = [r.getMessage() for r in caplog.records]
        assert "cutting 1 documents into search sections again" in notice
        (hit,) = await reopened.search("walrus")
        assert hit.anchor_url == "https://a.test/x#w"
        caplog.clear()
        assert await reopened.reindex() == 1
        assert caplog.records == []
        assert len(await reopened.search("walrus")) == 1
    finally:
        await reopened.close()


async def test_two_workers_storing_one_url_at_once_both_succeed(
    store: PostgresStore, pg_database: str
) -> None:
    """Issue 14: a conflict on the unique id (the URL's hash) is the same URL, not an error."""
    pair = [PostgresStore(pg_database), PostgresStore(pg_database)]
    try:
        await asyncio.gather(*(s.open() for s in pair))
        for round_ in range(20):
            url = f"https://a.test/race{round_}"
            results = await asyncio.gather(
                *(s.upsert(_doc(url, markdown=f"same {round_}"), _meta()) for s in pair)
            )
            assert sorted(r.created for r in results) == [False, True]
            assert {r.id for r in results} == {document_id(url)}
    finally:
        for other in pair:
            await other.close()

    assert await store.count() == 20
    assert len(await store.search("same")) == 10  # sections kept once per page
    assert _sql(pg_database, "SELECT count(*) FROM sitelore_sections") == [(20,)]


async def test_a_fresh_database_is_migrated_once_by_racing_stores() -> None:
    with temp_database() as url:
        stores = [PostgresStore(url) for _ in range(3)]
        try:
            await asyncio.gather(*(s.open() for s in stores))
            assert _sql(url, "SELECT version FROM sitelore_schema") == [(PG_SCHEMA_VERSION,)]
        finally:
            for s in stores:
                await s.close()


async def test_a_newer_schema_is_refused_and_left_untouched() -> None:
    with temp_database() as url:
        _sql(url, "CREATE TABLE sitelore_schema (version integer NOT NULL)")
        _sql(url, f"INSERT INTO sitelore_schema VALUES ({PG_SCHEMA_VERSION + 1})")
        store = PostgresStore(url)
        with pytest.raises(SchemaVersionError, match="newer"):
            await store.open()
        await store.close()
        tables = _sql(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        assert tables == [("sitelore_schema",)]


async def test_an_unreachable_server_is_a_config_error_without_the_password() -> None:
    store = PostgresStore("postgresql://bob:hunter2@127.0.0.1:1/x", connect_timeout=2)
    with pytest.raises(ConfigError, match="cannot connect") as caught:
        await store.count()
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in repr(store)
    await store.close()


async def test_a_closed_store_refuses_calls(pg_database: str) -> None:
    store = PostgresStore(pg_database)
    await store.count()
    await store.close()
    await store.close()
    with pytest.raises(Exception, match="closed"):
        await store.count()


@pytest.mark.parametrize(
    "location",
    [
        "postgresql://user:secret@db.example/sitelore",
        "postgres://user:secret@db.example/sitelore",
        "postgresql+psycopg://user:secret@db.example/sitelore",
    ],
)
async def test_open_store_serves_postgresql_urls_and_hides_the_password(location: str) -> None:
    store = open_store(location)

    assert isinstance(store, PostgresStore)
    assert "secret" not in repr(store)
    assert store.location == "postgresql://***@db.example/sitelore"
    await store.close()
