"""The ``/v2`` routes: Firecrawl's scrape, crawl, map and batch scrape over sitelore's services.

Each route validates its body with :mod:`~sitelore.server.firecrawl.shapes`, applies the
operator's rules (:mod:`~sitelore.server.firecrawl.translate`), and calls the same service
layer as the native API: crawls are jobs of the app's :class:`~sitelore.app.jobs.JobManager`
(same slots, stored pages, searchable and replayable), scrapes and maps go through
:mod:`sitelore.app.pages`. The app's middleware (API key, body cap, Host/Origin checks)
covers these routes as any other. Errors answer Firecrawl's ``{"success": false,
"error"}`` with the status of :func:`~sitelore.server.firecrawl.answers.error_answer`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from fastapi import APIRouter, Body, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import ValidationError

from sitelore.app.bootstrap import Runtime
from sitelore.app.jobs import Job, JobManager, JobStatus
from sitelore.app.pages import KeptBodies, map_urls
from sitelore.core.errors import ErrorKind, NotFoundError, SiteloreError, UsageError
from sitelore.core.guard import without_userinfo
from sitelore.core.options import CrawlOptions
from sitelore.crawl import CrawlRun
from sitelore.server.firecrawl.answers import (
    PAGE_SIZE,
    PREFIX,
    RETRY_AFTER_SECONDS,
    JobEndedError,
    Page,
    document,
    error_answer,
    refusal,
    status_page,
)
from sitelore.server.firecrawl.batch import BatchRunner, scrape_document
from sitelore.server.firecrawl.shapes import (
    ERROR_RESPONSES,
    BatchScrapeRequest,
    CrawlRequest,
    MapRequest,
    RequestBody,
    ScrapeRequest,
)
from sitelore.server.firecrawl.translate import Wanted, crawl_options, wanted

__all__ = ["firecrawl_router"]

_Model = TypeVar("_Model", bound=RequestBody)
_STATUS = {
    JobStatus.RUNNING: "scraping",
    JobStatus.DONE: "completed",
    JobStatus.FAILED: "failed",
    JobStatus.CANCELLED: "cancelled",
}
_Body = Annotated[dict[str, Any], Body()]
_Skip = Annotated[int, Query(ge=0, description="Documents to skip (from a previous next).")]


class _AnsweringRoute(APIRoute):
    """A ``/v2`` route that answers a sitelore error or a bad body as Firecrawl does:
    ``{"success": false, ...}``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The route's handler, its sitelore errors and bad bodies answered."""
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except SiteloreError as exc:
                status, body = error_answer(exc)
                busy = {"retry-after": str(RETRY_AFTER_SECONDS)} if status == 429 else None
                return JSONResponse(body, status_code=status, headers=busy)
            except ValidationError as exc:
                first = exc.errors()[0]
                field = ".".join(str(part) for part in first["loc"]) or "body"
                message = f"{field}: {first['msg']}"
                return JSONResponse(refusal("validation", message), status_code=400)

        return answer


def _parse(model: type[_Model], body: dict[str, Any]) -> tuple[_Model, list[str]]:
    """Validate ``body``; the notes name the fields sent that this server ignores."""
    parsed = model.model_validate(body)
    extra = parsed.unknown_fields()
    return parsed, [f"ignored fields: {', '.join(extra)}"] if extra else []


def _warning(notes: list[str]) -> dict[str, Any]:
    return {"warning": "; ".join(notes)} if notes else {}


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@dataclasses.dataclass(frozen=True, slots=True)
class _Crawl:
    """A Firecrawl crawl: the job, what to answer for each page, the bodies kept."""

    job: Job
    want: Wanted
    kept: KeptBodies | None
    notes: list[str]


