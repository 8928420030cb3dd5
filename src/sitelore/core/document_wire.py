"""The one JSON shape of a stored document: ``show --json``, ``export --jsonl``, REST and MCP.

:class:`DocumentOut` is what every surface answers for one stored document, field for
field and value for value (camelCase keys; times in UTC, RFC 3339 with ``Z``). MCP's
``get-document`` sends the same fields but the Markdown (:class:`DocumentMeta`): the
text goes as fenced windows instead, so an agent reads it once.

It lives here, in the pure core, rather than in ``wire`` (the application layer, above
``rebuild``, whose JSONL export must use it) or in ``models`` (the vocabulary under
``linkstyle`` and ``sections``, which it needs to restyle links and count sections).
Pure data and conversions: no I/O.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from sitelore.core.linkstyle import LinkStyle, restyle_links
from sitelore.core.models import CaptureRef, StoredDocument
from sitelore.core.sections import split_sections

__all__ = ["CaptureOut", "DocumentMeta", "DocumentOut", "WireModel", "document_meta"]


class WireModel(BaseModel):
    """Base of the answer shapes: camelCase on the wire, frozen."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    def to_json(self) -> dict[str, Any]:
        """The JSON object as every surface prints it (wire names, JSON types)."""
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def shape(cls, record: object, **values: Any) -> Self:
        """Shape ``record``: each field is its attribute of the same name, unless in ``values``."""
        taken = {name: getattr(record, name) for name in cls.model_fields if name not in values}
        return cls(**taken, **values)


class CaptureOut(WireModel):
    """The WARC record a document was built from (``sitelore reconvert`` reads it)."""

    file: str = Field(description="WARC file name in the archive.")
    offset: int = Field(description="Byte offset of the record (one gzip member).")
    length: int = Field(description="Length of the record in bytes.")
    digest: str = Field(description="WARC-Payload-Digest of the stored body (sha1:...).")
    record_id: str = Field(description="WARC-Record-ID.")
    page_id: str = Field(description="The fetch that captured it.")


class DocumentMeta(WireModel):
    """A stored document without its Markdown: what it is, where from, when."""

    id: str = Field(description="Stable document id (derived from the URL).")
    url: str = Field(description="The page's final URL (after redirects), normalised.")
    title: str = Field(description="The page title.")
    description: str | None = Field(description="The page's meta description, if any.")
    lang: str | None = Field(description="The page's language, if declared.")
    canonical_url: str | None = Field(description="The page's canonical link, if any.")
    content_type: str = Field(description="Media type the page was served with.")
    status: int = Field(description="HTTP status of the fetch.")
    content_hash: str = Field(description="Hash of title and Markdown; changes when they do.")
    etag: str | None = Field(description="ETag header of the fetch, if any.")
    last_modified: str | None = Field(description="Last-Modified header of the fetch, if any.")
    fetched_at: datetime = Field(
        description="When the page was last fetched or verified unchanged (304) (UTC)."
    )
    created_at: datetime = Field(description="When the document was first stored (UTC).")
    updated_at: datetime = Field(description="When the document's text last changed (UTC).")
    removed_at: datetime | None = Field(
        description="When a re-crawl found the page gone (404/410); null while it is live."
    )
    sections: int = Field(
        description="Sections of the Markdown; MCP get-document opens at section 0..n-1."
    )
    capture: CaptureOut | None = Field(
        description="The WARC record the text was built from; null when not captured."
    )


class DocumentOut(DocumentMeta):
    """One stored document with its Markdown and fetch metadata."""

    markdown: str = Field(description="The main content as Markdown (fetched, untrusted text).")

    @classmethod
    def from_stored(
        cls,
        doc: StoredDocument,
        *,
        capture: CaptureRef | None = None,
        links: LinkStyle = "inline",
    ) -> DocumentOut:
        """Shape a stored document, its links written in ``links`` style.

        ``contentHash`` stays the stored text's whatever the style.
        """
        markdown = restyle_links(doc.markdown, links)
        return cls.shape(doc, **document_meta(markdown, capture), markdown=markdown)


def document_meta(markdown: str, capture: CaptureRef | None) -> dict[str, Any]:
    """The :class:`DocumentMeta` fields a stored document lacks, when its Markdown as shown
    is ``markdown`` (the others are its attributes: :meth:`WireModel.shape`)."""
    return {
        "sections": len(split_sections(markdown)),
        "capture": None if capture is None else CaptureOut.shape(capture, file=capture.warc_file),
    }
