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
Functions run inside the caller's connection and transactions; the statements that
store, count and read vectors are both stores' (``_shared``).
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence

from sitelore.adapters.store import _shared
from sitelore.adapters.store._ranking import Candidate
from sitelore.adapters.store._steps import run_sqlite
from sitelore.adapters.store._vectors import VectorMatrix

__all__ = ["VECTORS_MIGRATION", "MatrixCache", "candidates", "search_vectors"]

_CREATE = """
CREATE TABLE IF NOT EXISTS section_vectors (
    section_pk INTEGER PRIMARY KEY REFERENCES sections (pk) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
)
"""
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
_ROWS = """
SELECT s.pk, s.ordinal, s.heading, s.anchor, s.start_byte, s.end_byte, s.link_ratio,
       substr(s.body, 1, 240) AS snippet, 0.0 AS score,
       d.id, d.url, d.title, d.content_hash, d.canonical_url
FROM sections AS s JOIN documents AS d ON d.pk = s.document_pk
WHERE s.pk IN ({marks}) AND d.removed_at IS NULL
"""


class MatrixCache(_shared.MatrixCache):
    """One model's vectors as a :class:`VectorMatrix`, kept while the table is unchanged.

    The first search after any change to ``section_vectors`` (``vector_generation``
    moved) reads them again.
    """

    def matrix(self, conn: sqlite3.Connection, model: str, dims: int) -> VectorMatrix:
        """The vectors of ``model`` with ``dims`` floats, read only when they changed."""
        return run_sqlite(conn, self.read(model, dims))


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
    if limit <= 0:
        return []
    matrix = (cache or MatrixCache()).matrix(conn, model, len(query))
    return candidates(conn, matrix.nearest(query, limit))


def candidates(
    conn: sqlite3.Connection, top: Sequence[tuple[int, float]]
) -> builtins.list[Candidate]:
    """The sections of ``top`` (key, cosine distance) as candidates, in that order.

    Sections gone since (or of removed pages) are left out.
    """
    sql = _ROWS.format(marks=", ".join("?" * len(top)))
    return run_sqlite(conn, _shared.candidates(sql, [key for key, _ in top], top))
