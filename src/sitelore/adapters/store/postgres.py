"""Persist documents in PostgreSQL with a tsvector index: the shared store of scale-out crawls.

The same ``ports.Store`` as :class:`~sitelore.adapters.store.sqlite.SQLiteStore`, and the same ids
(:func:`~sitelore.adapters.store._rows.document_id`) and content hashes, so a document has one
id whichever store holds it. It never echoes a password: every message names the
database by its redacted URL.

Choices worth knowing:

* **One row per URL.** ``upsert`` locks the row (``SELECT ... FOR UPDATE``) or inserts
  it (``ON CONFLICT DO NOTHING``, then locks the winner's row), so workers racing on
  one URL leave one row; ``fetch_count`` counts the upserts, i.e. redeliveries.
* **Search like SQLite, over sections.** Words are split and folded in Python
  (``_pg_text``) and stemmed by the ``sitelore_text`` configuration (Porter, no stop
  words), so both stores match the same words. Each document's sections
  (``_pg_sections``) carry their own tsvector; ranking follows SQLite's BM25 (IDF per
  query term, saturating weighted term frequency, length normalisation) and pages are
  built from their best sections (``_ranking``); ``score`` is lower-is-better.
  The indexed words are capped (``MAX_BODY_CHARS``); the Markdown is stored whole.
* **Snippets like SQLite's**, cut in Python (``_snippet``) from the section text of
  the returned hits only: ``ts_headline`` would re-parse the text without the folding
  and show no ``café`` for ``cafe``. PostgreSQL stems the few words that may match
  (one more round trip), so a snippet marks the words the index matched.
* **Unchanged pages do not touch the index**: the tsvector is recomputed only when
  the content hash changes.
* **Migrations** are append-only steps in ``_MIGRATIONS``; the version lives in
  ``sitelore_schema``; each step runs in its own transaction under an advisory lock,
  so workers starting together migrate once. A database from a newer sitelore is
  refused untouched.
* **Connections**: a small pool (``pool_size``) opened lazily on first use (or by
  :meth:`PostgresStore.open`, which workers call at start-up to fail fast); a broken
  connection is replaced on the next call.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import dataclasses
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from sitelore.adapters.store import _pg_sections as sections
from sitelore.adapters.store import _pg_vectors as vectors
from sitelore.adapters.store._fusion import hybrid_sections
from sitelore.adapters.store._pg_schema import CREATE_VERSION_TABLE, MIGRATION_LOCK, MIGRATIONS
from sitelore.adapters.store._pg_text import (
    MAX_TITLE_CHARS,
    MAX_WORD_CHARS,
    index_text,
    stem_prefix,
)
from sitelore.adapters.store._ranking import candidate_sizes, rank_pages, wanted
from sitelore.adapters.store._rows import aware, document_id, document_params, utc, utc_now
from sitelore.adapters.store._shared import (
    Dialect,
    StoreBase,
    Upsert,
    check_version,
    count_stale,
    upsert_row,
)
from sitelore.adapters.store._snippet import Column, Phrase, chunks, has_match, snippet
from sitelore.adapters.store._steps import Step, run_pg
from sitelore.core.errors import ConfigError, StoreError
from sitelore.core.guard import redact_url
from sitelore.core.models import Document, FetchMeta, SearchHit, UpsertResult

__all__ = ["PG_SCHEMA_VERSION", "PostgresStore"]

_Conn = psycopg.AsyncConnection[dict[str, Any]]
_T = TypeVar("_T")

#: The schema version this code writes and understands.
PG_SCHEMA_VERSION = len(MIGRATIONS)

# -- statements --------------------------------------------------------------------------

_TSV = (
    "setweight(to_tsvector('sitelore_text', %(title_words)s), 'A') || "
    "setweight(to_tsvector('sitelore_text', %(body_words)s), 'B')"
)
_SELECT_FOR_UPDATE = (
    "SELECT pk, id, content_hash FROM sitelore_documents WHERE url = %(url)s FOR UPDATE"
)
_INSERT = f"""
INSERT INTO sitelore_documents (
    id, url, title, markdown, content_hash, content_type, status, etag, last_modified,
    fetched_at, created_at, updated_at, description, lang, canonical_url, links, tsv
) VALUES (
    %(id)s, %(url)s, %(title)s, %(markdown)s, %(content_hash)s, %(content_type)s, %(status)s,
    %(etag)s, %(last_modified)s, %(fetched_at)s, %(now)s, %(now)s, %(description)s, %(lang)s,
    %(canonical_url)s, %(links)s, {_TSV}
) ON CONFLICT DO NOTHING
RETURNING pk
"""  # noqa: S608 - _TSV is a constant; every value is a bound parameter
_UPDATE_CONTENT = f"""
UPDATE sitelore_documents SET
    title = %(title)s, markdown = %(markdown)s, content_hash = %(content_hash)s,
    content_type = %(content_type)s, status = %(status)s, etag = %(etag)s,
    last_modified = %(last_modified)s, fetched_at = %(fetched_at)s, updated_at = %(now)s,
    description = %(description)s, lang = %(lang)s, canonical_url = %(canonical_url)s,
    links = %(links)s, removed_at = NULL, fetch_count = fetch_count + 1, tsv = {_TSV}
