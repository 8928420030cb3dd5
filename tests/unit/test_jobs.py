"""Crawl jobs: progress as events, cancel, failure, crawl slots and forgetting old jobs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import cast

import pytest

from sitelore.app.jobs import CrawlSlots, JobEvent, JobManager, JobStatus, OpenCrawl
from sitelore.core.errors import BusyError, NotFoundError, RobotsRefusedError
from sitelore.core.models import CrawlSummary, PageOutcome
from sitelore.core.options import CrawlOptions, Limits

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class ScriptedRun:
    """A crawl whose pages arrive when the test feeds them (``None`` ends it)."""

    def __init__(self, seed: str, options: CrawlOptions) -> None:
        self.summary = CrawlSummary(seed=seed, options=options)
        self.feed: asyncio.Queue[PageOutcome | None] = asyncio.Queue()
        self.skipped: dict[str, int] = {}

    def skipped_so_far(self) -> dict[str, int]:
        return dict(self.skipped)

    def __aiter__(self) -> ScriptedRun:
        return self

    async def __anext__(self) -> PageOutcome:
        page = await self.feed.get()
        if page is None:
            raise StopAsyncIteration
        self.summary.record(page)
        return page


class Opener:
    """Opens scripted runs and remembers them; can fail on open instead."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.runs: list[ScriptedRun] = []
        self.fail = fail

    @contextlib.asynccontextmanager
    async def open(self, seed: str, options: CrawlOptions) -> AsyncIterator[ScriptedRun]:
        if self.fail is not None:
            raise self.fail
        run = ScriptedRun(seed, options)
        self.runs.append(run)
        yield run


def manager(opener: Opener, *, slots: CrawlSlots | None = None, max_kept: int = 100) -> JobManager:
    return JobManager(
        cast(OpenCrawl, opener.open),
        limits=Limits(max_pages=50),
        now=lambda: NOW,
        slots=slots,
        max_kept=max_kept,
    )


def page(n: int) -> PageOutcome:
    return PageOutcome(url=f"https://x.example/{n}", depth=1, indexed=True, document_id=f"d{n}")


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def collect(events: AsyncIterator[JobEvent | None]) -> list[JobEvent]:
    return [event async for event in events if event is not None]


