"""The SQLite side of section vectors: their table, upkeep and nearest-section search.

``section_vectors`` holds one vector per section (packed by :mod:`._vectors`) and the
name of the model that made it; it goes with its section (``ON DELETE CASCADE``), so a
re-cut page has no vectors until they are computed again. The table is made on the
first write (stores without the ``semantic`` extra never get it). Nearest sections are
found by ``sqlite-vec``'s ``vec_distance_cosine`` when this Python's SQLite can load
extensions and the package is installed, else by numpy over the stored vectors: the
same order either way. Functions run inside the caller's connection and transactions.
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib
import sqlite3
from collections.abc import Sequence

from sitelore.store._ranking import Candidate, candidate_from_row
from sitelore.store._vectors import nearest, section_text, to_bytes

__all__ = ["counts", "load_vec", "pending", "put", "search_vectors", "section_text"]

_CREATE = """
CREATE TABLE IF NOT EXISTS section_vectors (
    section_pk INTEGER PRIMARY KEY REFERENCES sections (pk) ON DELETE CASCADE,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
)
"""
_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'section_vectors'"
_PENDING = """
SELECT s.pk, s.title, s.heading, s.body FROM sections AS s
LEFT JOIN section_vectors AS v ON v.section_pk = s.pk AND v.model = ?
WHERE v.section_pk IS NULL
ORDER BY s.pk LIMIT ?
"""
_PENDING_ALL = "SELECT pk, title, heading, body FROM sections ORDER BY pk LIMIT ?"
_PUT = "INSERT OR REPLACE INTO section_vectors (section_pk, model, vector) VALUES (?, ?, ?)"
_COUNT = "SELECT count(*) FROM section_vectors WHERE model = ?"
_TOTAL = "SELECT count(*) FROM sections"
_SCAN = "SELECT section_pk, vector FROM section_vectors WHERE model = ?"
_VEC_TOP = """
SELECT section_pk, vec_distance_cosine(vector, ?1) AS distance FROM section_vectors
WHERE model = ?2 AND length(vector) = length(?1) ORDER BY distance, section_pk LIMIT ?3
"""
_ROWS = """
SELECT s.pk, s.ordinal, s.heading, s.anchor, s.start_byte, s.end_byte, s.link_ratio,
       substr(s.body, 1, 240) AS snippet, 0.0 AS score,
       d.id, d.url, d.title, d.content_hash, d.canonical_url
FROM sections AS s JOIN documents AS d ON d.pk = s.document_pk
WHERE s.pk IN ({marks}) AND d.removed_at IS NULL
"""


def load_vec(conn: sqlite3.Connection) -> bool:
    """Load ``sqlite-vec`` into ``conn`` when both it and extension loading are here."""
    if not hasattr(conn, "enable_load_extension"):
        return False
    try:
        sqlite_vec = importlib.import_module("sqlite_vec")
    except ImportError:
        return False
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except sqlite3.Error:
        return False
    return True


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


def search_vectors(
    conn: sqlite3.Connection,
    model: str,
    query: Sequence[float],
    limit: int,
    *,
    use_vec: bool,
) -> builtins.list[Candidate]:
    """The ``limit`` sections nearest to ``query`` (score: cosine distance), best first."""
    if limit <= 0 or not _has_table(conn):
        return []
    if use_vec:
        top = [
            (int(row[0]), float(row[1]))
            for row in conn.execute(_VEC_TOP, (to_bytes(query), model, limit))
        ]
    else:
        top = nearest(query, conn.execute(_SCAN, (model,)), limit)
    if not top:
        return []
    marks = ", ".join("?" * len(top))
    rows = {row["pk"]: row for row in conn.execute(_ROWS.format(marks=marks), [k for k, _ in top])}
    return [
        _with_score(candidate_from_row(rows[pk]), distance) for pk, distance in top if pk in rows
    ]


def _with_score(found: Candidate, distance: float) -> Candidate:
    return dataclasses.replace(found, score=distance)
