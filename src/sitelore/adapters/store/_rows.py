"""What every store writes for a document: its stable id, content hash and row values.

Shared by the SQLite and PostgreSQL stores so both agree on ids, on when content has
changed, and on which fields a document row holds. No SQL and no I/O here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from sitelore.core.changes import ChangeReport, KnownPage
from sitelore.core.models import (
    CaptureRef,
    Document,
    FetchMeta,
    JobRecord,
    StoredDocument,
    content_hash,
    document_id,
)

__all__ = [
    "aware",
    "capture_from_row",
    "capture_params",
    "content_hash",
    "document_from_row",
    "document_id",
    "document_params",
    "job_from_row",
    "job_params",
    "known_page_from_row",
    "report_from_row",
    "report_params",
    "text_to_time",
    "time_to_text",
    "utc",
    "utc_now",
    "verified_params",
]

#: Reads a time as the database returns it; writes one as the database stores it.
DecodeTime = Callable[[Any], datetime]
EncodeTime = Callable[[datetime], Any]


def _plain(record: Any, *skip: str) -> list[str]:
    """The fields of ``record`` (a data class) a row holds as they are: all but the times
    and ``skip``."""
    fields = dataclasses.fields(record)
    return [f.name for f in fields if not f.name.endswith("_at") and f.name not in skip]


_DOCUMENT_FIELDS = _plain(StoredDocument)
_KNOWN_FIELDS = _plain(KnownPage, "links")
_JOB_FIELDS = _plain(JobRecord, "detail")
_REPORT_FIELDS = ("source", "seed", "pages_crawled", "error")


def utc_now() -> datetime:
    """The wall clock, in UTC (the stores' default clock)."""
    return datetime.now(UTC)


def time_to_text(value: datetime) -> str:
    """SQLite's time: ISO 8601 in UTC, fixed width, so text order is time order (naive = UTC)."""
    return aware(value).astimezone(UTC).isoformat(timespec="microseconds")


def text_to_time(text: str) -> datetime:
    """A time SQLite stored (:func:`time_to_text`), aware (naive text = UTC)."""
    return aware(datetime.fromisoformat(text))


def aware(value: datetime) -> datetime:
    """``value`` with a time zone: a naive one is taken as UTC (as PostgreSQL stores it)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def utc(value: datetime) -> datetime:
    """A time PostgreSQL returned, in UTC."""
    return value.astimezone(UTC)


def _optional(decode: Callable[[Any], Any], value: Any) -> Any:
    return None if value is None else decode(value)


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


def document_from_row(row: Mapping[str, Any], decode_time: DecodeTime) -> StoredDocument:
    """A stored document from its row (times decoded by the store's own dialect)."""
    return StoredDocument(
        **{name: row[name] for name in _DOCUMENT_FIELDS},
        fetched_at=decode_time(row["fetched_at"]),
        created_at=decode_time(row["created_at"]),
        updated_at=decode_time(row["updated_at"]),
        removed_at=_optional(decode_time, row["removed_at"]),
    )


def known_page_from_row(
    row: Mapping[str, Any], *, links: tuple[str, ...] | None, decode_time: DecodeTime
) -> KnownPage:
    """What a re-crawl needs to know of a stored page, from its row (links already
    decoded by the store's own dialect)."""
    return KnownPage(
        **{name: row[name] for name in _KNOWN_FIELDS},
        links=links,
        removed_at=_optional(decode_time, row["removed_at"]),
    )


def verified_params(url: str, meta: FetchMeta, encode_time: EncodeTime) -> dict[str, Any]:
    """The named parameters that record a ``304`` for ``url``."""
    return {
        "url": url,
        "fetched_at": encode_time(meta.fetched_at),
        "etag": meta.etag,
        "last_modified": meta.last_modified,
    }


def report_params(report: ChangeReport, encode_time: EncodeTime, urls: Any) -> dict[str, Any]:
    """The named parameters of a change report row (``urls``: its URL lists, encoded)."""
    return {
        **{name: getattr(report, name) for name in _REPORT_FIELDS},
        "started_at": encode_time(report.started_at),
        "finished_at": encode_time(report.finished_at),
        "ok": report.ok,
        "truncated": report.truncated,
        "urls": urls,
    }


def report_from_row(row: Mapping[str, Any], decode_time: DecodeTime, lists: Any) -> ChangeReport:
    """A change report from its row (``lists``: its URL lists, decoded; else none)."""
    return ChangeReport.from_url_lists(
        lists if isinstance(lists, dict) else {},
        **{name: row[name] for name in _REPORT_FIELDS},
        started_at=decode_time(row["started_at"]),
        finished_at=decode_time(row["finished_at"]),
        truncated=bool(row["truncated"]),
    )


def job_params(record: JobRecord, encode_time: EncodeTime, detail: Any) -> dict[str, Any]:
    """The named parameters of a job record row (``detail``: encoded)."""
    return {
        **{name: getattr(record, name) for name in _JOB_FIELDS},
        "created_at": encode_time(record.created_at),
        "finished_at": _optional(encode_time, record.finished_at),
        "detail": detail,
    }


def job_from_row(row: Mapping[str, Any], decode_time: DecodeTime, detail: Any) -> JobRecord:
    """A job record from its row (``detail``: decoded)."""
    return JobRecord(
        **{name: row[name] for name in _JOB_FIELDS},
        created_at=decode_time(row["created_at"]),
        finished_at=_optional(decode_time, row["finished_at"]),
        detail=detail,
    )


def capture_params(pk: int, ref: CaptureRef) -> dict[str, Any]:
    """The named parameters that link document ``pk`` to the record ``ref``."""
    return {"pk": pk, **dataclasses.asdict(ref)}


def capture_from_row(row: Mapping[str, Any]) -> CaptureRef:
    """The record a document links to, from its ``*_captures`` row."""
    return CaptureRef(
        **{name: row[name] for name in ("warc_file", "digest", "record_id", "page_id")},
        offset=int(row["record_offset"]),
        length=int(row["record_length"]),
    )