class TestJobLife:
    async def test_pages_become_events_then_the_job_ends_done(self) -> None:
        """Each page is an event in order; the end event follows; the summary is kept."""
        opener = Opener()
        jobs = manager(opener)
        job = jobs.start("https://x.example/", CrawlOptions(max_pages=500))
        await settle()
        assert job.applied.max_pages == 50
        follower = asyncio.create_task(collect(job.events()))
        run = opener.runs[0]
        for n in (1, 2):
            run.feed.put_nowait(page(n))
        run.feed.put_nowait(None)
        events = await asyncio.wait_for(follower, 5)
        assert [(e.seq, e.page.url if e.page else None) for e in events] == [
            (1, "https://x.example/1"),
            (2, "https://x.example/2"),
            (3, None),
        ]
        assert job.status is JobStatus.DONE
        assert job.finished_at == NOW
        assert job.summary is run.summary
        resumed = await collect(job.events(after=2))
        assert [e.seq for e in resumed] == [3]
        assert await collect(job.events(after=3)) == []  # it had the end: nothing more
        # An id past the end (a garbage Last-Event-ID) still ends with the end event:
        # an empty stream made an EventSource reconnect for ever.
        assert [e.seq for e in await collect(job.events(after=10**18))] == [3]

    async def test_skips_are_counted_live_then_from_the_summary(self) -> None:
        """A running job says what its crawl skipped so far; an ended one, the summary."""
        opener = Opener()
        jobs = manager(opener)
        job = jobs.start("https://x.example/", CrawlOptions())
        await settle()
        run = opener.runs[0]
        assert job.skipped == {}
        run.skipped = {"robots": 2}
        assert job.skipped == {"robots": 2}
        run.summary.skipped = {"robots": 3, "noindex": 1}
        run.feed.put_nowait(None)
        await settle()
        assert job.finished
        assert job.skipped["robots"] == 3
        assert job.skipped["noindex"] == 1
        assert job.skipped["throttled"] == 0  # the pinned reasons, as in every summary

    async def test_heartbeat_yields_none_while_idle(self) -> None:
        """With a heartbeat, an idle job yields None so a stream can keep alive."""
        jobs = manager(Opener())
        job = jobs.start("https://x.example/", CrawlOptions())
        events = job.events(heartbeat=0.01)
        assert await asyncio.wait_for(anext(events), 5) is None
        await events.aclose()
        await jobs.aclose()

    async def test_cancel_keeps_pages_and_ends_cancelled(self) -> None:
        """Cancelling a running job ends it CANCELLED with the pages it had."""
        opener = Opener()
        jobs = manager(opener)
        job = jobs.start("https://x.example/", CrawlOptions())
        await settle()
        opener.runs[0].feed.put_nowait(page(1))
        await settle()
        same = await jobs.cancel(job.id)
        assert same is job
        assert job.status is JobStatus.CANCELLED
        assert [p.url for p in job.pages] == ["https://x.example/1"]
        assert job.summary is not None
        assert job.summary.pages_indexed == 1
        events = await collect(job.events())
        assert events[-1].page is None
        await jobs.cancel(job.id)  # cancelling a finished job changes nothing
        assert job.status is JobStatus.CANCELLED

    async def test_refused_start_fails_the_job_with_the_error(self) -> None:
        """A usage error while opening the crawl ends the job FAILED holding the error."""
        refusal = RobotsRefusedError("https://x.example/", "https://x.example/robots.txt", "no")
        jobs = manager(Opener(fail=refusal))
        job = jobs.start("https://x.example/", CrawlOptions())
        await settle()
        assert job.status is JobStatus.FAILED
        assert job.error is refusal
        assert job.summary is None

    async def test_a_bug_fails_the_job_and_is_logged(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """An unexpected exception fails the job (never the server) and is logged."""
        jobs = manager(Opener(fail=RuntimeError("boom")))
        job = jobs.start("https://x.example/", CrawlOptions())
        await settle()
        assert job.status is JobStatus.FAILED
        assert "crawl job" in caplog.text


class TestManager:
    async def test_slots_refuse_a_crawl_beyond_the_limit_and_free_on_end(self) -> None:
        """With one slot, a second start is BusyError until the first job ends."""
        opener = Opener()
        slots = CrawlSlots(1)
        jobs = manager(opener, slots=slots)
        jobs.start("https://x.example/", CrawlOptions())
        await settle()
        with pytest.raises(BusyError):
            jobs.start("https://x.example/", CrawlOptions())
        with pytest.raises(BusyError):
            async with slots.admit():
                pass
        opener.runs[0].feed.put_nowait(None)
        await settle()
        assert slots.active == 0
        jobs.start("https://x.example/", CrawlOptions())
        await jobs.aclose()

    async def test_unknown_id_is_not_found(self) -> None:
        """get and cancel of an unknown id raise NotFoundError."""
        jobs = manager(Opener())
        with pytest.raises(NotFoundError):
            jobs.get("nope")
        with pytest.raises(NotFoundError):
            await jobs.cancel("nope")

    async def test_oldest_finished_jobs_are_forgotten(self) -> None:
        """Past max_kept, the oldest finished jobs go; running ones stay."""
        opener = Opener()
        jobs = manager(opener, max_kept=2)
        started = [jobs.start("https://x.example/", CrawlOptions()) for _ in range(3)]
        await settle()
        for run in opener.runs:
            run.feed.put_nowait(None)
        await settle()
        with pytest.raises(NotFoundError):
            jobs.get(started[0].id)
        assert jobs.get(started[2].id).status is JobStatus.DONE

    async def test_aclose_cancels_running_jobs(self) -> None:
        """Shutting the manager down cancels what still runs."""
        opener = Opener()
        jobs = manager(opener)
        job = jobs.start("https://x.example/", CrawlOptions())
        await settle()
        await jobs.aclose()
        assert job.status is JobStatus.CANCELLED
