"""The fetcher sends a caller's validators to the URL asked for only, never to a redirect target."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestServer

from sitelore.adapters.fetcher import HttpFetcher
from sitelore.core.guard import AddressPolicy


async def test_validators_go_to_the_first_url_only() -> None:
    seen: dict[str, dict[str, str]] = {}

    async def moved(request: web.Request) -> web.Response:
        seen[request.path] = dict(request.headers)
        return web.Response(status=301, headers={"Location": "/new"})

    async def new(request: web.Request) -> web.Response:
        seen[request.path] = dict(request.headers)
        if "If-None-Match" in request.headers:
            return web.Response(status=304)
        return web.Response(text="<p>fresh</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/old", moved)
    app.router.add_get("/new", new)
    async with (
        TestServer(app, host="127.0.0.1") as server,
        HttpFetcher(policy=AddressPolicy(["127.0.0.1"])) as fetcher,
    ):
        base = f"http://127.0.0.1:{server.port}"
        validators = {"If-None-Match": '"v1"', "If-Modified-Since": "Sun, 01 Mar 2026 00:00:00 GMT"}
        snapshot = await fetcher.fetch(base + "/old", headers=validators)
        direct = await fetcher.fetch(base + "/new", headers=validators)
    assert seen["/old"]["If-None-Match"] == '"v1"'
    assert "If-Modified-Since" in seen["/old"]
    assert snapshot.status == 200
    assert snapshot.body == b"<p>fresh</p>"
    assert direct.status == 304
