"""The scale-out commands: `worker`, `crawl-status`, and the `crawl --frontier` enqueue path.

A thin edge over ``sitelore.app.bootstrap_scale``: parse options, run, print. Errors are one
line naming the input and the reason (a Redis or database URL is always shown without
its password); exit codes as everywhere (2 usage, 78 config, 70 internal).
"""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from sitelore.cli.common import (
    AllowPrivateOpt,
    ConfigOpt,
    DbOpt,
    DebugOpt,
    JsonOpt,
    ResolveOpt,
    err_console,
    load_cli_settings,
    out_console,
    print_json,
    run_async,
    setup_logging,
)
from sitelore.core.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from sitelore.adapters.frontier_redis import CrawlStatus
    from sitelore.core.config import Settings
    from sitelore.core.options import CrawlOptions

__all__ = ["FrontierOpt", "enqueue_command", "register", "status_json"]

FrontierOpt = Annotated[
    str | None,
    typer.Option(
        "--frontier",
        envvar="SITELORE_FRONTIER",
        help="Redis URL of the shared frontier, e.g. redis://host:6379/0 "
        "(add ?namespace=NAME to share one Redis; env SITELORE_FRONTIER).",
    ),
]


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def require_frontier(frontier: str | None) -> str:
    if not frontier:
        raise UsageError("--frontier redis://HOST:PORT/DB is required (or set SITELORE_FRONTIER)")
    missing = [name for name in ("redis", "psycopg") if not _importable(name)]
    if missing:
        raise ConfigError(f"scale-out needs {' and '.join(missing)}: pip install 'sitelore[scale]'")
    return frontier


def enqueue_command(
    settings: Settings,
    url: str,
    options: CrawlOptions,
    frontier: str,
    *,
    as_json: bool,
    capture: Path | None = None,
    replay: Path | None = None,
) -> None:
    """``crawl URL --frontier ...``: check the seed, queue the crawl, print its id."""
    frontier = require_frontier(frontier)
    from sitelore.app import bootstrap_scale  # needs the "scale" extra: imported when used

    queued = run_async(
        bootstrap_scale.enqueue(settings, frontier, url, options, capture=capture, replay=replay)
    )
    if as_json:
        print_json(queued.to_json())
    else:
        out_console.print(f"queued crawl {queued.crawl_id} of {queued.seed}", markup=False)
        out_console.print(
            f"  run workers:  sitelore worker --frontier {frontier} --db DB "
            f"[--crawl {queued.crawl_id}]"
        )
        out_console.print(f"  progress:     sitelore crawl-status {queued.crawl_id} --frontier ...")
    for note in (*queued.clamped, *queued.warnings):
        err_console.print(f"warning: {note}", markup=False)


def _when(ms: str | None) -> str | None:
    if not ms:
        return None
    return datetime.fromtimestamp(int(ms) / 1000, UTC).isoformat(timespec="milliseconds")


def status_json(status: CrawlStatus) -> dict[str, Any]:
    """The ``crawl-status --json`` shape."""
    meta, stats = status.meta, status.stats
    skipped = {
        name.removeprefix("skipped_"): count
        for name, count in sorted(stats.items())
        if name.startswith("skipped_") and count
    }
    errors = []
    for line in status.errors:
        url, _, rest = line.partition("\t")
        kind, _, message = rest.partition("\t")
        errors.append({"url": url, "kind": kind, "message": message})
    return {
        "crawlId": status.crawl_id,
        "state": meta.get("state", "unknown"),
        "seed": meta.get("seed"),
        "createdAt": _when(meta.get("created_ms")),
        "deadlineAt": _when(meta.get("deadline_ms")),
        "finishedAt": _when(meta.get("finished_ms")),
        "truncatedReason": meta.get("truncated_reason") or None,
        "pagesFetched": stats.get("fetched", 0),
        "pagesIndexed": stats.get("indexed", 0),
        "errors": stats.get("errors", 0),
        "queued": int(meta.get("unfetched") or meta.get("queued") or 0),
        "pageSlotsLeft": int(meta.get("pages_left") or 0),
        "readyHosts": status.ready_hosts,
        "leases": status.leases,
        "workersAlive": status.workers_alive,
        "skipped": skipped,
        "stats": dict(sorted(stats.items())),
        "recentErrors": errors,
        "dead": status.dead,
        "warnings": list(status.warnings),
    }


