"""What both stores do alike: one statement and one step for each, and the ports built on them.

:class:`StoreBase` holds the operations in which SQLite and PostgreSQL differ only in
how a value is stored (a :class:`Dialect`: times as ISO text or ``timestamptz``, JSON
as text or ``jsonb``): documents by id, pages, counts, deletes, re-crawl validators
and removal flags, change reports, snapshot links, job records and section vectors.
Each store supplies its dialect and two ways to run a step (``_steps``): ``_read`` on
a connection and ``_write`` in a committed write. What truly differs (the upsert, the
search, the schema) stays in ``sqlite``/``postgres`` and their ``_sqlite_*``/``_pg_*``.
"""

from __future__ import annotations

import builtins
import dataclasses
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, ClassVar, NamedTuple, TypeVar

from sitelore.adapters.store._ranking import (
    HEADING_JOIN,
    Candidate,
    candidate_from_row,
    candidate_sizes,
    enough_pages,
)
from sitelore.adapters.store._rows import (
    DecodeTime,
    EncodeTime,
    capture_from_row,
    capture_params,
    document_from_row,
    job_from_row,
    job_params,
    known_page_from_row,
    report_from_row,
    report_params,
    verified_params,
)
from sitelore.adapters.store._steps import Step, execute, execute_many, fetch_all, fetch_one
from sitelore.adapters.store._vectors import TEXT_CHARS, VectorMatrix, section_text, to_bytes
from sitelore.core.changes import ChangeReport, KnownPage
from sitelore.core.errors import SchemaVersionError, StoreError
from sitelore.core.models import (
    CaptureRef,
    FetchMeta,
    JobRecord,
    Section,
    StoredDocument,
    UpsertResult,
)
from sitelore.core.sections import SECTIONS_VERSION, split_sections

__all__ = [
    "PAGE",
    "Dialect",
    "MatrixCache",
    "StoreBase",
    "Upsert",
    "best_sections",
    "candidates",
    "check_version",
    "count_stale",
    "replace_sections",
    "section_rows",
    "upsert_row",
]

_T = TypeVar("_T")

log = logging.getLogger(__name__)

#: Vectors read per round trip when a model's matrix is read.
PAGE = 5000
#: The fields of a Section stored under their own names.
_AS_IS = ("ordinal", "anchor", "start", "end", "link_ratio")

# -- statements (as PostgreSQL takes them; ``_steps.sqlite_sql`` for SQLite) ----------

_COLUMNS = (
    "id, url, title, markdown, content_hash, content_type, status, etag, last_modified, "
    "fetched_at, created_at, updated_at, description, lang, canonical_url, removed_at"
)
_SELECT_ONE = (
    f"SELECT {_COLUMNS} FROM sitelore_documents "  # noqa: S608 - constants only
    "WHERE id = %(key)s OR url = %(key)s LIMIT 1"
)
_SELECT_PAGE = (
    f"SELECT {_COLUMNS} FROM sitelore_documents "  # noqa: S608 - as above
    "ORDER BY updated_at DESC, pk DESC LIMIT %s OFFSET %s"
)
_DELETE = "DELETE FROM sitelore_documents WHERE id = %(key)s OR url = %(key)s"
_COUNT = "SELECT count(*) AS n FROM sitelore_documents"
_ID_OWNER = "SELECT url FROM sitelore_documents WHERE id = %(id)s"
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
_UPSERT_JOB = """
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
_SELECT_JOB = "SELECT * FROM sitelore_crawl_jobs WHERE id = %s"
_DELETE_JOB = "DELETE FROM sitelore_crawl_jobs WHERE id = %s"
_PENDING = """
SELECT s.pk, d.title, s.heading, substr(s.body, 1, %(chars)s) AS body
FROM sitelore_sections AS s JOIN sitelore_documents AS d ON d.pk = s.document_pk
WHERE NOT EXISTS (SELECT 1 FROM sitelore_section_vectors AS v
                  WHERE v.section_pk = s.pk AND v.model = %(model)s)
