"""The Store port as a contract: one sequence of operations, the same results on every store.

Each test runs twice, on SQLite (a file) and on PostgreSQL (a throw-away database on
127.0.0.1:5432; skipped without one, failed under ``CI=true``), and holds both to the
same expected values, written out here: ids, created/changed flags, list order, which
documents a query finds and in what order, removal, deletion and counts. Assigning
each store to a ``Store`` variable is the static check (mypy --strict) that both
implement the port; these tests are the behavioural one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import sqlite3
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from tests.fakes import FakeClock

from sitelore.adapters.store import PostgresStore, SQLiteStore, content_hash, document_id
from sitelore.core.errors import StoreError
from sitelore.core.models import Document, FetchMeta
from sitelore.core.ports import SectionVectors, Store
from sitelore.core.sections import with_sections

_T0 = datetime(2026, 1, 1, tzinfo=UTC)

ALPHA = "https://a.test/alpha"
OPS = "https://a.test/ops"
GAMMA = "https://b.test/gamma"

#: Three documents: one about alpha (in its title), one full of query-operator words,
#: one with diacritics, CJK, underscores and numbers.
DOCS = {
    ALPHA: (
        "Alpha guide",
        "alpha beta gamma. Robots.txt rules for the café, running runners. Operators.",
    ),
    OPS: (
        "Operators",
        "to be or not to be, near the alpha test: e-mail title:markdown NEAR(x) AND",
    ),
    GAMMA: ("Gamma", "gamma delta Việt 日本語のテキスト x_y snake_case 3.14 o'clock"),
}


def _meta(status: int = 200, etag: str | None = None) -> FetchMeta:
    return FetchMeta(status=status, content_type="text/html", fetched_at=_T0, etag=etag)


def _doc(url: str, *, links: tuple[str, ...] = ()) -> Document:
    title, markdown = DOCS[url]
    return Document(url=url, title=title, markdown=markdown, links=links)


@pytest.fixture(params=["sqlite", "postgresql"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    """Build another store of this test's kind over the same file or database.

    Each call is a separate store with its own connections, as separate workers or
    processes would have; the clock ticks one second per write.
    """
    if request.param == "sqlite":
        return lambda: SQLiteStore(tmp_path / "store.db", now=FakeClock(start=0, tick=1).now)
    database: str = request.getfixturevalue("pg_database")
    return lambda: PostgresStore(database, now=FakeClock(start=0, tick=1).now)


@pytest.fixture
async def store(
    request: pytest.FixtureRequest, make_store: Callable[[], Store]
) -> AsyncIterator[Store]:
    """An empty store of each kind, its clock ticking one second per write."""
    opened = make_store()
    if isinstance(opened, PostgresStore):
        await opened.open()
        with psycopg.connect(request.getfixturevalue("pg_database"), autocommit=True) as conn:
            conn.execute("TRUNCATE sitelore_documents CASCADE")
    try:
        yield opened
    finally:
        await opened.close()


async def _fill(store: Store) -> None:
    for url in DOCS:
        await store.upsert(_doc(url), _meta())


# -- writing, reading, listing, deleting -------------------------------------------------


async def test_upserts_report_creation_and_change_and_keep_the_id(store: Store) -> None:
    created = [await store.upsert(_doc(url), _meta(etag='"v1"')) for url in DOCS]
    assert [(r.id, r.created, r.changed) for r in created] == [
        (document_id(url), True, True) for url in DOCS
    ]
    assert await store.count() == 3

    same = await store.upsert(_doc(ALPHA), _meta(status=203, etag='"v2"'))
    assert (same.id, same.created, same.changed) == (document_id(ALPHA), False, False)
    changed = await store.upsert(
        Document(url=OPS, title="Operators", markdown="new words"), _meta()
    )
    assert (changed.id, changed.created, changed.changed) == (document_id(OPS), False, True)
    assert await store.count() == 3

    alpha = await store.get(ALPHA)
    assert alpha is not None
    # An unchanged page updates its fetch metadata, never its content or updated_at.
    assert (alpha.status, alpha.etag, alpha.title) == (203, '"v2"', "Alpha guide")
    assert alpha.content_hash == content_hash("Alpha guide", DOCS[ALPHA][1])
    assert alpha.created_at == alpha.updated_at == _T0 + timedelta(seconds=1)
    assert alpha.fetched_at == _T0
    ops = await store.get(OPS)
    assert ops is not None
    assert (ops.markdown, ops.created_at) == ("new words", _T0 + timedelta(seconds=2))
    assert ops.updated_at == _T0 + timedelta(seconds=5)


async def test_get_finds_by_id_or_url_and_nothing_else(store: Store) -> None:
    await _fill(store)

    by_url = await store.get(GAMMA)
    by_id = await store.get(document_id(GAMMA))

    assert by_url is not None
    assert by_url == by_id
    assert (by_url.id, by_url.url, by_url.title) == (document_id(GAMMA), GAMMA, "Gamma")
    assert by_url.markdown == DOCS[GAMMA][1]  # CJK and diacritics come back unchanged
    assert await store.get("https://b.test/missing") is None
    assert await store.get(document_id("https://b.test/missing")) is None
    assert await store.get("") is None


async def test_list_is_most_recently_updated_first_with_limit_and_offset(store: Store) -> None:
    await _fill(store)  # updated at t1, t2, t3
    await store.upsert(_doc(ALPHA), _meta(status=304))  # unchanged: not "updated"
    await store.upsert(Document(url=OPS, title="Operators", markdown="v2"), _meta())  # t5

    assert [d.url for d in await store.list()] == [OPS, GAMMA, ALPHA]
    assert [d.url for d in await store.list(limit=1, offset=1)] == [GAMMA]
    assert [d.url for d in await store.list(limit=2, offset=2)] == [ALPHA]
    assert await store.list(limit=0) == []
    assert await store.list(offset=3) == []
    with pytest.raises(ValueError, match="limit"):
        await store.list(limit=-1)


async def test_delete_by_url_or_id_once(store: Store) -> None:
    await _fill(store)

    assert await store.delete(ALPHA) is True
    assert await store.delete(document_id(ALPHA)) is False
    assert await store.delete(document_id(OPS)) is True
    assert await store.delete("https://a.test/never") is False

    assert await store.count() == 1
    assert [d.url for d in await store.list()] == [GAMMA]
    assert await store.get(ALPHA) is None
    assert await store.search("alpha") == []


# -- search --------------------------------------------------------------------------------

SEARCHES = [
    # Plain words; a title match ranks above a body match.
    pytest.param("alpha", [ALPHA, OPS], id="word-title-first"),
    pytest.param("gamma", [GAMMA, ALPHA], id="other-title-first"),
    pytest.param("operators", [OPS, ALPHA], id="title-only-above-body-only"),
    pytest.param("guide alpha", [ALPHA, OPS], id="any-word-may-match-more-rank-first"),
    pytest.param("Gamma delta", [GAMMA, ALPHA], id="case-folded"),
    pytest.param("how do I find the gamma?", [GAMMA, ALPHA], id="question-stop-words-dropped"),
    pytest.param("the to be", [OPS, ALPHA], id="only-stop-words-are-kept"),
    # Folding and stemming.
    pytest.param("CAFÉ", [ALPHA], id="diacritics-upper"),
    pytest.param("cafe", [ALPHA], id="diacritics-folded"),
    pytest.param("Việt", [GAMMA], id="vietnamese"),
    pytest.param("viet", [GAMMA], id="vietnamese-folded"),
    pytest.param("run", [ALPHA], id="stemmed"),
    pytest.param("日本語のテキスト", [GAMMA], id="cjk-run"),
    pytest.param("robots.txt", [ALPHA], id="dotted-word-as-phrase"),
    pytest.param("txt", [ALPHA], id="dotted-word-part"),
    pytest.param("e-mail", [OPS], id="hyphenated"),
    pytest.param("email", [], id="hyphen-is-a-separator"),
    pytest.param("snake_case", [GAMMA], id="underscore"),
    pytest.param("3.14", [GAMMA], id="number"),
    pytest.param("o'clock", [GAMMA], id="apostrophe"),
    # The document's words plus hostile syntax: the syntax is ignored, the word found.
    pytest.param('"alpha', [ALPHA, OPS], id="open-quote"),
    pytest.param('alpha"', [ALPHA, OPS], id="close-quote"),
    pytest.param("alpha*", [ALPHA, OPS], id="prefix-star"),
    pytest.param("(alpha", [ALPHA, OPS], id="open-paren"),
    pytest.param("alpha)", [ALPHA, OPS], id="close-paren"),
    pytest.param("alpha:", [ALPHA, OPS], id="column-colon"),
    pytest.param("-alpha", [ALPHA, OPS], id="minus"),
    pytest.param("^alpha", [ALPHA, OPS], id="caret"),
    pytest.param("+alpha", [ALPHA, OPS], id="plus"),
    pytest.param("alpha\0beta", [ALPHA, OPS], id="nul-separates"),
    pytest.param("alpha\ud800", [ALPHA, OPS], id="lone-surrogate"),
    # Operator words are plain words (or stop words): never syntax.
    pytest.param("alpha OR", [ALPHA, OPS], id="or-is-a-stop-word"),
    pytest.param("NOT alpha", [ALPHA, OPS], id="not-is-a-stop-word"),
    pytest.param("alpha NEAR", [OPS, ALPHA], id="near-is-a-word"),
    pytest.param("alpha AND", [ALPHA, OPS], id="and-is-a-stop-word"),
    pytest.param("NEAR(x)", [OPS, GAMMA], id="near-call"),
    pytest.param("title:markdown", [OPS], id="column-filter-is-text"),
    pytest.param("markdown:alpha", [OPS, ALPHA], id="column-filter-phrase-and-parts"),
    pytest.param("{title}: alpha", [OPS, ALPHA], id="column-set-is-text"),
    # Pure syntax finds nothing (and never raises).
    *(
        pytest.param(query, [], id=f"syntax-{i}")
        for i, query in enumerate(['"', '""', "*", "(", ")", "()", ":", "-", "^", "+", "{}"])
    ),
    pytest.param("\0", [], id="nul-only"),
    pytest.param("\ud800", [], id="surrogate-only"),
    pytest.param("", [], id="empty"),
    pytest.param(" \t\n\u3000", [], id="blank"),
]


@pytest.mark.parametrize(("query", "expected"), SEARCHES)
async def test_search_finds_the_same_documents_in_the_same_order(
    store: Store, query: str, expected: list[str]
) -> None:
    await _fill(store)

    hits = await store.search(query)

    assert [hit.url for hit in hits] == expected
    assert [hit.id for hit in hits] == [document_id(url) for url in expected]
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores)  # lower is better, best first
    assert [hit.title for hit in hits] == [DOCS[url][0] for url in expected]
    assert await store.count() == 3


def _marked(snippet: str) -> list[str]:
    """The texts a snippet marks with ``**``."""
    return re.findall(r"\*\*(.+?)\*\*", snippet, flags=re.DOTALL)


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ("alpha", "alpha"),
        ("gamma", "gamma"),
        ("Gamma delta", "delta"),
        ("operators", "operators"),
        ("run", "running"),
        ("snake_case", "snake"),
        ("o'clock", "clock"),
        ("e-mail", "mail"),
        ("CAFÉ", "café"),
        ("cafe", "café"),
        ("Việt", "Việt"),
        ("viet", "Việt"),
        ("robots.txt", "txt"),
        ("txt", "txt"),
        ("3.14", "3.14"),
        ("日本語のテキスト", "日本語のテキスト"),
    ],
)
async def test_the_snippet_shows_and_marks_the_matched_word(
    store: Store, query: str, shown: str
) -> None:
    """A hit's snippet holds the word that matched, as written, inside ``**`` marks.

    The words matched through folding or splitting (café/cafe, Việt, robots.txt, 3.14)
    are the ones PostgreSQL's own ``ts_headline`` could neither show nor mark.
    """
    await _fill(store)

    hits = await store.search(query)

    assert hits
    marked = [m.lower() for hit in hits for m in _marked(hit.snippet)]
    assert any(shown.lower() in m for m in marked), hits


async def test_a_snippet_is_a_short_window_around_the_match(store: Store) -> None:
    before = " ".join(f"before{i}" for i in range(300))
    after = " ".join(f"after{i}" for i in range(300))
    await store.upsert(
        Document(url=ALPHA, title="Long", markdown=f"{before} the café menu {after}"), _meta()
    )

    (hit,) = await store.search("cafe")

    assert _marked(hit.snippet) == ["café"]
    assert hit.snippet.startswith("…")
    assert hit.snippet.endswith("…")
    assert len(re.findall(r"[^\W_]+", hit.snippet)) == 16  # words, as SQLite's snippet(…, 16)
    assert "before299" in hit.snippet
    assert "after0" in hit.snippet


async def test_search_limit_keeps_the_best(store: Store) -> None:
    await _fill(store)

    assert [hit.url for hit in await store.search("alpha", limit=1)] == [ALPHA]
    assert await store.search("alpha", limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        await store.search("alpha", limit=-1)


# -- removal (re-crawls) -----------------------------------------------------------------


async def test_a_removed_document_leaves_search_until_it_is_stored_again(store: Store) -> None:
    await _fill(store)
    gone_at = _T0 + timedelta(days=3)

    assert await store.mark_removed(ALPHA, status=410, at=gone_at) == document_id(ALPHA)
    assert await store.mark_removed("https://a.test/never", status=404, at=gone_at) is None

    assert [hit.url for hit in await store.search("alpha")] == [OPS]
    removed = await store.get(ALPHA)
    assert removed is not None
    assert removed.removed_at == gone_at
    assert removed.markdown == DOCS[ALPHA][1]  # kept
    assert await store.count() == 3
    known = await store.known_page(ALPHA)
    assert known is not None
    assert known.removed

    await store.upsert(_doc(ALPHA), _meta())  # the page is back: the flag is cleared
    assert [hit.url for hit in await store.search("alpha")] == [ALPHA, OPS]
    back = await store.get(ALPHA)
    assert back is not None
    assert back.removed_at is None


async def test_known_page_has_the_validators_and_links_of_exactly_that_url(store: Store) -> None:
    links = ("https://a.test/x", "https://a.test/y")
    await store.upsert(_doc(ALPHA, links=links), _meta(etag='"e1"'))

    known = await store.known_page(ALPHA)

    assert known is not None
    assert (known.id, known.url, known.etag, known.links) == (
        document_id(ALPHA),
        ALPHA,
        '"e1"',
        links,
    )
    assert not known.removed
    assert await store.known_page(ALPHA + "/") is None
    assert await store.known_page(OPS) is None


# -- sections: the unit of retrieval ----------------------------------------------------------

_GUIDE = "https://c.test/guide.html"
_GUIDE_MD = """Intro of the client guide.

