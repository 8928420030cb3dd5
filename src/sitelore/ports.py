"""The Protocols the engine needs from the outside world: clock, resolver, fetcher, store.

The spider and the robots policy depend on these shapes only; the real adapters
(``fetcher``, ``store``) and the test fakes both implement them. Nothing here does I/O.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from sitelore.models import Document, FetchMeta, SearchHit, Snapshot, StoredDocument, UpsertResult

__all__ = ["Clock", "Fetcher", "HopCheck", "Renderer", "Resolver", "Store"]

#: Called by the fetcher before it requests each redirect target; raising stops the fetch.
HopCheck = Callable[[str], Awaitable[None]]


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
    requested (a crawl re-checks robots.txt and scope there).
    """

    async def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        headers: Mapping[str, str] | None = None,
        check_hop: HopCheck | None = None,
        timeout: float | None = None,
    ) -> Snapshot:
        """Fetch ``url`` through the guard, following redirects by hand."""
        ...


class Renderer(Protocol):
    """**Protocol:** turn a fetched HTML snapshot into the HTML its scripts produce.

    Implementations must send every request the page makes through the crawl's
    fetcher (the one egress path) and return the snapshot with the rendered body.
    """

    async def render(self, snapshot: Snapshot) -> Snapshot:
        """Return ``snapshot`` with its body replaced by the rendered DOM."""
        ...


class Store(Protocol):
    """**Protocol:** where documents live; one row per URL with a stable id."""

    async def upsert(self, document: Document, meta: FetchMeta) -> UpsertResult:
        """Insert or update the document for ``document.url``; keep its id."""
        ...

    async def get(self, id_or_url: str) -> StoredDocument | None:
        """Return one document by id or by URL."""
        ...

    async def list(self, *, limit: int = 100, offset: int = 0) -> builtins.list[StoredDocument]:
        """Return documents, most recently updated first."""
        ...

    async def search(self, query: str, *, limit: int = 10) -> builtins.list[SearchHit]:
        """Full-text search; the query is plain text, never FTS syntax."""
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
