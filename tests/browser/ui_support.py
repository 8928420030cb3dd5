"""Serve the web UI for browser tests: the example site, a trap site and sitelore, in a thread.

Playwright's sync API (pytest-playwright's fixtures) cannot share the test's thread
with an event loop, so the servers run on their own loop in a background thread, all
on 127.0.0.1. The trap site serves a hostile page (``/xss/``), a page that never
answers until shutdown (``/slow/``, for cancelling a running crawl), and records every
other request it gets (``hits``): a request there means the UI leaked one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

from aiohttp import web

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.app.bootstrap import Runtime
from sitelore.app.wire import RemotePolicy
from sitelore.cli.serve import running_server
from sitelore.core.config import Settings, SourceSpec
from sitelore.core.models import Document, FetchMeta
from sitelore.server.api import create_app

API_KEY = "browser-test-key-0123456789"


def hostile_page(trap: str) -> str:
    """A page that tries every trick: scripts, handlers, javascript: links, a trap image."""
    return f"""<!doctype html><html><head>
<title>Evil](javascript:alert('title')) &lt;img src=x onerror=alert(1)&gt; Release notes</title>
<script>alert('head')</script></head><body><main>
<h1>Release notes <img src="{trap}/heading-img" onerror="alert('h1')"></h1>
<p>Read the <a href="javascript:alert('link')">changelog</a> and the
<a href="data:text/html,<script>alert('data')</script>">data link</a>.</p>
<p onmouseover="alert('over')">Hover <b onclick="alert('click')">here</b>.</p>
<p><img src="{trap}/pixel.png" alt="tracking pixel"></p>
<script>fetch('{trap}/script-ran')</script>
<pre><code>&lt;script&gt;alert('code')&lt;/script&gt;</code></pre>
<p>[markdown link](javascript:alert('md')) and &lt;script&gt;alert('text')&lt;/script&gt;</p>
<iframe src="{trap}/frame"></iframe>
</main></body></html>"""


#: A title that is Markdown and HTML at once: it must show as the text it is.
INJECTED_TITLE = "[Raw hostile](javascript:alert('title')) <img src=x onerror=alert('t')> **notes**"

HOSTILE_MARKDOWN = """# Raw hostile Markdown {{#top}}

<script>alert('raw')</script>
<img src=x onerror="alert('img')">

[js link](javascript:alert('js'))
[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)
[vb](vbscript:msgbox) <a href="javascript:alert(2)">inline a</a>

![pixel]({trap}/md-pixel.png)

## Section two {{#two" onmouseover="alert(1)}}
"""


def _trap_app(hits: list[str], release: asyncio.Event) -> web.Application:
    async def xss(request: web.Request) -> web.StreamResponse:
        trap = f"http://{request.host}"
        return web.Response(text=hostile_page(trap), content_type="text/html")

    async def slow(_request: web.Request) -> web.StreamResponse:
        await release.wait()
        return web.Response(text="<title>late</title><p>late</p>", content_type="text/html")

    async def robots(_request: web.Request) -> web.StreamResponse:
        return web.Response(text="User-agent: *\nAllow: /\n", content_type="text/plain")

    async def other(request: web.Request) -> web.StreamResponse:
        hits.append(request.path_qs)
        return web.Response(status=404, text="trap")

    app = web.Application()
    app.router.add_get("/xss/", xss)
    app.router.add_get("/slow/", slow)
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/{tail:.*}", other)
    return app


@dataclasses.dataclass
class UIServer:
    """The running servers' base URLs and the trap's record."""

    url: str = ""
    site: str = ""
    trap: str = ""
    hits: list[str] = dataclasses.field(default_factory=list)
    hostile_id: str = ""


async def _serve(
    store: Path,
    api_key: str | None,
    info: UIServer,
    ready: threading.Event,
    stop: asyncio.Event,
) -> None:
    release = asyncio.Event()
    trap_runner = web.AppRunner(_trap_app(info.hits, release), access_log=None)
    await trap_runner.setup()
    trap_site = web.TCPSite(trap_runner, "127.0.0.1", 0)
    await trap_site.start()
    info.trap = f"http://127.0.0.1:{trap_runner.addresses[0][1]}"
    try:
        async with serve_site(bundled_site_path()) as site:
            info.site = site
            settings = Settings(
                store=str(store),
                allow_private=("127.0.0.1",),
                sources={"example": SourceSpec(url=f"{site}/", refresh="1d")},
            )
            async with Runtime(settings) as runtime:
                now = runtime.clock.now()
                meta = FetchMeta(status=200, content_type="text/markdown", fetched_at=now)
                doc = Document(
                    url=f"{info.trap}/raw-hostile",
                    title=INJECTED_TITLE,
                    markdown=HOSTILE_MARKDOWN.format(trap=info.trap),
                )
                info.hostile_id = (await runtime.store.upsert(doc, meta)).id
                app = create_app(runtime, api_key=api_key, remote=RemotePolicy(delay=0))
                async with running_server(app, host="127.0.0.1", port=0) as served:
                    info.url = served.url
                    ready.set()
                    await stop.wait()
    finally:
        release.set()
        await trap_runner.cleanup()


@contextlib.contextmanager
def ui_server(store: Path, *, api_key: str | None = None) -> Iterator[UIServer]:
    """Run the servers in a thread until the block ends."""
    info = UIServer()
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(_serve(store, api_key, info, ready, stop))
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            failure.append(exc)
            ready.set()
        finally:
            loop.close()

    thread = threading.Thread(target=run, name="ui-server", daemon=True)
    thread.start()
    try:
        if not ready.wait(30) or failure:
            raise RuntimeError(f"the UI server did not start: {failure}")
        yield info
    finally:
        if not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        thread.join(30)
