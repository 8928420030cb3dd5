"""The PostgreSQL side of incremental re-crawls and snapshot links.

Mirrors ``_sqlite_changes`` (validators by URL, removal flags, change reports) and
``_sqlite_captures`` (the WARC record each document was built from) for
:class:`~sitelore.adapters.store.postgres.PostgresStore`, which calls these functions with one of
its connections; they never open, commit or close anything.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from sitelore.adapters.store._rows import (
    aware,
    capture_from_row,
    capture_params,
    known_page_from_row,
    report_from_row,
    report_params,
    utc,
    verified_params,
)
from sitelore.core.changes import ChangeReport, KnownPage
from sitelore.core.models import CaptureRef, FetchMeta

__all__ = [
    "capture_of",
    "captures",
    "change_reports",
    "known_page",
    "link_capture",
    "mark_removed",
    "mark_verified",
    "record_change_report",
]

_Conn = psycopg.AsyncConnection[dict[str, Any]]

_SELECT_KNOWN = """
SELECT id, url, title, content_type, content_hash, etag, last_modified, links, removed_at
FROM sitelore_documents WHERE url = %s
"""
_MARK_VERIFIED = """
UPDATE sitelore_documents SET fetched_at = %(fetched_at)s,
    etag = coalesce(%(etag)s, etag), last_modified = coalesce(%(last_modified)s, last_modified)
WHERE url = %(url)s AND removed_at IS NULL
RETURNING id
"""
_MARK_REMOVED = """
UPDATE sitelore_documents SET removed_at = %(at)s, status = %(status)s
WHERE url = %(url)s AND removed_at IS NULL
RETURNING id
"""
_INSERT_REPORT = """
INSERT INTO sitelore_change_reports (
    source, seed, started_at, finished_at, ok, error, pages_crawled, truncated, urls
) VALUES (
    %(source)s, %(seed)s, %(started_at)s, %(finished_at)s, %(ok)s, %(error)s,
    %(pages_crawled)s, %(truncated)s, %(urls)s
)
"""
_SELECT_REPORTS = """
SELECT * FROM sitelore_change_reports
WHERE source = %s AND (ok OR NOT %s) ORDER BY pk DESC LIMIT %s
"""
_SELECT_PK = "SELECT pk FROM sitelore_documents WHERE id = %(key)s OR url = %(key)s LIMIT 1"
_UPSERT_CAPTURE = """
INSERT INTO sitelore_document_captures (document_pk, warc_file, record_offset, record_length,
                                        digest, record_id, page_id)
VALUES (%(pk)s, %(warc_file)s, %(offset)s, %(length)s, %(digest)s, %(record_id)s, %(page_id)s)
ON CONFLICT (document_pk) DO UPDATE SET
    warc_file = excluded.warc_file, record_offset = excluded.record_offset,
    record_length = excluded.record_length, digest = excluded.digest,
    record_id = excluded.record_id, page_id = excluded.page_id
"""
_DELETE_CAPTURE = "DELETE FROM sitelore_document_captures WHERE document_pk = %s"
_SELECT_CAPTURE = """
SELECT c.warc_file, c.record_offset, c.record_length, c.digest, c.record_id, c.page_id
FROM sitelore_document_captures AS c JOIN sitelore_documents AS d ON d.pk = c.document_pk
WHERE d.id = %(key)s OR d.url = %(key)s
LIMIT 1
"""
_SELECT_CAPTURES = """
SELECT d.id, c.warc_file, c.record_offset, c.record_length, c.digest, c.record_id, c.page_id
FROM sitelore_document_captures AS c JOIN sitelore_documents AS d ON d.pk = c.document_pk
ORDER BY d.pk
"""


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


async def known_page(conn: _Conn, url: str) -> KnownPage | None:
    """The fetch metadata of the document stored for exactly ``url``."""
    row = await (await conn.execute(_SELECT_KNOWN, (url,))).fetchone()
    if row is None:
        return None
    return known_page_from_row(row, links=_strings(row["links"]), decode_time=utc)


async def mark_verified(conn: _Conn, url: str, meta: FetchMeta) -> str | None:
    """Record a ``304`` for ``url``: new fetch time (and validators); content untouched."""
    params = verified_params(url, meta, aware)
    row = await (await conn.execute(_MARK_VERIFIED, params)).fetchone()
    return None if row is None else str(row["id"])


async def mark_removed(conn: _Conn, url: str, status: int, at: datetime) -> str | None:
    """Flag the live document at ``url`` as removed; its id, or None if none was live."""
    params = {"url": url, "status": status, "at": aware(at)}
    row = await (await conn.execute(_MARK_REMOVED, params)).fetchone()
    return None if row is None else str(row["id"])


async def record_change_report(conn: _Conn, report: ChangeReport) -> None:
    """Append one crawl's change report."""
    await conn.execute(_INSERT_REPORT, report_params(report, aware, Jsonb(report.url_lists())))


async def change_reports(
    conn: _Conn, source: str, *, limit: int, ok_only: bool
) -> builtins.list[ChangeReport]:
    """The newest ``limit`` reports of ``source`` (only successful ones if ``ok_only``)."""
    cur = await conn.execute(_SELECT_REPORTS, (source, ok_only, limit))
    return [report_from_row(row, utc, row["urls"]) for row in await cur.fetchall()]


async def link_capture(conn: _Conn, id_or_url: str, ref: CaptureRef | None) -> bool:
    """Point the document at ``ref`` (None: drop its link); False when there is no document."""
    row = await (await conn.execute(_SELECT_PK, {"key": id_or_url})).fetchone()
    if row is None:
        return False
    if ref is None:
        await conn.execute(_DELETE_CAPTURE, (row["pk"],))
    else:
        await conn.execute(_UPSERT_CAPTURE, capture_params(row["pk"], ref))
    return True


async def capture_of(conn: _Conn, id_or_url: str) -> CaptureRef | None:
    """The record the document (by id or URL) was built from, if it has one."""
    row = await (await conn.execute(_SELECT_CAPTURE, {"key": id_or_url})).fetchone()
    return None if row is None else capture_from_row(row)


async def captures(conn: _Conn) -> builtins.list[tuple[str, CaptureRef]]:
    """``(document id, record)`` for every linked document, oldest document first."""
    rows = await (await conn.execute(_SELECT_CAPTURES)).fetchall()
    return [(str(row["id"]), capture_from_row(row)) for row in rows]
