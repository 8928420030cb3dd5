"""The PostgreSQL store's schema: its migration steps, in order, as DDL text.

Step ``n`` (1-based) brings ``sitelore_schema.version`` to ``n``. Append only: never
edit a step that has shipped. Every object is prefixed ``sitelore_`` so the store can
share a database with other applications. Nothing here connects to anything.

* ``sitelore_documents``: one row per URL; ``tsv`` holds the folded, capped words of
  title (weight A) and Markdown (weight B); ``links`` the links the page offered (a
  ``304`` offers them again); ``removed_at`` flags a URL that answered 404/410.
* ``sitelore_change_reports``: one row per crawl of a named source.
* ``sitelore_document_captures``: the WARC record a document was built from.
* ``sitelore_crawl_jobs``: the crawl job records of ``sitelore serve``.
* ``sitelore_sections``: one row per section with its own tsvector (``_pg_sections``).
* ``sitelore_text``: the text search configuration (Porter stems, no stop words).
* ``sitelore_section_vectors``, ``sitelore_vector_generation``: section vectors and
  the counter of their changes (``_pg_vectors``).
"""

from __future__ import annotations

from sitelore.adapters.store._pg_jobs import JOBS_MIGRATION
from sitelore.adapters.store._pg_sections import SECTIONS_STEPS
from sitelore.adapters.store._pg_vectors import VECTORS_STEPS

__all__ = ["CREATE_VERSION_TABLE", "MIGRATIONS", "MIGRATION_LOCK"]

CREATE_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS sitelore_schema (version integer NOT NULL)"
#: Taken (per transaction) before reading or changing the version: one migrator at a time.
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(7166511437123871001)"

_TEXT_SEARCH = (
    "CREATE TEXT SEARCH DICTIONARY sitelore_porter (TEMPLATE = snowball, Language = porter)",
    "CREATE TEXT SEARCH CONFIGURATION sitelore_text (COPY = simple)",
    """ALTER TEXT SEARCH CONFIGURATION sitelore_text ALTER MAPPING FOR
       asciiword, word, numword, asciihword, hword, numhword,
       hword_asciipart, hword_part, hword_numpart WITH sitelore_porter""",
)
_DOCUMENTS = (
    """CREATE TABLE sitelore_documents (
        pk bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text NOT NULL UNIQUE,
        url text NOT NULL UNIQUE,
        title text NOT NULL,
        markdown text NOT NULL,
        content_hash text NOT NULL,
        content_type text NOT NULL,
        status integer NOT NULL,
        etag text,
        last_modified text,
        fetched_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        description text,
        lang text,
        canonical_url text,
        links jsonb NOT NULL DEFAULT '[]',
        removed_at timestamptz,
        fetch_count integer NOT NULL DEFAULT 1,
        tsv tsvector NOT NULL
    )""",
    "CREATE INDEX sitelore_documents_tsv ON sitelore_documents USING gin (tsv)",
    "CREATE INDEX sitelore_documents_updated ON sitelore_documents (updated_at, pk)",
)
_CHANGE_REPORTS = (
    """CREATE TABLE sitelore_change_reports (
        pk bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        source text NOT NULL,
        seed text NOT NULL,
        started_at timestamptz NOT NULL,
        finished_at timestamptz NOT NULL,
        ok boolean NOT NULL,
        error text,
        pages_crawled integer NOT NULL,
        truncated boolean NOT NULL,
        urls jsonb NOT NULL
    )""",
    "CREATE INDEX sitelore_change_reports_source ON sitelore_change_reports (source, ok, pk)",
)
_CAPTURES = (
    """CREATE TABLE sitelore_document_captures (
        document_pk bigint PRIMARY KEY
            REFERENCES sitelore_documents (pk) ON DELETE CASCADE,
        warc_file text NOT NULL,
        record_offset bigint NOT NULL,
        record_length bigint NOT NULL,
        digest text NOT NULL,
        record_id text NOT NULL,
        page_id text NOT NULL
    )""",
)

#: Migration steps in order.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (*_TEXT_SEARCH, *_DOCUMENTS, *_CHANGE_REPORTS, *_CAPTURES),
    # 2: crawl job records of sitelore serve (``_pg_jobs``).
    JOBS_MIGRATION,
    # 3: sections, the unit of retrieval (idempotent: IF NOT EXISTS throughout).
    SECTIONS_STEPS,
    # 4: section vectors (made by their first write before) and their change counter.
    VECTORS_STEPS,
)
