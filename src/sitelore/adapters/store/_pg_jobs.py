"""The PostgreSQL schema of crawl job records: mirrors ``_sqlite_jobs`` for the shared store.

The statements that read and write them are both stores' (``_shared``). The table is
created by the schema step :data:`JOBS_MIGRATION` (``IF NOT EXISTS``, so a renumbered
step is harmless).
"""

from __future__ import annotations

__all__ = ["JOBS_MIGRATION"]

JOBS_MIGRATION: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS sitelore_crawl_jobs (
        id text PRIMARY KEY,
        seed text NOT NULL,
        status text NOT NULL,
        created_at timestamptz NOT NULL,
        finished_at timestamptz,
        pages_crawled integer NOT NULL,
        pages_indexed integer NOT NULL,
        errors integer NOT NULL,
        error_code text,
        error_message text,
        detail jsonb NOT NULL
    )""",
)
