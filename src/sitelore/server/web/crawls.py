"""The web UI's crawl pages: the start form, live progress, cancel, the finished summary.

The form has the REST body's fields (:class:`~sitelore.app.wire.CrawlJobRequest`), each
with its default and this server's cap beside it; a submitted form goes through the
same operator rules (:class:`~sitelore.app.wire.RemotePolicy`) and job manager as
``POST /api/v1/crawls``. Progress streams from the same job events as
``/api/v1/crawls/{id}/events``, at a UI path (``/crawls/{id}/progress``) because an
EventSource cannot send the API's bearer key; the page's login cookie stands for it
there. Without JavaScript the page shows the state as of its last load.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from sitelore.app.bootstrap import Runtime
from sitelore.app.jobs import Job, JobManager
from sitelore.app.wire import CrawlJobRequest, RemoteOptionError, RemotePolicy
from sitelore.core.errors import NotFoundError, SiteloreError
from sitelore.core.guard import without_userinfo
from sitelore.core.models import PageOutcome, SkipReason
from sitelore.server.web.views import Pages, read_form, redirect

__all__ = [
    "FIELDS",
    "SKIP_REASONS",
    "FormField",
    "crawl_routes",
    "parse_crawl_form",
    "skipped_line",
]

_HEARTBEAT_SECONDS = 15.0
#: The most jobs the crawl page lists (newest first).
_LISTED_JOBS = 200


@dataclasses.dataclass(frozen=True, slots=True)
class FormField:
    """One field of the crawl form: its wire name, input kind and label."""

    name: str  #: the REST body's (camelCase) name
    kind: str  #: int, float, bool, text or lines
    label: str


FIELDS: tuple[FormField, ...] = (
    FormField("maxPages", "int", "Pages at most"),
    FormField("maxDepth", "int", "Link depth"),
    FormField("concurrency", "int", "Requests in flight"),
    FormField("delay", "float", "Delay per origin (s)"),
    FormField("deadlineSeconds", "float", "Deadline (s)"),
    FormField("pathPrefix", "text", "Path prefix"),
    FormField("excludePatterns", "lines", "Exclude patterns (one glob a line)"),
    FormField("sameDomain", "bool", "Stay on the start host"),
    FormField("sitemap", "bool", "Also seed from sitemaps"),
    FormField("render", "bool", "Render JavaScript"),
)

#: What each skip reason means, for "why was this URL skipped".
SKIP_REASONS: Mapping[str, str] = {
    SkipReason.ROBOTS: "robots.txt disallows it",
    SkipReason.FILTERED: "outside the crawl's scope (host, path prefix or exclude pattern)",
    SkipReason.DUPLICATE: "already seen in this crawl",
    SkipReason.DEPTH: "deeper than the depth limit",
    SkipReason.CAP: "the page budget was spent",
    SkipReason.BLOCKED: "a private or refused address",
    SkipReason.INVALID: "not a valid http(s) URL",
    SkipReason.NOINDEX: "the page asks not to be indexed",
    SkipReason.THROTTLED: "the site asked for a longer wait than the crawl may give",
}


def parse_crawl_form(form: Mapping[str, str]) -> dict[str, Any]:
    """The REST body a posted crawl form stands for (typed; blank fields left out).

    Raises:
        ValueError: a number field holds no number (the message names the field).
    """
    body: dict[str, Any] = {"url": form.get("url", "").strip()}
    for field in FIELDS:
        raw = form.get(field.name, "").strip()
        if field.kind == "bool":
            body[field.name] = field.name in form
        elif field.kind == "lines":
            body[field.name] = tuple(line.strip() for line in raw.splitlines() if line.strip())
        elif raw and field.kind == "text":
            body[field.name] = raw
        elif raw:
            try:
                body[field.name] = int(raw) if field.kind == "int" else float(raw)
            except ValueError:
                raise ValueError(f"{field.name}: {raw!r} is not a number") from None
    return body


def _field_of(exc: ValidationError) -> tuple[str, str]:
    first = exc.errors()[0]
    loc = ".".join(str(part) for part in first.get("loc", ())) or "url"
    return loc, f"{loc}: {first.get('msg', 'invalid')}"


def _defaults(remote: RemotePolicy) -> dict[str, Any]:
    """The form's starting values: the REST body's defaults, the operator's delay."""
    fields = CrawlJobRequest.model_fields.items()
    values = {
        info.alias or name: info.get_default(call_default_factory=True)
        for name, info in fields
        if not info.is_required()
    }
    return {**values, "delay": remote.delay, "excludePatterns": "", "pathPrefix": ""}


def _caps(runtime: Runtime, remote: RemotePolicy) -> dict[str, str]:
    limits = runtime.settings.limits
    render = "allowed by the operator" if remote.allow_render else "not enabled on this server"
    return {
        "maxPages": f"at most {limits.max_pages}",
        "maxDepth": f"at most {limits.max_depth}",
        "concurrency": f"at most {limits.max_concurrency}",
        "deadlineSeconds": f"at most {limits.deadline_seconds:g}",
        "delay": f"at least {remote.delay:g}",
        "render": render,
    }


