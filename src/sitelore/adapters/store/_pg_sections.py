"""The PostgreSQL side of sections: schema step, upkeep and a BM25-like ranked search.

:class:`~sitelore.adapters.store.postgres.PostgresStore` calls these functions on its own
connections and inside its own transactions. ``sitelore_sections`` holds one row per
section (:mod:`sitelore.core.sections`) with a tsvector of the page title (weight A), the
heading path (B) and the section's plain text (D), words split and folded in Python
as for the page index (:mod:`._pg_text`), so both stores match the same words.

PostgreSQL has no BM25, so ranking is built to follow SQLite's FTS5 ``bm25(10, 4, 1)``:
per query term, an inverse document frequency counted over the sections (one indexed
count per term), times a saturating term frequency from ``ts_rank`` with the same
column weights, normalised by the section's length against the average. The query
terms are any-of (:mod:`._query`), so a question needs not hold every word.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import psycopg

from sitelore.adapters.store import _shared as shared
from sitelore.adapters.store._pg_text import MAX_TITLE_CHARS, index_text
from sitelore.adapters.store._query import COMMON_SHARE, MIN_COMMON, search_terms, tsquery_terms
from sitelore.adapters.store._ranking import Candidate
from sitelore.adapters.store._steps import run_pg
from sitelore.core.models import Section
from sitelore.core.sections import SECTIONS_VERSION

__all__ = [
    "SECTIONS_STEPS",
    "SECTIONS_VERSION",
    "replace_sections",
    "restale_all",
    "search_sections",
    "stale_batch",
]

_Conn = psycopg.AsyncConnection[dict[str, Any]]

_BATCH = 200

SECTIONS_STEPS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS sitelore_sections (
        pk bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        document_pk bigint NOT NULL REFERENCES sitelore_documents (pk) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        heading text NOT NULL,
        anchor text,
        start_byte integer NOT NULL,
        end_byte integer NOT NULL,
        body text NOT NULL,
        link_ratio real NOT NULL,
        words integer NOT NULL,
        tsv tsvector NOT NULL,
        UNIQUE (document_pk, ordinal)
    )""",
    "CREATE INDEX IF NOT EXISTS sitelore_sections_tsv ON sitelore_sections USING gin (tsv)",
    # Section count and average length (BM25's N and avgdl) by an index-only scan.
    "CREATE INDEX IF NOT EXISTS sitelore_sections_words ON sitelore_sections (words)",
    """ALTER TABLE sitelore_documents
       ADD COLUMN IF NOT EXISTS sections_version integer NOT NULL DEFAULT 0""",
    """CREATE INDEX IF NOT EXISTS sitelore_documents_sections_version
       ON sitelore_documents (sections_version)""",
)

_INSERT = """
INSERT INTO sitelore_sections (document_pk, ordinal, heading, anchor, start_byte, end_byte,
                               body, link_ratio, words, tsv)
VALUES (%(pk)s, %(ordinal)s, %(heading)s, %(anchor)s, %(start)s, %(end)s, %(body)s,
        %(link_ratio)s, %(words)s,
        setweight(to_tsvector('sitelore_text', %(title_words)s), 'A') ||
        setweight(to_tsvector('sitelore_text', %(heading_words)s), 'B') ||
        setweight(to_tsvector('sitelore_text', %(body_words)s), 'D'))
"""
_STALE = (
    "SELECT pk, title, markdown FROM sitelore_documents WHERE sections_version < %s "
    "ORDER BY pk LIMIT %s FOR UPDATE SKIP LOCKED"
)
_RESET = "UPDATE sitelore_documents SET sections_version = 0"
_STATS = """
SELECT c.total, c.average,
       ARRAY(SELECT (SELECT count(*) FROM sitelore_sections
                     WHERE tsv @@ to_tsquery('sitelore_text', t.q))
             FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(q, n) ORDER BY t.n) AS counts,
       ARRAY(SELECT to_tsquery('sitelore_text', t.q)::text
             FROM unnest(%(terms)s::text[]) WITH ORDINALITY AS t(q, n) ORDER BY t.n) AS queries
FROM (SELECT count(*) AS total, coalesce(avg(words), 1) AS average
      FROM sitelore_sections) AS c
"""
# ts_rank with weights {D, C, B, A} = {0.1, 0, 0.4, 1.0} (text 1, heading 4, title 10, as
# SQLite's bm25 weights), scaled so one occurrence in the text counts about 1; then the
# BM25 saturation (k1 = 1.2, b = 0.75) against the section's length. Lower is better.
_SEARCH = """
SELECT s.ordinal, s.heading, s.anchor, s.start_byte, s.end_byte, s.link_ratio,
       s.body AS snippet,
       m.score, d.id, d.url, d.title, d.content_hash, d.canonical_url
FROM (
    SELECT s.pk, -(
        SELECT sum(r.idf * r.f * 2.2 / (r.f + 1.2 * (0.25 + 0.75 * s.words / %(average)s)))
        FROM (SELECT t.idf, ts_rank('{0.1, 0, 0.4, 1.0}', s.tsv, t.q) * 16.4493406685 AS f
              FROM unnest(%(queries)s::tsquery[], %(idfs)s::float8[]) AS t(q, idf)) AS r
    ) AS score
    FROM sitelore_sections AS s, to_tsquery('sitelore_text', %(any)s) AS q
    WHERE s.tsv @@ q
    ORDER BY score, s.pk
    LIMIT %(limit)s
) AS m
JOIN sitelore_sections AS s ON s.pk = m.pk
JOIN sitelore_documents AS d ON d.pk = s.document_pk
WHERE d.removed_at IS NULL
ORDER BY m.score, s.pk
"""


