"""The PostgreSQL side of section vectors: their table, upkeep and nearest-section search.

``sitelore_section_vectors`` holds one vector per section as float32 bytes (``bytea``,
packed by :mod:`._vectors`) and the model's name; it goes with its section (``ON
DELETE CASCADE``). Ranking is numpy's over one matrix of the model's vectors (as
SQLite's store does), so both stores give the same order; a :class:`MatrixCache`
keeps that matrix between searches and reads it again (in pages of ``_shared.PAGE``
rows) only when ``sitelore_vector_generation`` moved. Reading every vector per query
cost 100 ms of client CPU at 10k sections (1.5 KB each over the wire and through
psycopg); held, a search at 10k costs what SQLite's does.

The counter (schema step :data:`VECTORS_STEPS`) is moved by a deferred constraint
trigger, once per transaction that changed any vector (cascaded deletes included),
at its commit: the counter's row lock is the last lock such a transaction takes, so
writers never wait on each other in a cycle through it. ``TRUNCATE`` moves it too.
The statements that store, count and read vectors are both stores' (``_shared``).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Sequence
from typing import Any

import psycopg

from sitelore.adapters.store import _shared
from sitelore.adapters.store._ranking import Candidate
from sitelore.adapters.store._steps import run_pg
from sitelore.adapters.store._vectors import VectorMatrix

__all__ = ["VECTORS_STEPS", "MatrixCache", "candidates"]

_Conn = psycopg.AsyncConnection[dict[str, Any]]

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
_ROWS = """
SELECT s.pk, s.ordinal, s.heading, s.anchor, s.start_byte, s.end_byte, s.link_ratio,
       s.body AS snippet, 0.0 AS score,
       d.id, d.url, d.title, d.content_hash, d.canonical_url
FROM sitelore_sections AS s JOIN sitelore_documents AS d ON d.pk = s.document_pk
WHERE s.pk = ANY(%s) AND d.removed_at IS NULL
"""


class MatrixCache(_shared.MatrixCache):
    """One model's vectors as a :class:`VectorMatrix`, kept while no vector changed.

    Concurrent searches wait for one read.
    """

    def __init__(self) -> None:
        super().__init__()
        self._reading = asyncio.Lock()

    async def matrix(self, conn: _Conn, model: str, dims: int) -> VectorMatrix:
        """The vectors of ``model`` with ``dims`` floats, read only when they changed."""
        async with self._reading:
            return await run_pg(conn, self.read(model, dims))


async def candidates(conn: _Conn, top: Sequence[tuple[int, float]]) -> builtins.list[Candidate]:
    """The sections of ``top`` (key, cosine distance) as candidates, in that order.

    Sections gone since (or of removed pages) are left out.
    """
    return await run_pg(conn, _shared.candidates(_ROWS, ([key for key, _ in top],), top))
