"""The REST API of ``sitelore serve``: submit, store, search and crawl jobs over HTTP.

:func:`create_app` builds a FastAPI app around one Runtime; nothing lives at module
level. The layer is thin: each route validates with the :mod:`sitelore.app.wire` models,
calls :mod:`sitelore.app.service`, the store or the job manager, and shapes the answer.

* Every error is JSON, ``{"error": {"code", "message", "field"}}``, with its status
  from one table (:data:`STATUS_OF`); validation errors name the field.
* The operator's hard caps apply to every request: larger asks are clamped and the
  answer's ``clamped`` says so. Private addresses are a server setting, never a field.
  Politeness stays the operator's (:class:`~sitelore.app.wire.RemotePolicy`): robots.txt
  cannot be switched off, delay only raised, render asked for only where allowed.
* With an API key every route but ``/healthz`` and ``/openapi.json`` needs
  ``Authorization: Bearer <key>``; bodies are capped
  (:class:`~sitelore.server.asgi_guard.RequestGuard`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, Header, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from sitelore import __version__
from sitelore.app import service
from sitelore.app.bootstrap import Runtime
from sitelore.app.jobs import CrawlSlots, Job, JobManager
from sitelore.app.semantic import SemanticSearch
from sitelore.app.wire import (
    MAX_OFFSET,
    CrawlJobRequest,
    CrawlResult,
    DocumentList,
    DocumentOut,
    ErrorBody,
    ErrorDetail,
    Health,
    JobList,
    JobOut,
    RemoteOptionError,
    RemotePolicy,
    SearchResult,
    SubmitRequest,
    annotate_request_schema,
)
from sitelore.core.errors import (
    BlockedURLError,
    BusyError,
    ConfigError,
    ConversionError,
    FetchError,
    FetchTimeoutError,
    InvalidURLError,
    NotFoundError,
    RobotsRefusedError,
    SiteloreError,
    StoreError,
    UsageError,
    first_sitelore_error,
)
from sitelore.core.linkstyle import LinkStyle
from sitelore.core.models import CrawlSummary
from sitelore.core.options import CrawlOptions, Limits
from sitelore.core.ports import JobRecords
from sitelore.server.asgi_guard import DEFAULT_MAX_BODY_BYTES, RequestGuard
from sitelore.server.firecrawl.answers import PREFIX as FIRECRAWL_PREFIX
from sitelore.server.firecrawl.answers import refusal
from sitelore.server.firecrawl.routes import firecrawl_router
from sitelore.server.host_guard import HostGuard, HostPolicy
from sitelore.server.web import error_page, mount_ui
from sitelore.server.web.gate import is_ui_path

__all__ = [
    "API_PREFIX",
    "SHUTDOWN_REASON",
    "STATUS_OF",
    "CrawlStoppedError",
    "create_app",
    "error_detail",
    "status_of",
    "stopper",
]

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"
_CRAWLS = f"{API_PREFIX}/crawls"
_OPEN_PATHS = ("/healthz", "/openapi.json")
_HEARTBEAT_SECONDS = 15.0
_HTTP_CODES = {404: "not-found", 405: "method-not-allowed"}
_EVENT_ID_PATTERN = "^[0-9]{0,18}$"
_LINKS_HELP = (
    "How the Markdown's links are written: inline [text](url), reference [text][1] with "
    "the URLs listed once at the end, or none (text only). Default: the server's links setting."
)
#: Why running crawls end when the server stops (their ``error.message``).
SHUTDOWN_REASON = "the server is shutting down; pages stored before stay stored"


class CrawlStoppedError(SiteloreError):
    """A synchronous crawl ended early: its client went away, or the server is stopping."""


#: Error class -> (HTTP status, error code); the most specific class in the MRO wins.
STATUS_OF: Mapping[type[BaseException], tuple[int, str]] = {
    CrawlStoppedError: (503, "stopped"),
    NotFoundError: (404, "not-found"),
    UsageError: (400, "usage"),
    BusyError: (429, "busy"),
    FetchTimeoutError: (504, "timeout"),
    FetchError: (502, "fetch"),
    ConversionError: (502, "conversion"),
    StoreError: (503, "store"),
    ConfigError: (500, "config"),
    SiteloreError: (500, "internal"),
}

#: Errors about the submitted URL itself: their answers name the ``url`` field.
_URL_ERRORS = (InvalidURLError, BlockedURLError, RobotsRefusedError)


def status_of(error_class: type[BaseException]) -> tuple[int, str]:
    """The (status, code) of an error class, from :data:`STATUS_OF`."""
    return next((STATUS_OF[k] for k in error_class.__mro__ if k in STATUS_OF), (500, "internal"))


def error_detail(exc: BaseException) -> tuple[int, ErrorDetail]:
    """The status and JSON detail of any error a route can raise.

    An exception group (a task group's failure) answers as the first sitelore error
    among its leaves, when it holds one.
    """
    exc = first_sitelore_error(exc) or exc
    if isinstance(exc, service.PageFailedError):
        status, _ = status_of(exc.error_class)
        url_error = issubclass(exc.error_class, _URL_ERRORS)
        return status, ErrorDetail(
            code=str(exc.kind), message=str(exc), field="url" if url_error else None
        )
    status, code = status_of(type(exc))
    if not isinstance(exc, SiteloreError):
        return status, ErrorDetail(code=code, message="internal error (see the server log)")
    kind = exc.kind
    return status, ErrorDetail(
        code=str(kind) if kind is not None else code,
        message=service.remote_message(exc) or type(exc).__name__,
        field="url" if isinstance(exc, _URL_ERRORS) else None,
    )


def _error_for(request: Request, status: int, detail: ErrorDetail, **headers: str) -> Response:
    """An error in the shape the route's clients read: Firecrawl's under its prefix, a
    page of the web UI on its paths (a browser showed the JSON), the API's JSON else."""
    if is_ui_path(request.url.path):
        return error_page(request, status, detail.message)
    if request.url.path.startswith(f"{FIRECRAWL_PREFIX}/"):
        body = refusal(detail.code, detail.message)
    else:
        body = ErrorBody(error=detail).model_dump(mode="json", by_alias=True)
    return JSONResponse(body, status_code=status, headers=headers or None)


def _validation_detail(
    exc: RequestValidationError, content_type: str | None = None
) -> tuple[int, ErrorDetail]:
    errors = list(exc.errors())
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request"}
    loc = [str(part) for part in first.get("loc", ())]
    field = ".".join(loc[1:]) if len(loc) > 1 else (loc[0] if loc else "body")
    if first.get("type") == "json_invalid":
        return 400, ErrorDetail(code="invalid-json", message="body: not valid JSON", field="body")
    if loc == ["body"] and content_type is not None and not _is_json_type(content_type):
        # FastAPI reads only a JSON media type as JSON: the rest is bytes, "not an object".
        shown = content_type.split(";")[0].strip()[:100]
        message = f"body: sent as {shown!r}; send JSON with Content-Type: application/json"
        return 422, ErrorDetail(code="validation", message=message, field="body")
    others = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    message = f"{field}: {first.get('msg', 'invalid')}{others}"
    return 422, ErrorDetail(code="validation", message=message, field=field)


def _unreadable_body(exc: StarletteHTTPException) -> ErrorDetail | None:
    """The JSON error for a body FastAPI could not parse, else None.

    FastAPI answers a body that is no JSON text its parser can read, other than a syntax
    error, with a bare 400 "There was an error parsing the body" (code ``http``, no
    field): arrays nested deeper than the parser recurses, bytes that are not UTF-8.
    """
    cause = exc.__cause__
    if exc.status_code != 400 or not isinstance(cause, ValueError | RecursionError):
        return None
    why = "nested too deeply" if isinstance(cause, RecursionError) else "not UTF-8 text"
    return ErrorDetail(code="invalid-json", message=f"body: not valid JSON ({why})", field="body")


def _is_json_type(content_type: str) -> bool:
    """True for ``application/json`` and ``application/*+json``, with any parameters."""
    kind = content_type.split(";")[0].strip().lower()
    return kind == "application/json" or (
        kind.startswith("application/") and kind.endswith("+json")
    )


_Request = TypeVar("_Request", bound=SubmitRequest)


def _admit(remote: RemotePolicy, body: _Request) -> tuple[CrawlOptions, _Request]:
    """The operator's rules on a request body; a refused option is a 422 naming it."""
    try:
        return remote.admit(body)
    except RemoteOptionError as exc:
        error = {"type": "value_error", "loc": ("body", exc.field), "msg": exc.reason}
        raise RequestValidationError([error]) from exc


def _answers(*described: tuple[int, str]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses``: each status answers an ErrorBody, as described."""
    return {status: {"model": ErrorBody, "description": text} for status, text in described}


_ERRORS = _answers(
    (400, "Bad request: a refused or malformed URL, robots.txt refuses the start URL."),
    (401, "Missing or wrong API key (only when the server has one)."),
    (413, "Request body too large."),
    (422, "A field is invalid, unknown, or only the operator may set it; the error names it."),
    (429, "Too many crawls running; try again later."),
)
_FETCH_ERRORS = _ERRORS | _answers(
    (502, "The page could not be fetched or converted."),
    (503, "The server is stopping; the crawl was cut."),
    (504, "The page timed out."),
)
_NOT_FOUND = _ERRORS | _answers((404, "No such id."))


class _SiteloreAPI(FastAPI):
    """FastAPI whose OpenAPI document shows this server's hard caps and auth."""

    def __init__(
        self, *, limits: Limits, remote: RemotePolicy, secured: bool, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._limits = limits
        self._remote = remote
        self._secured = secured

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document, with caps written into the request schemas."""
        if self.openapi_schema:
            return self.openapi_schema
        schema = super().openapi()  # cached by FastAPI: annotated once, in place
        schemas = schema.get("components", {}).get("schemas", {})
        for name, body in schemas.items():
            if name.split("-")[0] in ("SubmitRequest", "CrawlJobRequest"):
                annotate_request_schema(body, self._limits, self._remote)
        if self._secured:
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearerAuth": {"type": "http", "scheme": "bearer"}
            }
            schema["security"] = [{"bearerAuth": []}]
        return schema


def create_app(
    runtime: Runtime,
    *,
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_active_crawls: int = 4,
    max_kept_jobs: int = 100,
    remote: RemotePolicy | None = None,
    hosts: HostPolicy | None = None,
) -> FastAPI:
    """Build the REST app over ``runtime`` (which the caller opens and closes).

    Args:
        runtime: settings (caps, allowed private addresses), store and crawls.
        api_key: when set, requests need ``Authorization: Bearer <api_key>``.
        max_body_bytes: larger request bodies are answered 413.
        max_active_crawls: crawls at once (synchronous and jobs); more answer 429.
        max_kept_jobs: finished crawl jobs remembered for GET.
        remote: what callers may change about politeness (default: robots.txt always
            obeyed, delay at least 1 s, no rendering).
        hosts: the Host and Origin values answered (default: a server bound to
            127.0.0.1, no CORS); others get 421 / 403.
    """
    limits = runtime.settings.limits
    remote = remote or RemotePolicy()
    crawls = _Crawls(runtime)
    jobs = JobManager(
        runtime.open_crawl,
        limits=limits,
        now=runtime.clock.now,
        slots=CrawlSlots(max_active_crawls),
        max_kept=max_kept_jobs,
        on_change=crawls.keep,
    )
    crawls.jobs = jobs

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await jobs.interrupt(SHUTDOWN_REASON)

    app = _SiteloreAPI(
        limits=limits,
        remote=remote,
        secured=api_key is not None,
        title="sitelore",
        version=__version__,
        description=(
            "Turn documentation sites into a local, searchable Markdown store. "
            f"Hard caps on this server: maxPages {limits.max_pages}, maxDepth "
            f"{limits.max_depth}, deadlineSeconds {limits.deadline_seconds:g}."
        ),
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    hosts = hosts or HostPolicy("127.0.0.1")
    app.add_middleware(
        RequestGuard, api_key=api_key, max_body_bytes=max_body_bytes, open_paths=_OPEN_PATHS
    )
    if hosts.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(hosts.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", "last-event-id"],
        )
    # The web UI's gate hands its login cookie on as the bearer key: outside RequestGuard.
    search = service.searcher(runtime)  # one for the app: the model loads once
    mount_ui(app, runtime, jobs, remote, search, api_key=api_key)  # the web UI at /
    app.add_middleware(HostGuard, policy=hosts)  # outermost: before auth, CORS and routes
    _add_error_handlers(app)
    _add_document_routes(app, runtime, jobs, remote, search)
    _add_job_routes(app, runtime, crawls, remote)
    app.include_router(firecrawl_router(runtime, jobs, delay=remote.delay, max_kept=max_kept_jobs))
    app.state.stop = functools.partial(jobs.interrupt, SHUTDOWN_REASON)
    return app


def stopper(app: FastAPI) -> Callable[[], Awaitable[None]]:
    """What to await when the server is asked to stop: ends running crawls as interrupted.

    Their event streams get their ``end`` event and close, so a graceful shutdown need
    not wait for them.
    """
    stop: Callable[[], Awaitable[None]] = app.state.stop
    return stop


def _allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """Every method the routes of this path serve (Starlette's 405 names one route's).

    A path spelled out by a route (``/documents/url``) is that route's alone, though
    a template (``/documents/{document_id}``) matches it too: no document has that id.
    """
    routes = [r for r in app.router.routes if r.matches(request.scope)[0] is not Match.NONE]
    exact = [r for r in routes if not getattr(r, "param_convertors", None)]
    return sorted({method for r in exact or routes for method in getattr(r, "methods", ()) or ()})


def _add_error_handlers(app: FastAPI) -> None:
    async def on_sitelore(request: Request, exc: Exception) -> Response:
        status, detail = error_detail(exc)
        headers = {"retry-after": "30"} if isinstance(exc, BusyError) else {}
        return _error_for(request, status, detail, **headers)

    async def on_validation(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        content_type = request.headers.get("content-type")
        return _error_for(request, *_validation_detail(exc, content_type))

    async def on_http(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        unreadable = _unreadable_body(exc)
        if unreadable is not None:
            return _error_for(request, 400, unreadable)
        code = _HTTP_CODES.get(exc.status_code, "http")
        detail = ErrorDetail(code=code, message=str(exc.detail))
        headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
        if exc.status_code == 405:
            headers["allow"] = ", ".join(_allowed_methods(app, request))
        return _error_for(request, exc.status_code, detail, **headers)

    async def on_crash(request: Request, exc: Exception) -> Response:
        log.error("internal error", exc_info=exc)
        return _error_for(request, *error_detail(exc))

    app.add_exception_handler(SiteloreError, on_sitelore)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)


async def _disconnected(request: Request) -> None:
    """Return when the client has gone (the request body is already read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _while_wanted(
    request: Request, stopping: asyncio.Event, work: Awaitable[CrawlSummary]
) -> CrawlSummary:
    """Run a synchronous crawl; cancel it when its client disconnects or the server stops.

    Raises:
        CrawlStoppedError: the crawl was cancelled for one of those reasons.
    """
    crawl = asyncio.ensure_future(work)
    watchers = {
        asyncio.ensure_future(_disconnected(request)),
        asyncio.ensure_future(stopping.wait()),
    }
    try:
        await asyncio.wait({crawl, *watchers}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (crawl, *watchers):
            task.cancel()
        await asyncio.wait({crawl, *watchers})
    if not crawl.cancelled():
        return crawl.result()
    reason = "the server is stopping" if stopping.is_set() else "the client disconnected"
    log.info("%s: synchronous crawl cancelled: %s", request.url.path, reason)
    raise CrawlStoppedError(f"crawl cancelled: {reason}; pages stored before stay stored")


def _add_document_routes(
    app: FastAPI,
    runtime: Runtime,
    jobs: JobManager,
    remote: RemotePolicy,
    searcher: SemanticSearch,
) -> None:
    store = runtime.store

    @app.get("/healthz", tags=["service"])
    async def healthz() -> Health:
        """Liveness: answers while the server runs (no key needed)."""
        return Health(status="ok", version=__version__)

    @app.post(
        f"{API_PREFIX}/documents/url",
        status_code=201,
        response_model=DocumentOut | CrawlResult,
        responses=_FETCH_ERRORS,
        tags=["documents"],
    )
    async def submit_url(request: Request, body: SubmitRequest) -> DocumentOut | CrawlResult:
        """Ingest one page, or with ``spider: true`` crawl from it, and store the documents.

        Without ``spider`` the answer is the stored document; with it, the crawl summary.
        Options above this server's hard caps are clamped; ``clamped`` lists them.
        A client that disconnects cancels its crawl (pages stored before stay stored).
        """
        asked, admitted = _admit(remote, body)
        async with jobs.slots.admit():
            summary = await _while_wanted(request, jobs.stopping, service.submit(runtime, admitted))
        if body.spider:
            return CrawlResult.from_summary(summary, asked)
        doc = await service.single_document(store, summary)
        return DocumentOut.from_stored(doc, capture=await runtime.capture_of(doc.id))

    @app.get(f"{API_PREFIX}/documents", responses=_ERRORS, tags=["documents"])
    async def list_documents(
        limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Documents to skip.")] = 0,
    ) -> DocumentList:
        """List stored documents, most recently updated first."""
        return await service.list_documents(store, limit=limit, offset=offset)

    @app.get(f"{API_PREFIX}/documents/{{document_id}}", responses=_NOT_FOUND, tags=["documents"])
    async def get_document(
        document_id: str,
        links: Annotated[LinkStyle, Query(description=_LINKS_HELP)] = runtime.settings.links,
    ) -> DocumentOut:
        """One stored document with its Markdown."""
        doc = await service.get_document(store, document_id)
        capture = await runtime.capture_of(doc.id)
        return DocumentOut.from_stored(doc, capture=capture, links=links)

    @app.delete(
        f"{API_PREFIX}/documents/{{document_id}}",
        status_code=204,
        responses=_NOT_FOUND,
        tags=["documents"],
    )
    async def delete_document(document_id: str) -> Response:
        """Delete one stored document."""
        await service.delete_document(store, document_id)
        return Response(status_code=204)

    @app.get(f"{API_PREFIX}/search", responses=_ERRORS, tags=["documents"])
    async def search(
        q: Annotated[
            str, Query(min_length=1, max_length=500, description="Words to find (plain text).")
        ],
        limit: Annotated[int, Query(ge=1, le=50, description="Results to return.")] = 10,
    ) -> SearchResult:
        """The best pages for a question or words, each by its best section.

        Hybrid (BM25 and nearness of meaning fused) when the server has the semantic
        extra and the store has section vectors; else lexical (``rankingNote`` says why).
        """
        ranked = await searcher.search(q, limit=limit)
        return service.search_result(q, ranked)


class _Crawls:
    """The crawl jobs of one app: shaped for the wire, and kept in the store as records."""

    def __init__(self, runtime: Runtime) -> None:
        store = runtime.store
        self._records = store if isinstance(store, JobRecords) else None
        self.jobs: JobManager  # set once the manager exists (it reports to :meth:`keep`)
        # What each job's caller asked, where the operator's rules changed it
        # (forgotten with the job).
        self.asked_of: weakref.WeakKeyDictionary[Job, CrawlOptions] = weakref.WeakKeyDictionary()

    def shape(self, job: Job) -> JobOut:
        """The wire shape of a live job."""
        if job.interrupted_by is not None:
            error: ErrorDetail | None = ErrorDetail(code="interrupted", message=job.interrupted_by)
        else:
            error = None if job.error is None else error_detail(job.error)[1]
        return JobOut.from_job(job, base=_CRAWLS, error=error, requested=self.asked_of.get(job))

    async def keep(self, job: Job) -> None:
        """Save the job's record (at its start and its end); a store failure is logged."""
        if self._records is None:
            return
        try:
            await self._records.save_job(self.shape(job).to_record())
        except StoreError as exc:
            log.warning("crawl job %s: its record was not saved: %s", job.id, exc)

    async def find(self, job_id: str) -> Job | JobOut:
        """A live job, or the record of an earlier one; NotFoundError when neither exists."""
        try:
            return self.jobs.get(job_id)
        except NotFoundError:
            record = None if self._records is None else await self._records.job_record(job_id)
            if record is None:
                raise
            return JobOut.from_record(record, base=_CRAWLS)

    async def remove(self, job_id: str) -> None:
        """Forget a finished job and its record."""
        self.jobs.forget(job_id)
        if self._records is not None:
            await self._records.delete_job_record(job_id)


def _add_job_routes(app: FastAPI, runtime: Runtime, crawls: _Crawls, remote: RemotePolicy) -> None:
    jobs = crawls.jobs

    @app.post(_CRAWLS, status_code=202, responses=_ERRORS, tags=["crawls"])
    async def start_crawl(body: CrawlJobRequest, response: Response) -> JobOut:
        """Start a crawl in the background; follow it at ``links.self`` or ``links.events``."""
        asked, admitted = _admit(remote, body)
        runtime.check_url(body.url)
        job = jobs.start(admitted.url, admitted.crawl_options())
        crawls.asked_of[job] = asked
        response.headers["location"] = f"{_CRAWLS}/{job.id}"
        return crawls.shape(job)

    @app.get(_CRAWLS, responses=_ERRORS, tags=["crawls"])
    async def list_crawls(
        limit: Annotated[int, Query(ge=1, le=100, description="At most this many.")] = 20,
    ) -> JobList:
        """The crawl jobs this server knows, newest first: running ones and the latest
        finished (each one's result at ``links.self``)."""
        return JobList(crawls=[crawls.shape(job).brief() for job in jobs.listed()[:limit]])

    @app.get(f"{_CRAWLS}/{{job_id}}", responses=_NOT_FOUND, tags=["crawls"])
    async def get_crawl(job_id: str) -> JobOut:
        """A crawl job's status and progress; its summary once it has ended.

        Jobs are kept in the store: after a restart an earlier job still answers, and
        one the restart cut short says ``interrupted``.
        """
        found = await crawls.find(job_id)
        return crawls.shape(found) if isinstance(found, Job) else found

    @app.delete(
        f"{_CRAWLS}/{{job_id}}",
        response_model=JobOut,
        responses={**_NOT_FOUND, 204: {"description": "A finished job's record was deleted."}},
        tags=["crawls"],
    )
    async def cancel_crawl(job_id: str) -> JobOut | Response:
        """Cancel a running crawl (200, the job); delete a finished job's record (204).

        Pages stored before a cancel stay stored.
        """
        found = await crawls.find(job_id)
        if isinstance(found, Job) and not found.finished:
            return crawls.shape(await jobs.cancel(job_id))
        await crawls.remove(job_id)
        return Response(status_code=204)

    @app.get(
        f"{_CRAWLS}/{{job_id}}/events",
        responses={**_NOT_FOUND, 200: {"content": {"text/event-stream": {}}}},
        response_class=StreamingResponse,
        tags=["crawls"],
    )
    async def crawl_events(
        job_id: str,
        last_event_id: Annotated[
            str,
            Header(
                pattern=_EVENT_ID_PATTERN,
                description="Resume after this event id (SSE reconnect): ASCII digits.",
            ),
        ] = "",
    ) -> StreamingResponse:
        """Server-sent events: ``page`` per finished page, then one ``end`` with the job.

        A job that ended before a restart streams its ``end`` event only.
        """
        found = await crawls.find(job_id)
        after = int(last_event_id) if last_event_id else 0
        return StreamingResponse(
            _event_stream(crawls, found, after),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )


async def _event_stream(crawls: _Crawls, found: Job | JobOut, after: int) -> AsyncIterator[str]:
    if not isinstance(found, Job):
        data = found.model_dump(mode="json", by_alias=True)
        yield f"event: end\ndata: {json.dumps(data)}\n\n"
        return
    async for event in found.events(after, heartbeat=_HEARTBEAT_SECONDS):
        if event is None:
            yield ": keep-alive\n\n"
        elif event.page is not None:
            data = {"seq": event.seq, "page": event.page.to_json()}
            yield f"id: {event.seq}\nevent: page\ndata: {json.dumps(data)}\n\n"
        else:
            data = crawls.shape(found).model_dump(mode="json", by_alias=True)
            yield f"id: {event.seq}\nevent: end\ndata: {json.dumps(data)}\n\n"
