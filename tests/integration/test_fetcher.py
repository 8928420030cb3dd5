"""The fetcher against real loopback servers: redirects, caps, timeouts, the guard.

Every server listens on 127.0.0.x. Policies open only the loopback addresses a test
serves from; "refused" listeners on other loopback addresses count connections so a
test can prove that nothing reached them. The clock is a FakeClock: the fetcher never
sleeps on it (it makes one attempt; a crawl retries through its frontier).
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import random
import socket
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from tests.fakes import FakeClock, FakeResolver

from sitelore.adapters.fetcher import ACCEPT_ENCODING, HttpFetcher, SystemResolver
from sitelore.core.errors import (
    BlockedURLError,
    FetchError,
    FetchTimeoutError,
    InvalidURLError,
    NetworkError,
    ResponseTooLargeError,
    RobotsRefusedError,
    TooManyRedirectsError,
    UnsupportedContentTypeError,
)
from sitelore.core.guard import AddressPolicy
from sitelore.core.options import Limits

UA = "sitelore-test/1.0 (+https://example.invalid/bot)"
MiB = 1024 * 1024
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# ---------------------------------------------------------------- small worlds


@asynccontextmanager
async def serve(routes: dict[str, Handler], host: str = "127.0.0.1") -> AsyncIterator[TestServer]:
    """Serve ``routes`` (path -> handler) on ``host`` with aiohttp's test server."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_get(path, _as_coroutine(handler))
    server = TestServer(app, host=host)
    await server.start_server()
    try:
        yield server
    finally:
        await server.close()


def port_of(server: TestServer) -> int:
    assert server.port is not None
    return server.port


def _as_coroutine(handler: Handler) -> Handler:
    """aiohttp wants coroutine functions; recorders are callable objects."""

    async def route(request: web.Request) -> web.StreamResponse:
        return await handler(request)

    return route


