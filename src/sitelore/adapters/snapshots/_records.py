"""WARC 1.1 records in and out (warcio): request, response, warcinfo and conversion records.

Every record is encoded on its own as one gzip member, so a record's byte offset and
length in its file are exact and a reader can seek straight to it.

The fetcher keeps bodies decompressed and de-chunked, and never reads a redirect's
body. A response record stores the body as kept, so its HTTP headers are made to
describe that body honestly: when the stored body is not the wire body,
``Content-Encoding``, ``Transfer-Encoding`` and ``Content-Length`` are renamed in
place to ``X-Orig-<name>``, a ``Content-Length`` of the stored body is appended, and
the WARC field ``WARC-Sitelore-Decoded`` lists the renamed names, so a reader can
restore the headers exactly as received. An unread redirect body is also marked
``WARC-Truncated: unspecified``. Digests (``WARC-Payload-Digest``,
``WARC-Block-Digest``) are computed by warcio over what is stored.

Never writes a caller's ``Authorization``, ``Cookie`` or ``Proxy-Authorization``
request header value into a request record.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from sitelore import __version__
from sitelore.core.errors import ArchiveError
from sitelore.core.models import Exchange, Headers

__all__ = [
    "DECODED_FIELD",
    "HOP_FIELD",
    "PAGE_ID_FIELD",
    "EncodedRecord",
    "ParsedResponse",
    "conversion_record",
    "parse_response",
    "payload_digest",
    "request_record",
    "response_record",
    "warc_date",
    "warcinfo_record",
]

#: Names (lower-case, comma-separated) of HTTP headers renamed to ``X-Orig-<name>``.
DECODED_FIELD = "WARC-Sitelore-Decoded"
#: The page id (``models.page_id``) of the fetch that made this exchange.
PAGE_ID_FIELD = "WARC-Sitelore-Page-ID"
#: The exchange's hop number within its fetch (0 = the first request).
HOP_FIELD = "WARC-Sitelore-Hop"

_ORIG_PREFIX = "X-Orig-"
_BODY_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
_SECRET_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
_WARC_VERSION = "1.1"


@dataclasses.dataclass(frozen=True, slots=True)
class EncodedRecord:
    """One record as the bytes of a gzip member, with the fields an index needs."""

    data: bytes
    record_id: str
    digest: str


@dataclasses.dataclass(frozen=True, slots=True)
class ParsedResponse:
    """A response record read back: headers restored as received, body as stored."""

    target_uri: str
    status: int
    headers: Headers
    body: bytes
    date: datetime
    address: str | None
    record_id: str
    digest: str


def payload_digest(body: bytes) -> str:
    """The WARC digest of ``body`` as warcio writes it: ``sha1:<base32>``."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")  # noqa: S324 - WARC's customary digest, not security


