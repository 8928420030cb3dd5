"""How the sources commands show things to a person: change reports and the sources table.

Only rendering lives here (rich); the commands, their flags and exit codes are in
``cli_sources``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from rich.console import Console
from rich.markup import escape

from sitelore.app.refresh import SourceStatus
from sitelore.core.changes import ChangeReport
from sitelore.core.models import ChangeKind, CrawlSummary

__all__ = ["freshness", "print_report", "print_statuses", "when"]

#: The kinds a report lists URL by URL (unchanged pages are only counted).
_LISTED = (ChangeKind.NEW, ChangeKind.CHANGED, ChangeKind.REMOVED, ChangeKind.FAILED)
_STYLE = {
    ChangeKind.NEW: "green",
    ChangeKind.CHANGED: "yellow",
    ChangeKind.REMOVED: "magenta",
    ChangeKind.FAILED: "red",
}


def when(moment: datetime) -> str:
    """A time for people: UTC to the minute."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _span(seconds: float) -> str:
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def freshness(status: SourceStatus, now: datetime) -> str:
    """``never crawled``, ``due now`` or ``fresh (due in 5h)``."""
    next_due = status.next_due_at
    if next_due is None:
        return "never crawled" if status.latest is None else "due now"
    if status.due:
        return "due now"
    return f"fresh (due in {_span((next_due - now).total_seconds())})"


def _counts(report: ChangeReport) -> str:
    counts = report.counts()
    return "  ".join(f"{kind} {counts[str(kind)]}" for kind in ChangeKind)


def _nonzero(report: ChangeReport) -> str:
    """Only the kinds that happened: ``1 changed, 33 unchanged`` (``nothing`` if none)."""
    counts = report.counts()
    return ", ".join(f"{counts[str(k)]} {k}" for k in ChangeKind if counts[str(k)]) or "nothing"


def _reasons(summary: CrawlSummary | None) -> dict[str, str]:
    if summary is None:
        return {}
    return {
        page.url: f"{page.error.kind}: {page.error.message}"
        for page in summary.pages
        if page.error is not None
    }


def print_report(console: Console, report: ChangeReport, summary: CrawlSummary | None) -> None:
    """One change report: counts, then each new, changed, removed and failed URL."""
    console.print(
        f"[bold]{escape(report.source)}[/bold]: crawled {report.pages_crawled} at "
        f"{when(report.started_at)}   {_counts(report)}"
    )
    reasons = _reasons(summary)
    for kind in _LISTED:
        for url in report.urls(kind):
            reason = reasons.get(url)
            detail = (
                f"  [dim]({escape(reason)})[/dim]" if reason and kind is ChangeKind.FAILED else ""
            )
            console.print(f"  [{_STYLE[kind]}]{kind:<8}[/{_STYLE[kind]}] {escape(url)}{detail}")
    if report.error is not None:
        console.print(f"  [bold red]refresh failed:[/bold red] {escape(report.error)}")


def print_statuses(console: Console, statuses: Sequence[SourceStatus], now: datetime) -> None:
    """One block per source: name, status, documents, freshness; its URL and last crawl.

    A source whose last refresh failed says so in bold red, with the error and what is
    still being served.
    """
    for status in statuses:
        latest, last_ok = status.latest, status.last_ok
        state = status.state
        shown = f"[bold red]{state}[/bold red]" if state == "failed" else state
        console.print(
            f"[bold]{escape(status.name)}[/bold]  {shown}  {status.documents} documents  "
            f"{freshness(status, now)}  [dim](refresh {status.spec.refresh})[/dim]"
        )
        console.print(f"  {escape(status.spec.url)}")
        if latest is not None:
            console.print(f"  last crawl {when(latest.started_at)}: {_nonzero(latest)}")
        if latest is not None and not latest.ok:
            serving = (
                f"still serving {status.documents} documents from {when(last_ok.started_at)}"
                if last_ok is not None
                else "no earlier crawl to serve"
            )
            console.print(
                f"  [bold red]refresh failed:[/bold red] {escape(latest.error or '')} ({serving})"
            )
