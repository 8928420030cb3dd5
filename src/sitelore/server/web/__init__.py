"""The web UI of ``sitelore serve``: search, documents, crawls and sources in a browser.

:func:`mount_ui` adds the pages (at ``/``; the REST API stays under ``/api/v1``), the
package's static files (``/static``) and the :class:`~sitelore.server.web.gate.UIGate` to an
app built by :func:`sitelore.server.api.create_app`. The pages call the service layer, the
job manager and the refresh functions directly, never the REST routes over HTTP.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Query, Request, Response
from starlette.staticfiles import StaticFiles

from sitelore.app.bootstrap import Runtime
from sitelore.app.jobs import JobManager
from sitelore.app.semantic import SemanticSearch
from sitelore.app.wire import RemotePolicy
from sitelore.server.web.crawls import crawl_routes
from sitelore.server.web.documents import document_routes
from sitelore.server.web.gate import SESSION_COOKIE, UIGate, cookie_header, session_value
from sitelore.server.web.sources import source_routes
from sitelore.server.web.views import CsrfError, Pages, read_form, redirect

__all__ = ["error_page", "mount_ui"]

_STATIC = Path(__file__).parent / "static"
_SESSION_SECONDS = 7 * 24 * 3600


def mount_ui(
    app: FastAPI,
    runtime: Runtime,
    jobs: JobManager,
    remote: RemotePolicy,
    searcher: SemanticSearch,
    *,
    api_key: str | None = None,
) -> None:
    """Serve the web UI from ``app`` (call before the app starts).

    ``searcher`` is the app's search (shared with the REST API, so one model loads).
    """
    pages = Pages(secured=api_key is not None)
    app.mount("/static", StaticFiles(directory=_STATIC), name="static")
    app.include_router(document_routes(runtime, pages, searcher))
    app.include_router(crawl_routes(runtime, jobs, remote, pages))
    app.include_router(source_routes(runtime, jobs, pages))
    app.include_router(_login_routes(pages, api_key))
    app.add_middleware(UIGate, api_key=api_key)

    async def on_csrf(request: Request, exc: Exception) -> Response:
        context = {"heading": "Form refused", "message": str(exc)}
        return pages.render(request, "error.html", context, status=403)

    app.add_exception_handler(CsrfError, on_csrf)
    app.state.ui_pages = pages


_HEADINGS = {404: "Not found", 405: "Not found", 422: "Not understood"}


def error_page(request: Request, status: int, message: str) -> Response:
    """The UI's page for an error the app's handlers answer on a UI path (a query
    parameter out of range, a path no page has, a crash), in place of the API's JSON."""
    pages: Pages = request.app.state.ui_pages
    heading = _HEADINGS.get(status, "Something went wrong" if status >= 500 else "Refused")
    context = {"heading": heading, "message": message}
    return pages.render(request, "error.html", context, status=status)


def _safe_next(target: str) -> str:
    """Only a path on this server (never ``//host`` or a scheme) to go to after login."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return quote(target, safe="/?=&%#-_.~")


def _login_routes(pages: Pages, api_key: str | None) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/login")
    async def login_form(
        request: Request, target: Annotated[str, Query(alias="next", max_length=2000)] = "/"
    ) -> Response:
        return pages.render(request, "login.html", {"next": _safe_next(target), "error": None})

    @router.post("/login")
    async def login(request: Request) -> Response:
        form = await read_form(request)
        target = _safe_next(form.get("next", "/"))
        if api_key is None:
            return redirect(target)
        if not hmac.compare_digest(form.get("key", "").encode(), api_key.encode()):
            context = {"next": target, "error": "That is not this server's API key."}
            return pages.render(request, "login.html", context, status=401)
        response = redirect(target)
        response.headers.append(
            "set-cookie",
            cookie_header(SESSION_COOKIE, session_value(api_key), max_age=_SESSION_SECONDS),
        )
        return response

    @router.post("/logout")
    async def logout(request: Request) -> Response:
        await read_form(request)
        response = redirect("/login")
        response.headers.append("set-cookie", cookie_header(SESSION_COOKIE, "", max_age=0))
        return response

    return router