def _progress(job: Job) -> dict[str, Any]:
    pages = job.pages
    return {
        "status": str(job.status),
        "done": len(pages),
        "cap": job.applied.max_pages,
        "indexed": sum(1 for p in pages if p.indexed),
        "errors": sum(1 for p in pages if p.error is not None),
        "current": pages[-1].url if pages else None,
        "skipped": skipped_line(job.skipped),
    }


def skipped_line(skipped: Mapping[str, int]) -> str:
    """``robots 2 · filtered 5``: the reasons that happened, for the live progress."""
    return " · ".join(f"{reason} {count}" for reason, count in skipped.items() if count) or "none"


def _page_row(page: PageOutcome) -> dict[str, Any]:
    return {
        "url": page.url,
        "status": page.status,
        "documentId": page.document_id,
        "outcome": page_outcome(page),
    }


def page_outcome(page: PageOutcome) -> str:
    """One word or line saying how a crawled page ended."""
    if page.error is not None:
        return f"failed: {page.error.message}"
    if page.indexed:
        return "stored"
    if page.redirect_duplicate:
        return "redirect to a page already fetched"
    return "not stored (noindex)"


def crawl_routes(
    runtime: Runtime, jobs: JobManager, remote: RemotePolicy, pages: Pages
) -> APIRouter:
    """The crawl pages; the server's jobs (from here or the API) are listed on ``/crawls``."""
    router = APIRouter(include_in_schema=False)

    def form_page(
        request: Request, values: Mapping[str, Any], error: str | None = None, field: str = ""
    ) -> Response:
        listed = jobs.listed()[:_LISTED_JOBS]
        context = {
            "fields": FIELDS,
            "values": values,
            "caps": _caps(runtime, remote),
            "error": error,
            "error_field": field,
            "jobs": listed,
        }
        return pages.render(request, "crawls.html", context, status=422 if error else 200)

    @router.get("/crawls")
    async def crawls(request: Request) -> Response:
        return form_page(request, _defaults(remote))

    @router.post("/crawls")
    async def start(request: Request) -> Response:
        form = await read_form(request)
        ticked = {f.name: f.name in form for f in FIELDS if f.kind == "bool"}
        # The URL as typed, but never its password (a refused URL is shown again).
        url = without_userinfo(form.get("url", ""))
        shown = {**_defaults(remote), **form, **ticked, "url": url}
        try:
            body = CrawlJobRequest.model_validate(parse_crawl_form(form))
            _, admitted = remote.admit(body)
            runtime.check_url(admitted.url)
            job = jobs.start(admitted.url, admitted.crawl_options())
        except ValueError as exc:
            field, message = _field_of(exc) if isinstance(exc, ValidationError) else ("", str(exc))
            return form_page(request, shown, message, field or message.split(":")[0])
        except RemoteOptionError as exc:
            return form_page(request, shown, str(exc), exc.field)
        except SiteloreError as exc:
            return form_page(request, shown, str(exc), "url")
        return redirect(f"/crawls/{job.id}")

    @router.get("/crawls/{job_id}")
    async def crawl(request: Request, job_id: str) -> Response:
        try:
            job = jobs.get(job_id)
        except NotFoundError as exc:
            return pages.render(request, "error.html", {"message": str(exc)}, status=404)
        summary = job.summary
        skipped = summary.skipped_by_reason() if summary is not None else {}
        context = {
            "job": job,
            "progress": _progress(job),
            "rows": [_page_row(page) for page in job.pages],
            "summary": summary,
            "skipped": skipped,
            "reasons": SKIP_REASONS,
            "error": str(job.error) if job.error is not None else None,
            "options": job.applied.model_dump(mode="json", by_alias=True),
        }
        return pages.render(request, "crawl.html", context)

    @router.post("/crawls/{job_id}/cancel")
    async def cancel(request: Request, job_id: str) -> Response:
        await read_form(request)
        try:
            await jobs.cancel(job_id)
        except NotFoundError as exc:
            return pages.render(request, "error.html", {"message": str(exc)}, status=404)
        return redirect(f"/crawls/{job_id}")

    @router.get("/crawls/{job_id}/progress")
    async def progress(job_id: str, after: int = 0) -> Response:
        job = jobs.find(job_id)
        if job is None:
            return Response(status_code=404)

        async def stream() -> AsyncIterator[str]:
            async for event in job.events(after, heartbeat=_HEARTBEAT_SECONDS):
                if event is None:
                    yield ": keep-alive\n\n"
                    continue
                data = {"progress": _progress(job)}
                if event.page is not None:
                    data["page"] = _page_row(event.page)
                kind = "page" if event.page is not None else "end"
                yield f"id: {event.seq}\nevent: {kind}\ndata: {json.dumps(data)}\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    return router