ORDER BY s.pk LIMIT %(limit)s
"""
_PUT_VECTOR = """
INSERT INTO sitelore_section_vectors (section_pk, model, vector) VALUES (%s, %s, %s)
ON CONFLICT (section_pk) DO UPDATE SET model = excluded.model, vector = excluded.vector
"""
_VECTOR_COUNTS = """
SELECT (SELECT count(*) FROM sitelore_section_vectors WHERE model = %s) AS n,
       (SELECT count(*) FROM sitelore_sections) AS total
"""
_ANY_VECTOR = "SELECT EXISTS (SELECT 1 FROM sitelore_section_vectors WHERE model = %s) AS found"
_GENERATION = "SELECT generation FROM sitelore_vector_generation WHERE id = 1"
_DELETE_SECTIONS = "DELETE FROM sitelore_sections WHERE document_pk = %s"
_MARK_SECTIONS = "UPDATE sitelore_documents SET sections_version = %s WHERE pk = %s"
_COUNT_STALE = "SELECT count(*) AS n FROM sitelore_documents WHERE sections_version < %s"
_SCAN = """
SELECT section_pk, vector FROM sitelore_section_vectors
WHERE model = %s AND section_pk > %s ORDER BY section_pk LIMIT %s
"""


@dataclasses.dataclass(frozen=True, slots=True)
class Dialect:
    """How one database stores the values the shared statements read and write."""

    encode_time: EncodeTime
    decode_time: DecodeTime
    #: A value as a JSON column takes it, and what one returns as the value (None: None).
    encode_json: Callable[[Any], Any]
    decode_json: Callable[[Any], Any]


def check_version(where: str, found: int, known: int) -> None:
    """Refuse a schema ``found`` newer than the ``known`` one this code writes."""
    if found > known:
        raise SchemaVersionError(
            f"{where}: schema version {found} is newer than this sitelore "
            f"understands ({known}); upgrade sitelore"
        )


def best_sections(sql: str, params: dict[str, Any], limit: int) -> Step[list[Candidate]]:
    """The sections ``sql`` ranks best, best first, as many (its ``limit`` parameter) as
    it takes to hold ``limit`` pages, or all there are."""
    found: list[Candidate] = []
    for size in candidate_sizes(limit):
        rows = yield from fetch_all(sql, params | {"limit": size})
        found = [candidate_from_row(row) for row in rows]
        if enough_pages(found, size, limit):
            break
    return found


def section_rows(
    pk: int, markdown: str, cut: Sequence[Section] | None, **more: Any
) -> list[dict[str, Any]]:
    """The rows of document ``pk``'s sections (``more`` in each), in the columns both keep.

    ``cut`` are its sections when the converter cut them already; else they are cut here.
    """
    return [
        {
            "pk": pk,
            **{name: getattr(section, name) for name in _AS_IS},
            "heading": HEADING_JOIN.join(section.heading_path),
            "body": section.text,
            **more,
        }
        for section in (split_sections(markdown) if cut is None else cut)
    ]


def count_stale(shown: str) -> Step[int]:
    """How many documents' sections are older than the splitter; says so when any are.

    A store opened by a newer sitelore cuts them all again before it answers (about a
    millisecond each): a large store would otherwise seem to hang, once, for minutes.
    """
    row = yield from fetch_one(_COUNT_STALE, (SECTIONS_VERSION,))
    stale = int(row["n"])
    if stale:
        log.warning(
            "%s: cutting %d documents into search sections again "
            "(this sitelore splits them differently; once)",
            shown,
            stale,
        )
    return stale


def replace_sections(pk: int, insert: str, rows: list[dict[str, Any]]) -> Step[None]:
    """Replace document ``pk``'s sections by ``rows`` (``insert`` stores one), marked current.

    Runs inside the caller's transaction.
    """
    yield from execute(_DELETE_SECTIONS, (pk,))
    if rows:
        yield from execute_many(insert, rows)
    yield from execute(_MARK_SECTIONS, (SECTIONS_VERSION, pk))


class Upsert(NamedTuple):
    """A store's statements for one document's row, found by the parameters' ``url``."""

    #: Find the row (locked for the transaction where the database can): pk, id, hash.
    select: str
    #: Insert it, returning its ``pk``; no row when another writer inserted it first.
    insert: str
    #: Update it: everything (the content changed), or the fetch metadata only.
    update_content: str
    update_meta: str


