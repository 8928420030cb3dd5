"""The PostgreSQL side of crawl job records: mirrors ``_sqlite_jobs`` for the shared store.

:class:`~sitelore.adapters.store.postgres.PostgresStore` calls these functions with one of its
connections; they never open, commit or close anything. The table is created by the
schema step :data:`JOBS_MIGRATION` (``IF NOT EXISTS``, so a renumbered step is harmless).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

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


def _aware(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


async def save_job(conn: _Conn, record: JobRecord) -> None:
    """Insert or replace one record."""
    await conn.execute(
        _UPSERT,
        {
            "id": record.id,
            "seed": record.seed,
            "status": record.status,
            "created_at": record.created_at,
            "finished_at": record.finished_at,
            "pages_crawled": record.pages_crawled,
            "pages_indexed": record.pages_indexed,
            "errors": record.errors,
            "error_code": record.error_code,
            "error_message": record.error_message,
            "detail": Jsonb(dict(record.detail)),
        },
    )


async def job_record(conn: _Conn, job_id: str) -> JobRecord | None:
    """The record with this id, or None."""
    cur = await conn.execute(_SELECT, (job_id,))
    row = await cur.fetchone()
    if row is None:
        return None
    created = _aware(row["created_at"])
    assert created is not None
    return JobRecord(
        id=row["id"],
        seed=row["seed"],
        status=row["status"],
        created_at=created,
        finished_at=_aware(row["finished_at"]),
        pages_crawled=row["pages_crawled"],
        pages_indexed=row["pages_indexed"],
        errors=row["errors"],
        error_code=row["error_code"],
        error_message=row["error_message"],
        detail=row["detail"],
    )


async def delete_job_record(conn: _Conn, job_id: str) -> bool:
    """Delete one record; True when it existed."""
    cur = await conn.execute(_DELETE, (job_id,))
    return cur.rowcount > 0
