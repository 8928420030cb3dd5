"""Rendering JavaScript-only pages: Chromium drives the page, our fetcher serves every request.

These tests need the ``render`` extra (Playwright) and a Chromium on the machine;
without them they are skipped, and the usage error for ``--render`` is tested instead.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from sitelore.adapters.store import open_store
from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.errors import BlockedURLError, UsageError
from sitelore.core.options import CrawlOptions

APP_PAGE = """<!doctype html><html><head><title>App</title>
<script src="/app.js"></script></head>
<body><main id="root"><p>Loading…</p></main></body></html>"""

APP_JS = """
document.addEventListener('DOMContentLoaded', async () => {
  const data = await (await fetch('/data.json')).json();
  const root = document.getElementById('root');
  root.innerHTML = '<h1>' + data.title + '</h1><p>' + data.body + '</p>' +
    '<a href="/second">second page</a><img src="/pixel.png">';
  fetch('http://10.9.9.9/steal').catch(() => {});
});
"""


def _app(log: list[str]) -> web.Application:
    async def record(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
        log.append(request.path)
        return response

    async def page(request: web.Request) -> web.StreamResponse:
        return await record(request, web.Response(text=APP_PAGE, content_type="text/html"))

    async def script(request: web.Request) -> web.StreamResponse:
        return await record(
            request, web.Response(text=APP_JS, content_type="application/javascript")
        )

    async def data(request: web.Request) -> web.StreamResponse:
        return await record(
            request,
            web.json_response({"title": "Rendered title", "body": "Text made by JavaScript."}),
        )

    async def other(request: web.Request) -> web.StreamResponse:
        return await record(request, web.Response(status=404, text="no"))

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/app.js", script)
    app.router.add_get("/data.json", data)
    app.router.add_get("/{tail:.*}", other)
    return app


def _chromium_or_skip() -> None:
    pytest.importorskip("playwright", reason="the render extra is not installed")
    from sitelore.adapters.render import find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium)")


async def test_render_runs_scripts_through_the_guarded_fetcher(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The JS-built content is stored; sub-requests go through our fetcher; private ones fail.

    The script's ``fetch('http://10.9.9.9/steal')`` reaches the guarded fetcher, which
    refuses it (BlockedURLError: a private address not allowed); the renderer aborts
    that request and says so in its debug log.
    """
    _chromium_or_skip()
    caplog.set_level(logging.DEBUG, logger="sitelore.adapters.render")
    log: list[str] = []
    server = TestServer(_app(log), host="127.0.0.1")
    await server.start_server()
    url = str(server.make_url("/"))
    settings = Settings(store=str(tmp_path / "s.db"), allow_private=("127.0.0.1",))
    try:
        async with Runtime(settings) as runtime:
            summary = await runtime.crawl(
                url,
                CrawlOptions(render=True, max_depth=0, respect_robots=False, delay=0),
            )
    finally:
        await server.close()
    assert summary.pages_indexed == 1
    store = open_store(str(tmp_path / "s.db"))
    doc = await store.get(url)
    await store.close()
    assert doc is not None
    assert "Text made by JavaScript." in doc.markdown
    assert "Loading" not in doc.markdown
    # The page itself was fetched once (by the crawl), its script and data once each
    # (through the fetcher); the image was never requested.
    assert sorted(log) == ["/", "/app.js", "/data.json"]
    refusals = {
        str(record.args[0]): record.args[1]
        for record in caplog.records
        if record.name == "sitelore.adapters.render"
        and record.msg == "render sub-request refused %s: %s"
        and isinstance(record.args, tuple)
    }
    assert set(refusals) == {"http://10.9.9.9/steal"}
    refusal = refusals["http://10.9.9.9/steal"]
    assert isinstance(refusal, BlockedURLError)
    assert (refusal.url, refusal.address) == ("http://10.9.9.9/steal", "10.9.9.9")
    assert "private" in refusal.reason


async def test_render_without_the_extra_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--render without Playwright installed names the extra to install."""
    monkeypatch.setitem(sys.modules, "sitelore.adapters.render", None)
    settings = Settings(store=str(tmp_path / "s.db"), allow_private=("127.0.0.1",))
    async with Runtime(settings) as runtime:
        with pytest.raises(UsageError, match=r"sitelore\[render\]"):
            await runtime.crawl("http://127.0.0.1:9/", CrawlOptions(render=True))