def warc_date(value: datetime) -> str:
    """A WARC 1.1 date (UTC, microseconds)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _header_text(value: str) -> str:
    """Header text warcio can encode (aiohttp keeps undecodable bytes as surrogates)."""
    if value.isascii():
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _writer(buffer: io.BytesIO | None = None) -> WARCWriter:
    return WARCWriter(buffer or io.BytesIO(), gzip=True, warc_version=_WARC_VERSION)


def _record(url: str, kind: str, body: bytes, **options: Any) -> Any:
    """A new WARC record of ``kind`` about ``url`` holding ``body`` (not yet encoded)."""
    return _writer().create_warc_record(
        url, kind, payload=io.BytesIO(body), length=len(body), **options
    )


def _encode(record: object) -> bytes:
    buffer = io.BytesIO()
    _writer(buffer).write_record(record)
    return buffer.getvalue()


def _encoded(record: Any, digest: str) -> EncodedRecord:
    """``record`` encoded, with its id and the digest named by the ``digest`` field."""
    fields = record.rec_headers
    return EncodedRecord(
        _encode(record), fields.get_header("WARC-Record-ID"), fields.get_header(digest) or ""
    )


def _stored_headers(exchange: Exchange) -> tuple[list[tuple[str, str]], list[str], bool]:
    """The response headers that describe the stored body, the renamed names, truncation."""
    pairs = [(name, _header_text(value)) for name, value in exchange.headers]
    rewritten = not exchange.body_read or any(
        name.lower() in ("content-encoding", "transfer-encoding") for name, _ in pairs
    )
    if not rewritten:
        return pairs, [], False
    renamed = list(dict.fromkeys(n.lower() for n, _ in pairs if n.lower() in _BODY_HEADERS))
    out = [(_ORIG_PREFIX + n if n.lower() in _BODY_HEADERS else n, value) for n, value in pairs]
    out.append(("Content-Length", str(len(exchange.body))))
    truncated = not exchange.body_read and exchange.headers.get("content-length", "") != "0"
    return out, renamed, truncated


def _restore_headers(pairs: list[tuple[str, str]], decoded: str | None) -> Headers:
    """Undo :func:`_stored_headers`: the headers exactly as the server sent them."""
    if not decoded:
        return Headers.of(pairs)
    names = {name.strip().lower() for name in decoded.split(",") if name.strip()}
    out: list[tuple[str, str]] = []
    for name, value in pairs:
        lower = name.lower()
        if lower == "content-length":
            continue  # ours, of the stored body
        if lower.startswith(_ORIG_PREFIX.lower()) and lower[len(_ORIG_PREFIX) :] in names:
            out.append((name[len(_ORIG_PREFIX) :], value))
        else:
            out.append((name, value))
    return Headers.of(out)


def response_record(
    exchange: Exchange, page_id: str, *, warcinfo_id: str | None = None
) -> EncodedRecord:
    """The response record of one exchange, as a gzip member."""
    headers, renamed, truncated = _stored_headers(exchange)
    reason = f" {exchange.reason}" if exchange.reason else ""
    http = StatusAndHeaders(
        f"{exchange.status}{reason}", headers, protocol=f"HTTP/{exchange.http_version}"
    )
    fields: dict[str, str] = {
        "WARC-Date": warc_date(exchange.started_at),
        PAGE_ID_FIELD: page_id,
        HOP_FIELD: str(exchange.hop),
    }
    if exchange.address:
        fields["WARC-IP-Address"] = exchange.address
    if warcinfo_id:
        fields["WARC-Warcinfo-ID"] = warcinfo_id
    if renamed:
        fields[DECODED_FIELD] = ", ".join(renamed)
    if truncated:
        fields["WARC-Truncated"] = "unspecified"
    record = _record(
        exchange.url, "response", exchange.body, http_headers=http, warc_headers_dict=fields
    )
    return _encoded(record, "WARC-Payload-Digest")


def request_record(exchange: Exchange, page_id: str, *, concurrent_to: str) -> bytes:
    """The request record of one exchange (linked to its response), as a gzip member."""
    parts = urllib.parse.urlsplit(exchange.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [
        (name, "[redacted]" if name.lower() in _SECRET_HEADERS else _header_text(value))
        for name, value in exchange.request_headers
    ]
    http = StatusAndHeaders(
        f"{exchange.method} {target} HTTP/{exchange.http_version}",
        headers,
        is_http_request=True,
    )
    record = _record(
        exchange.url,
        "request",
        b"",
        http_headers=http,
        warc_headers_dict={
            "WARC-Date": warc_date(exchange.started_at),
            "WARC-Concurrent-To": concurrent_to,
            PAGE_ID_FIELD: page_id,
            HOP_FIELD: str(exchange.hop),
        },
    )
    return _encode(record)


def warcinfo_record(filename: str, info: Mapping[str, str]) -> EncodedRecord:
    """The ``warcinfo`` record that opens a file, as a gzip member (``info`` after our
    ``software`` and ``format`` fields)."""
    fields = {"software": f"sitelore/{__version__} (warcio)", "format": "WARC File Format 1.1"}
    record = _writer().create_warcinfo_record(filename, fields | dict(info))
    return _encoded(record, "WARC-Block-Digest")


def conversion_record(
    url: str,
    text: str,
    *,
    date: datetime,
    refers_to: str | None,
    fields: Mapping[str, str],
) -> bytes:
    """A ``conversion`` record holding a document's Markdown, as a gzip member.

    ``refers_to`` is the WARC-Record-ID of the response it was converted from.
    """
    body = text.encode("utf-8")
    headers = {"WARC-Date": warc_date(date), **{k: _header_text(v) for k, v in fields.items()}}
    if refers_to:
        headers["WARC-Refers-To"] = refers_to
    record = _record(
        url,
        "conversion",
        body,
        warc_content_type="text/markdown; charset=utf-8",
        warc_headers_dict=headers,
    )
    return _encode(record)


def parse_response(data: bytes, *, where: str) -> ParsedResponse:
    """Read the one response record in ``data`` (a gzip member) and check its digest.

    Raises ``ArchiveError`` naming ``where`` when the bytes are not a response record
    or the body does not match its ``WARC-Payload-Digest``.
    """
    try:
        iterator = ArchiveIterator(io.BytesIO(data))
        record = next(iter(iterator), None)
        if record is None:
            raise ArchiveError(f"{where}: no WARC record there")
        if record.rec_type != "response" or record.http_headers is None:
            raise ArchiveError(f"{where}: a {record.rec_type} record, not a response")
        body = record.raw_stream.read()
        rec = record.rec_headers
        http = record.http_headers
        status = int(http.get_statuscode())
        parsed = ParsedResponse(
            target_uri=rec.get_header("WARC-Target-URI"),
            status=status,
            headers=_restore_headers(list(http.headers), rec.get_header(DECODED_FIELD)),
            body=body,
            date=datetime.fromisoformat(rec.get_header("WARC-Date")),
            address=rec.get_header("WARC-IP-Address"),
            record_id=rec.get_header("WARC-Record-ID"),
            digest=rec.get_header("WARC-Payload-Digest") or "",
        )
    except ArchiveError:
        raise
    except (ArchiveLoadFailed, OSError, EOFError, ValueError, TypeError) as exc:
        raise ArchiveError(f"{where}: unreadable WARC record ({exc})") from exc
    if payload_digest(parsed.body) != parsed.digest:
        raise ArchiveError(f"{where}: body does not match its WARC-Payload-Digest")
    return parsed
