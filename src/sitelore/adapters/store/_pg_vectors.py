"""The PostgreSQL side of section vectors: their table, upkeep and nearest-section search.

``sitelore_section_vectors`` holds one vector per section as float32 bytes (``bytea``,
packed by :mod:`._vectors`) and the model's name; it goes with its section (``ON
DELETE CASCADE``). Ranking is numpy's over one matrix of the model's vectors (as
SQLite's store does), so both stores give the same order; a :class:`MatrixCache`
keeps that matrix between searches and reads it again (in pages of :data:`PAGE`
rows) only when ``sitelore_vector_generation`` moved. Reading every vector per query
cost 100 ms of client CPU at 10k sections (1.5 KB each over the wire and through
psycopg); held, a search at 10k costs what SQLite's does.

The counter (schema step :data:`VECTORS_STEPS`) is moved by a deferred constraint
trigger, once per transaction that changed any vector (cascaded deletes included),
at its commit: the counter's row lock is the last lock such a transaction takes, so
writers never wait on each other in a cycle through it. ``TRUNCATE`` moves it too.
:func:`has_pgvector` tells whether the server offers the ``vector`` extension; this
store does not use it yet (no server here has it to test against).
"""

from __future__ import annotations

import asyncio
import builtins
import dataclasses
from collections.abc import Sequence
from typing import Any

import psycopg

from sitelore.adapters.store._ranking import Candidate, candidate_from_row
from sitelore.adapters.store._vectors import TEXT_CHARS, VectorMatrix, section_text, to_bytes

__all__ = [
    "PAGE",
    "VECTORS_STEPS",
    "MatrixCache",
    "candidates",
    "counts",
    "has_pgvector",
    "has_vectors",
    "pending",
    "put",
]

_Conn = psycopg.AsyncConnection[dict[str, Any]]

#: Vectors read per round trip when the matrix is read.
PAGE = 5000

_CREATE = """
CREATE TABLE IF NOT EXISTS sitelore_section_vectors (
    section_pk bigint PRIMARY KEY REFERENCES sitelore_sections (pk) ON DELETE CASCADE,
    model text NOT NULL,
    vector bytea NOT NULL
)
"""
#: Schema step: the vector table (made by the first write before this step) and the
#: change counter its triggers move (see the module's text).
VECTORS_STEPS: tuple[str, ...] = (
    _CREATE,
    """CREATE TABLE IF NOT EXISTS sitelore_vector_generation (
        id integer PRIMARY KEY CHECK (id = 1),
        generation bigint NOT NULL
    )""",
    "INSERT INTO sitelore_vector_generation (id, generation) VALUES (1, 0) ON CONFLICT DO NOTHING",
    """CREATE OR REPLACE FUNCTION sitelore_vectors_changed() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        -- Once per transaction: its first changed row moves the counter.
        IF current_setting('sitelore.vectors_changed', true) IS DISTINCT FROM
                txid_current()::text THEN
            UPDATE sitelore_vector_generation SET generation = generation + 1 WHERE id = 1;
            PERFORM set_config('sitelore.vectors_changed', txid_current()::text, true);
        END IF;
        RETURN NULL;
    END
    $$""",
    """CREATE CONSTRAINT TRIGGER sitelore_section_vectors_changed
    AFTER INSERT OR UPDATE OR DELETE ON sitelore_section_vectors
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION sitelore_vectors_changed()""",
    """CREATE TRIGGER sitelore_section_vectors_truncated
    AFTER TRUNCATE ON sitelore_section_vectors
    FOR EACH STATEMENT EXECUTE FUNCTION sitelore_vectors_changed()""",
)
_GENERATION = "SELECT generation FROM sitelore_vector_generation WHERE id = 1"
_EXISTS = "SELECT to_regclass('sitelore_section_vectors') IS NOT NULL AS present"
_PGVECTOR = "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS ok"
_PENDING = """
SELECT s.pk, d.title, s.heading, left(s.body, %(chars)s) AS body
FROM sitelore_sections AS s JOIN sitelore_documents AS d ON d.pk = s.document_pk
WHERE NOT EXISTS (SELECT 1 FROM sitelore_section_vectors AS v
                  WHERE v.section_pk = s.pk AND v.model = %(model)s)
ORDER BY s.pk LIMIT %(limit)s
"""
_PENDING_ALL = """
SELECT s.pk, d.title, s.heading, left(s.body, %(chars)s) AS body
FROM sitelore_sections AS s JOIN sitelore_documents AS d ON d.pk = s.document_pk
ORDER BY s.pk LIMIT %(limit)s
"""
_PUT = """
INSERT INTO sitelore_section_vectors (section_pk, model, vector) VALUES (%s, %s, %s)
ON CONFLICT (section_pk) DO UPDATE SET model = excluded.model, vector = excluded.vector
"""
_COUNT = "SELECT count(*) AS n FROM sitelore_section_vectors WHERE model = %s"
_ANY = "SELECT EXISTS (SELECT 1 FROM sitelore_section_vectors WHERE model = %s) AS found"
_TOTAL = "SELECT count(*) AS n FROM sitelore_sections"
_SCAN = """
SELECT section_pk, vector FROM sitelore_section_vectors
WHERE model = %s AND section_pk > %s ORDER BY section_pk LIMIT %s
"""
_ROWS = """
SELECT s.pk, s.ordinal, s.heading, s.anchor, s.start_byte, s.end_byte, s.link_ratio,
       s.body AS snippet, 0.0 AS score,
       d.id, d.url, d.title, d.content_hash, d.canonical_url
FROM sitelore_sections AS s JOIN sitelore_documents AS d ON d.pk = s.document_pk
WHERE s.pk = ANY(%s) AND d.removed_at IS NULL
"""


