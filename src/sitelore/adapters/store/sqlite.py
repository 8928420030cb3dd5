"""Persist documents in one SQLite file with an FTS5 index of their sections, and search it.

One row per URL in ``documents``; its sections (``_sqlite_sections``) carry the FTS5
*external content* index that search reads. (Schema step 1 also made a page-level
``documents_fts``; step 6 drops it, as nothing reads it since sections.)

Choices worth knowing:

* **Reads run inline; writes on the writer thread.** Reads do their sqlite3 work on
  the caller's connection and never await in between. Writes to a file go to one
  writer thread with its own connection (``_sqlite_writer``): tokenising a page's
  sections into FTS5 (about a millisecond of CPU, most of a page's store cost, run by
  SQLite without the GIL) overlaps the crawl's fetching instead of delaying it. An
  in-memory store has one connection and writes inline. ``busy_timeout``: while
  *another process* holds the write lock, a write waits up to that long.
* **Group commit, nothing half-written.** The writes that queue up while the writer
  works go in one transaction, each in its own savepoint: a failing write rolls back
  alone (its document and its sections together) and is that caller's error; a
  write returns once its transaction committed. In WAL mode with
  ``synchronous=NORMAL`` a commit appends to the WAL without an fsync; a crash loses
  at most the last batch, never leaves a page half-written. The WAL is checkpointed
  into the file by a second thread on its own connection, so no commit waits on a
  checkpoint's disk syncs.
* **Unchanged pages do not touch the index.** An upsert whose content hash is
  unchanged updates only the fetch metadata; its sections stay as they are.
* **Tokenizer** ``porter unicode61 remove_diacritics 2``: stems English ("running"
  finds "run"), folds case and accents ("cafe" finds "café"); mode 2 also folds
  letters carrying two diacritics ("viet" finds "Việt"), which mode 1 misses.
* **Schema versions** live in ``PRAGMA user_version``; each step of ``_MIGRATIONS``
  runs in its own transaction. A file from a newer sitelore is refused untouched, and
  so is an SQLite database of some other program (tables, but no version).
* **A new file is created on first use, not when the store is built.** The location
  is checked at once (a directory, a file that is not SQLite, a folder that cannot be
  created: ``StoreLocationError``), but a crawl refused before its first page leaves
  no empty store behind. ``create=False`` (the commands that only read) refuses a
  missing store with ``NoStoreError`` and never writes one.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from sitelore.adapters.store import _sqlite_captures as captured
from sitelore.adapters.store import _sqlite_changes as changes
from sitelore.adapters.store import _sqlite_jobs as jobs
from sitelore.adapters.store import _sqlite_sections as sections
from sitelore.adapters.store import _sqlite_vectors as vectors
from sitelore.adapters.store._fusion import hybrid_sections
from sitelore.adapters.store._ranking import candidate_sizes, rank_pages, wanted
from sitelore.adapters.store._rows import (
    content_hash,
    document_id,
    document_params,
    text_to_time,
    time_to_text,
    utc_now,
)
from sitelore.adapters.store._shared import (
    Dialect,
    StoreBase,
    Upsert,
    check_version,
    count_stale,
    upsert_row,
)
from sitelore.adapters.store._steps import Step, run_sqlite
from sitelore.core.errors import NoStoreError, StoreError, StoreLocationError
from sitelore.core.models import Document, FetchMeta, SearchHit, UpsertResult

if TYPE_CHECKING:
    from sitelore.adapters.store._sqlite_writer import Writer

__all__ = ["MEMORY", "SCHEMA_VERSION", "SQLiteStore", "content_hash", "document_id"]

#: The location of a private in-memory database (tests, throw-away runs).
MEMORY = ":memory:"

_BUSY_TIMEOUT_MS = 5000
_T = TypeVar("_T")

# -- schema ------------------------------------------------------------------------------

# ``pk`` aliases the rowid, so VACUUM cannot renumber the rows the FTS index points at.
_CREATE_DOCUMENTS = """
CREATE TABLE documents (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    url TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    markdown TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    content_type TEXT NOT NULL,
    status INTEGER NOT NULL,
    etag TEXT,
    last_modified TEXT,
    fetched_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    description TEXT,
    lang TEXT,
    canonical_url TEXT
)
"""
_CREATE_UPDATED_INDEX = "CREATE INDEX documents_updated_at ON documents (updated_at)"
_CREATE_FTS = """
CREATE VIRTUAL TABLE documents_fts USING fts5(
    title, markdown,
    content='documents', content_rowid='pk',
    tokenize='porter unicode61 remove_diacritics 2'
)
"""
_CREATE_TRIGGER_INSERT = """
CREATE TRIGGER documents_ai AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts (rowid, title, markdown)
    VALUES (new.pk, new.title, new.markdown);
END
"""
_CREATE_TRIGGER_DELETE = """
CREATE TRIGGER documents_ad AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, title, markdown)
    VALUES ('delete', old.pk, old.title, old.markdown);
END
"""
_CREATE_TRIGGER_UPDATE = """
CREATE TRIGGER documents_au AFTER UPDATE OF title, markdown ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, title, markdown)
    VALUES ('delete', old.pk, old.title, old.markdown);
    INSERT INTO documents_fts (rowid, title, markdown)
    VALUES (new.pk, new.title, new.markdown);
END
"""

#: Migration steps in order; step ``n`` (1-based) brings ``user_version`` to ``n``.
#: Append only: never edit a step that has shipped.
_MIGRATIONS: tuple[tuple[sections.Step, ...], ...] = (
    (
        _CREATE_DOCUMENTS,
        _CREATE_UPDATED_INDEX,
        _CREATE_FTS,
        _CREATE_TRIGGER_INSERT,
        _CREATE_TRIGGER_DELETE,
        _CREATE_TRIGGER_UPDATE,
    ),
    # 2: links per document, removal flags, change reports of named sources.
    changes.SOURCES_MIGRATION,
    # 3: the WARC record each document was built from (snapshots); idempotent.
    captured.CAPTURES_MIGRATION,
    # 4: crawl job records of sitelore serve; idempotent.
    jobs.JOBS_MIGRATION,
    # 5: sections, the unit of retrieval, with their own FTS5 index; idempotent.
    sections.SECTIONS_MIGRATION,
    # 6: search reads sections only: the page-level index and its triggers go (each
    # upsert paid for tokenising the whole page a second time).
    (
        "DROP TRIGGER IF EXISTS documents_ai",
        "DROP TRIGGER IF EXISTS documents_ad",
        "DROP TRIGGER IF EXISTS documents_au",
        "DROP TABLE IF EXISTS documents_fts",
    ),
    # 7: section vectors and the generation that tells a search its cached matrix of
    # them is stale (made before on the first write; idempotent).
    vectors.VECTORS_MIGRATION,
)

#: The schema version this code writes and understands.
SCHEMA_VERSION = len(_MIGRATIONS)

# -- statements --------------------------------------------------------------------------

# Plain literals (no string building): every value reaches SQLite as a bound parameter.
_SELECT_VERSION = "PRAGMA user_version"
_SELECT_EXISTING = "SELECT pk, id, content_hash FROM documents WHERE url = :url"
_INSERT = """
INSERT INTO documents (
    id, url, title, markdown, content_hash, content_type, status, etag, last_modified,
    fetched_at, created_at, updated_at, description, lang, canonical_url, links
) VALUES (
    :id, :url, :title, :markdown, :content_hash, :content_type, :status, :etag, :last_modified,
    :fetched_at, :now, :now, :description, :lang, :canonical_url, :links
) RETURNING pk
"""
_UPDATE_CONTENT = """
UPDATE documents SET
    title = :title, markdown = :markdown, content_hash = :content_hash,
    content_type = :content_type, status = :status, etag = :etag,
    last_modified = :last_modified, fetched_at = :fetched_at, updated_at = :now,
    description = :description, lang = :lang, canonical_url = :canonical_url,
    links = :links, removed_at = NULL
WHERE pk = :pk
"""
# Deliberately leaves title and markdown out of SET: the FTS update trigger stays quiet.
_UPDATE_FETCH_META = """
UPDATE documents SET
    content_type = :content_type, status = :status, etag = :etag,
    last_modified = :last_modified, fetched_at = :fetched_at,
    links = :links, removed_at = NULL
