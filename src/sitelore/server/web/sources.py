"""The web UI's source pages: named sources with freshness, their change reports, update.

A source's state comes from :func:`sitelore.app.refresh.source_status`; "Update now" runs
:func:`sitelore.app.refresh.update_source` (an incremental re-crawl that stores a change
report) within the server's crawl slots, then shows the report it stored.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from sitelore.app.bootstrap import Runtime
from sitelore.app.jobs import JobManager
from sitelore.app.refresh import source_status, update_source
from sitelore.core.errors import BusyError
from sitelore.server.web.views import Pages, read_form, redirect

__all__ = ["source_routes"]

_REPORTS = 10


def source_routes(runtime: Runtime, jobs: JobManager, pages: Pages) -> APIRouter:
    """The source pages over ``runtime``'s settings and store."""
    router = APIRouter(include_in_schema=False)
    sources = runtime.settings.sources
    store = runtime.store

    @router.get("/sources")
    async def listing(request: Request) -> Response:
        now = runtime.clock.now()
        statuses = [
            await source_status(store, name, spec, now) for name, spec in sorted(sources.items())
        ]
        return pages.render(request, "sources.html", {"statuses": statuses})

    def missing(request: Request, name: str) -> Response:
        message = f"source {name!r}: no source of that name in the settings"
        return pages.render(request, "error.html", {"message": message}, status=404)

    @router.get("/sources/{name}")
    async def source(request: Request, name: str, busy: str = "") -> Response:
        spec = sources.get(name)
        if spec is None:
            return missing(request, name)
        status = await source_status(store, name, spec, runtime.clock.now())
        reports = await store.change_reports(name, limit=_REPORTS)
        context = {"status": status, "reports": reports, "busy": bool(busy)}
        return pages.render(request, "source.html", context)

    @router.post("/sources/{name}/update")
    async def update(request: Request, name: str) -> Response:
        await read_form(request)
        spec = sources.get(name)
        if spec is None:
            return missing(request, name)
        try:
            async with jobs.slots.admit():
                await update_source(runtime, name, spec)
        except BusyError:
            return redirect(f"/sources/{name}?busy=1")
        return redirect(f"/sources/{name}")

    return router