def upsert_row(
    statements: Upsert, params: dict[str, Any], where: str
) -> Step[tuple[int, UpsertResult]]:
    """Insert or update the document row of ``params`` (``document_params`` and its ``id``).

    Returns the row's ``pk`` and what became of it; its sections are the caller's.
    """
    existing = yield from fetch_one(statements.select, params)
    if existing is None:
        inserted = yield from fetch_one(statements.insert, params)
        if inserted is not None:
            return inserted["pk"], UpsertResult(id=params["id"], created=True, changed=True)
        # Another writer inserted it first. PostgreSQL's ON CONFLICT names no index, so it
        # covers both unique ones (url, and id = the URL's hash): an arbiter of url alone
        # let the id index raise UniqueViolation (issue 14). Lock the winner's row and
        # update it.
        existing = yield from fetch_one(statements.select, params)
        if existing is None:
            raise StoreError((yield from _id_conflict(where, params)))
    changed = existing["content_hash"] != params["content_hash"]
    update = statements.update_content if changed else statements.update_meta
    yield from execute(update, params | {"pk": existing["pk"]})
    return existing["pk"], UpsertResult(id=existing["id"], created=False, changed=changed)


def _id_conflict(where: str, params: dict[str, Any]) -> Step[str]:
    """Why an insert that conflicted found no row for its URL: the message to raise.

    Either the id (64 bits of the URL's SHA-256) belongs to another URL, a hash
    collision, or the winner's row was deleted between the insert and the lock.
    """
    row = yield from fetch_one(_ID_OWNER, params)
    shown = f"{where}: upsert {params['url']}"
    if row is None:
        return f"{shown}: the row was deleted while it was being written; try again"
    return f"{shown}: document id {params['id']} is already used by {row['url']}"


def _link_capture(id_or_url: str, ref: CaptureRef | None) -> Step[bool]:
    row = yield from fetch_one(_SELECT_PK, {"key": id_or_url})
    if row is None:
        return False
    if ref is None:
        yield from execute(_DELETE_CAPTURE, (row["pk"],))
    else:
        yield from execute(_UPSERT_CAPTURE, capture_params(row["pk"], ref))
    return True


def _links(data: Any) -> tuple[str, ...] | None:
    """The links a row recorded; None when none were ever recorded (or they are unreadable)."""
    return tuple(link for link in data if isinstance(link, str)) if isinstance(data, list) else None


def candidates(sql: str, params: Any, top: Sequence[tuple[int, float]]) -> Step[list[Candidate]]:
    """The sections of ``top`` (key, cosine distance) as candidates, in that order.

    ``sql`` with ``params`` reads the sections of those keys with their pages (the
    search row of ``candidate_from_row`` and ``pk``); sections gone since (or of removed
    pages) are left out.
    """
    if not top:
        return []
    found = {int(row["pk"]): row for row in (yield from fetch_all(sql, params))}
    return [
        dataclasses.replace(candidate_from_row(found[key]), score=distance)
        for key, distance in top
        if key in found
    ]


