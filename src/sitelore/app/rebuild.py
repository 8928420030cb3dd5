"""Rebuild stored documents from their captured bytes, and export the store as JSON lines.

``reconvert`` is what a converter upgrade needs: every document linked to a capture
record (``ports.CaptureLinks``) is converted again from that record's bytes, read
through a ``ports.CaptureReader``, and written back through ``Store.upsert`` under
its own URL, so it keeps its id, and only a document whose title or Markdown
changed gets new text, a new ``updated_at`` and a new search index entry.

Never touches the network (the reader reads files), never deletes a document (one
the new converter would not index is left as it was and counted), and never
rebuilds a document whose capture is missing or whose digest does not match (it is
counted and named).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from typing import Any, TextIO

from pydantic.alias_generators import to_camel

from sitelore.core.convert import to_document
from sitelore.core.document_wire import DocumentOut
from sitelore.core.errors import ArchiveError, ConversionError, FetchError
from sitelore.core.linkstyle import LinkStyle
from sitelore.core.models import Document, FetchMeta
from sitelore.core.ports import CaptureLinks, CaptureReader, Store

__all__ = ["Convert", "ReconvertReport", "export_jsonl", "reconvert"]

log = logging.getLogger(__name__)

#: body, content type, URL, charset -> Document (the spider's converter signature).
Convert = Callable[[bytes, str, str, str | None], Document]

_PAGE = 200


def _default_convert(body: bytes, content_type: str, url: str, charset: str | None) -> Document:
    return to_document(body, content_type, url, charset=charset)


@dataclasses.dataclass(slots=True, kw_only=True)
class ReconvertReport:
    """What ``reconvert`` did, document by document."""

    documents: int = 0
    reconverted: int = 0
    changed: int = 0
    unchanged: int = 0
    no_capture: int = 0
    unreadable: int = 0
    failed: int = 0
    not_indexed: int = 0
    changed_ids: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The ``reconvert --json`` shape: every field, its name in camelCase."""
        return {to_camel(name): value for name, value in dataclasses.asdict(self).items()}


async def reconvert(
    store: Store, reader: CaptureReader, *, convert: Convert | None = None
) -> ReconvertReport:
    """Rebuild every captured document with ``convert`` (default: the current converter).

    The fetch metadata (status, content type, validators, ``fetched_at``) stays as
    stored; the links a page offers the crawl stay as stored when the store keeps them.
    """
    rebuild = convert or _default_convert
    report = ReconvertReport(documents=await store.count())
    linked = await store.captures() if isinstance(store, CaptureLinks) else []
    report.no_capture = report.documents - len(linked)
    for document_id, ref in linked:
        stored = await store.get(document_id)
        if stored is None:  # deleted meanwhile
            continue
        try:
            snapshot = await reader.read(ref)
        except ArchiveError as exc:
            report.unreadable += 1
            report.problems.append(f"{stored.url}: {exc}")
            continue
        try:
            document = rebuild(snapshot.body, snapshot.content_type, stored.url, snapshot.charset)
        except (ConversionError, FetchError) as exc:
            report.failed += 1
            report.problems.append(f"{stored.url}: {exc}")
            continue
        if document.noindex:
            report.not_indexed += 1
            report.problems.append(f"{stored.url}: the converter now says noindex; left as it was")
            continue
        known = await store.known_page(stored.url)  # the links as the crawl stored them
        links = known.links if known is not None and known.links is not None else document.links
        meta = FetchMeta(**{f.name: getattr(stored, f.name) for f in dataclasses.fields(FetchMeta)})
        document = dataclasses.replace(document, url=stored.url, links=links)
        result = await store.upsert(document, meta)
        report.reconverted += 1
        if result.changed:
            report.changed += 1
            report.changed_ids.append(result.id)
            log.info("reconverted %s: changed", stored.url)
        else:
            report.unchanged += 1
    return report


async def export_jsonl(store: Store, out: TextIO, *, style: LinkStyle = "inline") -> int:
    """Write every document as one JSON object per line to ``out``; return how many.

    Each line is a :class:`~sitelore.core.document_wire.DocumentOut`, the shape ``show --json``,
    REST and MCP give. ``style`` is the style of the Markdown's links
    (:func:`~sitelore.core.linkstyle.restyle_links`).
    """
    links = store if isinstance(store, CaptureLinks) else None
    written = 0
    while batch := await store.list(limit=_PAGE, offset=written):
        for document in batch:
            capture = await links.capture_of(document.id) if links is not None else None
            line = DocumentOut.from_stored(document, capture=capture, links=style).to_json()
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            written += 1
    return written
