"""How the CLI shows things to a person: the crawl progress bar, summaries and tables.

Only rendering lives here (rich); the commands and their exit codes are in ``cli``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from rich.progress import ProgressColumn

from sitelore.core.models import CrawlSummary, PageOutcome, SearchHit, StoredDocument

__all__ = [
    "CrawlProgress",
    "ProgressBar",
    "print_documents",
    "print_hits",
    "print_summary",
    "print_warnings",
]

#: The status column of a redirect that landed on a page already fetched.
REDIRECT_DUPLICATE = "→"


class ProgressBar:
    """A rich progress bar on a terminal; else nothing. Subclasses name its columns.

    ``fields`` are the task's fields the columns show, with their first values.
    """

    def __init__(self, console: Console, *, total: int, enabled: bool, **fields: Any) -> None:
        # Loaded here: commands that only read the store never draw a progress bar.
        from rich.progress import Progress

        # Disabled, rich draws nothing and its start and stop do nothing.
        self._progress = Progress(
            *self._columns(), console=console, transient=True, disable=not enabled
        )
        self._task = self._progress.add_task("", total=total, **fields)

    def _columns(self) -> tuple[ProgressColumn, ...]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def _update(self, **values: Any) -> None:
        self._progress.update(self._task, **values)


class CrawlProgress(ProgressBar):
    """A progress bar on a terminal (pages done of the cap, errors, current URL); else nothing.

    Off a terminal the spider's INFO log lines say the same, one per page.
    """

    def __init__(self, console: Console, *, total: int, enabled: bool) -> None:
        super().__init__(console, total=total, enabled=enabled, errors=0, url="")
        self._errors = 0

    def _columns(self) -> tuple[ProgressColumn, ...]:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        return (
            TextColumn("[bold]crawl"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[url]}", style="dim"),
        )

    def advance(self, outcome: PageOutcome) -> None:
        """Count one finished page."""
        self._errors += outcome.error is not None
        self._update(advance=1, errors=self._errors, url=_short(outcome.url))


def _short(url: str, width: int = 60) -> str:
    return url if len(url) <= width else url[: width - 1] + "…"


def print_summary(console: Console, summary: CrawlSummary) -> None:
    """Print what a crawl did: pages, errors by page, skips by reason, clamped options.

    Truncation is left to :func:`print_warnings` (said once, on stderr). A redirect
    onto a page the crawl already fetched shows as ``→`` with where it went.
    """
    from rich.table import Table

    table = Table(title=f"crawl of {summary.seed}", show_lines=False)
    table.add_column("depth", justify="right")
    table.add_column("status", justify="right")
    table.add_column("url", overflow="fold")  # whole, on as many lines as it takes
    table.add_column("title / error")
    for page in summary.pages:
        url = page.final_url or page.url
        status = "" if page.status is None else str(page.status)
        if page.error is not None:
            detail = f"[red]{page.error.kind}[/red]: {escape(page.error.message)}"
        elif page.redirect_duplicate:
            url, status = page.url, REDIRECT_DUPLICATE
            detail = (
                f"[dim]redirect to an already-fetched page: {escape(page.final_url or '')}[/dim]"
            )
        elif page.duplicate_of is not None:
            detail = f"[dim]duplicate of document {page.duplicate_of} (its twin URL)[/dim]"
        else:
            detail = escape(page.title or "")
        table.add_row(str(page.depth), status, escape(url), detail)
    console.print(table)
    skipped = ", ".join(f"{reason} {n}" for reason, n in sorted(summary.skipped.items())) or "none"
    console.print(
        f"pages crawled {summary.pages_crawled}, indexed {summary.pages_indexed}, "
        f"errors {summary.errors}, skipped: {skipped}, "
        f"elapsed {summary.elapsed_ms / 1000:.1f}s"
    )
    for note in summary.clamped:
        console.print(f"[yellow]{escape(str(note))}[/yellow]")
    if summary.clamped:
        console.print(
            "[dim]the caps are the operator's: \\[limits] in the settings file "
            "(--config, SITELORE_CONFIG or ./sitelore.toml) raises them[/dim]"
        )


def print_warnings(console: Console, summary: CrawlSummary) -> None:
    """Print a crawl's warnings, one ``warning:`` line each; truncation exactly once."""
    warnings = list(summary.warnings)
    reason = summary.truncated_reason or ""
    if summary.truncated and not any(reason in warning for warning in warnings):
        warnings.append(
            f"stopped at {reason or 'a limit'}; "
            f"{summary.unfetched} discovered URLs were not fetched"
        )
    for warning in warnings:
        console.print(f"warning: {warning}", markup=False)


def print_hits(console: Console, query: str, hits: Sequence[SearchHit]) -> None:
    """Print search results with their snippets."""
    if not hits:
        console.print(f"no results for {query!r}")
        return
    console.print(f"[bold]{len(hits)} results for {query!r}[/bold]")
    for rank, hit in enumerate(hits, 1):
        console.print(f"{rank}. [bold]{escape(hit.where())}[/bold]  [dim]{hit.id}[/dim]")
        console.print(f"   {hit.anchor_url or hit.url}", markup=False)
        console.print(f"   {' '.join(hit.snippet.split())}", markup=False)


def print_documents(console: Console, total: int, docs: Sequence[StoredDocument]) -> None:
    """Print stored documents as a table."""
    from rich.table import Table

    table = Table("id", "title", title=f"{total} documents")
    table.add_column("url", overflow="fold")  # whole, on as many lines as it takes
    table.add_column("updated")
    for doc in docs:
        table.add_row(doc.id, doc.title, doc.url, doc.updated_at.strftime("%Y-%m-%d %H:%M"))
    console.print(table)