def _words(text: str) -> int:
    return text.count(" ") + 1 if text else 0


async def replace_sections(
    conn: _Conn, pk: int, title: str, markdown: str, cut: Sequence[Section] | None = None
) -> None:
    """Store the sections of document ``pk`` (inside the caller's transaction).

    ``cut`` are its sections when the converter cut them already; else they are cut here.
    """
    title_words = index_text(title, MAX_TITLE_CHARS)
    rows = shared.section_rows(pk, markdown, cut, title_words=title_words)
    for row in rows:
        row["heading_words"] = index_text(row["heading"], MAX_TITLE_CHARS)
        row["body_words"] = index_text(row["body"])
        row["words"] = (
            _words(title_words) + _words(row["heading_words"]) + _words(row["body_words"])
        )
    await run_pg(conn, shared.replace_sections(pk, _INSERT, rows))


async def stale_batch(conn: _Conn) -> int:
    """Cut one batch of documents whose sections are older than this splitter; how many."""
    cur = await conn.execute(_STALE, (SECTIONS_VERSION, _BATCH))
    rows = await cur.fetchall()
    for row in rows:
        await replace_sections(conn, row["pk"], row["title"], row["markdown"])
    return len(rows)


async def restale_all(conn: _Conn) -> None:
    """Mark every document's sections as stale (``reindex``)."""
    await conn.execute(_RESET)


async def search_sections(
    conn: _Conn, query: str, limit: int
) -> tuple[builtins.list[Candidate], builtins.list[tuple[str, ...]]]:
    """The best sections for ``query`` (any of its terms), best first, and the terms.

    Each candidate's ``snippet`` is still the section's whole plain text: the caller cuts
    snippets for the hits it keeps.
    """
    terms = search_terms(query)
    if not terms:
        return [], terms
    queries = tsquery_terms(terms)
    cur = await conn.execute(_STATS, {"terms": queries})
    stats = await cur.fetchone()
    assert stats is not None
    total = int(stats["total"])
    idfs = [
        max(1e-6, math.log((total - n + 0.5) / (n + 0.5))) if total else 1e-6
        for n in stats["counts"]
    ]
    # As SQLite's store: a common term ranks but never finds (see _sqlite_sections).
    cap = max(MIN_COMMON, int(total * COMMON_SHARE))
    rare = [q for q, n in zip(queries, stats["counts"], strict=True) if n < cap]
    every = len(rare) == 0 and len(queries) > 1
    params = {
        "average": float(stats["average"]) or 1.0,
        "queries": stats["queries"],  # stemmed, as the index holds them
        "idfs": idfs,
        "any": (" & " if every else " | ").join(f"({q})" for q in (rare or queries)),
    }
    found = await run_pg(conn, shared.best_sections(_SEARCH, params, limit))
    if every and not found:  # no section holds every (common) term: any of them
        params["any"] = " | ".join(f"({q})" for q in queries)
        found = await run_pg(conn, shared.best_sections(_SEARCH, params, limit))
    return found, terms