def _print_status(data: dict[str, Any]) -> None:
    state = data["state"] + (f" ({data['truncatedReason']})" if data["truncatedReason"] else "")
    out_console.print(f"crawl {data['crawlId']}: {state}")
    out_console.print(f"  seed     {data['seed']}", markup=False)
    out_console.print(
        f"  pages    fetched {data['pagesFetched']}, indexed {data['pagesIndexed']}, "
        f"errors {data['errors']}; queued {data['queued']}, "
        f"page slots left {data['pageSlotsLeft']}"
    )
    if data["skipped"]:
        out_console.print("  skipped  " + ", ".join(f"{k} {v}" for k, v in data["skipped"].items()))
    out_console.print(
        f"  workers  {data['workersAlive']} alive, {data['leases']} leases, "
        f"{data['readyHosts']} origins ready"
    )
    for error in data["recentErrors"][:5]:
        out_console.print(f"  error    {error['url']}: {error['message']}", markup=False)
    for warning in data["warnings"]:
        out_console.print(f"  warning  {warning}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``worker`` and ``crawl-status`` to the CLI."""

    @app.command()
    def worker(
        frontier: FrontierOpt = None,
        db: DbOpt = None,
        crawl: Annotated[
            str | None,
            typer.Option("--crawl", help="Work on this crawl only, and exit when it ends."),
        ] = None,
        exit_when_idle: Annotated[
            bool,
            typer.Option("--exit-when-idle", help="Exit when no crawl is active (else: run on)."),
        ] = False,
        slots: Annotated[
            int, typer.Option("--slots", min=1, max=256, help="Requests in flight at most.")
        ] = 16,
        worker_id: Annotated[
            str | None,
            typer.Option("--worker-id", help="Name in Redis (default host-pid-random)."),
        ] = None,
        allow_private: AllowPrivateOpt = None,
        resolve: ResolveOpt = None,
        config: ConfigOpt = None,
        as_json: JsonOpt = False,
        debug: DebugOpt = False,
    ) -> None:
        """Run a scale-out worker: fetch URLs of queued crawls and store the documents."""
        url = require_frontier(frontier)
        settings = load_cli_settings(
            config=config, db=db, allow_private=allow_private, resolve=resolve
        )
        if worker_id is not None and (not worker_id or any(c in worker_id for c in "{}: \t")):
            raise UsageError(f"--worker-id {worker_id!r}: use letters, digits, '.', '-'")
        setup_logging(debug, progress=False)
        from sitelore.app import bootstrap_scale

        tallies = run_async(
            bootstrap_scale.run_worker(
                settings,
                url,
                crawl_id=crawl,
                exit_when_idle=exit_when_idle,
                slots=slots,
                worker_id=worker_id,
            )
        )
        if as_json:
            print_json(
                {
                    cid: {
                        "leased": t.leased,
                        "acked": t.acked,
                        "stale": t.stale,
                        "finished": t.reason,
                    }
                    for cid, t in tallies.items()
                }
            )
        else:
            for cid, tally in tallies.items():
                out_console.print(
                    f"crawl {cid}: {tally.acked} pages acked by this worker ({tally.stale} stale)"
                )

    @app.command(name="crawl-status")
    def crawl_status(
        crawl_id: Annotated[str, typer.Argument(metavar="ID", help="The crawl id.")],
        frontier: FrontierOpt = None,
        as_json: JsonOpt = False,
        debug: DebugOpt = False,
    ) -> None:
        """Show a scale-out crawl's progress, read from Redis."""
        url = require_frontier(frontier)
        setup_logging(debug, progress=False)
        from sitelore.app import bootstrap_scale

        data = status_json(run_async(bootstrap_scale.crawl_status(url, crawl_id)))
        if as_json:
            print_json(data)
        else:
            _print_status(data)
