"""The Protocols the engine needs: clock, resolver, fetcher, converter, store.

The spider and the robots policy depend on these shapes only; the real adapters
(``fetcher``, ``convert_pool``, ``store``) and the test fakes both implement them.
Nothing here does I/O.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol, runtime_checkable

from sitelore.core.changes import ChangeReport, KnownPage
from sitelore.core.models import (
    CaptureRef,
    Document,
    Exchange,
    FetchMeta,
    JobRecord,
    SearchHit,
    Snapshot,
    SnapshotMode,
    StoredDocument,
    UpsertResult,
)

__all__ = [
    "CaptureLinks",
    "CaptureReader",
    "Clock",
    "Converter",
    "ExchangeObserver",
    "Fetcher",
    "HopCheck",
    "JobRecords",
    "LiveFetcher",
    "Renderer",
    "Resolver",
    "SectionVectors",
    "Snapshots",
    "Store",
    "SubFetch",
]

#: Called by the fetcher before it requests each redirect target; raising stops the fetch.
HopCheck = Callable[[str], Awaitable[None]]

#: Fetches one sub-request of a rendered page (URL in, final response out).
SubFetch = Callable[[str], Awaitable[Snapshot]]


class Clock(Protocol):
    """**Protocol:** time as the engine sees it; tests pass a fake that never sleeps."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock (for spacing and deadlines)."""
        ...

    def now(self) -> datetime:
        """The current wall-clock time, timezone-aware UTC (for records)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (may be cancelled)."""
        ...


class Resolver(Protocol):
    """**Protocol:** turn a host name into IP address strings (fail by raising OSError)."""

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        """Return every address ``host`` resolves to."""
        ...


@runtime_checkable
class Fetcher(Protocol):
    """**Protocol:** the one egress path.

    ``fetch`` returns the final response whatever its status (a 404 is a snapshot,
    not an exception). It raises a ``FetchError`` subclass (timeout, too large, too many
    redirects, network) or ``BlockedURLError`` / ``InvalidURLError`` only when no final
    response could be had. ``check_hop`` is awaited before each redirect target is
    requested (a crawl re-checks robots.txt and scope there). With ``truncate`` a body
    over ``max_bytes`` is cut there and returned instead of raising (robots.txt is
    parsed up to its cap). ``max_redirects`` overrides the operator's hop limit for
    this fetch (robots.txt follows at least five, RFC 9309 2.3.1.2).
    """

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        check_hop: HopCheck | None = None,
        timeout: float | None = None,
        truncate: bool = False,
        max_redirects: int | None = None,
    ) -> Snapshot:
        """Fetch ``url`` through the guard, following redirects by hand."""
        ...


class Converter(Protocol):
    """**Protocol:** turn one fetched body into a Document (the crawl awaits it).

    Implementations: ``convert.DocumentConverter`` (in this process) and
    ``convert_pool.ProcessConverter`` (worker processes, a time cap per page). Raises
    only a page's typed errors: ``UnsupportedContentTypeError``, ``ConversionError``
    (``ConversionFailedError`` when the converter raised, crashed or ran over its cap).
    """

    async def convert(
        self, body: bytes, content_type: str, url: str, charset: str | None
    ) -> Document:
        """The document of ``body``, fetched from ``url`` (its final URL)."""
        ...


class Renderer(Protocol):
    """**Protocol:** turn a fetched HTML snapshot into the HTML its scripts produce.

    Implementations must send every request the page makes through the crawl's
    fetcher (the one egress path) and return the snapshot with the rendered body.
    """

    async def render(self, snapshot: Snapshot, *, fetch: SubFetch | None = None) -> Snapshot:
        """Return ``snapshot`` with its body replaced by the rendered DOM.

        ``fetch`` serves each sub-request the page makes (the crawl passes one that
        checks robots.txt and keeps the origin's spacing); raising aborts that request.
        """
        ...


#: Called by the fetcher after each HTTP exchange it completes (every hop, every attempt).
ExchangeObserver = Callable[[Exchange], Awaitable[None]]

#: Makes the real (network) fetcher for one crawl, reporting each exchange to the
#: observer when one is given. Entering the result opens its session.
LiveFetcher = Callable[[ExchangeObserver | None], AbstractAsyncContextManager[Fetcher]]


@runtime_checkable
class Snapshots(Protocol):
    """**Protocol:** the snapshot mode of the fetch path: live, capture or replay.

    ``fetch_path`` opens the fetcher one crawl uses. Live and capture call ``live``
    (capture with an observer that archives every exchange); replay never calls it,
    so no session is created and no socket is opened. Page ids are
    ``models.page_id(seed_id, url)``. Entering raises ``ArchiveError`` when the
    archive cannot be opened (replay without one, capture into an unwritable place).
    """

    @property
    def mode(self) -> SnapshotMode:
        """Which of the three modes this is."""
        ...

    def fetch_path(self, seed_id: str, live: LiveFetcher) -> AbstractAsyncContextManager[Fetcher]:
        """The fetcher for one crawl whose captures are named by ``seed_id``."""
        ...


