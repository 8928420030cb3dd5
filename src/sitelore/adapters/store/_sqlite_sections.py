"""The SQLite side of sections: their table, FTS5 index, upkeep and ranked search.

:class:`~sitelore.adapters.store.sqlite.SQLiteStore` calls these functions inside its own
connection and transactions; they never open, commit or close anything. The schema
step is :data:`SECTIONS_MIGRATION` (``IF NOT EXISTS`` throughout, so a step renumbered
by a merge is harmless).

``sections`` holds one row per section (:mod:`sitelore.core.sections`) with its plain text;
``sections_fts`` is an FTS5 *external content* index over the page title, the heading
path and that text (porter stemming, folded case and accents, as the page index). A
document's sections are replaced whenever its title or Markdown changes and go with it
(``ON DELETE CASCADE``, whose deletes fire the index trigger).
``documents.sections_version`` says which splitter cut a document's sections: rows
below :data:`SECTIONS_VERSION` (stores made before sections, or a changed splitter)
are cut again when the store opens (:func:`has_stale`, :func:`stale_batches`) or by
``sitelore reindex``.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Callable, Iterator, Sequence

from sitelore.adapters.store import _shared as shared
from sitelore.adapters.store._query import COMMON_SHARE, MIN_COMMON, fts5_query, search_terms
from sitelore.adapters.store._ranking import Candidate
from sitelore.adapters.store._steps import run_sqlite
from sitelore.core.models import Section
from sitelore.core.sections import SECTIONS_VERSION

__all__ = [
    "SECTIONS_MIGRATION",
    "SECTIONS_VERSION",
    "Step",
    "add_version_column",
    "has_stale",
    "replace_sections",
    "search_sections",
    "stale_batches",
]

_BATCH = 200


def add_version_column(conn: sqlite3.Connection) -> None:
    """Add ``documents.sections_version`` unless it is there (the step may run twice)."""
    names = {row[1] for row in conn.execute("PRAGMA table_info(documents)")}
    if "sections_version" not in names:
        conn.execute("ALTER TABLE documents ADD COLUMN sections_version INTEGER NOT NULL DEFAULT 0")


#: A migration step: SQL, or a function for what SQL cannot say idempotently.
Step = str | Callable[[sqlite3.Connection], None]

SECTIONS_MIGRATION: tuple[Step, ...] = (
    """
    CREATE TABLE IF NOT EXISTS sections (
        pk INTEGER PRIMARY KEY,
        document_pk INTEGER NOT NULL REFERENCES documents (pk) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        title TEXT NOT NULL,
        heading TEXT NOT NULL,
        anchor TEXT,
        start_byte INTEGER NOT NULL,
        end_byte INTEGER NOT NULL,
        body TEXT NOT NULL,
        link_ratio REAL NOT NULL,
        UNIQUE (document_pk, ordinal)
    )
    """,
    """
    CREATE VIRTUAL TABLE IF NOT EXISTS sections_fts USING fts5(
        title, heading, body,
        content='sections', content_rowid='pk',
        tokenize='porter unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE TRIGGER IF NOT EXISTS sections_ai AFTER INSERT ON sections BEGIN
        INSERT INTO sections_fts (rowid, title, heading, body)
        VALUES (new.pk, new.title, new.heading, new.body);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS sections_ad AFTER DELETE ON sections BEGIN
        INSERT INTO sections_fts (sections_fts, rowid, title, heading, body)
        VALUES ('delete', old.pk, old.title, old.heading, old.body);
    END
    """,
    add_version_column,  # an ALTER TABLE cannot say IF NOT EXISTS
    "CREATE INDEX IF NOT EXISTS documents_sections_version ON documents (sections_version)",
)


_INSERT = """
INSERT INTO sections (document_pk, ordinal, title, heading, anchor, start_byte, end_byte,
                      body, link_ratio)
VALUES (:pk, :ordinal, :title, :heading, :anchor, :start, :end, :body, :link_ratio)
"""
_STALE = "SELECT pk, title, markdown FROM documents WHERE sections_version < ? LIMIT ?"
_RESET = "UPDATE documents SET sections_version = 0"
# bm25 weights: page title 10, heading path 4, text 1 (lower is better). Ranking through
# the hidden ``rank`` column lets FTS5 sort internally, so snippet() runs for the LIMIT
# rows only. The snippet is cut from the text, 16 tokens (as PostgreSQL's).
_SEARCH = """
SELECT s.ordinal, s.heading, s.anchor, s.start_byte, s.end_byte, s.link_ratio,
       snippet(sections_fts, 2, '**', '**', '…', 16) AS snippet,
       sections_fts.rank AS score,
       d.id, d.url, d.title, d.content_hash, d.canonical_url
FROM sections_fts
JOIN sections AS s ON s.pk = sections_fts.rowid
JOIN documents AS d ON d.pk = s.document_pk
WHERE sections_fts MATCH :match AND sections_fts.rank MATCH 'bm25(10.0, 4.0, 1.0)'
  AND d.removed_at IS NULL
ORDER BY sections_fts.rank
LIMIT :limit
"""

_COUNT_SECTIONS = "SELECT count(*) FROM sections"
# How many sections match, counting no further than the second parameter (cheap).
_CAPPED_COUNT = (
    "SELECT count(*) FROM (SELECT 1 FROM sections_fts WHERE sections_fts MATCH ? LIMIT ?)"
)


def replace_sections(
    conn: sqlite3.Connection,
    pk: int,
    title: str,
    markdown: str,
    cut: Sequence[Section] | None = None,
) -> None:
    """Store the sections of document ``pk`` (inside the caller's transaction).

    ``cut`` are its sections when the converter cut them already; else they are cut here.
    """
    rows = shared.section_rows(pk, markdown, cut, title=title)
    run_sqlite(conn, shared.replace_sections(pk, _INSERT, rows))


def stale_batches(conn: sqlite3.Connection, *, everything: bool = False) -> Iterator[int]:
    """Re-cut documents whose sections are older than this splitter, a batch at a time.

    Yields the number of documents done after each batch; the caller wraps each step
    of the iterator in a write transaction. ``everything`` re-cuts every document.
    """
    if everything:
        conn.execute(_RESET)
    done = 0
    while True:
        rows = conn.execute(_STALE, (SECTIONS_VERSION, _BATCH)).fetchall()
        if not rows:
            return
        for row in rows:
            replace_sections(conn, row["pk"], row["title"], row["markdown"])
        done += len(rows)
        yield done


def has_stale(conn: sqlite3.Connection) -> bool:
    """Whether any document's sections are older than this splitter (cheap: indexed)."""
    row = conn.execute(
        "SELECT 1 FROM documents WHERE sections_version < ? LIMIT 1", (SECTIONS_VERSION,)
    ).fetchone()
    return row is not None


def match_expression(conn: sqlite3.Connection, terms: builtins.list[tuple[str, ...]]) -> str:
    """The FTS5 expression for ``terms``: any rare term finds a section, every term ranks it.

    Matching sections by a common word means computing BM25 for most of the store, for a
    term that adds little to the score. So a section must hold one of the rare terms
    (``(R1 OR R2) AND (R1 OR R2 OR C1 ...)``: common terms still add to its score); when
    every term is common, it must hold all of them, and when no section does, any.
    """
    if len(terms) < 2:
        return fts5_query(terms)
    total = int(conn.execute(_COUNT_SECTIONS).fetchone()[0])
    cap = max(MIN_COMMON, int(total * COMMON_SHARE))
    rare = [
        term
        for term in terms
        if int(conn.execute(_CAPPED_COUNT, (fts5_query([term]), cap)).fetchone()[0]) < cap
    ]
    if len(rare) == len(terms):
        return fts5_query(terms)
    if rare:
        return f"({fts5_query(rare)}) AND ({fts5_query(terms)})"
    every = " AND ".join(fts5_query([term]) for term in terms)
    found = conn.execute(_CAPPED_COUNT, (every, 1)).fetchone()[0]
    return every if found else fts5_query(terms)


def search_sections(conn: sqlite3.Connection, query: str, limit: int) -> builtins.list[Candidate]:
    """The best sections for ``query`` (any of its terms), best first."""
    terms = search_terms(query)
    if not terms:
        return []
    match = match_expression(conn, terms)
    return run_sqlite(conn, shared.best_sections(_SEARCH, {"match": match}, limit))
