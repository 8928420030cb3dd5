"""The named-sources commands: ``add``, ``update``, ``sources`` and ``changes``.

``add`` appends a ``[sources.NAME]`` table to the settings file; ``update`` re-crawls
the sources that are due (all with ``--force``) incrementally and prints each change
report; ``sources`` lists them with their last crawl, documents and freshness;
``changes`` prints the stored reports of one source. A failed refresh is never quiet:
a warning on stderr, the ``error`` of its ``--json`` entry, ``failed`` in ``sources``;
``update`` still exits 0 (it ran; like a failed page, a failed source is reported).
The work is done by :mod:`sitelore.app.refresh`; this module parses flags and prints.
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sitelore.cli.common import (
    AllowPrivateOpt,
    ConfigOpt,
    DbOpt,
    DebugOpt,
    JsonOpt,
    NoRobotsOpt,
    ResolveOpt,
    UserAgentOpt,
    WorkersOpt,
    debugging,
    err_console,
    flag_checked,
    load_cli_settings,
    out_console,
    print_json,
    run_async,
    settings_path,
    settings_text,
    setup_logging,
    with_workers,
)
from sitelore.cli.scale import FrontierOpt
from sitelore.core.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from sitelore.app.refresh import SourceStatus, UpdateOutcome
    from sitelore.core.changes import ChangeReport
    from sitelore.core.config import Settings, SourceSpec

# The modules each command needs (settings model, refresh, the store) are imported
# inside it, so that registering these commands costs other commands nothing.

__all__ = ["register"]

_DEFAULT_FILE = Path("sitelore.toml")
_FLAG_OF_FIELD = {
    "max_pages": "--max-pages",
    "max_depth": "--max-depth",
    "path_prefix": "--path-prefix",
    "exclude": "--exclude",
    "delay": "--delay",
    "refresh": "--refresh",
    "url": "URL",
}


def register(app: typer.Typer) -> None:
    """Add ``add``, ``update``, ``sources`` and ``changes`` to the ``sitelore`` command."""
    app.command(name="add")(add)
    app.command(name="update")(update)
    app.command(name="sources")(sources)
    app.command(name="changes")(changes)


# --- add -------------------------------------------------------------------------------


def _write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (a crash leaves the old file or the new)."""
    directory = path.parent if str(path.parent) else Path()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
            if path.exists():
                os.chmod(temp, path.stat().st_mode & 0o7777)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write settings file: {exc.strerror or exc}") from exc


