"""The SQLite side of section vectors: their table, upkeep and nearest-section search.

``section_vectors`` holds one vector per section (packed by :mod:`._vectors`) and the
name of the model that made it; it goes with its section (``ON DELETE CASCADE``), so a
re-cut page has no vectors until they are computed again. Triggers count every change
to the table in ``vector_generation`` (schema step :data:`VECTORS_MIGRATION`), so a
:class:`MatrixCache` can keep a model's vectors in memory as one matrix between
searches and read them again only when they changed, in this process or another.

Why a matrix in memory: ranking reads every vector of the model. Read from the table
per query, that was 0.28 s at 49k sections; sqlite-vec's ``vec_distance_cosine`` over
the same table (where sqlite3 can load it at all: not in pyenv's Python, which CI
uses) took longer than numpy at 100k. Held in memory the product takes milliseconds;
the price is 1.5 KB of memory per section (384 float32) while a process searches.
Functions run inside the caller's connection and transactions.
"""

from __future__ import annotations

import builtins
import dataclasses
import sqlite3
from collections.abc import Sequence

from sitelore.adapters.store._ranking import Candidate, candidate_from_row
from sitelore.adapters.store._vectors import VectorMatrix, section_text, to_bytes

__all__ = [
    "VECTORS_MIGRATION",
    "MatrixCache",
    "candidates",
    "counts",
    "has_vectors",
    "pending",
    "put",
    "search_vectors",
    "section_text",
]

_CREATE = """
CREATE TABLE IF NOT EXISTS section_vectors (
    section_pk INTEGER PRIMARY KEY REFERENCES sections (pk) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
)
"""
_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'section_vectors'"
_BUMP = "UPDATE vector_generation SET generation = generation + 1"

#: Schema step: the vector table and the generation its triggers count (idempotent).
VECTORS_MIGRATION: tuple[str, ...] = (
    _CREATE,
    """
    CREATE TABLE IF NOT EXISTS vector_generation (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation INTEGER NOT NULL
    )
    """,
    "INSERT OR IGNORE INTO vector_generation (id, generation) VALUES (1, 0)",
    *(
        f"CREATE TRIGGER IF NOT EXISTS section_vectors_{name} AFTER {event} ON section_vectors "
        f"BEGIN {_BUMP}; END"
        for name, event in (("ai", "INSERT"), ("ad", "DELETE"), ("au", "UPDATE"))
    ),
)
_PENDING = """
SELECT s.pk, s.title, s.heading, s.body FROM sections AS s
LEFT JOIN section_vectors AS v ON v.section_pk = s.pk AND v.model = ?
WHERE v.section_pk IS NULL
ORDER BY s.pk LIMIT ?
"""
_PENDING_ALL = "SELECT pk, title, heading, body FROM sections ORDER BY pk LIMIT ?"
_PUT = "INSERT OR REPLACE INTO section_vectors (section_pk, model, vector) VALUES (?, ?, ?)"
_COUNT = "SELECT count(*) FROM section_vectors WHERE model = ?"
_ANY = "SELECT EXISTS (SELECT 1 FROM section_vectors WHERE model = ?)"
_GENERATION = "SELECT generation FROM vector_generation WHERE id = 1"
_TOTAL = "SELECT count(*) FROM sections"
_SCAN = "SELECT section_pk, vector FROM section_vectors WHERE model = ?"
_ROWS = """
SELECT s.pk, s.ordinal, s.heading, s.anchor, s.start_byte, s.end_byte, s.link_ratio,
       substr(s.body, 1, 240) AS snippet, 0.0 AS score,
       d.id, d.url, d.title, d.content_hash, d.canonical_url
FROM sections AS s JOIN documents AS d ON d.pk = s.document_pk
WHERE s.pk IN ({marks}) AND d.removed_at IS NULL
"""


def _has_table(conn: sqlite3.Connection) -> bool:
    return conn.execute(_EXISTS).fetchone() is not None


