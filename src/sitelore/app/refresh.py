"""Keep named sources fresh: which are due, re-crawl them incrementally, record what changed.

A source is due when it has never been crawled successfully, or when its last good
crawl started longer ago than its ``refresh`` interval (``force`` makes every source
due). A due source is crawled with ``incremental=True`` (conditional requests, 304s
keep documents, 404/410 flag them removed) and its :class:`ChangeReport` is stored.

A refresh *fails* when the crawl is refused before any page (robots.txt, the address
guard, a bad URL) or when its start page cannot be fetched; the report then carries
the error, the documents of earlier crawls stay stored and searchable, and
:class:`SourceStatus` shows the failure until a later refresh succeeds. Nothing here
prints: the CLI (``cli_sources``) shows what these functions return.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from sitelore.app.bootstrap import Runtime
from sitelore.core.changes import ChangeReport
from sitelore.core.config import SourceSpec
from sitelore.core.errors import UsageError
from sitelore.core.models import CrawlSummary, PageOutcome
from sitelore.core.ports import Store

__all__ = [
    "OnPage",
    "SourceStatus",
    "UpdateOutcome",
    "is_due",
    "select_sources",
    "source_status",
    "update_source",
    "update_source_scaled",
]

#: Called with each page outcome as a source's crawl streams them (progress bars).
OnPage = Callable[[PageOutcome], None]


def is_due(spec: SourceSpec, last_ok: ChangeReport | None, now: datetime) -> bool:
    """True when ``spec`` has no good crawl yet, or its last one is older than ``refresh``."""
    if last_ok is None:
        return True
    return now >= last_ok.started_at + timedelta(seconds=spec.refresh_seconds)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SourceStatus:
    """What ``sitelore sources`` shows for one source."""

    name: str
    spec: SourceSpec
    latest: ChangeReport | None
    last_ok: ChangeReport | None
    due: bool

    @property
    def state(self) -> str:
        """``never crawled``, ``ok`` or ``failed`` (the latest refresh failed)."""
        if self.latest is None:
            return "never crawled"
        return "ok" if self.latest.ok else "failed"

    @property
    def documents(self) -> int:
        """Live documents the last good crawl confirmed (0 before any)."""
        return self.last_ok.documents if self.last_ok is not None else 0

    @property
    def next_due_at(self) -> datetime | None:
        """When the source next falls due (None: due now, never crawled well)."""
        if self.last_ok is None:
            return None
        return self.last_ok.started_at + timedelta(seconds=self.spec.refresh_seconds)

    def to_json(self) -> dict[str, Any]:
        """The ``sources --json`` entry."""
        latest, last_ok = self.latest, self.last_ok
        next_due = self.next_due_at
        return {
            "name": self.name,
            "url": self.spec.url,
            "refresh": self.spec.refresh,
            "status": self.state,
            "error": latest.error if latest is not None else None,
            "lastCrawlAt": latest.started_at.isoformat() if latest is not None else None,
            "lastSuccessAt": last_ok.started_at.isoformat() if last_ok is not None else None,
            "documents": self.documents,
            "due": self.due,
            "nextDueAt": next_due.isoformat() if next_due is not None else None,
            "lastReport": latest.to_json(with_urls=False) if latest is not None else None,
        }


async def source_status(store: Store, name: str, spec: SourceSpec, now: datetime) -> SourceStatus:
    """The status of one configured source, from its stored change reports."""
    latest = await store.change_reports(name, limit=1)
    last_ok = (
        latest
        if latest and latest[0].ok
        else await store.change_reports(name, limit=1, ok_only=True)
    )
    good = last_ok[0] if last_ok else None
    return SourceStatus(
        name=name,
        spec=spec,
        latest=latest[0] if latest else None,
        last_ok=good,
        due=is_due(spec, good, now),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateOutcome:
    """One source's refresh: the stored report, and the crawl summary when it ran."""

    report: ChangeReport
    summary: CrawlSummary | None = None


