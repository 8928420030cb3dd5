"""The SQLite side of snapshot links: which WARC record each document was built from.

:class:`~sitelore.adapters.store.sqlite.SQLiteStore` calls these functions inside its own
connection and transaction handling; they never open, commit or close anything.
The schema step is :data:`CAPTURES_MIGRATION`, appended to the store's migrations.
It only creates objects with ``IF NOT EXISTS``, so running it on a database that
already has them (a step renumbered when parallel migrations were merged) is a
no-op rather than an error.

``document_captures`` holds at most one row per document (keyed by the document's
``pk``) and disappears with it (``ON DELETE CASCADE``; the store turns foreign keys
on for every connection). The row names the record by file, offset and length, and
keeps its payload digest and record id so a reader can tell that the bytes found
there are the ones the document was built from.
"""

from __future__ import annotations

import builtins
import sqlite3

from sitelore.adapters.store._rows import capture_from_row, capture_params
from sitelore.core.models import CaptureRef

__all__ = ["CAPTURES_MIGRATION", "capture_of", "captures", "link_capture"]

CAPTURES_MIGRATION: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS document_captures (
        document_pk INTEGER PRIMARY KEY REFERENCES documents (pk) ON DELETE CASCADE,
        warc_file TEXT NOT NULL,
        record_offset INTEGER NOT NULL,
        record_length INTEGER NOT NULL,
        digest TEXT NOT NULL,
        record_id TEXT NOT NULL,
        page_id TEXT NOT NULL
    )
    """,
)

_SELECT_PK = "SELECT pk FROM documents WHERE id = :key OR url = :key LIMIT 1"
_UPSERT = """
INSERT INTO document_captures (document_pk, warc_file, record_offset, record_length, digest,
                               record_id, page_id)
VALUES (:pk, :warc_file, :offset, :length, :digest, :record_id, :page_id)
ON CONFLICT (document_pk) DO UPDATE SET
    warc_file = excluded.warc_file, record_offset = excluded.record_offset,
    record_length = excluded.record_length, digest = excluded.digest,
    record_id = excluded.record_id, page_id = excluded.page_id
"""
_DELETE = "DELETE FROM document_captures WHERE document_pk = ?"
_SELECT_ONE = """
SELECT c.warc_file, c.record_offset, c.record_length, c.digest, c.record_id, c.page_id
FROM document_captures AS c JOIN documents AS d ON d.pk = c.document_pk
WHERE d.id = :key OR d.url = :key
LIMIT 1
"""
_SELECT_ALL = """
SELECT d.id, c.warc_file, c.record_offset, c.record_length, c.digest, c.record_id, c.page_id
FROM document_captures AS c JOIN documents AS d ON d.pk = c.document_pk
ORDER BY d.pk
"""


def link_capture(conn: sqlite3.Connection, id_or_url: str, ref: CaptureRef | None) -> bool:
    """Point the document at ``ref`` (None: drop its link); False when there is no document."""
    row = conn.execute(_SELECT_PK, {"key": id_or_url}).fetchone()
    if row is None:
        return False
    if ref is None:
        conn.execute(_DELETE, (row["pk"],))
    else:
        conn.execute(_UPSERT, capture_params(row["pk"], ref))
    return True


def capture_of(conn: sqlite3.Connection, id_or_url: str) -> CaptureRef | None:
    """The record the document (by id or URL) was built from, if it has one."""
    row = conn.execute(_SELECT_ONE, {"key": id_or_url}).fetchone()
    return None if row is None else capture_from_row(row)


def captures(conn: sqlite3.Connection) -> builtins.list[tuple[str, CaptureRef]]:
    """``(document id, record)`` for every linked document, oldest document first."""
    return [(row["id"], capture_from_row(row)) for row in conn.execute(_SELECT_ALL).fetchall()]
