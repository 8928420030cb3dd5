"""The REST API of ``sitelore serve``: submit, store, search and crawl jobs over HTTP.

:func:`create_app` builds a FastAPI app around one Runtime; nothing lives at module
level. The layer is thin: each route validates with the :mod:`sitelore.wire` models,
calls :mod:`sitelore.service`, the store or the job manager, and shapes the answer.

* Every error is JSON, ``{"error": {"code", "message", "field"}}``, with its status
  from one table (:data:`STATUS_OF`); validation errors name the field.
* The operator's hard caps apply to every request: larger asks are clamped and the
  answer's ``clamped`` says so. Private addresses are a server setting, never a field.
  Politeness stays the operator's (:class:`~sitelore.wire.RemotePolicy`): robots.txt
  cannot be switched off, delay only raised, render asked for only where allowed.
* With an API key every route but ``/healthz`` and ``/openapi.json`` needs
  ``Authorization: Bearer <key>``; bodies are capped (:class:`~sitelore.asgi_guard.RequestGuard`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import weakref
from collections.abc import AsyncIterator, Mapping
from typing import Annotated, Any, TypeVar

from fastapi import FastAPI, Header, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sitelore import __version__, service
from sitelore.asgi_guard import DEFAULT_MAX_BODY_BYTES, RequestGuard
from sitelore.bootstrap import Runtime
from sitelore.errors import (
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
from sitelore.jobs import CrawlSlots, Job, JobManager
from sitelore.models import CrawlOptions, Limits
from sitelore.web import mount_ui
from sitelore.wire import (
    CrawlJobRequest,
    CrawlResult,
    DocumentItem,
    DocumentList,
    DocumentOut,
    ErrorBody,
    ErrorDetail,
    Health,
    Hit,
    JobOut,
    RemoteOptionError,
    RemotePolicy,
    SearchResult,
    SubmitRequest,
    annotate_request_schema,
)

__all__ = ["API_PREFIX", "STATUS_OF", "create_app", "error_detail", "status_of"]

log = logging.getLogger(__name__)

API_PREFIX = "/api/v1"
_CRAWLS = f"{API_PREFIX}/crawls"
_OPEN_PATHS = ("/healthz", "/openapi.json")
_HEARTBEAT_SECONDS = 15.0
_HTTP_CODES = {404: "not-found", 405: "method-not-allowed"}

#: Error class -> (HTTP status, error code); the most specific class in the MRO wins.
STATUS_OF: Mapping[type[BaseException], tuple[int, str]] = {
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
    for klass in error_class.__mro__:
        if klass in STATUS_OF:
            return STATUS_OF[klass]
    return 500, "internal"


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


def _error_response(status: int, detail: ErrorDetail, **headers: str) -> JSONResponse:
    body = ErrorBody(error=detail).model_dump(mode="json", by_alias=True)
    return JSONResponse(body, status_code=status, headers=headers or None)


def _validation_detail(exc: RequestValidationError) -> tuple[int, ErrorDetail]:
    errors = list(exc.errors())
    first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request"}
    loc = [str(part) for part in first.get("loc", ())]
    field = ".".join(loc[1:]) if len(loc) > 1 else (loc[0] if loc else "body")
    if first.get("type") == "json_invalid":
        return 400, ErrorDetail(code="invalid-json", message="body: not valid JSON", field="body")
    others = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    message = f"{field}: {first.get('msg', 'invalid')}{others}"
    return 422, ErrorDetail(code="validation", message=message, field=field)


_Request = TypeVar("_Request", bound=SubmitRequest)


def _admit(remote: RemotePolicy, body: _Request) -> tuple[CrawlOptions, _Request]:
    """The operator's rules on a request body; a refused option is a 422 naming it."""
    try:
        return remote.admit(body)
    except RemoteOptionError as exc:
        error = {"type": "value_error", "loc": ("body", exc.field), "msg": exc.reason}
        raise RequestValidationError([error]) from exc


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in (
        (400, "Bad request: a refused or malformed URL, robots.txt refuses the start URL."),
        (401, "Missing or wrong API key (only when the server has one)."),
        (413, "Request body too large."),
        (422, "A field is invalid, unknown, or only the operator may set it; the error names it."),
        (429, "Too many crawls running; try again later."),
    )
}
_FETCH_ERRORS: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    502: {"model": ErrorBody, "description": "The page could not be fetched or converted."},
    504: {"model": ErrorBody, "description": "The page timed out."},
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    **_ERRORS,
    404: {"model": ErrorBody, "description": "No such id."},
}


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
        schema = get_openapi(
            title=self.title,
            version=self.version,
            description=self.description,
            routes=self.routes,
        )
        schemas = schema.get("components", {}).get("schemas", {})
        for name, body in schemas.items():
            if name.split("-")[0] in ("SubmitRequest", "CrawlJobRequest"):
                annotate_request_schema(body, self._limits, self._remote)
        if self._secured:
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearerAuth": {"type": "http", "scheme": "bearer"}
            }
            schema["security"] = [{"bearerAuth": []}]
        self.openapi_schema = schema
        return schema


