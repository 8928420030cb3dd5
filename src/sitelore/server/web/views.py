"""What every web UI page shares: the Jinja2 environment, page rendering, form reading.

Templates and static files are package data (``sitelore/server/web/templates``,
``sitelore/server/web/static``), so the UI needs no build step and loads nothing from
elsewhere. Autoescaping is on for every template; the only markup a page inserts
unescaped is what :mod:`sitelore.server.web.markdown` sanitised.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from sitelore import __version__
from sitelore.server.web.gate import CSRF_SCOPE_KEY, csrf_ok

__all__ = ["CsrfError", "Pages", "host_of", "read_form", "redirect", "when"]


class CsrfError(Exception):
    """A form came without the visitor's CSRF token (answered 403 with a page)."""


def when(value: datetime | None) -> str:
    """A timestamp as the UI shows it: UTC, to the second."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def host_of(url: str) -> str:
    """The host of a URL (empty when it has none)."""
    return (urlsplit(url).hostname or "").lower()


class Pages:
    """Renders the UI's templates into HTML answers."""

    def __init__(self, *, secured: bool) -> None:
        self._env = jinja2.Environment(
            loader=jinja2.PackageLoader("sitelore.server.web", "templates"),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._env.filters["when"] = when
        self._env.filters["host"] = host_of
        self._env.globals.update(version=__version__, secured=secured)

    def render(
        self, request: Request, name: str, context: Mapping[str, Any], *, status: int = 200
    ) -> HTMLResponse:
        """Render template ``name`` with ``context`` (plus the CSRF token and the path)."""
        page = self._env.get_template(name).render(
            **context,
            csrf=request.scope.get(CSRF_SCOPE_KEY, ""),
            path=request.url.path,
        )
        return HTMLResponse(page, status_code=status, headers={"cache-control": "no-store"})


async def read_form(request: Request) -> dict[str, str]:
    """A posted form's fields (first value of each), after checking its CSRF token.

    Raises:
        CsrfError: the token is missing or does not match the cookie.
    """
    body = (await request.body()).decode("utf-8", errors="replace")
    fields = {key: values[0] for key, values in parse_qs(body, keep_blank_values=True).items()}
    if not csrf_ok(request.scope, fields.get("csrf")):
        raise CsrfError("the form's security token is missing or stale: reload the page")
    return fields


def redirect(path: str) -> RedirectResponse:
    """See Other: after a form post, the browser GETs ``path``."""
    return RedirectResponse(path, status_code=303)