def add(
    name: Annotated[str, typer.Argument(help="Source name (letters, digits, - _ .).")],
    url: Annotated[str, typer.Argument(help="The start URL.")],
    max_pages: Annotated[int | None, typer.Option("--max-pages", help="Pages per crawl.")] = None,
    max_depth: Annotated[
        int | None, typer.Option("--max-depth", help="Link hops from the start.")
    ] = None,
    same_domain: Annotated[
        bool | None,
        typer.Option("--same-domain/--any-domain", help="Follow only the start host."),
    ] = None,
    path_prefix: Annotated[
        str | None, typer.Option("--path-prefix", help="Follow only paths starting with it.")
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude", help="Skip URLs matching this glob (on the path if it starts with /)."
        ),
    ] = None,
    no_robots: NoRobotsOpt = False,
    delay: Annotated[
        float | None, typer.Option("--delay", help="Seconds between requests to one origin.")
    ] = None,
    sitemap: Annotated[
        bool, typer.Option("--sitemap", help="Also seed from the site's sitemaps.")
    ] = False,
    refresh: Annotated[
        str | None, typer.Option("--refresh", help="Re-crawl interval: 30m, 6h, 1d, 2w.")
    ] = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Add a named source to the settings file (crawl it with `sitelore update NAME`)."""
    from sitelore.core.config import SOURCE_NAME_PATTERN, SourceSpec
    from sitelore.core.config_toml import append_source
    from sitelore.core.urls import normalize_url

    if not re.match(SOURCE_NAME_PATTERN, name):
        raise UsageError(f"NAME {name!r}: use 1-64 letters, digits, '-', '_' or '.'")
    values = {
        "url": normalize_url(url),
        "max_pages": max_pages,
        "max_depth": max_depth,
        "same_domain": same_domain,
        "path_prefix": path_prefix,
        "exclude": tuple(exclude) if exclude else None,
        "respect_robots": False if no_robots else None,
        "delay": delay,
        "sitemap": True if sitemap else None,
        "refresh": refresh,
    }
    given = {key: value for key, value in values.items() if value is not None}
    spec = flag_checked(SourceSpec, given, _FLAG_OF_FIELD)
    path = settings_path(config) or _DEFAULT_FILE
    text = settings_text(path if path.exists() else None) or ""
    updated, _ = append_source(text, name, spec, source=str(path))
    _write_atomically(path, updated)
    if as_json:
        print_json(
            {
                "name": name,
                "config": str(path),
                "source": spec.model_dump(mode="json", exclude_none=True),
            }
        )
    else:
        out_console.print(f"added source {name} ({spec.url}) to {path}")
        out_console.print(f"crawl it now with: sitelore update {name}")


# --- update ----------------------------------------------------------------------------


async def _update(
    settings: Settings,
    selected: dict[str, SourceSpec],
    *,
    force: bool,
    show_progress: bool,
    frontier: str | None = None,
) -> tuple[list[tuple[UpdateOutcome, SourceStatus]], list[SourceStatus]]:
    from sitelore.app.bootstrap import Runtime
    from sitelore.app.refresh import source_status, update_source_scaled
    from sitelore.app.refresh import update_source as refresh_source
    from sitelore.cli.output import CrawlProgress

    done: list[tuple[UpdateOutcome, SourceStatus]] = []
    not_due: list[SourceStatus] = []
    async with Runtime(settings) as runtime:
        for name, spec in selected.items():
            before = await source_status(runtime.store, name, spec, runtime.clock.now())
            if not (force or before.due):
                not_due.append(before)
                continue
            if frontier is not None:  # scale-out: queued, worked on here and by any worker
                outcome = await update_source_scaled(runtime, frontier, name, spec)
            else:
                total = spec.crawl_options().clamp(settings.limits)[0].max_pages
                with CrawlProgress(err_console, total=total, enabled=show_progress) as progress:
                    outcome = await refresh_source(runtime, name, spec, on_page=progress.advance)
            done.append((outcome, before))
    return done, not_due


def _warn_failed(report: ChangeReport, before: SourceStatus) -> None:
    from sitelore.cli.sources_view import when

    kept = (
        f"keeping {before.documents} documents from the crawl of {when(before.last_ok.started_at)}"
        if before.last_ok is not None
        else "no earlier crawl to fall back on"
    )
    err_console.print(
        f"[bold red]warning:[/bold red] source {report.source}: refresh failed: "
        f"{report.error}; {kept}",
        markup=True,
    )


def update(
    names: Annotated[
        list[str] | None, typer.Argument(metavar="[NAME]...", help="Sources (default: all).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Crawl even if not due.")] = False,
    workers: WorkersOpt = None,
    db: DbOpt = None,
    allow_private: AllowPrivateOpt = None,
    resolve: ResolveOpt = None,
    user_agent: UserAgentOpt = None,
    config: ConfigOpt = None,
    frontier: FrontierOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Re-crawl the sources whose refresh interval has passed, and report what changed.

    With --frontier the crawls go through the Redis frontier: this process works on
    them (any `sitelore worker` on that frontier helps) and reports when they end.
    """
    from sitelore.app.refresh import select_sources
    from sitelore.cli.scale import require_frontier
    from sitelore.cli.sources_view import print_report, when

    settings = load_cli_settings(
        config=config, db=db, user_agent=user_agent, allow_private=allow_private, resolve=resolve
    )
    settings = with_workers(settings, workers)
    where = str(settings_path(config) or _DEFAULT_FILE)
    selected = select_sources(settings.sources, names or (), where=where)
    if not selected:
        err_console.print(f"no sources in {where}; add one with: sitelore add NAME URL")
    show_progress = err_console.is_terminal and not debugging(debug) and not as_json
    setup_logging(debug, progress=True)
    done, not_due = run_async(
        _update(
            settings,
            selected,
            force=force,
            show_progress=show_progress,
            frontier=require_frontier(frontier) if frontier is not None else None,
        )
    )
    if as_json:
        print_json(
            {
                "sources": [outcome.report.to_json() for outcome, _ in done],
                "notDue": [status.name for status in not_due],
            }
        )
    else:
        for outcome, _ in done:
            print_report(out_console, outcome.report, outcome.summary)
        for status in not_due:
            next_due = status.next_due_at
            out_console.print(
                f"{status.name}: fresh, next due {when(next_due) if next_due else 'now'}"
                " (--force crawls it now)"
            )
    for outcome, before in done:
        if outcome.summary is not None:
            for warning in outcome.summary.warnings:
                err_console.print(f"warning: {outcome.report.source}: {warning}", markup=False)
        if not outcome.report.ok:
            _warn_failed(outcome.report, before)


# --- sources and changes ---------------------------------------------------------------


def sources(
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """List the named sources: last crawl, status, documents and freshness."""
    from sitelore.app.bootstrap import Runtime
    from sitelore.app.refresh import source_status
    from sitelore.cli.sources_view import print_statuses

    settings = load_cli_settings(config=config, db=db)

    async def go() -> tuple[datetime, list[SourceStatus]]:
        async with Runtime(settings, create_store=False) as runtime:
            now = runtime.clock.now()
            return now, [
                await source_status(runtime.store, name, spec, now)
                for name, spec in settings.sources.items()
            ]

    now, statuses = run_async(go())
    if as_json:
        print_json({"sources": [status.to_json() for status in statuses]})
        return
    if not statuses:
        where = settings_path(config) or _DEFAULT_FILE
        out_console.print(f"no sources in {where}; add one with: sitelore add NAME URL")
        return
    print_statuses(out_console, statuses, now)


def changes(
    name: Annotated[str, typer.Argument(help="The source.")],
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="Reports.")] = 5,
    db: DbOpt = None,
    config: ConfigOpt = None,
    as_json: JsonOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Show the stored change reports of one source, newest first."""
    from sitelore.app.bootstrap import Runtime
    from sitelore.app.refresh import select_sources
    from sitelore.cli.sources_view import print_report

    settings = load_cli_settings(config=config, db=db)
    where = str(settings_path(config) or _DEFAULT_FILE)
    select_sources(settings.sources, [name], where=where)

    async def go() -> list[ChangeReport]:
        async with Runtime(settings, create_store=False) as runtime:
            return await runtime.store.change_reports(name, limit=limit)

    reports = run_async(go())
    if as_json:
        print_json({"name": name, "reports": [report.to_json() for report in reports]})
        return
    if not reports:
        out_console.print(f"{name}: never crawled; run: sitelore update {name}")
    for report in reports:
        print_report(out_console, report, None)