WHERE pk = :pk
"""
_UPSERT = Upsert(_SELECT_EXISTING, _INSERT, _UPDATE_CONTENT, _UPDATE_FETCH_META)
# -- pure helpers ------------------------------------------------------------------------


@contextlib.contextmanager
def _write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; roll back on any error (nothing half-written).

    IMMEDIATE takes the write lock up front, so a second writer waits on
    ``busy_timeout`` instead of failing when a read would upgrade to a write.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _user_version(conn: sqlite3.Connection) -> int:
    row = conn.execute(_SELECT_VERSION).fetchone()
    return int(row[0])


def _migrate(conn: sqlite3.Connection) -> None:
    for target, steps in enumerate(_MIGRATIONS, start=1):
        with _write_transaction(conn):
            # Re-read under the write lock: another process may have migrated meanwhile.
            if _user_version(conn) >= target:
                continue
            for statement in steps:
                if callable(statement):
                    statement(conn)
                else:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target:d}")


def _section_stale(conn: sqlite3.Connection, shown: str, *, everything: bool = False) -> int:
    """Cut again the documents whose sections are missing or older than the splitter."""
    if not everything and not (sections.has_stale(conn) and run_sqlite(conn, count_stale(shown))):
        return 0
    done = 0
    batches = sections.stale_batches(conn, everything=everything)
    while True:
        with _write_transaction(conn):
            step = next(batches, None)
        if step is None:
            return done
        done = step


#: SQLite result codes (and their extended forms) that say the location is unusable.
_LOCATION_ERRORS = ("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_READONLY", "SQLITE_AUTH")


def _open_error(location: str, exc: sqlite3.Error) -> StoreError:
    """The error for a database that would not open: the location's fault, or a failure."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == "SQLITE_NOTADB":
        return StoreLocationError(f"{location}: not an SQLite database, so not a sitelore store")
    if name.startswith(_LOCATION_ERRORS):
        return StoreLocationError(f"{location}: cannot open as a SQLite store: {exc}")
    return StoreError(f"{location}: cannot open as a SQLite store: {exc}")


