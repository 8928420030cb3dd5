"""Requests a rendered page makes obey robots.txt and the origin's spacing, like pages do."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.options import CrawlOptions

PAGE = """<!doctype html><html><head><title>App</title>
<script src="/a.js"></script><script src="/b.js"></script><script src="/private/c.js"></script>
</head><body><main id="root"><p>Loading</p></main></body></html>"""


def _app(arrivals: list[tuple[float, str]]) -> web.Application:
    async def handle(request: web.Request) -> web.StreamResponse:
        arrivals.append((time.monotonic(), request.path))
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private/\n")
        if request.path == "/":
            return web.Response(text=PAGE, content_type="text/html")
        if request.path.endswith(".js"):
            name = request.path.rsplit("/", 1)[-1]
            js = f"document.getElementById('root').innerHTML += '<p>ran {name}</p>';"
            return web.Response(text=js, content_type="application/javascript")
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


async def test_rendered_sub_requests_are_spaced_and_obey_robots(tmp_path: Path) -> None:
    """Scripts load one delay apart (server clock); a disallowed script is never requested."""
    pytest.importorskip("playwright", reason="the render extra is not installed")
    from sitelore.adapters.render import find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")
    arrivals: list[tuple[float, str]] = []
    server = TestServer(_app(arrivals), host="127.0.0.1")
    await server.start_server()
    settings = Settings(store=str(tmp_path / "s.db"), allow_private=("127.0.0.1",))
    try:
        async with Runtime(settings) as runtime:
            summary = await runtime.crawl(
                str(server.make_url("/")), CrawlOptions(render=True, max_depth=0, delay=0.2)
            )
    finally:
        await server.close()
    paths = [path for _, path in arrivals]
    assert "/private/c.js" not in paths
    assert sorted(p for p in paths if p.endswith(".js")) == ["/a.js", "/b.js"]
    assert summary.pages_indexed == 1
    times = [t for t, path in arrivals if path != "/robots.txt"]
    assert len(times) == 3  # the page, then its two allowed scripts
    assert min(b - a for a, b in itertools.pairwise(times)) >= 0.2
