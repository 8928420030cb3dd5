"""The SQLite side of incremental re-crawls: validators by URL, removal flags, change reports.

:class:`~sitelore.adapters.store.sqlite.SQLiteStore` calls these functions inside its own
connection and transaction handling; they never open, commit or close anything.
The schema step they need is :data:`SOURCES_MIGRATION` (appended to the store's
migrations):

* ``documents.links``: the links a page offered the crawl, as a JSON array, so a
  ``304`` answer can offer them again (NULL for rows stored before this step: such
  a page is fetched in full once, see :meth:`KnownPage.conditional_headers`);
* ``documents.removed_at``: set when the URL answered ``404``/``410`` in a re-crawl;
  the row stays (flagged), search leaves it out, a later good fetch clears it;
* ``change_reports``: one row per crawl of a named source; the URL lists are JSON.
"""

from __future__ import annotations

import builtins
import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

from sitelore.adapters.store._rows import known_page_from_row
from sitelore.core.changes import ChangeReport, KnownPage
from sitelore.core.models import FetchMeta

__all__ = [
    "SOURCES_MIGRATION",
    "change_reports",
    "known_page",
    "mark_removed",
    "mark_verified",
    "record_change_report",
    "set_links",
]

SOURCES_MIGRATION: tuple[str, ...] = (
    "ALTER TABLE documents ADD COLUMN links TEXT",
    "ALTER TABLE documents ADD COLUMN removed_at TEXT",
    """
    CREATE TABLE change_reports (
        pk INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        seed TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        ok INTEGER NOT NULL,
        error TEXT,
        pages_crawled INTEGER NOT NULL,
        truncated INTEGER NOT NULL,
        urls TEXT NOT NULL
    )
    """,
    "CREATE INDEX change_reports_source ON change_reports (source, ok, pk)",
)

_SELECT_KNOWN = """
SELECT id, url, title, content_type, content_hash, etag, last_modified, links, removed_at
FROM documents WHERE url = ?
"""
# Only writes when something differs, so an unchanged page stays untouched.
_SET_LINKS = """
UPDATE documents SET links = :links, removed_at = NULL
WHERE pk = :pk AND (links IS NOT :links OR removed_at IS NOT NULL)
"""
_MARK_VERIFIED = """
UPDATE documents SET fetched_at = :fetched_at,
    etag = coalesce(:etag, etag), last_modified = coalesce(:last_modified, last_modified)
WHERE url = :url AND removed_at IS NULL
RETURNING id
"""
_MARK_REMOVED = """
UPDATE documents SET removed_at = :at, status = :status
WHERE url = :url AND removed_at IS NULL
RETURNING id
"""
_INSERT_REPORT = """
INSERT INTO change_reports (
    source, seed, started_at, finished_at, ok, error, pages_crawled, truncated, urls
) VALUES (
    :source, :seed, :started_at, :finished_at, :ok, :error, :pages_crawled, :truncated, :urls
)
"""
_SELECT_REPORTS = """
SELECT * FROM change_reports WHERE source = ? ORDER BY pk DESC LIMIT ?
"""
_SELECT_OK_REPORTS = """
SELECT * FROM change_reports WHERE source = ? AND ok = 1 ORDER BY pk DESC LIMIT ?
"""


def _to_text(value: datetime) -> str:
    """ISO 8601 in UTC, fixed width (the store's time format)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _from_text(text: str) -> datetime:
    value = datetime.fromisoformat(text)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _links_from_text(text: str | None) -> tuple[str, ...] | None:
    """The stored links; None when none were ever recorded (or the value is unreadable)."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, list):
        return None
    return tuple(link for link in data if isinstance(link, str))


def set_links(conn: sqlite3.Connection, pk: int, links: tuple[str, ...]) -> None:
    """Store the links of a page that was just upserted, and clear its removal flag."""
    conn.execute(_SET_LINKS, {"pk": pk, "links": json.dumps(list(links), ensure_ascii=False)})


def known_page(conn: sqlite3.Connection, url: str) -> KnownPage | None:
    """The fetch metadata of the document stored for exactly ``url``."""
    row = conn.execute(_SELECT_KNOWN, (url,)).fetchone()
    if row is None:
        return None
    removed = row["removed_at"]
    return known_page_from_row(
        row,
        links=_links_from_text(row["links"]),
        removed_at=None if removed is None else _from_text(removed),
    )


def mark_verified(conn: sqlite3.Connection, url: str, meta: FetchMeta) -> str | None:
    """Record a ``304`` for ``url``: new fetch time (and validators); content untouched."""
    row = conn.execute(
        _MARK_VERIFIED,
        {
            "url": url,
            "fetched_at": _to_text(meta.fetched_at),
            "etag": meta.etag,
            "last_modified": meta.last_modified,
        },
    ).fetchone()
    return None if row is None else str(row[0])


def mark_removed(conn: sqlite3.Connection, url: str, status: int, at: datetime) -> str | None:
    """Flag the live document at ``url`` as removed; its id, or None if none was live."""
    row = conn.execute(_MARK_REMOVED, {"url": url, "status": status, "at": _to_text(at)}).fetchone()
    return None if row is None else str(row[0])


def record_change_report(conn: sqlite3.Connection, report: ChangeReport) -> None:
    """Append one crawl's change report."""
    conn.execute(
        _INSERT_REPORT,
        {
            "source": report.source,
            "seed": report.seed,
            "started_at": _to_text(report.started_at),
            "finished_at": _to_text(report.finished_at),
            "ok": int(report.ok),
            "error": report.error,
            "pages_crawled": report.pages_crawled,
            "truncated": int(report.truncated),
            "urls": json.dumps(report.url_lists(), ensure_ascii=False),
        },
    )


def change_reports(
    conn: sqlite3.Connection, source: str, *, limit: int, ok_only: bool
) -> builtins.list[ChangeReport]:
    """The newest ``limit`` reports of ``source`` (only successful ones if ``ok_only``)."""
    statement = _SELECT_OK_REPORTS if ok_only else _SELECT_REPORTS
    return [_row_to_report(row) for row in conn.execute(statement, (source, limit)).fetchall()]


def _row_to_report(row: sqlite3.Row) -> ChangeReport:
    try:
        lists: Any = json.loads(row["urls"])
    except ValueError:
        lists = {}
    return ChangeReport.from_url_lists(
        lists if isinstance(lists, dict) else {},
        source=row["source"],
        seed=row["seed"],
        started_at=_from_text(row["started_at"]),
        finished_at=_from_text(row["finished_at"]),
        pages_crawled=row["pages_crawled"],
        error=row["error"],
        truncated=bool(row["truncated"]),
    )