async def _one(conn: _Conn, sql: str, params: Sequence[Any] = ()) -> Any:
    cur = await conn.execute(sql, params)
    row = await cur.fetchone()
    assert row is not None
    return next(iter(row.values()))


async def has_pgvector(conn: _Conn) -> bool:
    """Whether the server offers the ``vector`` extension (pgvector)."""
    return bool(await _one(conn, _PGVECTOR))


async def _has_table(conn: _Conn) -> bool:
    return bool(await _one(conn, _EXISTS))


async def pending(conn: _Conn, model: str, limit: int) -> builtins.list[tuple[int, str]]:
    """Up to ``limit`` sections without a vector of ``model``, in table order."""
    sql = _PENDING if await _has_table(conn) else _PENDING_ALL
    cur = await conn.execute(sql, {"model": model, "limit": limit, "chars": TEXT_CHARS})
    rows = await cur.fetchall()
    return [
        (int(row["pk"]), section_text(row["title"], row["heading"], row["body"])) for row in rows
    ]


async def put(conn: _Conn, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
    """Store each section's vector of ``model`` (replacing any older one)."""
    async with conn.cursor() as cur:
        await cur.executemany(_PUT, [(pk, model, to_bytes(vector)) for pk, vector in vectors])


async def counts(conn: _Conn, model: str) -> tuple[int, int]:
    """(sections with a vector of ``model``, all sections)."""
    total = int(await _one(conn, _TOTAL))
    if not await _has_table(conn):
        return 0, total
    return int(await _one(conn, _COUNT, (model,))), total


async def has_vectors(conn: _Conn, model: str) -> bool:
    """Whether any section has a vector of ``model`` (cheap: stops at the first)."""
    return await _has_table(conn) and bool(await _one(conn, _ANY, (model,)))


class MatrixCache:
    """One model's vectors as a :class:`VectorMatrix`, kept while no vector changed.

    Owned by one store object; the first search after any change to
    ``sitelore_section_vectors`` (in any process: the counter moved) reads them again.
    Concurrent searches wait for one read.
    """

    def __init__(self) -> None:
        self._key: tuple[str, int, int] | None = None
        self._matrix: VectorMatrix | None = None
        self._reading = asyncio.Lock()

    def __repr__(self) -> str:
        held = "empty" if self._matrix is None else f"{len(self._matrix.keys)} vectors"
        return f"MatrixCache({held}, key={self._key!r})"

    async def matrix(self, conn: _Conn, model: str, dims: int) -> VectorMatrix:
        """The vectors of ``model`` with ``dims`` floats, read only when they changed."""
        async with self._reading:
            # The counter is read before the vectors: a change committed in between
            # makes the next search read them again, never keeps old vectors.
            key = (model, dims, int(await _one(conn, _GENERATION)))
            if key == self._key and self._matrix is not None:
                return self._matrix
            self._key = self._matrix = None  # never two matrices in memory at once
            matrix = await _read(conn, model, dims)
            self._key, self._matrix = key, matrix
            return matrix


async def _read(conn: _Conn, model: str, dims: int) -> VectorMatrix:
    """Every vector of ``model`` with ``dims`` floats, read in pages of :data:`PAGE`."""
    rows: builtins.list[tuple[int, bytes]] = []
    after = 0
    while True:
        cur = await conn.execute(_SCAN, (model, after, PAGE))
        page = [(int(row["section_pk"]), bytes(row["vector"])) for row in await cur.fetchall()]
        if not page:
            return VectorMatrix.from_rows(rows, dims)
        rows.extend(page)
        after = page[-1][0]


async def candidates(conn: _Conn, top: Sequence[tuple[int, float]]) -> builtins.list[Candidate]:
    """The sections of ``top`` (key, cosine distance) as candidates, in that order.

    Sections gone since (or of removed pages) are left out.
    """
    if not top:
        return []
    cur = await conn.execute(_ROWS, ([key for key, _ in top],))
    found = {int(row["pk"]): row for row in await cur.fetchall()}
    return [
        dataclasses.replace(candidate_from_row(found[key]), score=distance)
        for key, distance in top
        if key in found
    ]
