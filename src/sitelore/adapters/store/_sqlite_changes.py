"""The SQLite schema of incremental re-crawls: validators by URL, removal flags, change reports.

The statements that read and write them are both stores' (``_shared``); the upsert
writes the links and clears the flag. The schema step is :data:`SOURCES_MIGRATION`
(appended to the store's migrations):

* ``documents.links``: the links a page offered the crawl, as a JSON array, so a
  ``304`` answer can offer them again (NULL for rows stored before this step: such
  a page is fetched in full once, see :meth:`KnownPage.conditional_headers`);
* ``documents.removed_at``: set when the URL answered ``404``/``410`` in a re-crawl;
  the row stays (flagged), search leaves it out, a later good fetch clears it;
* ``change_reports``: one row per crawl of a named source; the URL lists are JSON.
"""

from __future__ import annotations

__all__ = ["SOURCES_MIGRATION"]

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
