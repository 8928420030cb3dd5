"""The SQLite schema of crawl job records: one row per job a server started, kept across restarts.

The statements that read and write them are both stores' (``_shared``).
The schema step is :data:`JOBS_MIGRATION`, appended to the store's migrations; it
only creates objects with ``IF NOT EXISTS`` (safe if steps were renumbered in a merge).
Times are ISO 8601 text in UTC, like the documents'; ``detail`` is JSON text.
"""

from __future__ import annotations

__all__ = ["JOBS_MIGRATION"]

JOBS_MIGRATION: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS crawl_jobs (
        id TEXT PRIMARY KEY,
        seed TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        finished_at TEXT,
        pages_crawled INTEGER NOT NULL,
        pages_indexed INTEGER NOT NULL,
        errors INTEGER NOT NULL,
        error_code TEXT,
        error_message TEXT,
        detail TEXT NOT NULL
    )
    """,
)
