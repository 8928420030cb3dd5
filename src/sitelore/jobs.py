"""Run crawls as background jobs: start, follow as a stream of events, cancel; admit crawls.

Orchestration only: the manager is handed the function that opens a crawl
(``Runtime.open_crawl``) and a wall clock; it never touches sockets, web frameworks or
the store. Jobs live on their manager, never at module level, so a restart forgets
them while the pages they stored stay stored. A cancelled job keeps every page fetched
before the cancel, and its summary says so.

::

    manager = JobManager(runtime.open_crawl, limits=settings.limits, now=clock.now)
    job = manager.start("https://docs.example.com/", CrawlOptions(max_pages=50))
    async for event in job.events():
        ...                         # one event per page, then one with page=None
    await manager.cancel(job.id)    # or let it finish
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import logging
import uuid
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING

from sitelore.errors import BusyError, NotFoundError, SiteloreError
from sitelore.models import CrawlOptions, CrawlSummary, Limits, PageOutcome

if TYPE_CHECKING:
    from sitelore.spider import CrawlRun

__all__ = ["CrawlSlots", "Job", "JobEvent", "JobManager", "JobStatus", "OpenCrawl"]

log = logging.getLogger(__name__)

#: Opens one crawl: ``Runtime.open_crawl`` (clamps the options and yields a CrawlRun).
OpenCrawl = Callable[[str, CrawlOptions], AbstractAsyncContextManager["CrawlRun"]]


class JobStatus(enum.StrEnum):
    """Where a job is in its life; every state but RUNNING is final."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclasses.dataclass(frozen=True, slots=True)
class JobEvent:
    """One step of a job: a finished page, or (``page is None``) the end of the job."""

    seq: int
    page: PageOutcome | None


class Job:
    """One crawl running in the background; read its fields, follow its events."""

    def __init__(
        self, job_id: str, seed: str, requested: CrawlOptions, limits: Limits, now: datetime
    ) -> None:
        self.id = job_id
        self.seed = seed
        self.requested = requested
        self.applied, _ = requested.clamp(limits)
        self.created_at = now
        self.finished_at: datetime | None = None
        self.status = JobStatus.RUNNING
        self.pages: list[PageOutcome] = []
        #: The crawl summary once the job has ended (partial when cancelled).
        self.summary: CrawlSummary | None = None
        #: Why the job failed (a usage error such as a robots.txt refusal, or a bug).
        self.error: BaseException | None = None
        self._events: list[JobEvent] = []
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def finished(self) -> bool:
        """True once the job has ended, whichever way."""
        return self.status is not JobStatus.RUNNING

    async def events(
        self, after: int = 0, *, heartbeat: float | None = None
    ) -> AsyncGenerator[JobEvent | None, None]:
        """Yield events with ``seq > after`` as they happen, ending after the final one.

        With ``heartbeat``, yields ``None`` after that many seconds without an event
        (so a stream can send a keep-alive).
        """
        seen = max(0, after)
        while True:
            while seen < len(self._events):
                event = self._events[seen]
                seen += 1
                yield event
            if self.finished:
                return
            waiter = self._changed
            try:
                await asyncio.wait_for(waiter.wait(), heartbeat)
            except TimeoutError:
                yield None

    def _push(self, page: PageOutcome | None) -> None:
        self._events.append(JobEvent(len(self._events) + 1, page))
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _record(self, page: PageOutcome) -> None:
        self.pages.append(page)
        self._push(page)

    def _end(
        self,
        status: JobStatus,
        now: datetime,
        run: CrawlRun | None,
        error: BaseException | None = None,
    ) -> None:
        self.status = status
        self.finished_at = now
        self.summary = run.summary if run is not None else None
        self.error = error
        self._push(None)


class CrawlSlots:
    """How many crawls may run at once; a crawl without a free slot is refused (BusyError)."""

    def __init__(self, max_active: int = 4) -> None:
        self.max_active = max_active
        self.active = 0

    def take(self) -> None:
        """Take a slot; BusyError when none is free. Pair with :meth:`release`."""
        if self.active >= self.max_active:
            raise BusyError(
                f"{self.active} crawls are running, the most this server allows; "
                "try again when one has finished"
            )
        self.active += 1

    def release(self) -> None:
        """Give a slot back."""
        self.active -= 1

    @contextlib.asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        """Hold a slot for the duration of a synchronous crawl."""
        self.take()
        try:
            yield
        finally:
            self.release()


class JobManager:
    """Starts, tracks and cancels crawl jobs, within the server's crawl slots.

    Args:
        open_crawl: opens one crawl (``Runtime.open_crawl``).
        limits: the operator's caps (to report the options a job will run with).
        now: wall clock for the jobs' timestamps.
        slots: crawl slots shared with synchronous crawls (default: 4 of its own).
        max_kept: finished jobs remembered; the oldest are forgotten first.
    """

    def __init__(
        self,
        open_crawl: OpenCrawl,
        *,
        limits: Limits,
        now: Callable[[], datetime],
        slots: CrawlSlots | None = None,
        max_kept: int = 100,
    ) -> None:
        self._open = open_crawl
        self._limits = limits
        self._now = now
        self.slots = slots or CrawlSlots()
        self._max_kept = max_kept
        self._jobs: OrderedDict[str, Job] = OrderedDict()

    def start(self, seed: str, requested: CrawlOptions) -> Job:
        """Start a crawl of ``seed`` in the background; BusyError when no slot is free."""
        self.slots.take()
        job = Job(uuid.uuid4().hex, seed, requested, self._limits, self._now())
        self._jobs[job.id] = job
        job._task = asyncio.create_task(self._run(job), name=f"sitelore-job-{job.id}")
        return job

    def get(self, job_id: str) -> Job:
        """The job with this id; NotFoundError when there is none (or it was forgotten)."""
        job = self._jobs.get(job_id)
        if job is None:
            raise NotFoundError(f"crawl job {job_id!r}: no such job")
        return job

    async def cancel(self, job_id: str) -> Job:
        """Stop a running job (pages stored so far stay); a finished job is left as it is."""
        job = self.get(job_id)
        task = job._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])
        return job

    async def aclose(self) -> None:
        """Cancel every running job and wait for them to end."""
        tasks = [j._task for j in self._jobs.values() if j._task is not None and not j._task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def _run(self, job: Job) -> None:
        run: CrawlRun | None = None
        try:
            async with self._open(job.seed, job.requested) as run:
                async for page in run:
                    job._record(page)
        except asyncio.CancelledError:
            # Asked for (DELETE or shutdown): the crawl's pages stay; the job just ends.
            job._end(JobStatus.CANCELLED, self._now(), run)
        except Exception as exc:  # a job's failure is reported on the job, never raised
            if not isinstance(exc, SiteloreError):
                log.exception("crawl job %s failed", job.id)
            job._end(JobStatus.FAILED, self._now(), run, exc)
        else:
            job._end(JobStatus.DONE, self._now(), run)
        finally:
            self.slots.release()
            self._forget_old()

    def _forget_old(self) -> None:
        finished = [job_id for job_id, job in self._jobs.items() if job.finished]
        for job_id in finished[: max(0, len(finished) - self._max_kept)]:
            del self._jobs[job_id]
