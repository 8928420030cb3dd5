"""The index beside an archive's WARC files: page id and URL -> record (file, offset, digest).

One SQLite file, ``index.sqlite3``, in the archive directory. Replay looks a record up
by ``(page id, URL of the hop)`` with one indexed query and never scans WARC files;
exports and tools may look up the newest capture of a URL. The index holds nothing
the WARC files do not: every response record carries its page id and hop in
``WARC-Sitelore-*`` fields, so the index can be recreated from them.

A later capture of the same (page id, URL) replaces the earlier entry (the newest
response wins, e.g. the last attempt of a retried request); the older record stays
in its WARC file.

While a capture writes, the index runs in WAL mode (a commit per exchange costs no
fsync); closing puts it back in rollback-journal mode when no one else has it open, so
an archive at rest is WARC files plus ``index.sqlite3`` only, and a read-only replay
opens it without creating anything beside them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from sitelore.core.errors import ArchiveError
from sitelore.core.models import CaptureRef

__all__ = ["INDEX_NAME", "CaptureIndex", "IndexEntry"]

#: The index's file name inside an archive directory.
INDEX_NAME = "index.sqlite3"

_BUSY_TIMEOUT_MS = 5000
_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS records (
        page_id TEXT NOT NULL,
        url TEXT NOT NULL,
        hop INTEGER NOT NULL,
        status INTEGER NOT NULL,
        warc_file TEXT NOT NULL,
        record_offset INTEGER NOT NULL,
        record_length INTEGER NOT NULL,
        digest TEXT NOT NULL,
        record_id TEXT NOT NULL,
        captured_at TEXT NOT NULL,
        PRIMARY KEY (page_id, url)
    ) WITHOUT ROWID
    """,
    "CREATE INDEX IF NOT EXISTS records_by_url ON records (url, captured_at)",
)
_PUT = """
INSERT INTO records (page_id, url, hop, status, warc_file, record_offset, record_length,
                     digest, record_id, captured_at)
VALUES (:page_id, :url, :hop, :status, :warc_file, :offset, :length, :digest, :record_id,
        :captured_at)
ON CONFLICT (page_id, url) DO UPDATE SET
    hop = excluded.hop, status = excluded.status, warc_file = excluded.warc_file,
    record_offset = excluded.record_offset, record_length = excluded.record_length,
    digest = excluded.digest, record_id = excluded.record_id,
    captured_at = excluded.captured_at
"""
_COLUMNS = (
    "page_id, url, hop, status, warc_file, record_offset AS offset, record_length AS length, "
    "digest, record_id, captured_at"
)
_LOOKUP = f"SELECT {_COLUMNS} FROM records WHERE page_id = ? AND url = ?"  # noqa: S608 - constant
_LATEST = f"SELECT {_COLUMNS} FROM records WHERE url = ? ORDER BY captured_at DESC LIMIT 1"  # noqa: S608 - constant


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class IndexEntry:
    """Where the response of one hop of one page's fetch is stored."""

    page_id: str
    url: str
    hop: int
    status: int
    warc_file: str  # the file's name inside the archive directory
    offset: int
    length: int
    digest: str
    record_id: str
    captured_at: str  # the record's WARC-Date

    def params(self) -> dict[str, object]:
        """Bound parameters for :data:`_PUT`."""
        return dataclasses.asdict(self)

    def ref(self, directory: Path) -> CaptureRef:
        """The record as a document names it (its file by path, in ``directory``)."""
        return CaptureRef(
            warc_file=str(directory / self.warc_file),
            offset=self.offset,
            length=self.length,
            digest=self.digest,
            record_id=self.record_id,
            page_id=self.page_id,
        )


def _entry(row: sqlite3.Row) -> IndexEntry:
    return IndexEntry(**dict(row))


class CaptureIndex:
    """The record index of one archive directory.

    ``CaptureIndex(directory, create=True)`` creates the directory and the index when
    missing (capture); with ``create=False`` a missing index is an ``ArchiveError``
    (replay: there is no archive there). ``readonly=True`` (replay) opens it so that
    nothing in the archive is ever written. Use from the event loop's thread only.
    """

    def __init__(self, directory: Path, *, create: bool, readonly: bool = False) -> None:
        self.directory = directory
        self.path = directory / INDEX_NAME
        if not create and not self.path.is_file():
            if not directory.is_dir():
                raise ArchiveError(f"{directory}: no such snapshot archive (directory missing)")
            raise ArchiveError(f"{directory}: not a snapshot archive (no {INDEX_NAME})")
        try:
            if create:
                directory.mkdir(parents=True, exist_ok=True)
            where = self.path.absolute().as_uri() + "?mode=ro" if readonly else self.path
            conn = sqlite3.connect(where, uri=readonly, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise ArchiveError(f"{directory}: cannot open the snapshot archive: {exc}") from exc
        self._conn: sqlite3.Connection | None = conn
        self._readonly = readonly
        try:
            with self._db("open") as db:
                db.row_factory = sqlite3.Row
                db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS:d}")
                if readonly:
                    db.execute("SELECT count(*) FROM records").fetchone()  # is it an index?
                else:
                    db.execute("PRAGMA journal_mode = WAL")
                    db.execute("PRAGMA synchronous = NORMAL")
                    for statement in _SCHEMA:
                        db.execute(statement)
        except ArchiveError:
            conn.close()
            raise

    def __repr__(self) -> str:
        return f"CaptureIndex({str(self.path)!r})"

    @contextlib.contextmanager
    def _db(self, action: str) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        if conn is None:
            raise ArchiveError(f"{self.path}: {action}: the index is closed")
        try:
            yield conn
        except sqlite3.Error as exc:
            raise ArchiveError(f"{self.path}: {action} failed: {exc}") from exc

    def put(self, entry: IndexEntry) -> None:
        """Record (or replace) the entry for ``(entry.page_id, entry.url)``."""
        with self._db("index a record") as db:
            db.execute(_PUT, entry.params())

    def lookup(self, page_id: str, url: str) -> IndexEntry | None:
        """The response of the hop to ``url`` in the fetch of page ``page_id``."""
        with self._db("look up a record") as db:
            row = db.execute(_LOOKUP, (page_id, url)).fetchone()
        return None if row is None else _entry(row)

    def latest(self, url: str) -> IndexEntry | None:
        """The newest captured response of ``url``, whichever page fetched it."""
        with self._db("look up a URL") as db:
            row = db.execute(_LATEST, (url,)).fetchone()
        return None if row is None else _entry(row)

    def close(self) -> None:
        """Close the index (leaving WAL mode if no one else has it open); twice is harmless."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if not self._readonly:
                # Fails harmlessly while another writer has the index open; it will do it.
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA journal_mode = DELETE")
        finally:
            conn.close()