# Client guide {#guide}

How to make requests with the client.

## Timeouts {#timeouts}

Set a timeout in seconds; a request that takes longer raises an error.
See [json](https://c.test/library/json.html) for `os.path.exists` and `jsonb_set`.

## Retries {#retries}

The client retries idempotent requests with backoff.

```python
client.get(url, retries=3)
```
"""
_RUST = "https://c.test/rust.html"
_RUST_MD = "# HashMap {#hashmap}\n\nUse `HashMap::entry` to insert or update a key in place.\n"
_HUB = "https://c.test/genindex.html"
_HUB_MD = "# Index\n\n" + "\n".join(
    f"- [timeout {i}](https://c.test/p{i}.html#timeout) [request {i}](https://c.test/r{i}.html)"
    for i in range(30)
)
_PLAIN = "https://c.test/notes.html"
_PLAIN_MD = "Notes: a timeout is the time a request may take."


async def _fill_sections(store: Store) -> None:
    for url, title, markdown in (
        (_GUIDE, "Client guide", _GUIDE_MD),
        (_RUST, "HashMap", _RUST_MD),
        (_HUB, "Index", _HUB_MD),
        (_PLAIN, "Notes", _PLAIN_MD),
    ):
        await store.upsert(Document(url=url, title=title, markdown=markdown), _meta())


async def test_a_question_is_answered_by_a_section_with_its_heading_path_and_anchor(
    store: Store,
) -> None:
    await _fill_sections(store)

    hits = await store.search("how do I set a timeout for a request?")

    assert [hit.url for hit in hits] == [_GUIDE, _PLAIN, _HUB]  # the hub (mostly links) last
    best = hits[0]
    assert best.heading_path == ("Client guide", "Timeouts")
    assert best.anchor_url == f"{_GUIDE}#timeouts"
    assert best.section == 2
    section = _GUIDE_MD.encode()[best.start : best.end].decode()
    assert section.startswith("## Timeouts {#timeouts}")
    assert "Retries" not in section
    assert "**timeout**" in best.snippet
    assert "https://" not in best.snippet  # link targets are not indexed or shown
    assert "`" not in best.snippet


_VACUUMING = "https://e.test/routine-vacuuming.html"
_VACUUMING_MD = """# Routine Vacuuming {#vacuum}

## Preventing Wraparound Failures {#wraparound}

VACUUM freezes old rows so that their transaction IDs can be reused; the
vacuum_freeze_min_age setting says how old a row must be. An aggressive
vacuum freezes every page, see [VACUUM FREEZE](https://e.test/sql-vacuum.html).
Transaction IDs are 32 bits wide, so a cluster that runs for long enough wraps
around; rows whose IDs are from before the wrap would seem to be in the future and
vanish. Routine maintenance avoids that, and the server refuses new transactions
when it comes too close to the limit.
"""
_BOOKINDEX = "https://e.test/bookindex.html"
_BOOKINDEX_MD = "# Index\n\n### V {#indexdiv-V}\n\n" + "\n".join(
    f"- vacuum_freeze_{name} configuration parameter, [Vacuum Freeze](https://e.test/c.html#{name})"
    for name in ("min_age", "table_age", "max_age", "multixact_min_age", "multixact_table_age")
)
_CHAPTER = "https://e.test/maintenance.html"
_CHAPTER_MD = (
    "## Chapter 25. Vacuum Maintenance {#maintenance}\n\n**Table of Contents**\n\n"
    + "\n".join(  # longer than a section's budget, as Markdown with its link targets
        f"- [25.{i}. Vacuum Freeze Step {i}](https://e.test/routine-vacuuming.html#step-{i})"
        for i in range(1, 21)
    )
    + "\n\nThe database needs a few tasks done regularly to run well.\n"
)


async def test_indexes_and_tables_of_contents_rank_below_the_content_they_point_to(
    store: Store,
) -> None:
    """A back-of-book index ("term, [Section]" entries, half link text) holds the query's
    words more densely than the page that answers it; a chapter's long table of contents
    too, under a title with one of them."""
    others = [  # so that the query's words are rare (BM25 gives words on every page nothing)
        (f"https://e.test/other{i}.html", f"Other {i}", f"# Other {i}\n\nTables and rows {i}.")
        for i in range(12)
    ]
    for url, title, markdown in (
        (_VACUUMING, "25.1. Routine Vacuuming", _VACUUMING_MD),
        (_BOOKINDEX, "Index", _BOOKINDEX_MD),
        (_CHAPTER, "Chapter 25. Vacuum Maintenance", _CHAPTER_MD),
        *others,
    ):
        await store.upsert(Document(url=url, title=title, markdown=markdown), _meta())

    hits = await store.search("vacuum freeze")

    assert [hit.url for hit in hits[:1]] == [_VACUUMING]
    assert {hit.url for hit in hits[1:]} == {_BOOKINDEX, _CHAPTER}
    assert hits[0].heading_path == ("Routine Vacuuming", "Preventing Wraparound Failures")


@pytest.mark.parametrize(
    ("query", "url", "heading"),
    [
        pytest.param("os.path.exists", _GUIDE, "Timeouts", id="dotted-as-written"),
        pytest.param("path exists", _GUIDE, "Timeouts", id="dotted-by-parts"),
        pytest.param("HashMap::entry", _RUST, "HashMap", id="rust-path-as-written"),
        pytest.param("entry", _RUST, "HashMap", id="rust-path-part"),
        pytest.param("jsonb_set", _GUIDE, "Timeouts", id="snake-case-as-written"),
        pytest.param("retries backoff", _GUIDE, "Retries", id="heading-and-text"),
        pytest.param("client.get retries", _GUIDE, "Retries", id="code-block-text"),
    ],
)
async def test_identifiers_match_as_written_and_by_their_parts(
    store: Store, query: str, url: str, heading: str
) -> None:
    await _fill_sections(store)

    hits = await store.search(query)

    assert hits[0].url == url
    assert hits[0].heading_path[-1] == heading


async def test_one_result_per_content_and_per_page_url(store: Store) -> None:
    for url in ("https://d.test/lib/", "https://d.test/lib/index.html"):
        await store.upsert(Document(url=url, title="Library", markdown="walrus care"), _meta())
    await store.upsert(
        Document(url="https://d.test/copy", title="Library", markdown="walrus care"), _meta()
    )
    await store.upsert(
        Document(url="https://d.test/other", title="Zoo", markdown="a walrus and more"), _meta()
    )

    hits = await store.search("walrus")

    assert len(hits) == 2  # three copies of one content shown once
    assert hits[1].url == "https://d.test/other"


async def test_changed_pages_are_sectioned_again_and_deleted_ones_leave_search(
    store: Store,
) -> None:
    await _fill_sections(store)
    changed = _GUIDE_MD.replace("## Retries {#retries}", "## Backing off {#backing-off}")
    await store.upsert(Document(url=_GUIDE, title="Client guide", markdown=changed), _meta())

    (hit,) = [h for h in await store.search("retries backoff") if h.url == _GUIDE]
    assert hit.anchor_url == f"{_GUIDE}#backing-off"
    assert hit.heading_path == ("Client guide", "Backing off")

    assert await store.delete(_GUIDE)
    assert [h.url for h in await store.search("retries backoff")] == []
    assert _GUIDE not in [h.url for h in await store.search("timeout")]


async def test_a_common_word_ranks_but_does_not_find_when_a_rare_one_is_asked(
    store: Store,
) -> None:
    """With over MIN_COMMON sections holding "common", only sections with "zebra" are hits."""
    for page in range(45):
        body = "\n\n".join(f"## Part {i} {{#p{i}}}\n\ncommon words {page} {i}" for i in range(25))
        page_url = f"https://e.test/{page}"
        await store.upsert(Document(url=page_url, title="P", markdown=body), _meta())
    await store.upsert(
        Document(url="https://e.test/zebra", title="Z", markdown="a zebra, not common"), _meta()
    )
    await store.upsert(
        Document(url="https://e.test/zebra-only", title="Y", markdown="one zebra"), _meta()
    )

    hits = await store.search("common zebra")

    assert sorted(hit.url for hit in hits) == ["https://e.test/zebra", "https://e.test/zebra-only"]
    assert len(await store.search("common")) == 10  # alone, a common word still finds


async def test_sections_cut_by_the_converter_are_stored_as_given(store: Store) -> None:
    """A document that arrives with its sections (cut in a conversion worker) is not cut
    again on the event loop: the store indexes exactly those sections."""
    cut = with_sections(Document(url=_GUIDE, title="Client guide", markdown=_GUIDE_MD))
    assert cut.sections
    marked = dataclasses.replace(
        cut.sections[0], text=cut.sections[0].text + " zebracorn"
    )  # a word the Markdown lacks: found only if the given sections were stored
    await store.upsert(dataclasses.replace(cut, sections=(marked, *cut.sections[1:])), _meta())

    assert [hit.url for hit in await store.search("zebracorn")] == [_GUIDE]
    (hit,) = await store.search("how do I set a timeout for a request?")
    assert hit.anchor_url == f"{_GUIDE}#timeouts"


# -- concurrent writers --------------------------------------------------------------------


async def test_concurrent_upserts_of_one_url_all_succeed_and_leave_one_consistent_page(
    store: Store, make_store: Callable[[], Store]
) -> None:
    """Issue 14: writers racing on one URL (separate stores, separate connections) all
    succeed; one row is left, and its sections and pending vectors are those of the
    version that won, never a mix."""
    url = "https://a.test/race"
    # A large page: PostgreSQL compresses it between its conflict check and its index
    # entries, the window in which ON CONFLICT (url) alone let the id index raise.
    filler = " ".join(f"w{(i * 7919) % 1_000_003}" for i in range(5000))
    writers = [make_store() for _ in range(8)]
    try:
        results = await asyncio.gather(
            *(
                writer.upsert(
                    Document(url=url, title="Race", markdown=f"# Part\n\nversion{i} {filler}"),
                    _meta(),
                )
                for i, writer in enumerate(writers)
            )
        )
    finally:
        for writer in writers:
            await writer.close()

    assert sum(result.created for result in results) == 1
    assert {result.id for result in results} == {document_id(url)}
    assert await store.count() == 1
    kept = await store.get(url)
    assert kept is not None
    (winner,) = re.findall(r"version\d", kept.markdown)
    found = {f"version{i}": len(await store.search(f"version{i}")) for i in range(8)}
    assert found == {f"version{i}": int(f"version{i}" == winner) for i in range(8)}
    assert isinstance(store, SectionVectors)
    pending = await store.pending_vectors("m", 100)
    assert pending
    assert all(winner in text for _, text in pending)


async def test_a_url_whose_id_is_taken_by_another_url_is_refused_and_changes_nothing(
    store: Store, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Two URLs share an id only if 64 bits of SHA-256 collide: a StoreError naming the
    URL, not a second row under that id nor an overwritten first one."""
    await store.upsert(_doc(ALPHA), _meta())
    taken = document_id(GAMMA)
    if isinstance(store, SQLiteStore):  # a collision, made by hand
        with sqlite3.connect(tmp_path / "store.db") as conn:
            conn.execute("UPDATE documents SET id = ?", (taken,))
    else:
        with psycopg.connect(request.getfixturevalue("pg_database"), autocommit=True) as conn:
            conn.execute("UPDATE sitelore_documents SET id = %s", (taken,))

    with pytest.raises(StoreError, match=re.escape(GAMMA)):
        await store.upsert(_doc(GAMMA), _meta())

    assert await store.count() == 1
    kept = await store.get(taken)
    assert kept is not None
    assert kept.url == ALPHA
