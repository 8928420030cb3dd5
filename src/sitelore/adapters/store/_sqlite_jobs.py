"""The SQLite side of crawl job records: one row per job a server started, kept across restarts.

:class:`~sitelore.adapters.store.sqlite.SQLiteStore` calls these functions inside its own
connection and transaction handling; they never open, commit or close anything.
The schema step is :data:`JOBS_MIGRATION`, appended to the store's migrations; it
only creates objects with ``IF NOT EXISTS`` (safe if steps were renumbered in a merge).
Times are ISO 8601 text in UTC, like the documents'; ``detail`` is JSON text.
"""

from __future__ import annotations

import json
import sqlite3

from sitelore.adapters.store._rows import job_from_row, job_params, text_to_time, time_to_text
from sitelore.core.models import JobRecord

__all__ = ["JOBS_MIGRATION", "delete_job_record", "job_record", "save_job"]

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

_UPSERT = """
INSERT INTO crawl_jobs (id, seed, status, created_at, finished_at, pages_crawled,
                        pages_indexed, errors, error_code, error_message, detail)
VALUES (:id, :seed, :status, :created_at, :finished_at, :pages_crawled, :pages_indexed,
        :errors, :error_code, :error_message, :detail)
ON CONFLICT (id) DO UPDATE SET
    status = excluded.status, finished_at = excluded.finished_at,
    pages_crawled = excluded.pages_crawled, pages_indexed = excluded.pages_indexed,
    errors = excluded.errors, error_code = excluded.error_code,
    error_message = excluded.error_message, detail = excluded.detail
"""
_SELECT = "SELECT * FROM crawl_jobs WHERE id = ?"
_DELETE = "DELETE FROM crawl_jobs WHERE id = ?"


def save_job(conn: sqlite3.Connection, record: JobRecord) -> None:
    """Insert or replace one record (the caller holds the write transaction)."""
    detail = json.dumps(record.detail, ensure_ascii=False)
    conn.execute(_UPSERT, job_params(record, time_to_text, detail))


def job_record(conn: sqlite3.Connection, job_id: str) -> JobRecord | None:
    """The record with this id, or None."""
    row = conn.execute(_SELECT, (job_id,)).fetchone()
    return None if row is None else job_from_row(row, text_to_time, json.loads(row["detail"]))


def delete_job_record(conn: sqlite3.Connection, job_id: str) -> bool:
    """Delete one record; True when it existed (the caller holds the write transaction)."""
    return conn.execute(_DELETE, (job_id,)).rowcount > 0
