"""Run crawls as background jobs: start, follow as a stream of events, cancel; admit crawls.

Orchestration only: the manager is handed the function that opens a crawl
(``Runtime.open_crawl``) and a wall clock; it never touches sockets, web frameworks or
the store. Jobs live on their manager, never at module level; the manager reports
each start and end to ``on_change`` (the REST API keeps a record of each job in the
store there, so a restart does not forget what happened). A cancelled job keeps every
page fetched before the cancel, and its summary says so. :meth:`JobManager.interrupt`
(server shutdown) ends every running job as ``interrupted`` with the reason.

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
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING

from sitelore.core.errors import BusyError, NotFoundError, SiteloreError
from sitelore.core.models import CrawlSummary, PageOutcome
from sitelore.core.options import CrawlOptions, Limits

if TYPE_CHECKING:
    from sitelore.crawl import CrawlRun

__all__ = ["CrawlSlots", "Job", "JobEvent", "JobManager", "JobStatus", "OnChange", "OpenCrawl"]

log = logging.getLogger(__name__)

#: Opens one crawl: ``Runtime.open_crawl`` (clamps the options and yields a CrawlRun).
OpenCrawl = Callable[[str, CrawlOptions], AbstractAsyncContextManager["CrawlRun"]]
#: Told when a job starts and when it ends (to keep a record of it); must not raise.
OnChange = Callable[["Job"], Awaitable[None]]


class JobStatus(enum.StrEnum):
    """Where a job is in its life; every state but RUNNING is final."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    #: Ended by a server shutdown or restart, not by its caller.
    INTERRUPTED = "interrupted"


@dataclasses.dataclass(frozen=True, slots=True)
class JobEvent:
    """One step of a job: a finished page, or (``page is None``) the end of the job."""

    seq: int
    page: PageOutcome | None


@dataclasses.dataclass(eq=False)
class Job:
    """One crawl running in the background; read its fields, follow its events.

    ``applied`` is ``requested`` clamped to the operator's caps.
    """

    id: str
    seed: str
    requested: CrawlOptions
    applied: CrawlOptions
    created_at: datetime
    finished_at: datetime | None = None
    status: JobStatus = JobStatus.RUNNING
    pages: list[PageOutcome] = dataclasses.field(default_factory=list)
    #: The crawl summary once the job has ended (partial when cancelled).
    summary: CrawlSummary | None = None
    #: Why the job failed (a usage error such as a robots.txt refusal, or a bug).
    error: BaseException | None = None
    #: Why the job was interrupted (the server stopping), when it was.
    interrupted_by: str | None = None
    _events: list[JobEvent] = dataclasses.field(default_factory=list, repr=False)
    _changed: asyncio.Event = dataclasses.field(default_factory=asyncio.Event, repr=False)
    _task: asyncio.Task[None] | None = dataclasses.field(default=None, repr=False)
    _live: CrawlRun | None = dataclasses.field(default=None, repr=False)

    @property
    def skipped(self) -> dict[str, int]:
        """URLs skipped by reason: so far while running, the summary's once ended."""
        if self.summary is not None:
            return self.summary.skipped_by_reason()
        return self._live.skipped_so_far() if self._live is not None else {}

    @property
    def finished(self) -> bool:
        """True once the job has ended, whichever way."""
        return self.status is not JobStatus.RUNNING

    async def events(
        self, after: int = 0, *, heartbeat: float | None = None
    ) -> AsyncGenerator[JobEvent | None, None]:
        """Yield events with ``seq > after`` as they happen, ending after the final one.

        An ``after`` past the final event (no id this job gave) still gets the final one
        once the job has ended, so every stream ends with it. With ``heartbeat``, yields
        ``None`` after that many seconds without an event (so a stream can send a
        keep-alive).
        """
        seen = max(0, after)
        while True:
            while seen < len(self._events):
                event = self._events[seen]
                seen += 1
                yield event
            if self.finished:
                if seen > len(self._events):
                    yield self._events[-1]
                return
            try:
                await asyncio.wait_for(self._changed.wait(), heartbeat)
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
        self._live = None
        self.error = error
        self._push(None)