def firecrawl_router(
    runtime: Runtime, jobs: JobManager, *, delay: float, max_kept: int = 100
) -> APIRouter:
    """The ``/v2`` routes over ``runtime``; crawls run as ``jobs``' jobs, in its slots.

    Args:
        runtime: settings, store and crawls (opened and closed by the caller).
        jobs: the app's crawl jobs (shared slots and registry).
        delay: the operator's least delay between requests to one origin (seconds).
        max_kept: Firecrawl crawls and batches remembered for GET.
    """
    limits = runtime.settings.limits
    batches = BatchRunner(runtime, jobs.slots, delay=delay, max_kept=max_kept)
    crawls: OrderedDict[str, _Crawl] = OrderedDict()

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.aclosing(batches):
            yield

    router = APIRouter(
        prefix=PREFIX,
        tags=["firecrawl"],
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
        route_class=_AnsweringRoute,
    )

    @router.post("/scrape")
    async def scrape(body: _Body) -> dict[str, Any]:
        """Scrape one page (Firecrawl ``POST /v2/scrape``); the page is stored."""
        request, notes = _parse(ScrapeRequest, body)
        want = wanted(request)
        runtime.check_url(request.url)
        async with jobs.slots.admit():
            data, _ = await scrape_document(runtime, request.url, want, delay)
        return {"success": True, "data": data, **_warning(notes)}

    @router.post("/crawl")
    async def start_crawl(body: _Body, http: Request) -> dict[str, Any]:
        """Start a crawl job (Firecrawl ``POST /v2/crawl``)."""
        request, notes = _parse(CrawlRequest, body)
        want = wanted(request.scrape_options, "scrapeOptions.")
        options, clamped = crawl_options(request, limits, delay)
        runtime.check_url(request.url)
        kept = KeptBodies(dict(want.headers)) if want.needs_body or want.headers else None

        def open_crawl(
            seed: str, opts: CrawlOptions
        ) -> contextlib.AbstractAsyncContextManager[CrawlRun]:
            return runtime.open_crawl(seed, opts, snapshots=kept)

        job = jobs.start(request.url, options, open_crawl=open_crawl)
        crawls[job.id] = _Crawl(job, want, kept, notes + clamped)
        while len(crawls) > max_kept:
            crawls.popitem(last=False)
        url = f"{_base(http)}/v2/crawl/{job.id}"
        return {"success": True, "id": job.id, "url": url, **_warning(notes + clamped)}

    def crawl_of(crawl_id: str) -> _Crawl:
        found = crawls.get(crawl_id)
        if found is None:
            raise NotFoundError(f"crawl {crawl_id!r}: no such crawl job")
        return found

    @router.get("/crawl/active")
    async def active_crawls() -> dict[str, Any]:
        """Crawls still running (Firecrawl ``GET /v2/crawl/active``)."""
        running = [c.job for c in crawls.values() if not c.job.finished]
        return {
            "success": True,
            "crawls": [
                {"id": job.id, "teamId": "sitelore", "url": job.seed,
                 "options": {"limit": job.applied.max_pages,
                             "maxDiscoveryDepth": job.applied.max_depth}}
                for job in running
            ],
        }  # fmt: skip

    @router.get("/crawl/{crawl_id}")
    async def crawl_status(crawl_id: str, http: Request, skip: _Skip = 0) -> dict[str, Any]:
        """A crawl's status and one page of its documents (Firecrawl ``GET /v2/crawl/{id}``)."""
        crawl = crawl_of(crawl_id)
        job = crawl.job
        stored = [p for p in job.pages if p.indexed and p.document_id is not None]
        data = []
        for outcome in stored[skip : skip + PAGE_SIZE]:
            assert outcome.document_id is not None
            snapshot = crawl.kept.body_of(outcome.url) if crawl.kept is not None else None
            page = Page(
                outcome.url,
                outcome.final_url,
                outcome.status,
                stored=await runtime.store.get(outcome.document_id),
                snapshot=snapshot,
            )
            data.append(document(page, crawl.want))
        notes = list(crawl.notes)
        if job.error is not None:
            notes.append(error_answer(_as_sitelore(job.error))[1]["error"])
        return status_page(
            status=_STATUS[job.status],
            data=data,
            skip=skip,
            completed=len(stored),
            total=len(job.pages),
            running=not job.finished,
            created_at=job.created_at,
            next_base=f"{_base(http)}/v2/crawl/{job.id}",
            extra=_warning(notes),
        )

    @router.delete("/crawl/{crawl_id}")
    async def cancel_crawl(crawl_id: str) -> dict[str, Any]:
        """Cancel a running crawl (Firecrawl ``DELETE /v2/crawl/{id}``); 409 once it ended."""
        _check_cancellable(f"crawl {crawl_id!r}", _STATUS[crawl_of(crawl_id).job.status])
        await jobs.cancel(crawl_id)
        return _CANCELLED

    @router.get("/crawl/{crawl_id}/errors")
    async def crawl_errors(crawl_id: str) -> dict[str, Any]:
        """Pages that failed, and those robots.txt refused (``GET /v2/crawl/{id}/errors``)."""
        job = crawl_of(crawl_id).job
        errors: list[dict[str, Any]] = []
        robots: list[str] = []
        for outcome in job.pages:
            if outcome.error is None:
                continue
            if outcome.error.kind is ErrorKind.ROBOTS_DENIED:
                robots.append(outcome.url)
            else:
                errors.append(
                    _error_entry(
                        f"{job.id}-{len(errors)}",
                        outcome.url,
                        str(outcome.error.kind),
                        outcome.error.message,
                    )
                )
        if job.error is not None:
            _, body = error_answer(_as_sitelore(job.error))
            errors.append(_error_entry(f"{job.id}-job", job.seed, body["code"], body["error"]))
        return {"success": True, "errors": errors, "robotsBlocked": robots}  # fmt: skip

    @router.post("/map")
    async def map_site(body: _Body) -> dict[str, Any]:
        """URLs of a site from its sitemaps and the page's links (Firecrawl ``POST /v2/map``)."""
        request, notes = _parse(MapRequest, body)
        if request.location is not None:
            raise UsageError("location: this server fetches from one place")
        seconds = min((request.timeout or 1e12) / 1000, limits.deadline_seconds)
        options = CrawlOptions(delay=delay, sitemap=request.sitemap != "skip",
                               deadline_seconds=seconds)  # fmt: skip
        async with jobs.slots.admit():
            urls = await map_urls(runtime, request.url, options,
                                  links=request.sitemap != "only")  # fmt: skip
        host = urlsplit(urls[0]).hostname
        found: dict[str, None] = {}
        needle = (request.search or "").lower()
        for url in urls:
            parts = urlsplit(url)
            if not request.include_subdomains and parts.hostname != host:
                continue
            if request.ignore_query_parameters:
                url = parts._replace(query="").geturl()
            if needle in url.lower():
                found[url] = None
        links = [{"url": url} for url in list(found)[: request.limit]]
        return {"success": True, "links": links, **_warning(notes)}

    @router.post("/batch/scrape")
    async def start_batch(body: _Body, http: Request) -> dict[str, Any]:
        """Scrape many pages in the background (Firecrawl ``POST /v2/batch/scrape``)."""
        request, notes = _parse(BatchScrapeRequest, body)
        if request.webhook is not None:
            raise UsageError("webhook: not supported: poll GET /v2/batch/scrape/{id} instead")
        if request.append_to_id is not None:
            raise UsageError("appendToId: not supported: start a new batch")
        if len(request.urls) > limits.max_pages:
            raise UsageError(
                f"urls: {len(request.urls)} URLs; this server scrapes at most "
                f"{limits.max_pages} in one batch (its page cap)"
            )
        want = wanted(request)
        urls: list[str] = []
        invalid: list[str] = []
        for url in request.urls:
            try:
                runtime.check_url(url)
            except UsageError:
                if not request.ignore_invalid_urls:
                    raise
                invalid.append(without_userinfo(url))  # answered: never a password
            else:
                urls.append(url)
        run = batches.start(urls, want)
        return {"success": True, "id": run.id, "url": f"{_base(http)}/v2/batch/scrape/{run.id}",
                "invalidURLs": invalid, **_warning(notes)}  # fmt: skip

    @router.get("/batch/scrape/{batch_id}")
    async def batch_status(batch_id: str, http: Request, skip: _Skip = 0) -> dict[str, Any]:
        """A batch's status and one page of its documents."""
        run = batches.get(batch_id)
        return status_page(
            status=run.status,
            data=run.documents[skip : skip + PAGE_SIZE],
            skip=skip,
            completed=len(run.documents),
            total=len(run.urls),
            running=run.running,
            created_at=run.created_at,
            next_base=f"{_base(http)}/v2/batch/scrape/{run.id}",
        )

    @router.delete("/batch/scrape/{batch_id}")
    async def cancel_batch(batch_id: str) -> dict[str, Any]:
        """Cancel a running batch; 409 once it ended."""
        _check_cancellable(f"batch scrape {batch_id!r}", batches.get(batch_id).status)
        await batches.cancel(batch_id)
        return _CANCELLED

    @router.get("/batch/scrape/{batch_id}/errors")
    async def batch_errors(batch_id: str) -> dict[str, Any]:
        """Pages of a batch that failed."""
        run = batches.get(batch_id)
        robots = [e["url"] for e in run.errors if e["code"] == str(ErrorKind.ROBOTS_DENIED)]
        return {"success": True, "errors": run.errors, "robotsBlocked": robots}

    return router


_CANCELLED: dict[str, Any] = {"success": True, "status": "cancelled"}


def _check_cancellable(what: str, status: str) -> None:
    """A running or cancelled job may be cancelled (again); an ended one is a 409."""
    if status not in ("scraping", "cancelled"):
        raise JobEndedError(f"{what}: already {status}")


def _error_entry(entry_id: str, url: str, code: str, message: str) -> dict[str, Any]:
    return {"id": entry_id, "url": url, "code": code, "error": message}


def _as_sitelore(exc: BaseException) -> SiteloreError:
    if isinstance(exc, SiteloreError):
        return exc
    return SiteloreError("internal error (see the server log)")
