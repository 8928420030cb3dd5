"""Crawl the bench site with sitelore (convert + SQLite store on, capture off) in this process.

Driven exactly as an operator would drive it, through ``Runtime`` with caps raised for the
bench; prints one ``RESULT`` line (see ``benchlib``)::

    python bench/crawl_sitelore.py http://127.0.0.1:PORT/ --pages 1000 --concurrency 16
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from pathlib import Path

from benchlib import CrawlClock, emit_result

# A crawl loads these on first use (so the CLI's read commands start fast); the bench
# times the crawl phase with imports excluded, so they load here, before the clock, as
# the peers' scripts load theirs.
import sitelore.adapters.fetcher
import sitelore.adapters.snapshots
import sitelore.adapters.store._sqlite_writer
import sitelore.crawl
import sitelore.crawl.robots_loader
import sitelore.crawl.sitemap_loader  # noqa: F401
from sitelore.app.bootstrap import Runtime
from sitelore.core.config import ConvertSettings, Settings
from sitelore.core.models import CrawlSummary
from sitelore.core.options import CrawlOptions, Limits

__all__ = ["crawl", "main"]


async def crawl(
    seed: str,
    *,
    pages: int,
    depth: int,
    concurrency: int,
    store: str,
    deadline: float,
    workers: int | None = None,
) -> tuple[CrawlSummary, list[str], dict[str, int]]:
    """One crawl of ``seed`` with delay 0, robots obeyed, up to ``pages`` requests.

    ``workers`` conversion processes (default: the machine's cores); they are reaped
    before this returns, so their CPU shows in ``RUSAGE_CHILDREN``.

    Returns the summary (counts only, as a long crawl would keep), the final URLs of
    the pages stored with status 200, and the count of outcomes by status/error kind,
    all gathered from the outcome stream.
    """
    limits = Limits(
        max_pages=pages,
        max_depth=depth,
        max_concurrency=max(concurrency, 1),
        deadline_seconds=deadline,
    )
    settings = Settings(
        store=store,
        allow_private=("127.0.0.1",),
        limits=limits,
        convert=ConvertSettings(workers=workers),
    )
    options = CrawlOptions(
        max_pages=pages,
        max_depth=depth,
        delay=0,
        concurrency=concurrency,
        deadline_seconds=deadline,
    )
    ok: list[str] = []
    statuses: dict[str, int] = {}
    async with Runtime(settings) as runtime, runtime.open_crawl(seed, options) as run:
        run.summary.keep_pages = False
        async for page in run:
            if page.status == 200 and page.indexed:
                ok.append(page.final_url or page.url)
            key = str(page.status) if page.error is None else f"{page.status}:{page.error.kind}"
            statuses[key] = statuses.get(key, 0) + 1
        return run.summary, ok, statuses


def _use_general_link_path() -> None:
    """Make every base "unusable" for the fast join, so links resolve as before issue 8."""
    from sitelore.core import links

    original = links._Base.__init__

    def unusable(self: links._Base, url: str) -> None:
        original(self, url)
        self.usable = False

    setattr(links._Base, "__init__", unusable)  # noqa: B010 - a bench-only switch


def main(argv: list[str] | None = None) -> int:
    """Crawl, then print the result line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("seed")
    parser.add_argument("--pages", type=int, required=True, help="pages the site has")
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--deadline", type=float, default=3600.0)
    parser.add_argument("--workers", type=int, default=None, help="conversion processes")
    parser.add_argument(
        "--cores", type=int, default=None, help="run on this many cores only (workers: as many)"
    )
    parser.add_argument("--db-dir", default=None, help="where the SQLite file goes")
    parser.add_argument("--urls-out", default=None)
    parser.add_argument("--profile", default=None, help="write a pyinstrument report here")
    parser.add_argument(
        "--old-links",
        action="store_true",
        help="resolve every href with urljoin, no fast join, no cache (the 'before' of issue 8)",
    )
    args = parser.parse_args(argv)
    if args.cores:  # inherited by the conversion workers, which default to the cores allowed
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.cores])
    if args.old_links:
        _use_general_link_path()
    # The request budget: pages plus the 404s, redirects and slack; the crawl ends by itself.
    budget = 2 * args.pages + 100
    with tempfile.TemporaryDirectory(dir=args.db_dir) as tmp:
        store = str(Path(tmp) / "bench.db")
        profiler = None
        if args.profile:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.001)
            profiler.start()
        clock = CrawlClock()
        summary, ok, statuses = asyncio.run(
            crawl(
                args.seed,
                pages=budget,
                depth=args.depth,
                concurrency=args.concurrency,
                store=store,
                deadline=args.deadline,
                workers=args.workers,
            )
        )
        emit_result(
            crawler="sitelore",
            ok_urls=ok,
            responses=summary.pages_crawled,
            clock=clock,
            urls_out=args.urls_out,
            extra={
                "workers": args.workers,
                "loop_cpu_s": clock.split()[0],
                "workers_cpu_s": clock.split()[1],
                "indexed": summary.pages_indexed,
                "statuses": statuses,
                "skipped": summary.skipped,
                "truncated": summary.truncated,
                "db_mb": sum(p.stat().st_size for p in Path(tmp).glob("bench.db*")) / 1e6,
            },
        )
        if profiler is not None:
            profiler.stop()
            Path(args.profile).write_text(
                profiler.output_text(unicode=False, color=False, show_all=False),
                encoding="utf-8",
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
