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
from datetime import datetime
from typing import Any

from sitelore.adapters.store._rows import (
    known_page_from_row,
    report_from_row,
    report_params,
    text_to_time,
    time_to_text,
    verified_params,
)
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
SELECT * FROM change_reports WHERE source = ? AND (ok = 1 OR NOT ?) ORDER BY pk DESC LIMIT ?
"""


def _json(text: str | None) -> Any:
    """The stored JSON value; None when there is none (or it is unreadable)."""
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None


def _links_from_text(text: str | None) -> tuple[str, ...] | None:
    """The stored links; None when none were ever recorded (or the value is unreadable)."""
    data = _json(text)
    return tuple(link for link in data if isinstance(link, str)) if isinstance(data, list) else None


def set_links(conn: sqlite3.Connection, pk: int, links: tuple[str, ...]) -> None:
    """Store the links of a page that was just upserted, and clear its removal flag."""
    conn.execute(_SET_LINKS, {"pk": pk, "links": json.dumps(list(links), ensure_ascii=False)})


def known_page(conn: sqlite3.Connection, url: str) -> KnownPage | None:
    """The fetch metadata of the document stored for exactly ``url``."""
    row = conn.execute(_SELECT_KNOWN, (url,)).fetchone()
    if row is None:
        return None
    return known_page_from_row(row, links=_links_from_text(row["links"]), decode_time=text_to_time)


def mark_verified(conn: sqlite3.Connection, url: str, meta: FetchMeta) -> str | None:
    """Record a ``304`` for ``url``: new fetch time (and validators); content untouched."""
    row = conn.execute(_MARK_VERIFIED, verified_params(url, meta, time_to_text)).fetchone()
    return None if row is None else str(row[0])


def mark_removed(conn: sqlite3.Connection, url: str, status: int, at: datetime) -> str | None:
    """Flag the live document at ``url`` as removed; its id, or None if none was live."""
    row = conn.execute(
        _MARK_REMOVED, {"url": url, "status": status, "at": time_to_text(at)}
    ).fetchone()
    return None if row is None else str(row[0])


def record_change_report(conn: sqlite3.Connection, report: ChangeReport) -> None:
    """Append one crawl's change report."""
    urls = json.dumps(report.url_lists(), ensure_ascii=False)
    conn.execute(_INSERT_REPORT, report_params(report, time_to_text, urls))


def change_reports(
    conn: sqlite3.Connection, source: str, *, limit: int, ok_only: bool
) -> builtins.list[ChangeReport]:
    """The newest ``limit`` reports of ``source`` (only successful ones if ``ok_only``)."""
    rows = conn.execute(_SELECT_REPORTS, (source, ok_only, limit)).fetchall()
    return [report_from_row(row, text_to_time, _json(row["urls"])) for row in rows]
