"""The sitemap loader against loopback servers, through the real HttpFetcher: indexes,
gzip files, caps, silent and loud failures, and the caller's veto before each request."""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from aiohttp import web
from aiohttp.test_utils import TestServer

from sitelore.adapters.fetcher import HttpFetcher
from sitelore.core.guard import AddressPolicy
from sitelore.crawl.robots_loader import make_robots_loader
from sitelore.crawl.sitemap_loader import make_sitemap_loader

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def body(data: bytes, content_type: str = "application/xml", status: int = 200) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=data, status=status, headers={"Content-Type": content_type})

    return handler


def urlset(*locs: str) -> bytes:
    return f"<urlset {NS}>{''.join(f'<url><loc>{u}</loc></url>' for u in locs)}</urlset>".encode()


def index(*locs: str) -> bytes:
    items = "".join(f"<sitemap><loc>{u}</loc></sitemap>" for u in locs)
    return f"<sitemapindex {NS}>{items}</sitemapindex>".encode()


@contextlib.asynccontextmanager
async def serve(routes: Mapping[str, Handler]) -> AsyncIterator[tuple[str, list[str]]]:
    requested: list[str] = []

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        requested.append(request.path)
        return await handler(request)

    app = web.Application(middlewares=[record])
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    async with TestServer(app, host="127.0.0.1") as server:
        yield f"http://127.0.0.1:{server.port}", requested


@contextlib.asynccontextmanager
async def fetcher() -> AsyncIterator[HttpFetcher]:
    async with HttpFetcher(policy=AddressPolicy(["127.0.0.1"])) as f:
        yield f


async def allow(url: str) -> bool:
    return True


async def test_robots_sitemap_path_index_and_gzip_child() -> None:
    routes = {
        "/robots.txt": body(b"User-agent: *\nSitemap: /maps/index.xml\n", "text/plain"),
        "/maps/index.xml": body(index("/maps/a.xml.gz", "/maps/b.xml")),
        "/maps/a.xml.gz": body(gzip.compress(urlset("/a", "/shared")), "application/gzip"),
        "/maps/b.xml": body(urlset("/b", "/shared")),
        "/sitemap.xml": body(urlset("/c")),
    }
    async with serve(routes) as (base, requested), fetcher() as f:
        rules = await make_robots_loader(f)(base)
        assert rules.sitemaps == (base + "/maps/index.xml",)
        result = await make_sitemap_loader(f)(base + "/", rules.sitemaps, allow)
    assert result.urls == (base + "/c", base + "/a", base + "/shared", base + "/b")
    assert result.errors == ()
    assert result.files == (
        base + "/maps/index.xml",
        base + "/sitemap.xml",
        base + "/maps/a.xml.gz",
        base + "/maps/b.xml",
    )
    assert requested.count("/sitemap.xml") == 1


async def test_a_missing_default_sitemap_is_silent_a_promised_one_is_not() -> None:
    async with serve({"/x": body(b"")}) as (base, _), fetcher() as f:
        quiet = await make_sitemap_loader(f)(base + "/", (), allow)
        loud = await make_sitemap_loader(f)(base + "/", (base + "/promised.xml",), allow)
    assert quiet.urls == quiet.errors == ()
    assert len(loud.errors) == 1
    assert "promised.xml: HTTP 404" in loud.errors[0]


async def test_children_on_another_host_are_not_read() -> None:
    routes = {"/sitemap.xml": body(index("http://127.0.0.2:1/s.xml", "/own.xml"))}
    routes["/own.xml"] = body(urlset("/p"))
    async with serve(routes) as (base, requested), fetcher() as f:
        result = await make_sitemap_loader(f)(base + "/", (), allow)
    assert result.urls == (base + "/p",)
    assert requested == ["/sitemap.xml", "/own.xml"]


async def test_an_oversized_sitemap_is_an_error_not_a_crash() -> None:
    big = urlset(*[f"/page-{i:06d}" for i in range(4000)])
    async with serve({"/sitemap.xml": body(big)}) as (base, _), fetcher() as f:
        result = await make_sitemap_loader(f, max_bytes=16 * 1024)(base + "/", (), allow)
    assert result.urls == ()
    assert len(result.errors) == 1


async def test_a_gzip_bomb_is_stopped_at_the_cap() -> None:
    bomb = gzip.compress(b"<urlset>" + b" " * 20_000_000 + b"</urlset>")
    routes = {"/sitemap.xml": body(bomb, "application/gzip")}
    async with serve(routes) as (base, _), fetcher() as f:
        result = await make_sitemap_loader(f, max_bytes=1024 * 1024)(base + "/", (), allow)
    assert result.urls == ()
    assert "decompressed" in result.errors[0]


async def test_the_url_cap_and_the_file_cap() -> None:
    routes = {"/sitemap.xml": body(index(*[f"/s{i}.xml" for i in range(5)]))}
    for i in range(5):
        routes[f"/s{i}.xml"] = body(urlset(*[f"/p{i}-{j}" for j in range(3)]))
    async with serve(routes) as (base, requested), fetcher() as f:
        capped = await make_sitemap_loader(f, max_urls=4)(base + "/", (), allow)
        few_files = await make_sitemap_loader(f, max_files=3)(base + "/", (), allow)
    assert len(capped.urls) == 4
    assert capped.truncated is True
    assert len(few_files.files) == 3
    assert any("stopped after 3 sitemap files" in e for e in few_files.errors)
    assert len(requested) == 2 + 1 + 3  # capped run stops reading once full


async def test_a_vetoed_file_is_never_requested() -> None:
    routes = {"/sitemap.xml": body(urlset("/a")), "/other.xml": body(urlset("/b"))}

    async def only_default(url: str) -> bool:
        return url.endswith("/sitemap.xml")

    async with serve(routes) as (base, requested), fetcher() as f:
        result = await make_sitemap_loader(f)(base + "/", (base + "/other.xml",), only_default)
    assert result.urls == (base + "/a",)
    assert requested == ["/sitemap.xml"]