def pending(conn: sqlite3.Connection, model: str, limit: int) -> builtins.list[tuple[int, str]]:
    """Up to ``limit`` sections without a vector of ``model``, in table order."""
    if not _has_table(conn):
        rows = conn.execute(_PENDING_ALL, (limit,)).fetchall()
    else:
        rows = conn.execute(_PENDING, (model, limit)).fetchall()
    return [(row[0], section_text(row[1], row[2], row[3])) for row in rows]


def put(
    conn: sqlite3.Connection, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
) -> None:
    """Store each section's vector of ``model`` (replacing any older one)."""
    conn.execute(_CREATE)
    conn.executemany(_PUT, [(pk, model, to_bytes(vector)) for pk, vector in vectors])


def counts(conn: sqlite3.Connection, model: str) -> tuple[int, int]:
    """(sections with a vector of ``model``, all sections)."""
    total = int(conn.execute(_TOTAL).fetchone()[0])
    if not _has_table(conn):
        return 0, total
    return int(conn.execute(_COUNT, (model,)).fetchone()[0]), total


def has_vectors(conn: sqlite3.Connection, model: str) -> bool:
    """Whether any section has a vector of ``model`` (cheap: stops at the first)."""
    return _has_table(conn) and bool(conn.execute(_ANY, (model,)).fetchone()[0])


class MatrixCache:
    """One model's vectors as a :class:`VectorMatrix`, kept while the table is unchanged.

    Owned by one store object (never shared between stores); the first search after
    any change to ``section_vectors`` (``vector_generation`` moved) reads them again.
    """

    def __init__(self) -> None:
        self._key: tuple[str, int, int] | None = None
        self._matrix: VectorMatrix | None = None

    def __repr__(self) -> str:
        held = "empty" if self._matrix is None else f"{len(self._matrix.keys)} vectors"
        return f"MatrixCache({held}, key={self._key!r})"

    def matrix(self, conn: sqlite3.Connection, model: str, dims: int) -> VectorMatrix:
        """The vectors of ``model`` with ``dims`` floats, read only when they changed."""
        # The generation is read before the vectors: a change in between makes the next
        # search read them again, never keeps old vectors under a new generation.
        row = conn.execute(_GENERATION).fetchone()
        key = None if row is None else (model, dims, int(row[0]))
        if key is not None and key == self._key and self._matrix is not None:
            return self._matrix
        self._key = self._matrix = None  # never two matrices in memory at once
        matrix = VectorMatrix.from_rows(conn.execute(_SCAN, (model,)), dims)
        if key is not None:
            self._key, self._matrix = key, matrix
        return matrix


def search_vectors(
    conn: sqlite3.Connection,
    model: str,
    query: Sequence[float],
    limit: int,
    *,
    cache: MatrixCache | None = None,
) -> builtins.list[Candidate]:
    """The ``limit`` sections nearest to ``query`` (score: cosine distance), best first.

    ``cache`` keeps the vectors in memory between calls; without it they are read anew.
    """
    if limit <= 0 or not _has_table(conn):
        return []
    dims = len(query)
    if cache is None:
        matrix = VectorMatrix.from_rows(conn.execute(_SCAN, (model,)), dims)
    else:
        matrix = cache.matrix(conn, model, dims)
    return candidates(conn, matrix.nearest(query, limit))


def candidates(
    conn: sqlite3.Connection, top: Sequence[tuple[int, float]]
) -> builtins.list[Candidate]:
    """The sections of ``top`` (key, cosine distance) as candidates, in that order.

    Sections gone since (or of removed pages) are left out.
    """
    if not top:
        return []
    marks = ", ".join("?" * len(top))
    rows = {row["pk"]: row for row in conn.execute(_ROWS.format(marks=marks), [k for k, _ in top])}
    return [
        _with_score(candidate_from_row(rows[pk]), distance) for pk, distance in top if pk in rows
    ]


def _with_score(found: Candidate, distance: float) -> Candidate:
    return dataclasses.replace(found, score=distance)
