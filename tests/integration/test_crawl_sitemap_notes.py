"""--sitemap that finds nothing says so in the crawl's warnings (it used to be silent)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp import web
from tests.fakes import FakeClock, FakeResolver
from tests.loopback import Handler, html, links, serve, text

from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.options import CrawlOptions

ROBOTS = "User-agent: *\nAllow: /\n"
EMPTY = '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>'
ONE = EMPTY.replace("/>", "><url><loc>ORIGIN/ok</loc></url></urlset>")


def sitemap_of(body: str) -> Handler:
    """The sitemap, its ``ORIGIN`` the server's own (known once it listens)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        xml = body.replace("ORIGIN", f"http://{request.host}")
        return web.Response(text=xml, content_type="application/xml")

    return handler


@pytest.mark.parametrize(
    ("sitemap", "note"),
    [
        (None, "sitemap: none found (robots.txt names none; /sitemap.xml is missing)"),
        (EMPTY, "sitemap: the sitemaps read list no page"),
        (ONE, None),
    ],
    ids=["missing", "empty", "one page"],
)
async def test_a_sitemap_crawl_that_finds_nothing_says_so(
    tmp_path: Path, sitemap: str | None, note: str | None
) -> None:
    routes: dict[str, Handler] = {"/robots.txt": text(ROBOTS), "/": links(), "/ok": html("ok")}
    if sitemap is not None:
        routes["/sitemap.xml"] = sitemap_of(sitemap)
    async with serve(routes) as site:
        settings = Settings(store=str(tmp_path / "s.db"), allow_private=("127.0.0.1",))
        options = CrawlOptions(delay=0.0, sitemap=True)
        async with Runtime(settings, resolver=FakeResolver({}), clock=FakeClock()) as runtime:
            summary = await asyncio.wait_for(runtime.crawl(site.origin + "/", options), 10)
    notes = [w for w in summary.warnings if w.startswith("sitemap:")]
    assert notes == ([note] if note else [])
