"""The fetcher's exchange observer (the capture hook) against a real loopback server."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestServer
from tests.fakes import FakeClock

from sitelore.adapters.fetcher import HttpFetcher
from sitelore.core.guard import AddressPolicy
from sitelore.core.models import Exchange


def _app() -> web.Application:
    attempts = {"flaky": 0}

    async def start(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/flaky"}, text="go on")

    async def flaky(request: web.Request) -> web.Response:
        attempts["flaky"] += 1
        if attempts["flaky"] == 1:
            return web.Response(status=503, headers={"Retry-After": "1"}, text="busy")
        return web.Response(text="<p>done</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/start", start)
    app.router.add_get("/flaky", flaky)
    return app


class TestExchangeObserver:
    async def test_every_hop_and_attempt_is_reported_in_order(self) -> None:
        """A redirect to a 503, then (fetched again, as a crawl retries) the redirect to a 200:
        each exchange reaches the observer, hop-numbered."""
        seen: list[Exchange] = []

        async def observe(exchange: Exchange) -> None:
            seen.append(exchange)

        server = TestServer(_app(), host="127.0.0.1")
        await server.start_server()
        try:
            base = str(server.make_url("")).rstrip("/")
            async with HttpFetcher(
                policy=AddressPolicy(["127.0.0.1"]),
                clock=FakeClock(),
                observer=observe,
                user_agent="observer-test/1",
            ) as fetcher:
                busy_snapshot = await fetcher.fetch(base + "/start", headers={"X-Probe": "1"})
                snapshot = await fetcher.fetch(base + "/start", headers={"X-Probe": "1"})
        finally:
            await server.close()
        assert (busy_snapshot.status, snapshot.status) == (503, 200)
        assert [(e.hop, e.url.removeprefix(base), e.status) for e in seen] == [
            (0, "/start", 302),
            (1, "/flaky", 503),
            (0, "/start", 302),
            (1, "/flaky", 200),
        ]
        assert {e.fetch_url for e in seen} == {base + "/start"}
        redirect, busy, _, done = seen
        assert redirect.body == b""
        assert redirect.body_read is False
        assert redirect.reason == "Found"
        assert busy.body == b"busy"
        assert busy.body_read is True
        assert done.body == snapshot.body == b"<p>done</p>"
        assert done.http_version == "1.1"
        assert done.address == "127.0.0.1"
        sent = done.request_headers
        assert sent.get("user-agent") == "observer-test/1"
        assert sent.get("x-probe") == "1"
        assert sent.get("host") is not None

    async def test_without_an_observer_nothing_changes(self) -> None:
        """The hook is off by default: a plain fetch works as before."""
        server = TestServer(_app(), host="127.0.0.1")
        await server.start_server()
        try:
            base = str(server.make_url("")).rstrip("/")
            async with HttpFetcher(policy=AddressPolicy(["127.0.0.1"]), clock=FakeClock()) as f:
                snapshot = await f.fetch(base + "/start")
        finally:
            await server.close()
        assert snapshot.redirects == (base + "/start",)
        assert snapshot.capture is None
