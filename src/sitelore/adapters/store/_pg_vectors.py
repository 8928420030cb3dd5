"""The PostgreSQL side of section vectors: their table, upkeep and nearest-section search.

``sitelore_section_vectors`` holds one vector per section as float32 bytes (``bytea``,
packed by :mod:`._vectors`) and the model's name; it goes with its section (``ON
DELETE CASCADE``). The table is made on the first write. Ranking reads the model's
vectors in pages of :data:`PAGE` rows and keeps the nearest with numpy (as SQLite's
store does), so both stores give the same order.
:func:`has_pgvector` tells whether the server offers the ``vector`` extension; this
store does not use it yet (no server here has it to test against).
"""

from __future__ import annotations

import builtins
import dataclasses
import heapq
from collections.abc import Sequence
from typing import Any

import psycopg

from sitelore.adapters.store._ranking import Candidate, candidate_from_row
from sitelore.adapters.store._vectors import TEXT_CHARS, nearest, section_text, to_bytes

__all__ = [
    "PAGE",
    "counts",
    "has_pgvector",
    "has_vectors",
    "pending",
    "put",
    "search_vectors",
]

_Conn = psycopg.AsyncConnection[dict[str, Any]]

#: Vectors read per round trip while ranking (bounds the memory one query takes).
PAGE = 5000

_CREATE = """
CREATE TABLE IF NOT EXISTS sitelore_section_vectors (
    section_pk bigint PRIMARY KEY REFERENCES sitelore_sections (pk) ON DELETE CASCADE,
    model text NOT NULL,
    vector bytea NOT NULL
)
"""
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
    await conn.execute(_CREATE)
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


async def search_vectors(
    conn: _Conn, model: str, query: Sequence[float], limit: int
) -> builtins.list[Candidate]:
    """The ``limit`` sections nearest to ``query`` (score: cosine distance), best first."""
    if limit <= 0 or not await _has_table(conn):
        return []
    best: builtins.list[tuple[float, int]] = []
    after = 0
    while True:
        cur = await conn.execute(_SCAN, (model, after, PAGE))
        rows = [(int(row["section_pk"]), bytes(row["vector"])) for row in await cur.fetchall()]
        if not rows:
            break
        after = rows[-1][0]
        best.extend((distance, key) for key, distance in nearest(query, rows, limit))
        best = heapq.nsmallest(limit, best)
    if not best:
        return []
    cur = await conn.execute(_ROWS, ([key for _, key in best],))
    found = {int(row["pk"]): row for row in await cur.fetchall()}
    return [
        dataclasses.replace(candidate_from_row(found[key]), score=distance)
        for distance, key in best
        if key in found
    ]