class Listener:
    """A raw TCP listener that counts connections and answers with ``reply``."""

    def __init__(self, reply: Callable[[asyncio.StreamWriter], Awaitable[None]] | None = None):
        self.connections = 0
        self._reply = reply
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str, port: int = 0) -> Listener:
        self._server = await asyncio.start_server(self._on_connect, host, port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            if self._reply is not None:
                await reader.readuntil(b"\r\n\r\n")
                await self._reply(writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def listen(
    host: str,
    port: int = 0,
    reply: Callable[[asyncio.StreamWriter], Awaitable[None]] | None = None,
) -> AsyncIterator[Listener]:
    listener = await Listener(reply).start(host, port)
    try:
        yield listener
    finally:
        await listener.close()


def make_fetcher(clock: FakeClock | None = None, **kwargs: Any) -> HttpFetcher:
    kwargs.setdefault("policy", AddressPolicy(["127.0.0.1"]))
    kwargs.setdefault("resolver", FakeResolver({}))
    return HttpFetcher(user_agent=UA, clock=clock or FakeClock(), **kwargs)


def text(body: str, status: int = 200, headers: dict[str, str] | None = None) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=body.encode(), status=status, headers=headers)

    return handler


def redirect(location: str, status: int = 302) -> Handler:
    return text("", status=status, headers={"Location": location})


class Recorder:
    """A handler that records each request's headers and answers from a script."""

    def __init__(self, *responses: tuple[int, dict[str, str], str]) -> None:
        self.requests: list[dict[str, str]] = []
        self._responses = list(responses) or [(200, {}, "ok")]

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(dict(request.headers))
        index = min(len(self.requests), len(self._responses)) - 1
        status, headers, body = self._responses[index]
        return web.Response(status=status, headers=headers, text=body)


# ---------------------------------------------------------------- basics


class TestBasics:
    async def test_get_returns_snapshot(self) -> None:
        """A 200 comes back as a snapshot with body, headers, address and clock time."""
        clock = FakeClock()
        async with (
            serve({"/": text("<h1>hi</h1>", headers={"Content-Type": "text/html"})}) as server,
            make_fetcher(clock) as fetcher,
        ):
            url = str(server.make_url("/"))
            snapshot = await fetcher.fetch(url)
        assert snapshot.status == 200
        assert snapshot.body == b"<h1>hi</h1>"
        assert snapshot.content_type == "text/html"
        assert snapshot.url == url
        assert snapshot.final_url == url
        assert snapshot.redirects == ()
        assert snapshot.address == "127.0.0.1"
        assert snapshot.fetched_at == clock.now()

    async def test_user_agent_and_headers_sent_exactly(self) -> None:
        """The configured User-Agent and Accept-Encoding always win over the caller's."""
        recorder = Recorder()
        async with serve({"/": recorder}) as server, make_fetcher() as fetcher:
            await fetcher.fetch(
                str(server.make_url("/")),
                headers={"User-Agent": "spoof", "Accept-Encoding": "br", "X-Trace": "42"},
            )
        sent = recorder.requests[0]
        assert sent["User-Agent"] == UA
        assert sent["Accept-Encoding"] == ACCEPT_ENCODING
        assert sent["X-Trace"] == "42"
        assert "Cookie" not in sent

    async def test_404_is_a_snapshot_and_not_retried(self) -> None:
        clock = FakeClock()
        recorder = Recorder((404, {}, "missing"))
        async with serve({"/": recorder}) as server, make_fetcher(clock) as fetcher:
            snapshot = await fetcher.fetch(str(server.make_url("/")))
        assert snapshot.status == 404
        assert snapshot.body == b"missing"
        assert len(recorder.requests) == 1
        assert clock.sleeps == []

    async def test_invalid_url_refused_before_io(self) -> None:
        async with make_fetcher() as fetcher:
            with pytest.raises(InvalidURLError):
                await fetcher.fetch("ftp://127.0.0.1/")

    async def test_system_resolver_answers_numeric_hosts(self) -> None:
        """The default resolver goes through getaddrinfo (numeric here: no DNS traffic)."""
        assert list(await SystemResolver().resolve("127.0.0.2", 80)) == ["127.0.0.2"]

    async def test_lifecycle(self) -> None:
        """Fetching needs an open fetcher; a closed one cannot be used or reopened."""
        fetcher = make_fetcher()
        with pytest.raises(RuntimeError, match="not opened"):
            await fetcher.fetch("http://127.0.0.1/")
        async with fetcher:
            pass
        with pytest.raises(RuntimeError, match="closed"):
            await fetcher.fetch("http://127.0.0.1/")
        with pytest.raises(RuntimeError):
            await fetcher.__aenter__()


# ---------------------------------------------------------------- redirects


class TestRedirects:
    async def test_chain_followed_and_recorded(self) -> None:
        routes = {"/a": redirect("/b", 301), "/b": redirect("c", 307), "/c": text("done")}
        async with serve(routes) as server, make_fetcher() as fetcher:
            url, b_url, c_url = (str(server.make_url(path)) for path in ("/a", "/b", "/c"))
            snapshot = await fetcher.fetch(url)
        assert snapshot.body == b"done"
        assert snapshot.final_url == c_url
        assert snapshot.redirects == (url, b_url)

    async def test_ten_hop_chain_stops_at_cap(self) -> None:
        """With the cap at 5, the sixth redirect fails and no seventh request is made."""
        hits: list[int] = []

        async def chain(request: web.Request) -> web.StreamResponse:
            n = int(request.match_info["n"])
            hits.append(n)
            if n >= 10:
                return web.Response(text="end")
            return web.Response(status=302, headers={"Location": f"/chain/{n + 1}"})

        async with serve({"/chain/{n}": chain}) as server, make_fetcher() as fetcher:
            with pytest.raises(TooManyRedirectsError):
                await fetcher.fetch(str(server.make_url("/chain/0")))
        assert hits == [0, 1, 2, 3, 4, 5]

    async def test_cap_comes_from_limits(self) -> None:
        routes = {"/a": redirect("/b"), "/b": text("b")}
        async with serve(routes) as server, make_fetcher(limits=Limits(max_redirects=0)) as f:
            with pytest.raises(TooManyRedirectsError):
                await f.fetch(str(server.make_url("/a")))

    async def test_loop_detected(self) -> None:
        routes = {"/x": redirect("/y"), "/y": redirect("/x")}
        async with serve(routes) as server, make_fetcher() as fetcher:
            with pytest.raises(TooManyRedirectsError, match="loop"):
                await fetcher.fetch(str(server.make_url("/x")))

    async def test_3xx_without_location_is_returned(self) -> None:
        async with serve({"/": text("moved", status=302)}) as server, make_fetcher() as fetcher:
            snapshot = await fetcher.fetch(str(server.make_url("/")))
        assert snapshot.status == 302
        assert snapshot.body == b"moved"

    async def test_non_http_location_is_blocked(self) -> None:
        async with (
            serve({"/": redirect("file:///etc/passwd")}) as server,
            make_fetcher() as fetcher,
        ):
            with pytest.raises(BlockedURLError, match="file") as info:
                await fetcher.fetch(str(server.make_url("/")))
        assert info.value.url == "file:///etc/passwd"  # the refused hop, not the page

    async def test_header_bytes_that_are_not_utf8_become_replacement_characters(self) -> None:
        """Raw ``\\xff`` in ETag, Last-Modified, Content-Type and the reason come out as
        U+FFFD text (aiohttp's lone surrogates failed the page at the store)."""

        async def reply(writer: asyncio.StreamWriter) -> None:
            writer.write(
                b"HTTP/1.1 200 \xffOK\r\nContent-Type: text/html; charset=\xff\xfe\r\n"
                b'ETag: "\xff"\r\nLast-Modified: \xfe\r\nContent-Length: 2\r\n\r\nok'
            )
            await writer.drain()

        async with listen("127.0.0.1", reply=reply) as server, make_fetcher() as fetcher:
            snapshot = await fetcher.fetch(f"http://127.0.0.1:{server.port}/")
        assert snapshot.headers.get("etag") == '"\ufffd"'
        assert snapshot.headers.get("last-modified") == "\ufffd"
        assert snapshot.charset == "\ufffd\ufffd"
        assert all(value.encode() for _, value in snapshot.headers)
        assert snapshot.body == b"ok"

    async def test_redirect_to_refused_literal_never_reaches_it(self) -> None:
        async with listen("127.0.0.3") as refused:
            target = f"http://127.0.0.3:{refused.port}/secret"
            async with serve({"/": redirect(target)}) as server, make_fetcher() as fetcher:
                with pytest.raises(BlockedURLError) as info:
                    await fetcher.fetch(str(server.make_url("/")))
        assert info.value.address == "127.0.0.3"
        assert refused.connections == 0

    async def test_redirect_to_name_of_refused_address_never_reaches_it(self) -> None:
        """A hop whose name resolves to a refused address fails at that hop."""
        async with listen("127.0.0.3") as refused:
            resolver = FakeResolver({"internal.test": ["127.0.0.3"]})
            target = f"http://internal.test:{refused.port}/"
            async with (
                serve({"/": redirect(target)}) as server,
                make_fetcher(resolver=resolver) as fetcher,
            ):
                with pytest.raises(BlockedURLError) as info:
                    await fetcher.fetch(str(server.make_url("/")))
        assert info.value.address == "127.0.0.3"
        assert info.value.url == target
        assert refused.connections == 0
        assert resolver.calls == [("internal.test", refused.port)]

    async def test_check_hop_can_stop_a_hop(self) -> None:
        """check_hop sees the normalised next URL and its refusal stops the fetch."""
        recorder = Recorder()
        asked: list[str] = []

        async def check_hop(url: str) -> None:
            asked.append(url)
            raise RobotsRefusedError(url, "robots.txt", "disallowed")

        routes: dict[str, Handler] = {"/a": redirect("/B?x=1#frag"), "/B": recorder}
        async with serve(routes) as server, make_fetcher() as fetcher:
            with pytest.raises(RobotsRefusedError):
                await fetcher.fetch(str(server.make_url("/a")), check_hop=check_hop)
            assert asked == [str(server.make_url("/B?x=1"))]
        assert recorder.requests == []

    async def test_credentials_dropped_across_origins(self) -> None:
        """Cookie and Authorization reach the first origin only."""
        second = Recorder()
        secrets = {"Cookie": "session=s3cret", "Authorization": "Bearer t0ken", "X-Keep": "1"}
        policy = AddressPolicy(["127.0.0.1", "127.0.0.2"])
        async with serve({"/": second}, host="127.0.0.2") as other:
            first = Recorder((302, {"Location": str(other.make_url("/"))}, ""))
            async with serve({"/": first}) as server, make_fetcher(policy=policy) as fetcher:
                snapshot = await fetcher.fetch(str(server.make_url("/")), headers=secrets)
        assert snapshot.address == "127.0.0.2"
        assert first.requests[0]["Cookie"] == "session=s3cret"
        assert first.requests[0]["Authorization"] == "Bearer t0ken"
        assert "Cookie" not in second.requests[0]
        assert "Authorization" not in second.requests[0]
        assert second.requests[0]["X-Keep"] == "1"

    async def test_credentials_kept_on_same_origin(self) -> None:
        recorder = Recorder()
        async with serve({"/a": redirect("/b"), "/b": recorder}) as server, make_fetcher() as f:
            await f.fetch(str(server.make_url("/a")), headers={"Authorization": "Bearer t"})
        assert recorder.requests[0]["Authorization"] == "Bearer t"


# ---------------------------------------------------------------- bodies


#: The first 500 bytes of a gzip stream of 4000 incompressible bytes.
TRUNCATED_GZIP = gzip.compress(random.Random(0).randbytes(4000))[:500]


def gzip_bomb(size: int = 10 * 1000 * 1000) -> bytes:
    return gzip.compress(b"\0" * size, compresslevel=9)


class TestBodies:
    @pytest.mark.parametrize(
        ("encoding", "encode"),
        [
            ("gzip", gzip.compress),
            ("x-gzip", gzip.compress),
            ("deflate", zlib.compress),
            ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some send
            ("gzip, gzip", lambda data: gzip.compress(gzip.compress(data))),
            ("identity", lambda data: data),
        ],
    )
    async def test_encoded_body_is_decoded(
        self, encoding: str, encode: Callable[[bytes], bytes]
    ) -> None:
        payload = b"<p>" + b"hello " * 50_000 + b"</p>"

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(body=encode(payload), headers={"Content-Encoding": encoding})

        async with serve({"/": handler}) as server, make_fetcher() as fetcher:
            snapshot = await fetcher.fetch(str(server.make_url("/")))
        assert snapshot.body == payload

    async def test_gzip_bomb_stops_at_cap_with_bounded_memory(self) -> None:
        """10 MB of zeros, gzipped, stops at a 1 MiB cap without inflating the rest."""
        bomb = gzip_bomb()

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(body=bomb, headers={"Content-Encoding": "gzip"})

        async with serve({"/": handler}) as server, make_fetcher() as fetcher:
            url = str(server.make_url("/"))
            tracemalloc.start()
            try:
                with pytest.raises(ResponseTooLargeError):
                    await fetcher.fetch(url, max_bytes=MiB)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        assert peak < 4 * MiB

    async def test_nested_gzip_bomb_stops_at_cap(self) -> None:
        bomb = gzip.compress(gzip_bomb())

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(body=bomb, headers={"Content-Encoding": "gzip, gzip"})

        async with serve({"/": handler}) as server, make_fetcher() as fetcher:
            with pytest.raises(ResponseTooLargeError):
                await fetcher.fetch(str(server.make_url("/")), max_bytes=MiB)

    async def test_default_cap_is_limits_max_page_bytes(self) -> None:
        big = text("x" * (64 * 1024))
        limits = Limits(max_page_bytes=32 * 1024)
        async with serve({"/": big}) as server, make_fetcher(limits=limits) as fetcher:
            with pytest.raises(ResponseTooLargeError):
                await fetcher.fetch(str(server.make_url("/")))

    @pytest.mark.parametrize("encoding", ["br", "zstd", "compress", "gzip, gzip, gzip"])
    async def test_unsupported_encoding_refused(self, encoding: str) -> None:
        handler = text("xx", headers={"Content-Encoding": encoding})
        async with serve({"/": handler}) as server, make_fetcher() as fetcher:
            with pytest.raises(UnsupportedContentTypeError):
                await fetcher.fetch(str(server.make_url("/")))

    async def test_corrupt_gzip_is_network_error(self) -> None:
        handler = text("definitely not gzip", headers={"Content-Encoding": "gzip"})
        async with serve({"/": handler}) as server, make_fetcher() as fetcher:
            with pytest.raises(NetworkError, match="compressed"):
                await fetcher.fetch(str(server.make_url("/")))

    async def test_endless_chunked_body_stops_at_cap(self) -> None:
        async def endless(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse()
            response.enable_chunked_encoding()
            await response.prepare(request)
            for _ in range(1000):
                await response.write(b"a" * 65536)
            return response

        async with serve({"/": endless}) as server, make_fetcher() as fetcher:
            with pytest.raises(ResponseTooLargeError):
                await fetcher.fetch(str(server.make_url("/")), max_bytes=MiB)

    async def test_huge_declared_length_refused_without_reading(self) -> None:
        """Content-Length: 10^12 is neither trusted for allocation nor read."""

        async def reply(writer: asyncio.StreamWriter) -> None:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n")
            for _ in range(200):
                writer.write(b"a" * 65536)
                await writer.drain()

        async with listen("127.0.0.1", reply=reply) as server, make_fetcher() as fetcher:
            tracemalloc.start()
            try:
                with pytest.raises(ResponseTooLargeError, match="Content-Length"):
                    await fetcher.fetch(f"http://127.0.0.1:{server.port}/", max_bytes=MiB)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
        assert peak < 4 * MiB

    async def test_content_length_beside_chunked_is_refused_as_a_network_error(self) -> None:
        """Content-Length and Transfer-Encoding together (a smuggling shape) are refused.

        The HTTP parser refuses the response before any body is read: a NetworkError,
        never a body. (The cap is not what stops this one: see the Content-Length lies.)
        """

        async def reply(writer: asyncio.StreamWriter) -> None:
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            for _ in range(100):
                writer.write(b"10000\r\n" + b"a" * 65536 + b"\r\n")
                await writer.drain()

        async with listen("127.0.0.1", reply=reply) as server, make_fetcher() as fetcher:
            with pytest.raises(NetworkError, match="Transfer-Encoding"):
                await fetcher.fetch(f"http://127.0.0.1:{server.port}/", max_bytes=MiB)

    async def test_content_length_lie_with_a_flood_is_refused_with_bounded_memory(self) -> None:
        """``Content-Length: 10``, then 100 MiB with no framing, all in one stream.

        HTTP framing ends the body after 10 bytes; what follows is read as a malformed
        next response and the fetch fails typed (today a NetworkError from the parser).
        It never returns more than the declared bytes, memory stays bounded and the
        connection is dropped long before the flood ends.
        """
        flood = Flood(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", total=100 * MiB)
        async with listen("127.0.0.1", reply=flood.reply) as server:
            async with make_fetcher() as fetcher:
                with tracing_memory() as peak, pytest.raises(FetchError) as info:
                    await fetcher.fetch(f"http://127.0.0.1:{server.port}/", max_bytes=MiB)
            await flood.done.wait()
        assert isinstance(info.value, NetworkError | ResponseTooLargeError)
        assert peak() < 4 * MiB
        assert flood.sent < 16 * MiB  # the client hung up: the flood was never read

    async def test_content_length_lie_keeps_the_body_to_the_declared_length(self) -> None:
        """The body ends at the declared 10 bytes; a flood sent after it is never buffered."""
        flood = Flood(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n" + b"a" * 10, total=64 * MiB)
        flood.released.clear()  # the flood waits until the response has been handed over
        async with listen("127.0.0.1", reply=flood.reply) as server:
            async with make_fetcher() as fetcher:
                with tracing_memory() as peak:
                    snapshot = await fetcher.fetch(
                        f"http://127.0.0.1:{server.port}/", max_bytes=MiB
                    )
                    flood.released.set()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(10):  # a bound on waiting, not a check
                            await flood.done.wait()
            await flood.done.wait()  # closing the fetcher ends it in any case
        assert (snapshot.status, snapshot.body) == (200, b"a" * 10)
        assert peak() < 4 * MiB
        assert flood.sent < 16 * MiB

    async def test_unframed_body_past_the_cap_is_too_large(self) -> None:
        """No Content-Length, no chunking (read to close): the cap alone stops the read."""
        flood = Flood(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", total=100 * MiB)
        async with listen("127.0.0.1", reply=flood.reply) as server:
            async with make_fetcher() as fetcher:
                with tracing_memory() as peak, pytest.raises(ResponseTooLargeError, match="cap"):
                    await fetcher.fetch(f"http://127.0.0.1:{server.port}/", max_bytes=MiB)
            await flood.done.wait()
        assert peak() < 4 * MiB
        assert flood.sent < 16 * MiB

    async def test_small_declared_gzip_length_with_a_bomb_is_too_large(self) -> None:
        """An honest 20 KB gzip Content-Length that inflates to 20 MiB: the cap stops it.

        The declared length is far under the wire cap, so only the check on the
        decompressed bytes can refuse it; memory stays bounded while inflating.
        """
        bomb = gzip.compress(b"\0" * (20 * MiB), 9)
        head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"

        async def reply(writer: asyncio.StreamWriter) -> None:
            writer.write(head % len(bomb) + bomb)
            await writer.drain()

        async with listen("127.0.0.1", reply=reply) as server, make_fetcher() as fetcher:
            with (
                tracing_memory() as peak,
                pytest.raises(ResponseTooLargeError, match="decompressed body is over"),
            ):
                await fetcher.fetch(f"http://127.0.0.1:{server.port}/", max_bytes=MiB)
        assert len(bomb) < 64 * 1024
        assert peak() < 4 * MiB

    async def test_small_declared_gzip_length_lie_with_a_bomb_is_refused(self) -> None:
        """``Content-Length: 4000`` but a whole 64 MiB gzip bomb follows: a typed refusal.

        The first 4000 compressed bytes alone inflate past the cap; the bytes after them
        are a malformed next response. Either way the fetch fails typed, never with a
        body, and memory stays bounded.
        """
        bomb = gzip.compress(b"\0" * (64 * MiB), 9)
        head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4000\r\n\r\n"

        async def reply(writer: asyncio.StreamWriter) -> None:
            writer.write(head + bomb)
            await writer.drain()

        async with listen("127.0.0.1", reply=reply) as server, make_fetcher() as fetcher:
            with tracing_memory() as peak, pytest.raises(FetchError) as info:
                await fetcher.fetch(f"http://127.0.0.1:{server.port}/", max_bytes=MiB)
        assert isinstance(info.value, NetworkError | ResponseTooLargeError)
        assert peak() < 4 * MiB

    @pytest.mark.parametrize(
        "encoding", ["gzip", "deflate", "gzip, gzip"], ids=["gzip", "deflate", "nested"]
    )
    async def test_truncated_compressed_body_is_a_network_error(self, encoding: str) -> None:
        """A compressed body that ends inside its stream is part of a page, never a page.

        Framed honestly (its Content-Length is the bytes sent), so only the inflater can
        tell: the stream never reached its end. A truncated gzip was returned as a
        complete 200 (and stored).
        """
        page = ("<html><body><p>" + "lorem ipsum dolor " * 2000 + "</p></body></html>").encode()
        compress: dict[str, Callable[[bytes], bytes]] = {
            "gzip": gzip.compress,
            "deflate": zlib.compress,
        }
        encoded = page
        for name in reversed([n.strip() for n in encoding.split(",")]):
            encoded = compress[name](encoded)
        cut = encoded[: len(encoded) // 2]
        head = b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %d\r\n\r\n"

        async def reply(writer: asyncio.StreamWriter) -> None:
            writer.write(head % (encoding.encode(), len(cut)) + cut)
            await writer.drain()

        async with listen("127.0.0.1", reply=reply) as server, make_fetcher() as fetcher:
            with pytest.raises(NetworkError, match="truncated"):
                await fetcher.fetch(f"http://127.0.0.1:{server.port}/")

    async def test_empty_gzip_body_is_an_empty_body(self) -> None:
        """``Content-Encoding: gzip`` on an empty body (a 204, a HEAD-like answer) is no error."""
        handler = text("", status=204, headers={"Content-Encoding": "gzip"})
        async with serve({"/": handler}) as server, make_fetcher() as fetcher:
            snapshot = await fetcher.fetch(str(server.make_url("/")))
        assert (snapshot.status, snapshot.body) == (204, b"")

    @pytest.mark.parametrize(
        ("status", "headers", "body"),
        [
            (404, {"Content-Encoding": "br"}, b"\x0b\x02\x80gone\x03"),
            (410, {"Content-Encoding": "gzip"}, b"not gzip at all"),
            (503, {"Content-Encoding": "zstd", "Retry-After": "7"}, b"(zstd)"),
            (429, {"Content-Encoding": "gzip", "Retry-After": "7"}, TRUNCATED_GZIP),
            (500, {"Content-Encoding": "gzip, gzip, gzip"}, b"x"),
        ],
        ids=["404-br", "410-corrupt-gzip", "503-zstd", "429-truncated-gzip", "500-three-layers"],
    )
    async def test_an_error_answer_keeps_its_status_whatever_its_body(
        self, status: int, headers: dict[str, str], body: bytes
    ) -> None:
        """What a 404 or a 503 means is its status and headers, never its body.

        An error page in an encoding we cannot read was the page's
        ``unsupported-content-type`` or ``network`` error: a removed page (404) was not
        seen as removed, and a 503's Retry-After was never honoured.
        """

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(body=body, status=status, headers=headers)

        async with serve({"/": handler}) as server, make_fetcher() as fetcher:
            snapshot = await fetcher.fetch(str(server.make_url("/")))
        assert (snapshot.status, snapshot.body) == (status, b"")
        assert snapshot.headers.get("retry-after") == headers.get("Retry-After")

    async def test_an_error_answer_s_body_is_cut_at_the_cap(self) -> None:
        """A 404 with a body past the cap is still a 404 (its body cut), not too-large."""
        bomb = gzip_bomb()

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(body=bomb, status=404, headers={"Content-Encoding": "gzip"})

        async with serve({"/": handler}) as server, make_fetcher() as fetcher:
            snapshot = await fetcher.fetch(str(server.make_url("/")), max_bytes=64 * 1024)
        assert (snapshot.status, len(snapshot.body)) == (404, 64 * 1024)

    @pytest.mark.parametrize(
        ("reply", "said"),
        [
            (b"HELLO WORLD\r\n\r\n", "malformed response: Bad status line"),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nContent-Length: 3\r\n\r\n",
                "malformed response: Duplicate Content-Length",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nhalf",
                "malformed or incomplete body: Not enough data",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-10\r\nx",
                "malformed response: Invalid character in chunk size",
            ),
        ],
        ids=["status-line", "two-lengths", "short-body", "negative-chunk"],
    )
    async def test_a_malformed_response_is_named_without_aiohttp_s_400(
        self, reply: bytes, said: str
    ) -> None:
        """The server sent no 400: the message says what was wrong with its answer."""

        async def answer(writer: asyncio.StreamWriter) -> None:
            writer.write(reply)
            await writer.drain()

        async with listen("127.0.0.1", reply=answer) as server, make_fetcher() as fetcher:
            with pytest.raises(NetworkError) as info:
                await fetcher.fetch(f"http://127.0.0.1:{server.port}/")
        assert said in info.value.message
        assert "400" not in info.value.message


class Flood:
    """A raw reply: ``head``, then ``total`` bytes of ``x`` in 64 KiB writes until cut off.

    ``sent`` counts what the transport accepted; ``done`` is set when the reply ends
    (all sent, or the client hung up). Clear ``released`` to hold the flood back.
    """

    def __init__(self, head: bytes, *, total: int) -> None:
        self.head = head
        self.total = total
        self.sent = 0
        self.done = asyncio.Event()
        self.released = asyncio.Event()
        self.released.set()

    async def reply(self, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(self.head)
            await writer.drain()
            await self.released.wait()
            chunk = b"x" * 65536
            while self.sent < self.total:
                writer.write(chunk)
                await writer.drain()
                self.sent += len(chunk)
        finally:
            self.done.set()


@contextmanager
def tracing_memory() -> Iterator[Callable[[], int]]:
    """Trace Python allocations inside the block; the callable gives the peak in bytes."""
    peak = 0
    tracemalloc.start()
    try:
        yield lambda: peak
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


# ---------------------------------------------------------------- timeouts


def trickle(interval: float, count: int = 50) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.enable_chunked_encoding()
        await response.prepare(request)
        for _ in range(count):
            await response.write(b"x")
            await asyncio.sleep(interval)
        return response

    return handler


class TestTimeouts:
    async def test_trickling_body_hits_idle_timeout(self) -> None:
        async with (
            serve({"/": trickle(0.3)}) as server,
            make_fetcher(read_timeout=0.1) as fetcher,
        ):
            with pytest.raises(FetchTimeoutError, match="waiting for data"):
                await fetcher.fetch(str(server.make_url("/")))

    async def test_steady_trickle_hits_total_budget(self) -> None:
        async with (
            serve({"/": trickle(0.02, count=500)}) as server,
            make_fetcher(read_timeout=1.0) as fetcher,
        ):
            with pytest.raises(FetchTimeoutError, match="budget"):
                await fetcher.fetch(str(server.make_url("/")), timeout=0.2)

    async def test_silent_server_hits_first_byte_timeout(self) -> None:
        async def reply(writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(1.0)

        async with (
            listen("127.0.0.1", reply=reply) as server,
            make_fetcher(read_timeout=0.1) as fetcher,
        ):
            with pytest.raises(FetchTimeoutError):
                await fetcher.fetch(f"http://127.0.0.1:{server.port}/")

    async def test_listener_that_never_accepts_hits_connect_timeout(self) -> None:
        """A loopback listener whose accept queue is full drops the SYN: connecting times out.

        It is the connect timeout that fires (not the first-byte one, nor the page
        budget), and a timeout is not retried.
        """
        clock = FakeClock()
        async with (
            full_accept_queue() as port,
            make_fetcher(clock, connect_timeout=0.2, read_timeout=60) as fetcher,
        ):
            with pytest.raises(FetchTimeoutError, match="timed out connecting"):
                async with asyncio.timeout(15):  # blow-up guard: a hang fails the test
                    await fetcher.fetch(f"http://127.0.0.1:{port}/")
        assert clock.sleeps == []

    async def test_spent_deadline_refuses_to_start(self) -> None:
        clock = FakeClock()
        async with make_fetcher(clock, deadline=clock.monotonic() - 1) as fetcher:
            with pytest.raises(FetchTimeoutError):
                await fetcher.fetch("http://127.0.0.1:9/")


@asynccontextmanager
async def full_accept_queue() -> AsyncIterator[int]:
    """A 127.0.0.1 port that listens but never accepts, its backlog filled by idle clients.

    Linux drops a SYN to a listener whose accept queue is full, so a connection attempt
    hangs until the client gives up: a connect timeout on loopback, no route needed.
    """
    listener = socket.socket()
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = int(listener.getsockname()[1])
        loop = asyncio.get_running_loop()
        for _ in range(16):
            filler = socket.socket()
            filler.setblocking(False)
            fillers.append(filler)
            try:
                async with asyncio.timeout(0.5):
                    await loop.sock_connect(filler, ("127.0.0.1", port))
            except TimeoutError:
                break  # this one hangs: the queue is full
        else:
            pytest.skip("this kernel completes connections beyond the listen backlog")
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


# ---------------------------------------------------------------- one attempt


class TestOneAttempt:
    """Retries (Retry-After, backoff, attempts) are the crawl's: see test_worker_page.py."""

    async def test_503_with_retry_after_is_returned_at_once(self) -> None:
        clock = FakeClock()
        recorder = Recorder((503, {"Retry-After": "7"}, "busy"), (200, {}, "ok"))
        async with serve({"/": recorder}) as server, make_fetcher(clock) as fetcher:
            snapshot = await fetcher.fetch(str(server.make_url("/")))
        assert (snapshot.status, snapshot.body) == (503, b"busy")
        assert snapshot.headers.get("retry-after") == "7"
        assert len(recorder.requests) == 1
        assert clock.sleeps == []

    async def test_connection_refused_is_a_network_error(self) -> None:
        clock = FakeClock()
        async with listen("127.0.0.1") as closed:
            port = closed.port
        async with make_fetcher(clock) as fetcher:
            with pytest.raises(NetworkError, match="connect"):
                await fetcher.fetch(f"http://127.0.0.1:{port}/")
        assert clock.sleeps == []


# ---------------------------------------------------------------- the guard at connect time


class TestGuardedResolver:
    async def test_dns_rebinding_second_answer_refused(self) -> None:
        """First lookup: allowed 127.0.0.2. Second: 127.0.0.1, which gets no connection."""
        policy = AddressPolicy(["127.0.0.2"])
        resolver = FakeResolver({"rebind.test": [["127.0.0.2"], ["127.0.0.1"]]})

        async def closing(request: web.Request) -> web.StreamResponse:
            response = web.Response(text="public")
            response.force_close()  # no pooled connection: the second fetch must resolve
            return response

        async with serve({"/": closing}, host="127.0.0.2") as server:
            port = port_of(server)
            url = f"http://rebind.test:{port}/"
            async with (
                listen("127.0.0.1", port=port) as loopback,
                make_fetcher(policy=policy, resolver=resolver) as fetcher,
            ):
                first = await fetcher.fetch(url)
                with pytest.raises(BlockedURLError) as info:
                    await fetcher.fetch(url)
        assert first.body == b"public"
        assert first.address == "127.0.0.2"
        assert info.value.address == "127.0.0.1"
        assert info.value.kind == "blocked"
        assert loopback.connections == 0
        assert len(resolver.calls) == 2

    async def test_one_bad_answer_refuses_the_request(self) -> None:
        policy = AddressPolicy(["127.0.0.2"])
        resolver = FakeResolver({"mixed.test": ["127.0.0.2", "127.0.0.3"]})
        recorder = Recorder()
        async with (
            serve({"/": recorder}, host="127.0.0.2") as server,
            make_fetcher(policy=policy, resolver=resolver) as fetcher,
        ):
            with pytest.raises(BlockedURLError) as info:
                await fetcher.fetch(f"http://mixed.test:{port_of(server)}/")
        assert info.value.address == "127.0.0.3"
        assert recorder.requests == []

    async def test_lookup_failure_fails_closed(self) -> None:
        clock = FakeClock()
        async with make_fetcher(clock, resolver=FakeResolver({})) as fetcher:
            with pytest.raises(NetworkError, match="resolve"):
                await fetcher.fetch("http://nowhere.test/")

    async def test_empty_answer_fails_closed(self) -> None:
        async with make_fetcher(resolver=FakeResolver({"empty.test": [[]]})) as fetcher:
            with pytest.raises(NetworkError):
                await fetcher.fetch("http://empty.test/")

    async def test_name_connects_with_host_header_of_the_name(self) -> None:
        recorder = Recorder()
        resolver = FakeResolver({"docs.test": ["127.0.0.1"]})
        async with serve({"/": recorder}) as server, make_fetcher(resolver=resolver) as fetcher:
            port = port_of(server)
            snapshot = await fetcher.fetch(f"http://Docs.Test.:{port}/")
        assert snapshot.final_url == f"http://docs.test:{port}/"
        assert snapshot.address == "127.0.0.1"
        assert recorder.requests[0]["Host"] == f"docs.test:{port}"

    async def test_resolve_override_pins_a_name(self) -> None:
        """--resolve answers instead of the resolver (which knows nothing here)."""
        recorder = Recorder()
        async with serve({"/": recorder}, host="127.0.0.2") as server:
            port = port_of(server)
            overrides = {("docs.test", port): "127.0.0.2"}
            policy = AddressPolicy(["127.0.0.2"])
            fetcher = make_fetcher(policy=policy, resolve_overrides=overrides)
            async with fetcher:
                snapshot = await fetcher.fetch(f"http://docs.test:{port}/")
        assert snapshot.address == "127.0.0.2"
        assert recorder.requests[0]["Host"] == f"docs.test:{port}"

    async def test_resolve_override_is_still_checked(self) -> None:
        async with listen("127.0.0.3") as refused:
            overrides = {("docs.test", refused.port): "127.0.0.3"}
            async with make_fetcher(resolve_overrides=overrides) as fetcher:
                with pytest.raises(BlockedURLError):
                    await fetcher.fetch(f"http://docs.test:{refused.port}/")
        assert refused.connections == 0

    async def test_refused_literal_gets_no_connection(self) -> None:
        async with listen("127.0.0.3") as refused, make_fetcher() as fetcher:
            with pytest.raises(BlockedURLError):
                await fetcher.fetch(f"http://2130706435:{refused.port}/")
        assert refused.connections == 0

    async def test_proxy_environment_ignored(self, monkeypatch: pytest.MonkeyPatch) -> None:
        async with listen("127.0.0.1") as proxy:
            for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"):
                monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
            async with serve({"/": text("direct")}, host="127.0.0.2") as server:
                fetcher = make_fetcher(policy=AddressPolicy(["127.0.0.1", "127.0.0.2"]))
                async with fetcher:
                    snapshot = await fetcher.fetch(str(server.make_url("/")))
        assert snapshot.body == b"direct"
        assert proxy.connections == 0
