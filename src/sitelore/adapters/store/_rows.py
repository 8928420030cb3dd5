"""What every store writes for a document: its stable id, content hash and row values.

Shared by the SQLite and PostgreSQL stores so both agree on ids, on when content has
changed, and on which fields a document row holds. No SQL and no I/O here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sitelore.core.changes import KnownPage
from sitelore.core.models import Document, FetchMeta

__all__ = ["content_hash", "document_id", "document_params", "known_page_from_row"]


def document_id(url: str) -> str:
    """The stable id of the document at ``url``: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def content_hash(title: str, markdown: str) -> str:
    """SHA-256 (hex) of a document's title and Markdown, NUL-separated so the split counts."""
    digest = hashlib.sha256(title.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(markdown.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def document_params(
    document: Document,
    meta: FetchMeta,
    *,
    now: datetime,
    encode_time: Callable[[datetime], Any],
) -> dict[str, Any]:
    """The named parameters of an upsert: content, hash, fetch metadata and times.

    ``encode_time`` turns a datetime into what the database stores (ISO text for
    SQLite, an aware datetime for PostgreSQL).
    """
    return {
        "url": document.url,
        "title": document.title,
        "markdown": document.markdown,
        "content_hash": content_hash(document.title, document.markdown),
        "content_type": meta.content_type,
        "status": meta.status,
        "etag": meta.etag,
        "last_modified": meta.last_modified,
        "fetched_at": encode_time(meta.fetched_at),
        "now": encode_time(now),
        "description": document.description,
        "lang": document.lang,
        "canonical_url": document.canonical_url,
    }


def known_page_from_row(
    row: Mapping[str, Any], *, links: tuple[str, ...] | None, removed_at: datetime | None
) -> KnownPage:
    """What a re-crawl needs to know of a stored page, from its row (links and the
    removal time already decoded by the store's own dialect)."""
    return KnownPage(
        id=row["id"],
        url=row["url"],
        title=row["title"],
        content_type=row["content_type"],
        content_hash=row["content_hash"],
        etag=row["etag"],
        last_modified=row["last_modified"],
        links=links,
        removed_at=removed_at,
    )