class MatrixCache:
    """One model's vectors as a :class:`VectorMatrix`, kept while no vector changed.

    Owned by one store object (never shared between stores); the first search after
    any change to the vectors (in any process: their generation counter moved) reads
    them again.
    """

    def __init__(self) -> None:
        self._key: tuple[str, int, int] | None = None
        self._matrix: VectorMatrix | None = None

    def __repr__(self) -> str:
        held = "empty" if self._matrix is None else f"{len(self._matrix.keys)} vectors"
        return f"MatrixCache({held}, key={self._key!r})"

    def read(self, model: str, dims: int) -> Step[VectorMatrix]:
        """The vectors of ``model`` with ``dims`` floats, read (in pages) only when changed."""
        # The counter is read before the vectors: a change committed in between makes
        # the next search read them again, never keeps old vectors.
        row = yield from fetch_one(_GENERATION)
        key = (model, dims, int(row["generation"]))
        if key == self._key and self._matrix is not None:
            return self._matrix
        self._key = self._matrix = None  # never two matrices in memory at once
        rows: list[tuple[int, bytes]] = []
        after = 0
        while page := (yield from fetch_all(_SCAN, (model, after, PAGE))):
            rows.extend((int(row["section_pk"]), bytes(row["vector"])) for row in page)
            after = rows[-1][0]
        self._key, self._matrix = key, VectorMatrix.from_rows(rows, dims)
        return self._matrix