@dataclasses.dataclass(slots=True)
class CrawlSlots:
    """How many crawls may run at once; a crawl without a free slot is refused (BusyError)."""

    max_active: int = 4
    active: int = 0

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
        on_change: awaited after a job started (by the caller of :meth:`start`) and
            when it has ended.
    """

    def __init__(
        self,
        open_crawl: OpenCrawl,
        *,
        limits: Limits,
        now: Callable[[], datetime],
        slots: CrawlSlots | None = None,
        max_kept: int = 100,
        on_change: OnChange | None = None,
    ) -> None:
        self._open = open_crawl
        self._on_change = on_change
        #: Set once the server is stopping: synchronous crawls watch it and stop too.
        self.stopping = asyncio.Event()
        self._stop_reason = ""
        self._limits = limits
        self._now = now
        self.slots = slots or CrawlSlots()
        self._max_kept = max_kept
        self._jobs: OrderedDict[str, Job] = OrderedDict()

    def start(
        self, seed: str, requested: CrawlOptions, *, open_crawl: OpenCrawl | None = None
    ) -> Job:
        """Start a crawl of ``seed`` in the background; BusyError when no slot is free.

        ``open_crawl`` opens this job's crawl instead of the manager's (e.g. one that
        keeps the pages' bodies).
        """
        self.slots.take()
        applied, _ = requested.clamp(self._limits)
        job = Job(uuid.uuid4().hex, seed, requested, applied, self._now())
        self._jobs[job.id] = job
        run = self._run(job, open_crawl or self._open)
        job._task = asyncio.create_task(run, name=f"sitelore-job-{job.id}")
        return job

    def listed(self) -> list[Job]:
        """The jobs this manager knows (running, and the latest finished), newest first."""
        return list(reversed(self._jobs.values()))

    def find(self, job_id: str) -> Job | None:
        """The job with this id; None when there is none (or it was forgotten)."""
        return self._jobs.get(job_id)

    def get(self, job_id: str) -> Job:
        """The job with this id; NotFoundError when there is none (or it was forgotten)."""
        job = self.find(job_id)
        if job is None:
            raise NotFoundError(f"crawl job {job_id!r}: no such job")
        return job

    def forget(self, job_id: str) -> None:
        """Drop a finished job from memory (its record, if any, is the caller's)."""
        job = self._jobs.get(job_id)
        if job is not None and job.finished:
            del self._jobs[job_id]

    async def interrupt(self, reason: str) -> None:
        """End every running job as interrupted (``reason`` says why), and wait for them.

        Also sets :attr:`stopping`, which synchronous crawls watch. Pages stay stored.
        """
        self._stop_reason = reason
        self.stopping.set()
        await self.aclose()

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

    async def _run(self, job: Job, open_crawl: OpenCrawl) -> None:
        run: CrawlRun | None = None
        try:
            if self._on_change is not None:
                await self._on_change(job)
            async with open_crawl(job.seed, job.requested) as run:
                job._live = run
                async for page in run:
                    job._record(page)
        except asyncio.CancelledError:
            # Asked for (DELETE or shutdown): the crawl's pages stay; the job just ends.
            job.interrupted_by = self._stop_reason or None
            stopped = JobStatus.INTERRUPTED if self._stop_reason else JobStatus.CANCELLED
            job._end(stopped, self._now(), run)
        except Exception as exc:  # a job's failure is reported on the job, never raised
            if not isinstance(exc, SiteloreError):
                log.exception("crawl job %s failed", job.id)
            job._end(JobStatus.FAILED, self._now(), run, exc)
        else:
            job._end(JobStatus.DONE, self._now(), run)
        finally:
            self.slots.release()
            self._forget_old()
            if self._on_change is not None:
                await self._on_change(job)

    def _forget_old(self) -> None:
        finished = [job_id for job_id, job in self._jobs.items() if job.finished]
        for job_id in finished[: max(0, len(finished) - self._max_kept)]:
            del self._jobs[job_id]
