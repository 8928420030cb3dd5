"""Serve a static example site (the bundled Lumen docs by default) on a loopback port.

Used by ``sitelore demo`` and by the integration tests as their fixture site. The
server is deliberately small and deterministic:

* ``/dir/`` serves ``dir/index.html``; ``/dir`` (a directory without the slash) answers
  ``301`` to ``/dir/``, as common static hosts do;
* rules from the site's ``_redirects`` file (``FROM TO STATUS`` per line, ``#``
  comments) answer first, with ``TO`` sent verbatim as ``Location``;
* a missing file is a ``404`` with a small HTML page;
* Content-Type comes from the file suffix (:data:`CONTENT_TYPES`);
* files carry a strong ``ETag`` (a hash of the bytes) and ``Last-Modified`` (the
  file's mtime); ``If-None-Match`` (which wins when present) or else
  ``If-Modified-Since`` answers ``304`` with no body when the file is unchanged;
* only GET and HEAD are served.

It never serves anything outside ``root``: request paths with ``.``/``..`` segments,
backslashes, NUL bytes or dot-files are refused, every candidate is resolved
(following symlinks) and must stay inside the resolved root, and the site's own
``_redirects`` and ``README.md`` are never served. Files are read on each request, so
a test may change the site while it is being served.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.resources
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from sitelore.core.errors import ConfigError

__all__ = [
    "CONTENT_TYPES",
    "HIDDEN_NAMES",
    "RedirectRule",
    "bundled_site_path",
    "load_redirects",
    "serve_site",
]

CONTENT_TYPES: Mapping[str, str] = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".xml": "application/xml",
    ".svg": "image/svg+xml",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".pdf": "application/pdf",
}
"""Content-Type by file suffix; anything else is ``application/octet-stream``."""

HIDDEN_NAMES: frozenset[str] = frozenset({"_redirects", "README.md"})
"""File names that are part of the site's source, never served (at any depth)."""

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

_NOT_FOUND_PAGE = (
    b'<!doctype html>\n<html lang="en">\n<head><meta charset="utf-8">'
    b"<title>404 Not Found</title></head>\n"
    b"<body><h1>Not Found</h1><p>There is no page at this address.</p></body>\n</html>\n"
)


@dataclass(frozen=True, slots=True)
class RedirectRule:
    """One line of ``_redirects``: requests for ``source`` answer ``status`` to ``target``."""

    source: str
    target: str
    status: int


def load_redirects(root: Path) -> dict[str, RedirectRule]:
    """Parse ``root/_redirects`` (absent file: no rules); a malformed line is a ConfigError."""
    path = root / "_redirects"
    if not path.is_file():
        return {}
    rules: dict[str, RedirectRule] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 3 or not fields[0].startswith("/") or not fields[2].isdigit():
            raise ConfigError(f"{path}:{number}: expected 'FROM TO STATUS', got {raw.strip()!r}")
        status = int(fields[2])
        if status not in _REDIRECT_STATUSES:
            raise ConfigError(f"{path}:{number}: {status} is not a redirect status")
        rules[fields[0]] = RedirectRule(fields[0], fields[1], status)
    return rules


def bundled_site_path() -> Path:
    """Return the directory of the bundled example site (installed wheel, else the repo)."""
    packaged = importlib.resources.files("sitelore") / "example_site"
    if isinstance(packaged, Path) and packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "examples" / "site"


@dataclass(frozen=True, slots=True)
class _Found:
    body: bytes
    content_type: str
    mtime: float

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'

    @property
    def last_modified(self) -> str:
        return formatdate(self.mtime, usegmt=True)

    def not_modified(self, if_none_match: str | None, if_modified_since: str | None) -> bool:
        """RFC 9110 13.1: If-None-Match (weak comparison) wins over If-Modified-Since."""
        if if_none_match is not None:
            tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
            return "*" in tags or self.etag in tags
        if if_modified_since is None:
            return False
        try:
            since = parsedate_to_datetime(if_modified_since)
        except (TypeError, ValueError):
            return False
        return since.tzinfo is not None and int(self.mtime) <= since.timestamp()


@dataclass(frozen=True, slots=True)
class _AddSlash:
    location: str


def _lookup(root: Path, url_path: str) -> _Found | _AddSlash | None:
    """Map a decoded URL path to a file inside ``root`` (resolved), or None when refused."""
    if "\\" in url_path or "\x00" in url_path or not url_path.startswith("/"):
        return None
    segments = url_path.split("/")[1:]
    names = [s for s in segments if s]
    if any(s.startswith(".") or s in HIDDEN_NAMES for s in names):
        return None
    candidate = root.joinpath(*names).resolve()
    if not candidate.is_relative_to(root):
        return None
    if candidate.is_dir():
        if not url_path.endswith("/"):
            return _AddSlash(quote(url_path) + "/")
        candidate = (candidate / "index.html").resolve()
        if not candidate.is_relative_to(root):
            return None
    if not candidate.is_file() or candidate.name in HIDDEN_NAMES:
        return None
    content_type = CONTENT_TYPES.get(candidate.suffix.lower(), "application/octet-stream")
    return _Found(candidate.read_bytes(), content_type, candidate.stat().st_mtime)


def _make_app(
    site_root: Path,
    log: list[tuple[float, str]] | None,
    served: list[tuple[str, int]] | None = None,
) -> web.Application:
    root = site_root.resolve(strict=True)
    if not root.is_dir():
        raise ConfigError(f"site root {site_root} is not a directory")
    redirects = load_redirects(root)

    async def handle(request: web.Request) -> web.StreamResponse:
        if log is not None:
            log.append((time.monotonic(), request.raw_path))
        response = await answer(request)
        if served is not None:
            served.append((request.raw_path, response.status))
        return response

    async def answer(request: web.Request) -> web.StreamResponse:
        rule = redirects.get(request.path)
        if rule is not None:
            return web.Response(
                status=rule.status,
                headers={"Location": rule.target},
                text=f"Moved to {rule.target}\n",
            )
        found = await asyncio.to_thread(_lookup, root, request.path)
        if isinstance(found, _AddSlash):
            return web.Response(status=301, headers={"Location": found.location}, text="Moved\n")
        if found is None:
            return web.Response(
                status=404, body=_NOT_FOUND_PAGE, content_type="text/html", charset="utf-8"
            )
        validators = {"ETag": found.etag, "Last-Modified": found.last_modified}
        if found.not_modified(
            request.headers.get("If-None-Match"), request.headers.get("If-Modified-Since")
        ):
            return web.Response(status=304, headers=validators)
        return web.Response(
            body=found.body, headers={"Content-Type": found.content_type, **validators}
        )

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)  # HEAD is allowed with GET
    return app


@contextlib.asynccontextmanager
async def serve_site(
    root: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    log: list[tuple[float, str]] | None = None,
    served: list[tuple[str, int]] | None = None,
) -> AsyncIterator[str]:
    """Serve ``root`` on ``host:port`` (0 = a free port) and yield the base URL.

    ``log``, when given, receives ``(time.monotonic(), raw request target)`` for every
    request as it arrives (path and query, still percent-encoded), so tests can check
    what was fetched and how the requests were spaced. ``served``, when given,
    receives ``(raw request target, status)`` for every answer (``304`` included).

    >>> async with serve_site(bundled_site_path()) as base:  # doctest: +SKIP
    ...     base
    'http://127.0.0.1:41234'
    """
    runner = web.AppRunner(_make_app(root, log, served), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_port = runner.addresses[0][1]
        shown_host = f"[{host}]" if ":" in host else host
        yield f"http://{shown_host}:{bound_port}"
    finally:
        await runner.cleanup()