WHERE url = %(url)s
"""  # noqa: S608 - as above
_UPDATE_FETCH_META = """
UPDATE sitelore_documents SET
    content_type = %(content_type)s, status = %(status)s, etag = %(etag)s,
    last_modified = %(last_modified)s, fetched_at = %(fetched_at)s,
    links = %(links)s, removed_at = NULL, fetch_count = fetch_count + 1
WHERE url = %(url)s
"""
_UPSERT = Upsert(_SELECT_FOR_UPDATE, _INSERT, _UPDATE_CONTENT, _UPDATE_FETCH_META)
# A word's lexemes as the index has them: one stem, or several when PostgreSQL's parser
# splits the word further ("1e9e"), or none.
_STEM = "array_to_string(tsvector_to_array(to_tsvector('sitelore_text', w)), ' ')"
_STEMS = f"SELECT w AS word, {_STEM} AS stem FROM unnest(%s::text[]) AS w"  # noqa: S608


async def _stems_of(
    conn: _Conn, columns: builtins.list[Column], prefixes: tuple[str, ...], known: dict[str, str]
) -> dict[str, str]:
    """The stems of the words of ``columns`` that start with one of ``prefixes``, if new."""
    if not prefixes:
        return {}
    words = set(itertools.chain.from_iterable(col.words.folded for col in columns))
    found = {w for w in words if w.startswith(prefixes) and len(w) <= MAX_WORD_CHARS}
    unknown = sorted(found - known.keys())
    if not unknown:
        return {}
    cur = await conn.execute(_STEMS, (unknown,))
    return {row["word"]: row["stem"] for row in await cur.fetchall()}


async def _section_snippets(
    conn: _Conn, hits: builtins.list[SearchHit], terms: builtins.list[tuple[str, ...]]
) -> builtins.list[SearchHit]:
    """Each hit with a snippet cut from its section's text (which ``snippet`` holds)."""
    if not hits:
        return []
    phrases = [list(term) for term in terms]
    words = sorted({word for term in terms for word in term})
    cur = await conn.execute(_STEMS, (words,))
    stems: dict[str, str] = {row["word"]: row["stem"] for row in await cur.fetchall()}
    prefixes = tuple({p for word in words if (p := stem_prefix(stems.get(word, "")))})
    pieces = [list(chunks(hit.snippet)) for hit in hits]
    stems |= await _stems_of(conn, [col for cols in pieces for col in cols], prefixes, stems)
    matching = _matching_phrases(phrases, stems)
    return [
        dataclasses.replace(
            hit,
            snippet=snippet(
                [next((col for col in cols if has_match(col, matching)), cols[0])], matching
            ),
        )
        for hit, cols in zip(hits, pieces, strict=True)
    ]


def _matching_phrases(
    phrases: builtins.list[builtins.list[str]], stems: dict[str, str]
) -> builtins.list[Phrase]:
    """For each word of each query phrase, the known words with the same (non-empty) stem."""
    alike: dict[str, set[str]] = {}
    for word, stem in stems.items():
        if stem:
            alike.setdefault(stem, set()).add(word)
    return [[alike.get(stems.get(word, ""), set()) for word in phrase] for phrase in phrases]


