"""An archive directory: WARC files written one per crawl, their index, and reading records back.

Layout::

    DIR/
      sitelore-20260101T120000Z-1a2b3c4d.warc.gz   one file per capturing crawl
      index.sqlite3                                 page id / URL -> file, offset, digest

Writing never blocks the event loop: encoding and appending run in a worker thread,
one record pair at a time (a lock keeps offsets exact). Each file opens with a
``warcinfo`` record; each exchange appends its response record, then its request
record. Files are created exclusively and never rewritten, so two crawls capturing
into one directory never share a file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from sitelore.adapters.snapshots._index import CaptureIndex, IndexEntry
from sitelore.adapters.snapshots._records import (
    ParsedResponse,
    parse_response,
    request_record,
    response_record,
    warc_date,
    warcinfo_record,
)
from sitelore.core.errors import ArchiveError
from sitelore.core.models import CaptureRef, Exchange, Snapshot, page_id

__all__ = [
    "WARC_SUFFIX",
    "CaptureWriter",
    "WarcReader",
    "read_raw",
]

#: The suffix of the WARC files sitelore writes (gzip per record).
WARC_SUFFIX = ".warc.gz"


def _file_name(now: datetime) -> str:
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"sitelore-{stamp}-{secrets.token_hex(4)}{WARC_SUFFIX}"


@dataclasses.dataclass(eq=False, repr=False)
class CaptureWriter:
    """Appends one crawl's exchanges to a new WARC file in an archive and indexes them.

    Open with :meth:`open`; :meth:`record` is the fetcher's exchange observer;
    :meth:`ref_for` names the record of a fetch's final response; :meth:`aclose` at
    the end of the crawl.
    """

    directory: Path
    seed_id: str
    path: Path
    _out: BinaryIO
    _index: CaptureIndex
    records: int = 0
    _size: int = 0
    _warcinfo_id: str | None = None
    _lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)
    _refs: dict[tuple[str, str], CaptureRef] = dataclasses.field(default_factory=dict)

    @classmethod
    def open(
        cls, directory: Path, seed_id: str, *, now: datetime, info: Mapping[str, str]
    ) -> CaptureWriter:
        """Create ``directory`` if needed, a new WARC file in it, and open its index."""
        directory = directory.expanduser().absolute()
        index = CaptureIndex(directory, create=True)
        path = directory / _file_name(now)
        try:
            out = path.open("xb")
        except OSError as exc:
            index.close()
            raise ArchiveError(f"{path}: cannot create the WARC file: {exc}") from exc
        writer = cls(directory, seed_id, path, out, index)
        fields = {
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "isPartOf": seed_id,
            "description": (
                "Bodies are stored decompressed and de-chunked; WARC-Sitelore-Decoded "
                "lists the HTTP headers renamed X-Orig-<name> because of it."
            ),
            **info,
        }
        record = warcinfo_record(path.name, fields)
        try:
            writer._append(record.data)
        except ArchiveError:
            writer._close_now()
            raise
        writer._warcinfo_id = record.record_id
        return writer

    def __repr__(self) -> str:
        return f"CaptureWriter({str(self.path)!r}, records={self.records})"

    def _append(self, data: bytes) -> int:
        """Append one gzip member; return its offset (called under the lock)."""
        offset = self._size
        try:
            self._out.write(data)
            self._out.flush()
        except (OSError, ValueError) as exc:
            raise ArchiveError(f"{self.path}: cannot write the capture: {exc}") from exc
        self._size += len(data)
        return offset

    def _write_exchange(self, exchange: Exchange, pid: str) -> IndexEntry:
        """Encode and append the response and request records of one exchange (a thread)."""
        response = response_record(exchange, pid, warcinfo_id=self._warcinfo_id)
        request = request_record(exchange, pid, concurrent_to=response.record_id)
        offset = self._append(response.data)
        self._append(request)
        return IndexEntry(
            page_id=pid,
            url=exchange.url,
            hop=exchange.hop,
            status=exchange.status,
            warc_file=self.path.name,
            offset=offset,
            length=len(response.data),
            digest=response.digest,
            record_id=response.record_id,
            captured_at=warc_date(exchange.started_at),
        )

    async def record(self, exchange: Exchange) -> None:
        """Archive one exchange and index its response (the fetcher's observer)."""
        pid = page_id(self.seed_id, exchange.fetch_url)
        async with self._lock:
            entry = await asyncio.to_thread(self._write_exchange, exchange, pid)
            self._index.put(entry)
            self.records += 1
            self._refs[(pid, exchange.url)] = entry.ref(self.directory)

    def ref_for(self, fetch_url: str, url: str) -> CaptureRef | None:
        """The record of the response to ``url`` in the fetch of ``fetch_url``, if captured."""
        return self._refs.get((page_id(self.seed_id, fetch_url), url))

    def _close_now(self) -> None:
        try:
            self._out.close()
        finally:
            self._index.close()

    async def aclose(self) -> None:
        """Finish the file and close the index (waits for a write in progress)."""
        async with self._lock:
            self._close_now()


# ---------------------------------------------------------------- reading


def read_raw(path: Path, offset: int, length: int) -> bytes:
    """The ``length`` bytes of the record at ``offset`` in ``path`` (one gzip member)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(length)
    except OSError as exc:
        raise ArchiveError(f"{path}: cannot read the capture: {exc.strerror or exc}") from exc
    if len(data) != length:
        raise ArchiveError(f"{path}@{offset}: the file ends inside the record")
    return data


class WarcReader:
    """``ports.CaptureReader`` on WARC files: the response a :class:`CaptureRef` names.

    ``archive``, when given, is where the WARC files are now (an archive that was moved
    or copied): the file is looked up there by name instead of at its recorded path.
    """

    def __init__(self, archive: Path | None = None) -> None:
        self._archive = archive.expanduser().absolute() if archive is not None else None

    def path_of(self, ref: CaptureRef) -> Path:
        """Where the WARC file of ``ref`` is read from."""
        recorded = Path(ref.warc_file)
        return self._archive / recorded.name if self._archive is not None else recorded

    async def _load(self, ref: CaptureRef) -> tuple[bytes, ParsedResponse]:
        """The record's bytes and its parsed response, checked against ``ref``."""
        path = self.path_of(ref)
        where = f"{path}@{ref.offset}"
        data = await asyncio.to_thread(read_raw, path, ref.offset, ref.length)
        parsed = await asyncio.to_thread(parse_response, data, where=where)
        if parsed.digest != ref.digest or parsed.record_id != ref.record_id:
            raise ArchiveError(f"{where}: not the record named (its digest or id differs)")
        return data, parsed

    async def raw(self, ref: CaptureRef) -> bytes:
        """The record's bytes exactly as stored (one gzip member), digest checked."""
        data, _ = await self._load(ref)
        return data

    async def read(self, ref: CaptureRef) -> Snapshot:
        """The captured response as a snapshot (``fetched_at`` is the capture time)."""
        _, parsed = await self._load(ref)
        return Snapshot(
            **{name: getattr(parsed, name) for name in ("status", "headers", "body", "address")},
            url=parsed.target_uri,
            final_url=parsed.target_uri,
            fetched_at=parsed.date,
            elapsed_ms=0.0,
            capture=ref,
        )