def create_app(
    runtime: Runtime,
    *,
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_active_crawls: int = 4,
    max_kept_jobs: int = 100,
    remote: RemotePolicy | None = None,
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
    """
    limits = runtime.settings.limits
    remote = remote or RemotePolicy()
    jobs = JobManager(
        runtime.open_crawl,
        limits=limits,
        now=runtime.clock.now,
        slots=CrawlSlots(max_active_crawls),
        max_kept=max_kept_jobs,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await jobs.aclose()

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
    app.add_middleware(
        RequestGuard, api_key=api_key, max_body_bytes=max_body_bytes, open_paths=_OPEN_PATHS
    )
    _add_error_handlers(app)
    _add_document_routes(app, runtime, jobs, remote)
    _add_job_routes(app, runtime, jobs, remote)
    mount_ui(app, runtime, jobs, remote, api_key=api_key)  # the web UI at /
    return app


def _add_error_handlers(app: FastAPI) -> None:
    async def on_sitelore(_request: Request, exc: Exception) -> JSONResponse:
        status, detail = error_detail(exc)
        headers = {"retry-after": "30"} if isinstance(exc, BusyError) else {}
        return _error_response(status, detail, **headers)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return _error_response(*_validation_detail(exc))

    async def on_http(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _HTTP_CODES.get(exc.status_code, "http")
        detail = ErrorDetail(code=code, message=str(exc.detail))
        return _error_response(exc.status_code, detail, **(exc.headers or {}))

    async def on_crash(_request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error", exc_info=exc)
        return _error_response(*error_detail(exc))

    app.add_exception_handler(SiteloreError, on_sitelore)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)


def _add_document_routes(
    app: FastAPI, runtime: Runtime, jobs: JobManager, remote: RemotePolicy
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
    async def submit_url(body: SubmitRequest) -> DocumentOut | CrawlResult:
        """Ingest one page, or with ``spider: true`` crawl from it, and store the documents.

        Without ``spider`` the answer is the stored document; with it, the crawl summary.
        Options above this server's hard caps are clamped; ``clamped`` lists them.
        """
        asked, admitted = _admit(remote, body)
        async with jobs.slots.admit():
            summary = await service.submit(runtime, admitted)
        if body.spider:
            return CrawlResult.from_summary(summary, asked)
        return DocumentOut.from_stored(await service.single_document(store, summary))

    @app.get(f"{API_PREFIX}/documents", responses=_ERRORS, tags=["documents"])
    async def list_documents(
        limit: Annotated[int, Query(ge=1, le=100, description="Page size.")] = 20,
        offset: Annotated[int, Query(ge=0, description="Documents to skip.")] = 0,
    ) -> DocumentList:
        """List stored documents, most recently updated first."""
        total = await store.count()
        docs = await store.list(limit=limit, offset=offset)
        more = offset + len(docs) < total
        return DocumentList(
            total=total,
            limit=limit,
            offset=offset,
            next_offset=offset + len(docs) if more and docs else None,
            documents=[DocumentItem.from_stored(doc) for doc in docs],
        )

    @app.get(f"{API_PREFIX}/documents/{{document_id}}", responses=_NOT_FOUND, tags=["documents"])
    async def get_document(document_id: str) -> DocumentOut:
        """One stored document with its Markdown."""
        return DocumentOut.from_stored(await service.get_document(store, document_id))

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
        """Full-text search over stored documents (title weighted above body)."""
        hits = await store.search(q, limit=limit)
        return SearchResult(query=q, hits=[Hit.from_hit(hit) for hit in hits])


def _add_job_routes(app: FastAPI, runtime: Runtime, jobs: JobManager, remote: RemotePolicy) -> None:
    # What each job's caller asked, where the operator's rules changed it (forgotten
    # with the job).
    asked_of: weakref.WeakKeyDictionary[Job, CrawlOptions] = weakref.WeakKeyDictionary()

    def shape(job: Job) -> JobOut:
        error = None if job.error is None else error_detail(job.error)[1]
        return JobOut.from_job(job, base=_CRAWLS, error=error, requested=asked_of.get(job))

    @app.post(_CRAWLS, status_code=202, responses=_ERRORS, tags=["crawls"])
    async def start_crawl(body: CrawlJobRequest, response: Response) -> JobOut:
        """Start a crawl in the background; follow it at ``links.self`` or ``links.events``."""
        asked, admitted = _admit(remote, body)
        runtime.check_url(body.url)
        job = jobs.start(admitted.url, admitted.crawl_options())
        asked_of[job] = asked
        response.headers["location"] = f"{_CRAWLS}/{job.id}"
        return shape(job)

    @app.get(f"{_CRAWLS}/{{job_id}}", responses=_NOT_FOUND, tags=["crawls"])
    async def get_crawl(job_id: str) -> JobOut:
        """A crawl job's status and progress; its summary once it has ended."""
        return shape(jobs.get(job_id))

    @app.delete(f"{_CRAWLS}/{{job_id}}", responses=_NOT_FOUND, tags=["crawls"])
    async def cancel_crawl(job_id: str) -> JobOut:
        """Cancel a running crawl; pages stored before the cancel stay stored."""
        return shape(await jobs.cancel(job_id))

    @app.get(
        f"{_CRAWLS}/{{job_id}}/events",
        responses={**_NOT_FOUND, 200: {"content": {"text/event-stream": {}}}},
        response_class=StreamingResponse,
        tags=["crawls"],
    )
    async def crawl_events(
        job_id: str,
        last_event_id: Annotated[
            str | None, Header(description="Resume after this event id (SSE reconnect).")
        ] = None,
    ) -> StreamingResponse:
        """Server-sent events: ``page`` per finished page, then one ``end`` with the job."""
        job = jobs.get(job_id)
        after = int(last_event_id) if last_event_id and last_event_id.isdigit() else 0

        async def stream() -> AsyncIterator[str]:
            async for event in job.events(after, heartbeat=_HEARTBEAT_SECONDS):
                if event is None:
                    yield ": keep-alive\n\n"
                elif event.page is not None:
                    data = {"seq": event.seq, "page": event.page.to_json()}
                    yield f"id: {event.seq}\nevent: page\ndata: {json.dumps(data)}\n\n"
                else:
                    data = shape(job).model_dump(mode="json", by_alias=True)
                    yield f"id: {event.seq}\nevent: end\ndata: {json.dumps(data)}\n\n"

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )
