"""The PostgreSQL side of crawl job records: mirrors ``_sqlite_jobs`` for the shared store.

:class:`~sitelore.adapters.store.postgres.PostgresStore` calls these functions with one of its
connections; they never open, commit or close anything. The table is created by the
schema step :data:`JOBS_MIGRATION` (``IF NOT EXISTS``, so a renumbered step is harmless).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from sitelore.adapters.store._rows import job_from_row, job_params, utc
from sitelore.core.models import JobRecord

__all__ = ["JOBS_MIGRATION", "delete_job_record", "job_record", "save_job"]

_Conn = psycopg.AsyncConnection[dict[str, Any]]

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

_UPSERT = """
INSERT INTO sitelore_crawl_jobs (id, seed, status, created_at, finished_at, pages_crawled,
                                 pages_indexed, errors, error_code, error_message, detail)
VALUES (%(id)s, %(seed)s, %(status)s, %(created_at)s, %(finished_at)s, %(pages_crawled)s,
        %(pages_indexed)s, %(errors)s, %(error_code)s, %(error_message)s, %(detail)s)
ON CONFLICT (id) DO UPDATE SET
    status = excluded.status, finished_at = excluded.finished_at,
    pages_crawled = excluded.pages_crawled, pages_indexed = excluded.pages_indexed,
    errors = excluded.errors, error_code = excluded.error_code,
    error_message = excluded.error_message, detail = excluded.detail
"""
_SELECT = "SELECT * FROM sitelore_crawl_jobs WHERE id = %s"
_DELETE = "DELETE FROM sitelore_crawl_jobs WHERE id = %s"


async def save_job(conn: _Conn, record: JobRecord) -> None:
    """Insert or replace one record."""
    await conn.execute(_UPSERT, job_params(record, _as_given, Jsonb(dict(record.detail))))


async def job_record(conn: _Conn, job_id: str) -> JobRecord | None:
    """The record with this id, or None."""
    cur = await conn.execute(_SELECT, (job_id,))
    row = await cur.fetchone()
    return None if row is None else job_from_row(row, utc, row["detail"])


def _as_given(value: datetime) -> datetime:
    return value


async def delete_job_record(conn: _Conn, job_id: str) -> bool:
    """Delete one record; True when it existed."""
    cur = await conn.execute(_DELETE, (job_id,))
    return cur.rowcount > 0