class StoreBase:
    """The operations both stores run alike: the same statements, the same steps.

    A store sets ``_dialect`` and implements ``_read`` and ``_write``.
    """

    _dialect: ClassVar[Dialect]

    async def _read(self, action: str, step: Step[_T]) -> _T:
        """Run ``step`` on a connection; errors are StoreError naming ``action``."""
        raise NotImplementedError

    async def _write(self, action: str, step: Step[_T]) -> _T:
        """Run ``step`` in a write transaction; its result once committed."""
        raise NotImplementedError

    def _json(self, value: Any) -> Any:
        """A JSON column's value; None when there is none (or it is unreadable)."""
        try:
            return self._dialect.decode_json(value)
        except ValueError:
            return None

    async def get(self, id_or_url: str) -> StoredDocument | None:
        """Return one document by id or by URL, or None."""
        row = await self._read("get", fetch_one(_SELECT_ONE, {"key": id_or_url}))
        return None if row is None else document_from_row(row, self._dialect.decode_time)

    async def list(self, *, limit: int = 100, offset: int = 0) -> builtins.list[StoredDocument]:
        """Return up to ``limit`` documents after ``offset``, most recently updated first."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must be >= 0, not {limit} and {offset}")
        rows = await self._read("list", fetch_all(_SELECT_PAGE, (limit, offset)))
        return [document_from_row(row, self._dialect.decode_time) for row in rows]

    async def delete(self, id_or_url: str) -> bool:
        """Delete one document by id or URL; True when it existed."""
        deleted: int = await self._write("delete", execute(_DELETE, {"key": id_or_url}))
        return deleted > 0

    async def count(self) -> int:
        """Number of documents stored."""
        row = await self._read("count", fetch_one(_COUNT))
        return int(row["n"])

    # -- incremental re-crawls -------------------------------------------------------------

    async def known_page(self, url: str) -> KnownPage | None:
        """The validators, links and removal flag of the document at exactly ``url``."""
        row = await self._read("known_page", fetch_one(_SELECT_KNOWN, (url,)))
        if row is None:
            return None
        links = _links(self._json(row["links"]))
        return known_page_from_row(row, links=links, decode_time=self._dialect.decode_time)

    async def mark_verified(self, url: str, meta: FetchMeta) -> str | None:
        """A ``304`` confirmed the document at ``url``: update its fetch time, not its content."""
        params = verified_params(url, meta, self._dialect.encode_time)
        row = await self._write(f"mark_verified {url}", fetch_one(_MARK_VERIFIED, params))
        return None if row is None else str(row["id"])

    async def mark_removed(self, url: str, *, status: int, at: datetime) -> str | None:
        """Flag the live document at ``url`` as gone (kept, left out of search); its id."""
        params = {"url": url, "status": status, "at": self._dialect.encode_time(at)}
        row = await self._write(f"mark_removed {url}", fetch_one(_MARK_REMOVED, params))
        return None if row is None else str(row["id"])

    async def record_change_report(self, report: ChangeReport) -> None:
        """Append the change report of one crawl of a named source."""
        urls = self._dialect.encode_json(report.url_lists())
        params = report_params(report, self._dialect.encode_time, urls)
        await self._write("record_change_report", execute(_INSERT_REPORT, params))

    async def change_reports(
        self, source: str, *, limit: int = 10, ok_only: bool = False
    ) -> builtins.list[ChangeReport]:
        """The newest change reports of ``source``, newest first."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, not {limit}")
        asked = fetch_all(_SELECT_REPORTS, (source, ok_only, limit))
        rows = await self._read("change_reports", asked)
        decode = self._dialect.decode_time
        return [report_from_row(row, decode, self._json(row["urls"])) for row in rows]

    # -- snapshot links (ports.CaptureLinks) -------------------------------------------------

    async def link_capture(self, id_or_url: str, ref: CaptureRef | None) -> bool:
        """Link a document to the WARC record it was built from (None: unlink it)."""
        return await self._write(f"link_capture {id_or_url}", _link_capture(id_or_url, ref))

    async def capture_of(self, id_or_url: str) -> CaptureRef | None:
        """The WARC record a document was built from, if it is linked to one."""
        row = await self._read("capture_of", fetch_one(_SELECT_CAPTURE, {"key": id_or_url}))
        return None if row is None else capture_from_row(row)

    async def captures(self) -> builtins.list[tuple[str, CaptureRef]]:
        """``(document id, record)`` for every linked document, oldest document first."""
        rows = await self._read("captures", fetch_all(_SELECT_CAPTURES))
        return [(str(row["id"]), capture_from_row(row)) for row in rows]

    # -- crawl job records (ports.JobRecords) ------------------------------------------------

    async def save_job(self, record: JobRecord) -> None:
        """Insert or replace a crawl job record."""
        detail = self._dialect.encode_json(dict(record.detail))
        params = job_params(record, self._dialect.encode_time, detail)
        await self._write(f"save_job {record.id}", execute(_UPSERT_JOB, params))

    async def job_record(self, job_id: str) -> JobRecord | None:
        """The crawl job record with this id, or None."""
        row = await self._read("job_record", fetch_one(_SELECT_JOB, (job_id,)))
        if row is None:
            return None
        detail = self._dialect.decode_json(row["detail"])
        return job_from_row(row, self._dialect.decode_time, detail)

    async def delete_job_record(self, job_id: str) -> bool:
        """Forget one crawl job record; True when it existed."""
        deleted: int = await self._write("delete_job_record", execute(_DELETE_JOB, (job_id,)))
        return deleted > 0

    # -- section vectors (ports.SectionVectors, but for the search) ----------------------

    async def pending_vectors(self, model: str, limit: int) -> builtins.list[tuple[int, str]]:
        """Up to ``limit`` (section key, text to embed) of sections lacking a ``model`` vector."""
        params = {"model": model, "limit": limit, "chars": TEXT_CHARS}
        rows = await self._read("pending_vectors", fetch_all(_PENDING, params))
        return [(int(r["pk"]), section_text(r["title"], r["heading"], r["body"])) for r in rows]

    async def put_vectors(self, model: str, items: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Store vectors of ``model`` by section key (replacing any older one)."""
        rows = [(pk, model, to_bytes(vector)) for pk, vector in items]
        await self._write("put_vectors", execute_many(_PUT_VECTOR, rows))

    async def vector_counts(self, model: str) -> tuple[int, int]:
        """(sections with a ``model`` vector, all sections)."""
        row = await self._read("vector_counts", fetch_one(_VECTOR_COUNTS, (model,)))
        return int(row["n"]), int(row["total"])

    async def has_vectors(self, model: str) -> bool:
        """Whether any section has a ``model`` vector (cheap: stops at the first)."""
        row = await self._read("has_vectors", fetch_one(_ANY_VECTOR, (model,)))
        return bool(row["found"])
