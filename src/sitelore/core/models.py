"""Frozen records that cross module boundaries: snapshots, documents, outcomes, summaries.

Records on the hot path (one per page) are slotted dataclasses. The options a user or
a remote caller supplies (``CrawlOptions``, ``Limits``, ``ClampNote``) live in
:mod:`sitelore.core.options`, so a command that only reads the store starts without
building pydantic models. Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote

from sitelore.core.errors import ErrorKind, SiteloreError

if TYPE_CHECKING:
    from sitelore.core.options import ClampNote, CrawlOptions

__all__ = [
    "DEFAULT_DELAY",
    "PINNED_SKIP_REASONS",
    "SKIPPED_URLS_PER_REASON",
    "CaptureRef",
    "ChangeKind",
    "CrawlSummary",
    "Document",
    "Exchange",
    "FetchMeta",
    "Headers",
    "JobRecord",
    "PageError",
    "PageOutcome",
    "SearchHit",
    "Section",
    "SkipReason",
    "Snapshot",
    "SnapshotMode",
    "StoredDocument",
    "UpsertResult",
    "content_hash",
    "document_id",
    "page_id",
    "split_content_type",
]

MiB = 1024 * 1024

#: The spacing a crawl asks for when it names none (``CrawlOptions.delay``), in seconds.
DEFAULT_DELAY: float = 1.0


class Headers(tuple[tuple[str, str], ...]):
    """Response headers as ordered (name, value) pairs; lookups are case-insensitive."""

    __slots__ = ()

    def get(self, name: str, default: str | None = None) -> str | None:
        """Return the first value of header ``name``, or ``default``."""
        lname = name.lower()
        for key, value in self:
            if key.lower() == lname:
                return value
        return default

    def get_all(self, name: str) -> list[str]:
        """Return every value of header ``name`` in order."""
        lname = name.lower()
        return [value for key, value in self if key.lower() == lname]

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> Headers:
        """Build headers from any iterable of pairs."""
        return cls(tuple(pairs))


def split_content_type(content_type: str | None) -> tuple[str, str | None]:
    """A Content-Type's media type (lower case) and its charset label, if it names one.

    The first ``charset`` parameter wins, as the WHATWG MIME Sniffing parser says.

    >>> split_content_type('Text/HTML; charset="UTF-8"; charset=latin1')
    ('text/html', 'utf-8')
    >>> split_content_type(None)
    ('', None)
    """
    media, *params = (content_type or "").split(";")
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return media.strip().lower(), value.strip().strip("\"'").lower() or None
    return media.strip().lower(), None


class SnapshotMode(enum.StrEnum):
    """Where the fetch path gets its responses.

    ``live``: the network. ``capture``: the network, and every exchange is also written
    to a WARC archive. ``replay``: the archive only; no socket is ever opened.
    """

    LIVE = "live"
    CAPTURE = "capture"
    REPLAY = "replay"


def page_id(seed_id: str, url: str) -> str:
    """The capture identity of ``url`` fetched by the crawl named ``seed_id``.

    ``quote(seed_id, safe="") + "::" + url``. The quoted seed id holds no ``:``, so the
    first ``::`` is always the join and two (seed id, url) pairs never share an id:

    >>> page_id("a::b", "c"), page_id("a", "b::c")
    ('a%3A%3Ab::c', 'a::b::c')
    """
    return quote(seed_id, safe="") + "::" + url


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CaptureRef:
    """Where a captured response lives: one gzip member (one record) of a WARC file.

    ``digest`` is the record's ``WARC-Payload-Digest`` (``sha1:<base32>``) of the body
    as stored; ``page_id`` names the fetch that captured it.
    """

    warc_file: str
    offset: int
    length: int
    digest: str
    record_id: str
    page_id: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """What one fetch saw: the final response of a (possibly redirected) request.

    ``redirects`` lists every URL requested before ``final_url``, in order, starting
    with ``url``; it is empty when there was no redirect. ``capture`` names the WARC
    record of this response when the fetch path captured or replayed it.
    """

    url: str
    final_url: str
    status: int
    headers: Headers
    body: bytes
    fetched_at: datetime
    elapsed_ms: float
    redirects: tuple[str, ...] = ()
    address: str | None = None
    capture: CaptureRef | None = None

    @property
    def content_type(self) -> str:
        """The media type, lower-cased, without parameters ("" when absent)."""
        return split_content_type(self.headers.get("content-type"))[0]

    @property
    def charset(self) -> str | None:
        """The charset parameter of Content-Type, lower-cased, if any."""
        return split_content_type(self.headers.get("content-type"))[1]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Exchange:
    """One HTTP request and its response as the fetcher saw them (one hop of one fetch).

    ``fetch_url`` is the URL the fetch was asked for (it names the page); ``url`` is the
    URL of this hop, ``hop`` its position (0 = the first request). ``headers`` are the
    response headers as received, while ``body`` is what the fetcher kept: de-chunked
    and decompressed, and empty for a redirect, whose body is never read
    (``body_read`` is False then).
    """

    fetch_url: str
    hop: int
    url: str
    method: str
    request_headers: Headers
    status: int
    reason: str
    http_version: str
    headers: Headers
    body: bytes
    body_read: bool
    address: str | None
    started_at: datetime


@dataclasses.dataclass(frozen=True, slots=True)
class Section:
    """One section of a document (cut by :func:`sitelore.core.sections.split_sections`).

    ``start``/``end`` are UTF-8 byte offsets of its Markdown (heading line included);
    ``anchor`` is the fragment id of its heading (or of the nearest heading above it
    that has one), None when there is none; ``text`` is the plain text of its body;
    ``link_ratio`` the share of that text on link lines (entries of a table of contents or
    an index: :func:`sitelore.core.sections.link_line`; hub pages are mostly those).
    """

    ordinal: int
    heading_path: tuple[str, ...]
    anchor: str | None
    start: int
    end: int
    text: str
    link_ratio: float

    def __reduce__(self) -> tuple[type[Section], tuple[Any, ...]]:
        """Pickle by position: conversion workers send every section of every page.

        The default for a slotted dataclass looks its fields up on each load, which
        cost the event loop more than the rest of unpickling a page.
        """
        return (Section, tuple(getattr(self, name) for name in _SECTION_FIELDS))


#: Section's fields in order (what ``Section.__reduce__`` pickles).
_SECTION_FIELDS = tuple(field.name for field in dataclasses.fields(Section))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """A converted page: the main content as Markdown plus what the crawl needs.

    ``links`` are the absolute http(s) links of the whole page (navigation included);
    ``markdown`` holds the main content only.
    """

    url: str
    title: str
    markdown: str
    links: tuple[str, ...] = ()
    description: str | None = None
    lang: str | None = None
    canonical_url: str | None = None
    content_type: str = "text/html"
    noindex: bool = False
    nofollow: bool = False
    #: The sections of ``markdown`` when they were cut already (the conversion workers
    #: cut them, off the event loop); None: the store cuts them.
    sections: tuple[Section, ...] | None = None


def document_id(url: str) -> str:
    """The stable id of the document at ``url``: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def content_hash(title: str, markdown: str) -> str:
    """SHA-256 (hex) of a document's title and Markdown, NUL-separated so the split counts.

    What the stores keep as ``content_hash``; equal hashes mean equal stored text.
    """
    digest = hashlib.sha256(title.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(markdown.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FetchMeta:
    """Fetch metadata stored beside a document."""

    status: int
    content_type: str
    fetched_at: datetime
    etag: str | None = None
    last_modified: str | None = None

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> Self:
        """Take the metadata of a snapshot."""
        return cls(
            status=snapshot.status,
            content_type=snapshot.content_type,
            fetched_at=snapshot.fetched_at,
            etag=snapshot.headers.get("etag"),
            last_modified=snapshot.headers.get("last-modified"),
        )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class StoredDocument:
    """A document as the store holds it: one row per URL, with a stable id."""

    id: str
    url: str
    title: str
    markdown: str
    content_hash: str
    content_type: str
    status: int
    fetched_at: datetime
    created_at: datetime
    updated_at: datetime
    etag: str | None = None
    last_modified: str | None = None
    description: str | None = None
    lang: str | None = None
    canonical_url: str | None = None
    #: Set when a re-crawl found the page gone (404/410); the document is kept.
    removed_at: datetime | None = None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class UpsertResult:
    """What an upsert did: the document id, and whether it was new or changed."""

    id: str
    created: bool
    changed: bool


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """One search result: a page and its best section; lower ``score`` is better (BM25).

    ``heading_path`` are the headings above the section, ``anchor_url`` is the page URL
    with the section's heading id as fragment (the URL when it has none), ``section``
    its number in the page and ``start``/``end`` its UTF-8 byte range in the Markdown.
    """

    id: str
    url: str
    title: str
    snippet: str
    score: float
    heading_path: tuple[str, ...] = ()
    anchor_url: str | None = None
    section: int | None = None
    start: int = 0
    end: int = 0

    def where(self) -> str:
        """``Title > Heading > Subheading``: the page and the section's headings, the
        page's own h1 (which names it like its title) not said twice."""
        path = self.heading_path
        if path and " ".join(path[0].split()) == " ".join(self.title.split()):
            path = path[1:]
        return " > ".join((self.title, *path))


class ChangeKind(enum.StrEnum):
    """What a crawl found for one page compared with the store (incremental re-crawls)."""

    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    REMOVED = "removed"
    FAILED = "failed"


class SkipReason(enum.StrEnum):
    """Why a discovered URL was not fetched."""

    ROBOTS = "robots"
    FILTERED = "filtered"
    DUPLICATE = "duplicate"
    DEPTH = "depth"
    CAP = "cap"
    BLOCKED = "blocked"
    INVALID = "invalid"
    NOINDEX = "noindex"
    #: The origin asked for a wait (Retry-After, Crawl-delay) the crawl cannot make.
    THROTTLED = "throttled"


#: The skip reasons ``crawl --json``, REST and MCP always report, with 0 when none happened.
PINNED_SKIP_REASONS: tuple[SkipReason, ...] = (
    SkipReason.ROBOTS,
    SkipReason.FILTERED,
    SkipReason.DUPLICATE,
    SkipReason.DEPTH,
    SkipReason.THROTTLED,
)


@dataclasses.dataclass(frozen=True, slots=True)
class PageError:
    """A page's typed failure, as a value."""

    kind: ErrorKind
    message: str
    status: int | None = None

    @classmethod
    def from_exception(cls, exc: SiteloreError) -> Self:
        """Record an error raised for one page."""
        kind = exc.kind or ErrorKind.NETWORK
        status = getattr(exc, "status", None)
        return cls(kind, str(exc), status if isinstance(status, int) else None)

    def to_json(self) -> dict[str, Any]:
        """The pinned ``{"kind", "message"}`` shape (plus status when known)."""
        out: dict[str, Any] = {"kind": str(self.kind), "message": self.message}
        if self.status is not None:
            out["status"] = self.status
        return out


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PageOutcome:
    """How one page of a crawl ended: a stored document or a typed error."""

    url: str
    depth: int
    final_url: str | None = None
    status: int | None = None
    title: str | None = None
    document_id: str | None = None
    error: PageError | None = None
    bytes: int = 0
    elapsed_ms: float = 0.0
    indexed: bool = False
    #: New / changed / unchanged / removed / failed against the store; None when the
    #: page says nothing about a document (noindex, a redirect onto a fetched page).
    change: ChangeKind | None = None

    @property
    def redirect_duplicate(self) -> bool:
        """A redirect that landed on a page this crawl had already fetched.

        Nothing was stored for it: no error, not indexed, no title, and a final URL
        other than the one asked for (a noindex page keeps its title).
        """
        return (
            self.error is None
            and not self.indexed
            and self.title is None
            and self.final_url is not None
            and self.final_url != self.url
        )

    @property
    def duplicate_of(self) -> str | None:
        """The id of the document this page is a twin of (``core.twins``), or None.

        The page was fetched and is that document, kept under its twin URL: it was not
        stored a second time (``skipped.duplicate``).
        """
        if self.indexed or self.error is not None:
            return None
        return self.document_id

    def to_json(self) -> dict[str, Any]:
        """The pinned per-page shape of ``crawl --json``."""
        return {
            "url": self.url,
            "finalUrl": self.final_url,
            "depth": self.depth,
            "status": self.status,
            "title": self.title,
            "documentId": self.document_id,
            "error": self.error.to_json() if self.error else None,
        }


#: Skipped URLs a summary keeps per reason, to say why a URL was not fetched (the counts
#: stay exact; ``duplicate`` keeps none: it is every later sighting of a known URL).
SKIPPED_URLS_PER_REASON = 20


@dataclasses.dataclass(slots=True, kw_only=True)
class CrawlSummary:
    """What a crawl did: fetched, indexed, skipped by reason, failed, truncated."""

    seed: str
    options: CrawlOptions
    pages: list[PageOutcome] = dataclasses.field(default_factory=list)
    skipped: dict[str, int] = dataclasses.field(default_factory=dict)
    truncated: bool = False
    truncated_reason: str | None = None
    unfetched: int = 0
    elapsed_ms: float = 0.0
    warnings: list[str] = dataclasses.field(default_factory=list)
    clamped: tuple[ClampNote, ...] = ()
    #: URLs the site's sitemaps listed (offered to the frontier; scope still applies).
    sitemap_urls: int = 0
    #: Some skipped URLs by reason (the first ``SKIPPED_URLS_PER_REASON`` of each).
    skipped_urls: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    #: False keeps the counts only, not every outcome: memory stays flat on very long
    #: crawls (``pages`` then stays empty; the outcomes were streamed to the caller).
    keep_pages: bool = True
    _crawled: int = dataclasses.field(default=0, init=False, repr=False)
    _indexed: int = dataclasses.field(default=0, init=False, repr=False)
    _errors: int = dataclasses.field(default=0, init=False, repr=False)

    def record(self, outcome: PageOutcome) -> None:
        """Count one finished page (and keep it, unless ``keep_pages`` is False)."""
        self._crawled += 1
        self._indexed += outcome.indexed
        self._errors += outcome.error is not None
        if self.keep_pages:
            self.pages.append(outcome)

    @property
    def pages_crawled(self) -> int:
        """Pages for which a request was made."""
        return self._crawled

    @property
    def pages_indexed(self) -> int:
        """Pages stored as documents."""
        return self._indexed

    @property
    def errors(self) -> int:
        """Pages that ended in a typed error."""
        return self._errors

    def changes(self) -> dict[ChangeKind, list[str]]:
        """Page URLs by change kind (every kind present, in crawl order)."""
        out: dict[ChangeKind, list[str]] = {kind: [] for kind in ChangeKind}
        for page in self.pages:
            if page.change is not None:
                out[page.change].append(page.url)
        return out

    def note_skipped(self, reason: str, url: str) -> None:
        """Keep ``url`` as an example of ``reason`` while fewer than the cap are kept."""
        kept = self.skipped_urls.setdefault(reason, [])
        if len(kept) < SKIPPED_URLS_PER_REASON:
            kept.append(url)

    def skipped_by_reason(self) -> dict[str, int]:
        """URLs not fetched by reason: the pinned reasons always (0 when none), then others."""
        counts = {str(reason): 0 for reason in PINNED_SKIP_REASONS}
        counts.update(self.skipped)
        return counts

    def to_json(self) -> dict[str, Any]:
        """The pinned ``crawl --json`` shape."""
        return {
            "seed": self.seed,
            "pagesCrawled": self.pages_crawled,
            "pagesIndexed": self.pages_indexed,
            "truncated": self.truncated,
            "truncatedReason": self.truncated_reason,
            "unfetched": self.unfetched,
            "errors": self.errors,
            "skipped": self.skipped_by_reason(),
            "pages": [page.to_json() for page in self.pages],
            "elapsedMs": round(self.elapsed_ms),
            "applied": self.options.model_dump(mode="json", by_alias=True),
            "clamped": [note.to_json() for note in self.clamped],
            "warnings": list(self.warnings),
            "sitemapUrls": self.sitemap_urls,
            "skippedUrls": {reason: list(urls) for reason, urls in self.skipped_urls.items()},
        }


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class JobRecord:
    """What a server keeps of one crawl job in the store, so it outlives a restart."""

    id: str
    seed: str
    #: running, done, failed, cancelled or interrupted.
    status: str
    created_at: datetime
    finished_at: datetime | None = None
    pages_crawled: int = 0
    pages_indexed: int = 0
    errors: int = 0
    error_code: str | None = None
    error_message: str | None = None
    #: The options asked and applied, and the result, as the API shows them (JSON).
    detail: Mapping[str, Any] = dataclasses.field(default_factory=dict)