async def _catch_up(conn: _Conn, shown: str | None = None) -> int:
    """Cut again the documents whose sections are missing or stale, a batch per transaction.

    ``shown`` (the store's name) on opening: say how many first, when there are any.
    """
    if shown is not None and not await run_pg(conn, count_stale(shown)):
        return 0
    done = 0
    while True:
        async with conn.transaction():
            step = await sections.stale_batch(conn)
        if step == 0:
            return done
        done += step


class PostgresStore(StoreBase):
    """The shared document store: PostgreSQL with a GIN-indexed tsvector column.

    ``PostgresStore("postgresql://user@host/db")`` connects on first use (or on
    :meth:`open`); ``close()`` when done. ``now`` is the clock for ``created_at`` /
    ``updated_at``. Safe for concurrent coroutines of one event loop.
    """

    _dialect = Dialect(aware, utc, Jsonb, lambda value: value)

    def __init__(
        self,
        url: str,
        *,
        now: Callable[[], datetime] = utc_now,
        pool_size: int = 2,
        connect_timeout: float = 10.0,
    ) -> None:
        self._url = url
        self._shown = redact_url(url)
        self._now = now
        self._size = max(1, pool_size)
        self._connect_timeout = connect_timeout
        self._idle: asyncio.Queue[_Conn | None] | None = None
        self._open_lock = asyncio.Lock()
        self._closed = False
        self._vectors = vectors.MatrixCache()  # a model's vectors between searches

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("open" if self._idle is not None else "unopened")
        return f"PostgresStore({self._shown!r}, {state})"

    @property
    def location(self) -> str:
        """The database URL with any password replaced by ``***``."""
        return self._shown

    # -- lifecycle ------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, check the schema version and migrate; later calls do nothing.

        Raises ``ConfigError`` when the server cannot be reached or refuses the login
        (the URL is unusable), ``SchemaVersionError`` for a newer schema.
        """
        async with self._open_lock:
            if self._closed:
                raise StoreError(f"{self._shown}: the store is closed")
            if self._idle is not None:
                return
            conn = await self._connect()
            try:
                await self._migrate(conn)
                await _catch_up(conn, self._shown)
            except BaseException:
                await conn.close()
                raise
            idle: asyncio.Queue[_Conn | None] = asyncio.Queue()
            idle.put_nowait(conn)
            for _ in range(self._size - 1):
                idle.put_nowait(None)  # a slot that connects when first taken
            self._idle = idle

    async def close(self) -> None:
        """Close every connection; closing twice is harmless, later calls raise StoreError."""
        self._closed = True
        self._vectors = vectors.MatrixCache()
        idle, self._idle = self._idle, None
        while idle is not None and not idle.empty():
            conn = idle.get_nowait()
            if conn is not None:
                await conn.close()

    async def _connect(self) -> _Conn:
        try:
            return await psycopg.AsyncConnection.connect(
                self._url,
                autocommit=True,  # reads need no transaction; writes open their own
                row_factory=dict_row,
                connect_timeout=max(1, int(self._connect_timeout)),
            )
        except psycopg.OperationalError as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise ConfigError(f"{self._shown}: cannot connect to PostgreSQL: {reason}") from exc
        except psycopg.ProgrammingError as exc:  # a malformed conninfo
            raise ConfigError(f"{self._shown}: not a usable PostgreSQL URL: {exc}") from exc

    async def _migrate(self, conn: _Conn) -> None:
        try:
            async with conn.transaction():
                await conn.execute(MIGRATION_LOCK)
                await conn.execute(CREATE_VERSION_TABLE)
                cur = await conn.execute("SELECT version FROM sitelore_schema")
                row = await cur.fetchone()
                if row is None:
                    await conn.execute("INSERT INTO sitelore_schema (version) VALUES (0)")
                found = 0 if row is None else int(row["version"])
            check_version(self._shown, found, PG_SCHEMA_VERSION)
            for target, steps in enumerate(MIGRATIONS, start=1):
                async with conn.transaction():
                    await conn.execute(MIGRATION_LOCK)  # another worker may have migrated
                    cur = await conn.execute("SELECT version FROM sitelore_schema")
                    current = await cur.fetchone()
                    if current is not None and int(current["version"]) >= target:
                        continue
                    for statement in steps:
                        await conn.execute(statement)
                    await conn.execute("UPDATE sitelore_schema SET version = %s", (target,))
        except psycopg.Error as exc:
            raise StoreError(f"{self._shown}: migration failed: {exc}") from exc

    @contextlib.asynccontextmanager
    async def _connection(self, action: str) -> AsyncIterator[_Conn]:
        """Lend a pooled connection; turn psycopg errors into StoreError naming ``action``."""
        if self._idle is None:
            await self.open()
        idle = self._idle
        if idle is None:
            raise StoreError(f"{self._shown}: {action}: the store is closed")
        conn = await idle.get()
        try:
            if conn is None or conn.closed:
                conn = await self._connect()
            try:
                yield conn
            except psycopg.Error as exc:
                raise StoreError(f"{self._shown}: {action} failed: {exc}") from exc
            except UnicodeEncodeError as exc:
                raise StoreError(f"{self._shown}: {action} failed: invalid text: {exc}") from exc
        finally:
            if conn is not None and conn.broken:
                await conn.close()
                conn = None
            if self._idle is idle:
                idle.put_nowait(conn)
            elif conn is not None:
                await conn.close()

    async def _read(self, action: str, step: Step[_T]) -> _T:
        """Run ``step`` on a pooled connection (autocommit)."""
        async with self._connection(action) as conn:
            return await run_pg(conn, step)

    async def _write(self, action: str, step: Step[_T]) -> _T:
        """Run ``step`` in a transaction of a pooled connection."""
        async with self._connection(action) as conn, conn.transaction():
            return await run_pg(conn, step)

    # -- the Store port -------------------------------------------------------------------

    async def upsert(self, document: Document, meta: FetchMeta) -> UpsertResult:
        """Insert or update the document for ``document.url``; keep its id.

        When the title and Markdown are unchanged only the fetch metadata is written;
        ``updated_at`` and the search index stay as they were.
        """
        params = document_params(document, meta, now=self._now(), encode_time=aware)
        params |= {
            "id": document_id(document.url),
            "title_words": index_text(document.title, MAX_TITLE_CHARS),
            "body_words": index_text(document.markdown),
            "links": Jsonb(list(document.links)),
        }
        async with self._connection(f"upsert {document.url}") as conn, conn.transaction():
            pk, result = await run_pg(conn, upsert_row(_UPSERT, params, self._shown))
            if result.changed:
                await sections.replace_sections(
                    conn, pk, document.title, document.markdown, document.sections
                )
            return result

    async def search(self, query: str, *, limit: int = 10) -> builtins.list[SearchHit]:
        """Rank pages by their best sections for ``query`` (plain text, never tsquery syntax).

        As the SQLite store: any word may match (stop words dropped), title and headings
        weigh more than text, one hit per page and per content; lower ``score`` is
        better. The snippet marks matched words with ``**``. A blank query finds nothing.
        """
        if not wanted(limit):
            return []
        async with self._connection("search") as conn:
            found, terms = await sections.search_sections(conn, query, limit)
            return await _section_snippets(conn, rank_pages(found, limit, query=query), terms)

    async def reindex(self) -> int:
        """Cut every document into sections again; how many documents were cut."""
        async with self._connection("reindex") as conn:
            async with conn.transaction():
                await sections.restale_all(conn)
            return await _catch_up(conn)

    # -- section vectors (semantic extra; the rest in _shared) ---------------------------

    async def hybrid_search(
        self, query: str, vector: Sequence[float], model: str, *, limit: int = 10
    ) -> builtins.list[SearchHit]:
        """Pages ranked by BM25 and vector nearness fused (``_fusion.hybrid_sections``)."""
        if not wanted(limit):
            return []
        async with self._connection("search") as conn:
            matrix = await self._vectors.matrix(conn, model, len(vector))
            # The matrix product runs in a thread (numpy lets go of the GIL) while the
            # server ranks the words.
            loop = asyncio.get_running_loop()
            nearest = loop.run_in_executor(None, matrix.nearest, vector, candidate_sizes(limit)[0])
            try:
                lexical, terms = await sections.search_sections(conn, query, limit)
            finally:
                top = await nearest
            near = await vectors.candidates(conn, top)
            hits = rank_pages(hybrid_sections(query, lexical, near), limit, query=query)
            return await _section_snippets(conn, hits, terms)
