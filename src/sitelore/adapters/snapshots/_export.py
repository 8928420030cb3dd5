"""Export the store as one WARC file: each document's captured response and its Markdown.

For every stored document, in store order: the response record it was built from,
copied byte for byte from its capture (same record id, same digests), when the
document links to one that can still be read; then a ``conversion`` record
(``text/markdown``) holding its Markdown, ``WARC-Refers-To`` that response. The file
opens with a ``warcinfo`` record. It is written beside the target and renamed into
place, so a failed export never leaves half a file under the asked-for name.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from pathlib import Path
from typing import Any, BinaryIO

from sitelore.adapters.snapshots._archive import WarcReader
from sitelore.adapters.snapshots._records import conversion_record, warcinfo_record
from sitelore.core.errors import ArchiveError
from sitelore.core.models import StoredDocument
from sitelore.core.ports import CaptureLinks, Store

__all__ = ["WarcExport", "export_warc"]

_PAGE = 200


@dataclasses.dataclass(slots=True, kw_only=True)
class WarcExport:
    """What an export wrote."""

    path: str
    documents: int = 0
    responses: int = 0
    missing: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The ``export --json`` shape of the WARC part."""
        return {
            "file": self.path,
            "documents": self.documents,
            "responses": self.responses,
            "missingCaptures": list(self.missing),
        }


async def _documents(store: Store) -> list[StoredDocument]:
    out: list[StoredDocument] = []
    while batch := await store.list(limit=_PAGE, offset=len(out)):
        out.extend(batch)
    return out


def _unwritable(path: Path, exc: OSError) -> ArchiveError:
    return ArchiveError(f"{path}: cannot write the export: {exc.strerror or exc}")


def _open_partial(path: Path) -> tuple[Path, Path, BinaryIO]:
    path = path.expanduser().absolute()
    if path.is_dir():
        raise ArchiveError(f"{path}: cannot write the export: is a directory")
    partial = path.with_name(path.name + ".partial")
    try:
        return path, partial, partial.open("wb")
    except OSError as exc:
        raise _unwritable(path, exc) from exc


async def export_warc(store: Store, path: Path, *, archive: Path | None = None) -> WarcExport:
    """Write every stored document to the WARC file ``path`` (see the module docstring).

    ``archive`` is where the capture files are now, if they were moved. A document
    whose capture cannot be read is exported with its Markdown only and named in
    ``missing``.
    """
    links = store if isinstance(store, CaptureLinks) else None
    reader = WarcReader(archive)
    path, partial, handle = await asyncio.to_thread(_open_partial, path)
    report = WarcExport(path=str(path))
    try:
        with handle:
            info = warcinfo_record(
                path.name, {"description": "sitelore export: captured responses and their Markdown"}
            )
            await asyncio.to_thread(handle.write, info.data)
            for document in await _documents(store):
                ref = await links.capture_of(document.id) if links is not None else None
                refers_to = None
                if ref is not None:
                    try:
                        data = await reader.raw(ref)
                    except ArchiveError as exc:
                        report.missing.append(f"{document.url}: {exc}")
                    else:
                        await asyncio.to_thread(handle.write, data)
                        report.responses += 1
                        refers_to = ref.record_id
                record = conversion_record(
                    document.url,
                    document.markdown,
                    date=document.updated_at,
                    refers_to=refers_to,
                    fields={
                        "WARC-Sitelore-Document-ID": document.id,
                        "WARC-Sitelore-Title": " ".join(document.title.split()),
                        "WARC-Warcinfo-ID": info.record_id,
                    },
                )
                await asyncio.to_thread(handle.write, record)
                report.documents += 1
        try:
            os.replace(partial, path)
        except OSError as exc:
            raise _unwritable(path, exc) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise
    return report
