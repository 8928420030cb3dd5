"""Scrape pages into Firecrawl documents: one now (``/v2/scrape``), or many in the background.

:func:`scrape_document` serves a stored copy younger than ``maxAge`` when the stored
Markdown is all that was asked, else scrapes through :func:`sitelore.app.pages.scrape`.
:class:`BatchRunner` scrapes a list of URLs one after another in a task that holds
one of the server's crawl slots, each page of a site spaced from the one before by the
operator's delay or the site's Crawl-delay, whichever is longer, the whole batch within
the operator's deadline as a crawl is (what it leaves is an error ``deadline`` per URL);
the runs live on the runner (never at module level) and are cancelled when it closes.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from datetime import datetime
from typing import Any

from sitelore.app.bootstrap import Runtime
from sitelore.app.jobs import CrawlSlots
from sitelore.app.pages import scrape, stored_copy
from sitelore.core.errors import NotFoundError, SiteloreError
from sitelore.core.urls import origin
from sitelore.server.firecrawl.answers import Page, document, error_answer
from sitelore.server.firecrawl.translate import Wanted, scrape_options

__all__ = ["BatchRun", "BatchRunner", "scrape_document"]

log = logging.getLogger(__name__)


async def scrape_document(
    runtime: Runtime, url: str, want: Wanted, delay: float, *, left: float | None = None
) -> tuple[dict[str, Any], float]:
    """One page as a Firecrawl document (a stored copy when young enough and sufficient),
    and the site's Crawl-delay seen while fetching it (0 for a stored copy).

    Raises:
        SiteloreError: the URL is refused, robots.txt refuses it, or no response came.
    """
    if not want.needs_body:
        stored = await stored_copy(runtime, url, want.max_age_ms)
        if stored is not None:
            page = Page(url, stored.url, stored.status, stored=stored, cached=True)
            return document(page, want), 0.0
    options = scrape_options(want, runtime.settings.limits, delay, left=left)
    scraped = await scrape(runtime, url, options, headers=dict(want.headers))
    outcome = scraped.outcome
    page = Page(
        url,
        outcome.final_url,
        outcome.status,
        stored=scraped.document,
        snapshot=scraped.snapshot,
        error=outcome.error.message if outcome.error is not None else None,
    )
    return document(page, want), scraped.crawl_delay


class BatchRun:
    """One batch scrape: its URLs, the documents and errors so far, its status."""

    def __init__(self, urls: list[str], want: Wanted, created_at: datetime) -> None:
        self.id = uuid.uuid4().hex
        self.urls = urls
        self.want = want
        self.created_at = created_at
        self.status = "scraping"
        self.documents: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """True until the run has ended, whichever way."""
        return self.status == "scraping"


class BatchRunner:
    """Starts, tracks and cancels batch scrapes within the server's crawl slots."""

    def __init__(
        self, runtime: Runtime, slots: CrawlSlots, *, delay: float, max_kept: int = 100
    ) -> None:
        self._runtime = runtime
        self._slots = slots
        self._delay = delay
        self._max_kept = max_kept
        self._runs: OrderedDict[str, BatchRun] = OrderedDict()

    def start(self, urls: list[str], want: Wanted) -> BatchRun:
        """Start scraping ``urls`` in the background; BusyError when no slot is free."""
        self._slots.take()
        run = BatchRun(urls, want, self._runtime.clock.now())
        self._runs[run.id] = run
        run.task = asyncio.create_task(self._run(run), name=f"sitelore-batch-{run.id}")
        return run

    def get(self, run_id: str) -> BatchRun:
        """The run with this id; NotFoundError when there is none (or it was forgotten)."""
        run = self._runs.get(run_id)
        if run is None:
            raise NotFoundError(f"batch scrape {run_id!r}: no such job")
        return run

    async def cancel(self, run_id: str) -> BatchRun:
        """Stop a running batch (pages stored so far stay); an ended one is left as it is."""
        run = self.get(run_id)
        if run.task is not None and not run.task.done():
            run.task.cancel()
            await asyncio.wait([run.task])
        return run

    async def aclose(self) -> None:
        """Cancel every running batch and wait for them to end."""
        tasks = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def _run(self, run: BatchRun) -> None:
        clock = self._runtime.clock
        deadline = self._runtime.settings.limits.deadline_seconds
        ends = clock.monotonic() + deadline
        last_origin: str | None = None
        wait = 0.0

        def failed(url: str, code: str, message: str) -> None:
            run.errors.append(
                {"id": f"{run.id}-{len(run.errors)}", "url": url, "code": code,
                 "error": message, "timestamp": clock.now().isoformat()}
            )  # fmt: skip

        try:
            for index, url in enumerate(run.urls):
                here = origin(url)
                if here == last_origin and wait > 0:
                    await clock.sleep(wait)
                last_origin, wait = here, self._delay
                left = ends - clock.monotonic()
                if left <= 0:
                    for rest in run.urls[index:]:
                        failed(rest, "deadline", f"{rest}: not scraped: the batch reached "
                               f"this server's deadline ({deadline:g} s)")  # fmt: skip
                    break
                try:
                    doc, crawl_delay = await scrape_document(
                        self._runtime, url, run.want, self._delay, left=left
                    )
                except SiteloreError as exc:
                    _, body = error_answer(exc)
                    failed(url, body["code"], body["error"])
                else:
                    run.documents.append(doc)
                    wait = max(wait, crawl_delay)
        except asyncio.CancelledError:
            run.status = "cancelled"
        except Exception:  # a bug: reported on the run, never raised
            log.exception("batch scrape %s failed", run.id)
            run.status = "failed"
        else:
            run.status = "completed"
        finally:
            self._slots.release()
            self._forget_old()

    def _forget_old(self) -> None:
        ended = [run_id for run_id, run in self._runs.items() if not run.running]
        for run_id in ended[: max(0, len(ended) - self._max_kept)]:
            del self._runs[run_id]