def _identify(conn: sqlite3.Connection) -> tuple[int, bool]:
    """(schema version, whether the file holds some other program's tables), read at once.

    One read transaction: read apart, another process creating this store could commit
    its first step between the two reads, and a new store would look like a foreign one.
    """
    conn.execute("BEGIN")
    try:
        found = _user_version(conn)
        tables = int(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
        return found, found == 0 and tables > 0
    finally:
        conn.execute("COMMIT")


#: Tries at switching a new file to WAL while another process switches it too.
_WAL_TRIES = 20


def _use_wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode (kept in the file: once for all connections).

    Two processes creating one new store both ask for it; both hold a read lock and want
    the write lock, and SQLite answers one of them BUSY at once (no busy wait can end
    that deadlock). That one tries again: by then the mode is usually WAL already.
    """
    for attempt in range(_WAL_TRIES):
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorname", "") != "SQLITE_BUSY" or attempt == _WAL_TRIES - 1:
                raise


def _connect(location: str, *, uri: str | None = None, create: bool = True) -> sqlite3.Connection:
    """Open, check the version, configure and migrate; close again on any failure.

    ``uri`` (``file:...?mode=rw``) opens a file without creating it; ``create=False``
    also refuses an empty database (no store yet) instead of migrating it.
    """
    try:
        conn = sqlite3.connect(uri or location, isolation_level=None, uri=uri is not None)
    except sqlite3.Error as exc:
        if not create and getattr(exc, "sqlite_errorname", "") == "SQLITE_CANTOPEN":
            raise NoStoreError(location) from exc
        raise _open_error(location, exc) from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS:d}")
        # The first read is where a file that is not SQLite fails; check the version
        # before anything writes, so a newer database is left exactly as it was.
        found, foreign = _identify(conn)
        check_version(location, found, SCHEMA_VERSION)
        if foreign:
            raise StoreLocationError(
                f"{location}: an SQLite database of something else, not a sitelore store"
            )
        if found == 0 and not create:
            raise NoStoreError(location)
        _use_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _migrate(conn)
        _section_stale(conn, location)
    except sqlite3.Error as exc:
        conn.close()
        raise _open_error(location, exc) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _check_creatable(path: Path) -> None:
    """Refuse now a store file that could not be created later; create nothing."""
    try:
        ancestor = path.parent
        while not ancestor.exists():
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise StoreLocationError(f"{path}: cannot create the store: {ancestor} is a file")
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise StoreLocationError(f"{path}: cannot create the store: {ancestor} is not writable")
    except OSError as exc:
        raise StoreLocationError(f"{path}: cannot use as a store: {exc.strerror or exc}") from exc


def _load_json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class SQLiteStore(StoreBase):
    """The embedded document store: one SQLite file (WAL mode) with an FTS5 index.

    ``SQLiteStore(path)`` checks the location at once: an existing file is opened and
    migrated there and then, a new one (and its folder) is created on first use.
    ``create=False`` never creates one: a missing or empty file is a ``NoStoreError``.
    ``SQLiteStore(MEMORY)`` is private to this object. ``now`` is the clock for
    ``created_at`` / ``updated_at``. Use from one thread (the event loop's);
    ``close()`` when done (it lets the writer thread finish and stop).

    Raises:
        NoStoreError: ``create=False`` and no store is there.
        StoreLocationError: the location cannot hold a store (a directory, not an
            SQLite file, another program's database, a newer schema, unwritable).
        StoreError: the database failed while opening (locked too long, disk full).
    """

    _dialect = Dialect(time_to_text, text_to_time, _dump_json, _load_json)

    def __init__(
        self,
        location: str | Path,
        *,
        create: bool = True,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self._now = now
        self._create = create
        self._closed = False
        self._conn: sqlite3.Connection | None = None
        self._vectors = vectors.MatrixCache()  # a model's vectors between searches
        self._path: Path | None = None
        self._writer: Writer | None = None  # a file's writes, off the caller's thread
        if str(location) == MEMORY:
            self._location = MEMORY
            self._conn = _connect(MEMORY)
            return
        # Absolute, and opened through a URI we build, so a name like "file:x" is a path.
        path = Path(location).expanduser().absolute()
        self._location = str(path)
        self._path = path
        try:
            exists = path.exists()
        except OSError as exc:
            raise StoreLocationError(f"{path}: cannot use as a store: {exc.strerror}") from exc
        if exists or not create:
            self._conn = self._open()
        else:
            _check_creatable(path)

    def _open(self) -> sqlite3.Connection:
        """Connect to the file (creating it and its folder when ``create``)."""
        path = self._path
        assert path is not None
        if path.is_dir():
            raise StoreLocationError(f"{path}: is a directory; name a store file in it")
        if self._create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreLocationError(
                    f"{path}: cannot create its directory: {exc.strerror or exc}"
                ) from exc
        mode = "rwc" if self._create else "rw"
        uri = f"file:{quote(str(path))}?mode={mode}"
        return _connect(self._location, uri=uri, create=self._create)

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("open" if self._conn is not None else "new")
        return f"SQLiteStore({self._location!r}, {state})"

    @property
    def location(self) -> str:
        """The absolute path of the database file, or ``":memory:"``."""
        return self._location

    def _failure(self, action: str, exc: BaseException) -> BaseException:
        """The error a caller sees for ``exc``: sqlite3 and encoding errors are StoreError."""
        if isinstance(exc, sqlite3.Error):
            error = StoreError(f"{self._location}: {action} failed: {exc}")
        elif isinstance(exc, UnicodeEncodeError):
            error = StoreError(f"{self._location}: {action} failed: invalid text: {exc}")
        else:
            return exc
        error.__cause__ = exc
        return error

    @contextlib.contextmanager
    def _connection(self, action: str) -> Iterator[sqlite3.Connection]:
        """Yield the open connection; turn sqlite3 and encoding errors into StoreError."""
        if self._closed:
            raise StoreError(f"{self._location}: {action}: the store is closed")
        conn = self._conn
        if conn is None:  # a new file: created on first use
            conn = self._conn = self._open()
        try:
            yield conn
        except (sqlite3.Error, UnicodeEncodeError) as exc:
            raise self._failure(action, exc) from exc

    async def _read(self, action: str, step: Step[_T]) -> _T:
        """Run ``step`` on the open connection, here and now."""
        with self._connection(action) as conn:
            return run_sqlite(conn, step)

    async def _write(self, action: str, step: Step[_T]) -> _T:
        """Run ``step`` in a write transaction (see ``_commit``); its result once committed."""
        return await self._commit(action, lambda conn: run_sqlite(conn, step))

    async def _commit(self, action: str, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work`` in a write transaction and return its result once committed.

        A file's writes run on the writer thread (``_sqlite_writer``), batched with the
        writes waiting beside them; an in-memory store (one connection) runs them here.
        """
        with self._connection(action) as conn:  # opens (creates, migrates) the file
            if self._path is None:
                with _write_transaction(conn):
                    return work(conn)
        writer = self._writer
        if writer is None:
            from sitelore.adapters.store._sqlite_writer import (
                Writer,  # the read commands never write
            )

            writer = self._writer = Writer(
                self._writer_connection, self._failure, checkpoint=self._checkpoint_connection
            )
        result: _T = await writer.write(action, work)
        return result

    def _checkpoint_connection(self) -> sqlite3.Connection:
        """The background checkpointer's connection: the file as it is, nothing more."""
        assert self._path is not None
        uri = f"file:{quote(str(self._path))}?mode=rw"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS:d}")
        return conn

    def _writer_connection(self) -> sqlite3.Connection:
        """The writer thread's own connection to the file (created and migrated by now)."""
        assert self._path is not None
        uri = f"file:{quote(str(self._path))}?mode=rw"
        return _connect(self._location, uri=uri, create=False)

    async def upsert(self, document: Document, meta: FetchMeta) -> UpsertResult:
        """Insert or update the document for ``document.url``; keep its id.

        When the title and Markdown are unchanged only the fetch metadata (status,
        content type, ETag, Last-Modified, fetched_at, links; no removal flag) is
        written; ``updated_at`` and the search index stay as they were. The document
        and its sections are written together or not at all.
        """
        now = self._now()
        return await self._commit(
            f"upsert {document.url}", lambda conn: self._upsert(conn, document, meta, now)
        )

    def _upsert(
        self, conn: sqlite3.Connection, document: Document, meta: FetchMeta, now: datetime
    ) -> UpsertResult:
        params = document_params(document, meta, now=now, encode_time=time_to_text)
        params |= {"id": document_id(document.url), "links": _dump_json(list(document.links))}
        pk, result = run_sqlite(conn, upsert_row(_UPSERT, params, self._location))
        if result.changed:
            sections.replace_sections(
                conn, pk, document.title, document.markdown, document.sections
            )
        return result

    async def search(self, query: str, *, limit: int = 10) -> builtins.list[SearchHit]:
        """Rank pages by their best sections for ``query`` (plain text, never FTS syntax).

        Any word may match (stop words dropped, BM25 weighs the rest); the page title and
        the headings above a section count more than its text. One hit per page (and per
        content); lower ``score`` is better. The snippet marks matched terms with ``**``.
        A blank query finds nothing.
        """
        if not wanted(limit):
            return []
        with self._connection("search") as conn:
            found = sections.search_sections(conn, query, limit)
        return rank_pages(found, limit, query=query)

    async def reindex(self) -> int:
        """Cut every document into sections again; how many documents were cut."""
        with self._connection("reindex") as conn:
            return _section_stale(conn, self._location, everything=True)

    # -- section vectors (semantic extra; the rest in _shared) ---------------------------

    async def vector_counts(self, model: str) -> tuple[int, int]:
        """(sections with a ``model`` vector, all sections); asking creates no store file."""
        if self._conn is None and not self._closed:
            return 0, 0  # a new file not written yet: nothing in it
        return await super().vector_counts(model)

    async def has_vectors(self, model: str) -> bool:
        """Whether any section has a ``model`` vector (cheap); asking creates no store file."""
        if self._conn is None and not self._closed:
            return False
        return await super().has_vectors(model)

    async def hybrid_search(
        self, query: str, vector: Sequence[float], model: str, *, limit: int = 10
    ) -> builtins.list[SearchHit]:
        """Pages ranked by BM25 and vector nearness fused (``_fusion.hybrid_sections``)."""
        if not wanted(limit):
            return []
        with self._connection("search") as conn:
            matrix = self._vectors.matrix(conn, model, len(vector))
        # The matrix product runs in a thread (numpy lets go of the GIL) while SQLite
        # ranks the words here (so does sqlite3): on two cores the two overlap.
        loop = asyncio.get_running_loop()
        nearest = loop.run_in_executor(None, matrix.nearest, vector, candidate_sizes(limit)[0])
        try:
            with self._connection("search") as conn:
                lexical = sections.search_sections(conn, query, limit)
        finally:
            top = await nearest
        with self._connection("search") as conn:
            near = vectors.candidates(conn, top)
        return rank_pages(hybrid_sections(query, lexical, near), limit, query=query)

    async def close(self) -> None:
        """Let SQLite tidy its statistics, then close; closing twice is harmless."""
        self._closed = True
        self._vectors = vectors.MatrixCache()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()  # the writes already given commit first
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            # Only a statistics hint: a failure must not stop the close.
            with contextlib.suppress(sqlite3.Error):
                conn.execute("PRAGMA optimize")
        finally:
            conn.close()