def _refresh_error(summary: CrawlSummary) -> str | None:
    """Why a crawl that ran still counts as a failed refresh (its start page failed)."""
    seed_page = next((page for page in summary.pages if page.url == summary.seed), None)
    if seed_page is None:
        reason = summary.truncated_reason or "no request was made"
        return f"{summary.seed}: the start page was not fetched ({reason})"
    if seed_page.error is not None:
        return f"the start page failed: {seed_page.error.message}"
    return None


async def update_source(
    runtime: Runtime, name: str, spec: SourceSpec, *, on_page: OnPage | None = None
) -> UpdateOutcome:
    """Re-crawl one source incrementally and store its change report.

    A refusal before the first page (``UsageError``) is recorded as a failed refresh,
    not raised; settings and store errors still raise.
    """
    clock = runtime.clock
    started = clock.now()
    try:
        async with runtime.open_crawl(spec.url, spec.crawl_options(), incremental=True) as run:
            async for outcome in run:
                if on_page is not None:
                    on_page(outcome)
            summary = run.summary
    except UsageError as exc:
        return await _refused(runtime, name, spec, started, exc)
    report = ChangeReport.from_summary(
        name, summary, started_at=started, finished_at=clock.now(), error=_refresh_error(summary)
    )
    await runtime.store.record_change_report(report)
    return UpdateOutcome(report, summary)


async def _refused(
    runtime: Runtime, name: str, spec: SourceSpec, started: datetime, exc: UsageError
) -> UpdateOutcome:
    """Record a refresh refused before its first page as a failed one."""
    end = runtime.clock.now()
    report = ChangeReport(
        source=name, seed=spec.url, started_at=started, finished_at=end, error=str(exc)
    )
    await runtime.store.record_change_report(report)
    return UpdateOutcome(report)


async def update_source_scaled(
    runtime: Runtime, frontier_url: str, name: str, spec: SourceSpec
) -> UpdateOutcome:
    """Re-crawl one source incrementally through the Redis frontier; store its report.

    Queues the crawl, works on it in this process (other workers may join) until it
    ends, then builds the report from the pages' recorded changes.
    """
    from sitelore.app.bootstrap_scale import run_and_wait  # the scale extra, when used

    started = runtime.clock.now()
    try:
        crawl = await run_and_wait(
            runtime.settings, frontier_url, spec.url, spec.crawl_options(), incremental=True
        )
    except UsageError as exc:
        return await _refused(runtime, name, spec, started, exc)
    lists: dict[str, list[str]] = {}
    seen: set[str] = set()
    for kind, url in crawl.changes:  # a reclaimed page reports again: its first change counts
        if url not in seen:
            seen.add(url)
            lists.setdefault(kind, []).append(url)
    status = crawl.status
    seed = status.meta.get("seed", spec.url)
    seed_error = next(
        (line.split("\t")[2] for line in status.errors if line.split("\t")[0] == seed), None
    )
    report = ChangeReport.from_url_lists(
        lists,
        source=name,
        seed=spec.url,
        started_at=started,
        finished_at=runtime.clock.now(),
        pages_crawled=status.stats.get("fetched", 0),
        error=f"the start page failed: {seed_error}" if seed_error else None,
        truncated=status.meta.get("truncated_reason", "") in ("max_pages", "deadline"),
    )
    await runtime.store.record_change_report(report)
    return UpdateOutcome(report)


def select_sources(
    sources: dict[str, SourceSpec], names: Iterable[str], *, where: str
) -> dict[str, SourceSpec]:
    """The sources named (all when none are); an unknown name is a UsageError."""
    wanted = list(dict.fromkeys(names))
    unknown = [name for name in wanted if name not in sources]
    if unknown:
        raise UsageError(f"{where}: no source named {', '.join(map(repr, unknown))}")
    return {name: sources[name] for name in wanted} if wanted else dict(sources)
