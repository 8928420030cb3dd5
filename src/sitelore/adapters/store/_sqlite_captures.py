"""The SQLite schema of snapshot links: which WARC record each document was built from.

The statements that read and write them are both stores' (``_shared``).
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

__all__ = ["CAPTURES_MIGRATION"]

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
