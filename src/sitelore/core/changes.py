"""Records of incremental re-crawls: what the store knows of a URL, what one crawl changed.

:class:`KnownPage` is what a re-crawl needs before it requests a URL (the validators for
a conditional request, the links to follow when the answer is ``304``);
:class:`ChangeReport` is the per-crawl change list of a named source (new, changed,
unchanged, removed, failed, with URLs), as the store keeps it and ``update --json``
prints it. Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Self

from sitelore.core.models import ChangeKind, CrawlSummary

__all__ = ["ChangeReport", "KnownPage"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class KnownPage:
    """The store's fetch metadata for one document URL (no Markdown).

    ``links`` are the links the last full fetch offered to the crawl (empty for a
    ``nofollow`` or non-HTML page; None when never recorded); a ``304`` answer offers
    them again. ``removed_at`` is set once the URL answered ``404``/``410`` in a re-crawl.
    """

    id: str
    url: str
    title: str
    content_type: str
    content_hash: str
    etag: str | None = None
    last_modified: str | None = None
    links: tuple[str, ...] | None = ()
    removed_at: datetime | None = None

    @property
    def removed(self) -> bool:
        """True when the document is flagged as gone from the site."""
        return self.removed_at is not None

    def conditional_headers(self) -> dict[str, str]:
        """``If-None-Match`` / ``If-Modified-Since`` for this exact URL (empty if no validators).

        A removed page is fetched unconditionally: the old validators say nothing about
        whatever the URL serves now. So is a page whose links were never recorded (a
        store from before re-crawls): a ``304`` could not offer them, and the crawl
        would stop there.
        """
        if self.removed or self.links is None:
            return {}
        headers: dict[str, str] = {}
        if self.etag:
            headers["If-None-Match"] = self.etag
        if self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


_KINDS: tuple[ChangeKind, ...] = tuple(ChangeKind)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ChangeReport:
    """What one crawl of a named source changed, with the URLs of each kind.

    ``error`` is set when the refresh failed (the crawl was refused, or the seed page
    could not be fetched); the documents of earlier crawls are then kept as they were.
    """

    source: str
    seed: str
    started_at: datetime
    finished_at: datetime
    pages_crawled: int = 0
    new: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    error: str | None = None
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """True when the refresh did not fail as a whole."""
        return self.error is None

    @property
    def documents(self) -> int:
        """Documents the crawl confirmed as live (new, changed or unchanged)."""
        return len(self.new) + len(self.changed) + len(self.unchanged)

    def urls(self, kind: ChangeKind) -> tuple[str, ...]:
        """The URLs of one change kind."""
        return tuple(getattr(self, str(kind)))

    def counts(self) -> dict[str, int]:
        """Pages per change kind (every kind present)."""
        return {str(kind): len(self.urls(kind)) for kind in _KINDS}

    def to_json(self, *, with_urls: bool = True) -> dict[str, Any]:
        """The pinned ``update --json`` entry, plus times and (optionally) the URL lists."""
        out: dict[str, Any] = {"name": self.source, "pagesCrawled": self.pages_crawled}
        out.update(self.counts())
        out["error"] = self.error
        out["seed"] = self.seed
        out["truncated"] = self.truncated
        out["startedAt"] = self.started_at.isoformat()
        out["finishedAt"] = self.finished_at.isoformat()
        if with_urls:
            out["urls"] = self.url_lists()
        return out

    def url_lists(self) -> dict[str, list[str]]:
        """The URL lists by kind, as plain JSON data."""
        return {str(kind): list(self.urls(kind)) for kind in _KINDS}

    @classmethod
    def from_summary(
        cls,
        source: str,
        summary: CrawlSummary,
        *,
        started_at: datetime,
        finished_at: datetime,
        error: str | None = None,
    ) -> Self:
        """Build the report of a crawl that ran (``error`` when it failed all the same)."""
        by_kind: dict[str, Any] = {str(k): tuple(urls) for k, urls in summary.changes().items()}
        return cls(
            source=source,
            seed=summary.seed,
            started_at=started_at,
            finished_at=finished_at,
            pages_crawled=summary.pages_crawled,
            error=error,
            truncated=summary.truncated,
            **by_kind,
        )

    @classmethod
    def from_url_lists(
        cls,
        lists: Mapping[str, Sequence[str]],
        **fields: Any,
    ) -> Self:
        """Rebuild a report from :meth:`url_lists` data and its other fields (the store)."""
        by_kind: dict[str, Any] = {str(k): tuple(_strings(lists.get(str(k), ()))) for k in _KINDS}
        return cls(**by_kind, **fields)


def _strings(values: Iterable[object]) -> Iterable[str]:
    return (value for value in values if isinstance(value, str))
