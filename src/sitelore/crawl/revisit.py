"""Incremental re-crawls, page by page: which validators to send, what 304 and 404 mean.

The spider asks a :class:`Revisit` before each request (:meth:`Revisit.prepare`:
the stored document's ``If-None-Match`` / ``If-Modified-Since``, for that exact URL
only) and after it: a ``304`` to a conditional request keeps the document and its id
(:meth:`Revisit.not_modified`); a ``404``/``410`` flags a stored document as removed,
never deletes it (:meth:`Revisit.failure_kind`); a stored page says whether it was
new, changed or unchanged (:func:`change_of`). With ``enabled=False`` (a plain
crawl) it sends no validators and flags nothing, but still names the change kinds.

It never fetches and never decides what to follow; it only reads and flags rows
through the Store port.
"""

from __future__ import annotations

import dataclasses

from sitelore.core.changes import KnownPage
from sitelore.core.errors import HTTPStatusError, SiteloreError
from sitelore.core.models import ChangeKind, FetchMeta, PageOutcome, Snapshot, UpsertResult
from sitelore.core.ports import Clock, Store

__all__ = ["GONE_STATUSES", "Prepared", "Revisit", "change_of"]

#: Answers that mean the page is gone from the site.
GONE_STATUSES = frozenset({404, 410})
_NOT_MODIFIED = 304


def change_of(result: UpsertResult, known: KnownPage | None) -> ChangeKind:
    """The change kind of a page just stored (a page back from removal is "changed")."""
    if result.created:
        return ChangeKind.NEW
    if result.changed or (known is not None and known.removed):
        return ChangeKind.CHANGED
    return ChangeKind.UNCHANGED


@dataclasses.dataclass(frozen=True, slots=True)
class Prepared:
    """What :meth:`Revisit.prepare` found for one URL: the stored page and the headers."""

    known: KnownPage | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


_NOTHING = Prepared()


@dataclasses.dataclass(frozen=True, slots=True)
class Revisit:
    """The incremental side of one crawl over the Store port."""

    store: Store
    clock: Clock
    _: dataclasses.KW_ONLY
    enabled: bool

    async def prepare(self, url: str) -> Prepared:
        """The stored page at exactly ``url`` and the conditional headers to send."""
        if not self.enabled:
            return _NOTHING
        known = await self.store.known_page(url)
        if known is None:
            return _NOTHING
        return Prepared(known, known.conditional_headers())

    async def not_modified(
        self, url: str, depth: int, snapshot: Snapshot, prepared: Prepared
    ) -> PageOutcome | None:
        """The outcome of a ``304`` to our conditional request, or None if it is not one.

        Only a ``304`` for the URL itself counts (the fetcher sends no validators to
        a redirect target); the document keeps its content and id.
        """
        known = prepared.known
        if (
            snapshot.status != _NOT_MODIFIED
            or known is None
            or not prepared.headers
            or snapshot.redirects
        ):
            return None
        document_id = await self.store.mark_verified(url, FetchMeta.from_snapshot(snapshot))
        return PageOutcome(
            url=url,
            depth=depth,
            final_url=snapshot.final_url,
            status=snapshot.status,
            title=known.title,
            document_id=document_id or known.id,
            elapsed_ms=snapshot.elapsed_ms,
            indexed=True,
            change=ChangeKind.UNCHANGED,
        )

    async def failure_kind(
        self, url: str, snapshot: Snapshot | None, exc: SiteloreError, prepared: Prepared
    ) -> tuple[ChangeKind, str | None]:
        """The change kind of a page that failed, and the id of a document it removed.

        A ``404``/``410`` flags the live documents at the URL asked for and at the
        final URL as removed (``removed``); a page already flagged stays so
        (``unchanged``); any other failure keeps the stored document (``failed``).
        """
        if (
            not self.enabled
            or snapshot is None
            or not isinstance(exc, HTTPStatusError)
            or snapshot.status not in GONE_STATUSES
        ):
            return ChangeKind.FAILED, None
        now = self.clock.now()
        removed: str | None = None
        for target in dict.fromkeys((url, snapshot.final_url)):
            removed = (
                await self.store.mark_removed(target, status=snapshot.status, at=now) or removed
            )
        if removed is not None:
            return ChangeKind.REMOVED, removed
        if prepared.known is not None and prepared.known.removed:
            return ChangeKind.UNCHANGED, prepared.known.id
        return ChangeKind.FAILED, None