@runtime_checkable
class CaptureLinks(Protocol):
    """**Protocol (optional store capability):** link documents to their capture records.

    A store without it still crawls, captures and replays; its documents are simply
    not linked, and ``reconvert`` finds nothing to rebuild.
    """

    async def link_capture(self, id_or_url: str, ref: CaptureRef | None) -> bool:
        """Link a document to ``ref`` (None removes the link); False if no such document."""
        ...

    async def capture_of(self, id_or_url: str) -> CaptureRef | None:
        """The capture record a document was built from, if any."""
        ...

    async def captures(self) -> builtins.list[tuple[str, CaptureRef]]:
        """``(document id, ref)`` for every linked document, oldest document first."""
        ...


@runtime_checkable
class SectionVectors(Protocol):
    """**Protocol:** a store that keeps section vectors and ranks by them (semantic extra).

    Vectors are unit-length and tagged with the model that made them; a re-cut section
    loses its vector. ``hybrid_search`` fuses the lexical and the vector ranking.
    """

    async def pending_vectors(self, model: str, limit: int) -> builtins.list[tuple[int, str]]:
        """Up to ``limit`` (section key, text to embed) of sections lacking a ``model`` vector."""
        ...

    async def put_vectors(self, model: str, vectors: Sequence[tuple[int, Sequence[float]]]) -> None:
        """Store vectors of ``model`` by section key."""
        ...

    async def vector_counts(self, model: str) -> tuple[int, int]:
        """(sections with a ``model`` vector, all sections)."""
        ...

    async def has_vectors(self, model: str) -> bool:
        """Whether any section has a ``model`` vector (cheap enough to ask per query)."""
        ...

    async def hybrid_search(
        self, query: str, vector: Sequence[float], model: str, *, limit: int = 10
    ) -> builtins.list[SearchHit]:
        """Pages ranked by lexical and vector ranking fused (as ``search`` otherwise)."""
        ...


@runtime_checkable
class JobRecords(Protocol):
    """**Protocol (optional store capability):** crawl job records that outlive a server.

    Both stores have it; a server over a store without it forgets its jobs on restart.
    """

    async def save_job(self, record: JobRecord) -> None:
        """Insert or replace the record with ``record.id``."""
        ...

    async def job_record(self, job_id: str) -> JobRecord | None:
        """The record with this id, or None."""
        ...

    async def delete_job_record(self, job_id: str) -> bool:
        """Forget one record; True when it existed."""
        ...


class CaptureReader(Protocol):
    """**Protocol:** read back the response a capture record holds (no network)."""

    async def read(self, ref: CaptureRef) -> Snapshot:
        """The captured response; ``ArchiveError`` when it is missing or its digest is wrong."""
        ...


class Store(Protocol):
    """**Protocol:** where documents live; one row per URL with a stable id."""

    async def upsert(self, document: Document, meta: FetchMeta) -> UpsertResult:
        """Insert or update the document for ``document.url``; keep its id.

        Also keeps ``document.links`` (offered again on a ``304``) and clears a
        removal flag. An unchanged content hash rewrites neither the text nor the index.
        """
        ...

    async def get(self, id_or_url: str) -> StoredDocument | None:
        """Return one document by id or by URL."""
        ...

    async def list(self, *, limit: int = 100, offset: int = 0) -> builtins.list[StoredDocument]:
        """Return documents, most recently updated first."""
        ...

    async def search(self, query: str, *, limit: int = 10) -> builtins.list[SearchHit]:
        """Rank pages by their best sections; the query is plain text, never FTS syntax.

        Any word may match (stop words dropped); one hit per page and per content, each
        with its best section's heading path and anchor. Documents flagged removed are
        left out.
        """
        ...

    async def reindex(self) -> int:
        """Cut every stored document into sections again; how many documents were cut."""
        ...

    async def delete(self, id_or_url: str) -> bool:
        """Delete one document; True when it existed."""
        ...

    async def count(self) -> int:
        """Number of documents stored."""
        ...

    async def close(self) -> None:
        """Flush and release the store."""
        ...

    # -- incremental re-crawls and named sources -------------------------------------

    async def known_page(self, url: str) -> KnownPage | None:
        """Validators, links and removal flag of the document stored for exactly ``url``."""
        ...

    async def mark_verified(self, url: str, meta: FetchMeta) -> str | None:
        """A ``304`` confirmed the live document at ``url``: update ``fetched_at`` (and the
        validators ``meta`` carries), never its content; return its id (None if not live)."""
        ...

    async def mark_removed(self, url: str, *, status: int, at: datetime) -> str | None:
        """Flag the live document at ``url`` as removed (kept; left out of search);
        return its id, or None when no live document is stored there."""
        ...

    async def record_change_report(self, report: ChangeReport) -> None:
        """Append the change report of one crawl of a named source."""
        ...

    async def change_reports(
        self, source: str, *, limit: int = 10, ok_only: bool = False
    ) -> builtins.list[ChangeReport]:
        """The newest ``limit`` reports of ``source``, newest first (only successful
        ones when ``ok_only``)."""
        ...
