"""Loopback HTTP servers for tests: recorded requests, hostile robots.txt answers, threads."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

from aiohttp import web
from aiohttp.test_utils import TestServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
T = TypeVar("T")


@dataclasses.dataclass
class Seen:
    """One request a test server received."""

    path: str
    query: str
    headers: dict[str, str]


@dataclasses.dataclass
class Site:
    """A running loopback server: its origin and every request it received."""

    origin: str
    requests: list[Seen]

    @property
    def paths(self) -> list[str]:
        """The paths requested, in order."""
        return [seen.path for seen in self.requests]


@contextlib.asynccontextmanager
async def serve(routes: Mapping[str, Handler], host: str = "127.0.0.1") -> AsyncIterator[Site]:
    """Serve ``routes`` (path -> handler) on ``host``, recording each request."""
    requests: list[Seen] = []

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        requests.append(Seen(request.path, request.query_string, dict(request.headers)))
        return await handler(request)

    app = web.Application(middlewares=[record])
    for path, handler in routes.items():
        app.router.add_get(path, handler)
    async with TestServer(app, host=host) as server:
        yield Site(f"http://{host}:{server.port}", requests)


@contextlib.asynccontextmanager
async def serve_app(app: web.Application, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """Serve a whole aiohttp ``app`` on a free port of ``host``; yield its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    try:
        yield f"http://{host}:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def text(body: str | bytes, status: int = 200) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        data = body.encode() if isinstance(body, str) else body
        return web.Response(body=data, status=status, content_type="text/plain")

    return handler


def html(body: str, status: int = 200, headers: Mapping[str, str] | None = None) -> Handler:
    """An HTML page (``body`` inside a minimal document), with any extra headers."""

    async def handler(request: web.Request) -> web.StreamResponse:
        document = f"<html><head><title>{request.path}</title></head><body><main>{body}</main>"
        return web.Response(
            text=document + "</body></html>",
            status=status,
            content_type="text/html",
            headers=dict(headers or {}),
        )

    return handler


def links(*urls: str) -> Handler:
    """An HTML page that links to ``urls``."""
    return html("<h1>Links</h1>" + "".join(f'<p><a href="{url}">{url}</a></p>' for url in urls))


def redirect(location: str, status: int = 302) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, headers={"Location": location})

    return handler


def oversized_robots() -> str:
    """About 600 KiB: ``Disallow: /private/`` first, ``Disallow: /late/`` past 512 KiB."""
    body = "User-agent: *\nDisallow: /private/\n" + "# filler line\n" * 44_000
    body += "Disallow: /late/\n"
    assert len(body) > 600 * 1024
    assert body.index("/late/") > 512 * 1024
    return body


def stalling(release: asyncio.Event) -> Handler:
    """A robots.txt whose body stops after its first line until ``release`` (or 5 s)."""

    async def stall(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        await response.write(b"User-agent: *\n")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(release.wait(), 5)
        await response.write(b"Disallow: /\n")
        return response

    return stall


async def resetting(request: web.Request) -> web.StreamResponse:
    """Promise 4096 bytes, send a few, then cut the connection."""
    response = web.StreamResponse(headers={"Content-Type": "text/plain", "Content-Length": "4096"})
    await response.prepare(request)
    await response.write(b"User-agent: *\nAllow: /\n")
    assert request.transport is not None
    request.transport.close()
    return response


@contextlib.contextmanager
def in_thread(
    serving: Callable[[], AbstractAsyncContextManager[T]], *, timeout: float = 10
) -> Iterator[T]:
    """Enter ``serving()`` on its own event loop in a thread; yield what it yields.

    For servers that code with its own event loop talks to (the CLI's ``main``, a
    subprocess). ``serving`` must be entered within ``timeout`` seconds; the server is
    closed, and the thread joined, when the block ends.
    """
    ready = threading.Event()
    entered: list[T] = []
    failed: list[BaseException] = []
    stop: list[asyncio.Event] = []
    loop = asyncio.new_event_loop()

    async def run() -> None:
        stop.append(asyncio.Event())
        try:
            async with serving() as value:
                entered.append(value)
                ready.set()
                await stop[0].wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            failed.append(exc)
            ready.set()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
    thread.start()
    try:
        assert ready.wait(timeout), "the loopback server did not start"
        if failed:
            raise RuntimeError("the loopback server failed to start") from failed[0]
        yield entered[0]
    finally:
        if stop:
            loop.call_soon_threadsafe(stop[0].set)
        thread.join(timeout)
        loop.close()


@contextlib.contextmanager
def serve_in_thread(routes: Mapping[str, Handler], host: str = "127.0.0.1") -> Iterator[Site]:
    """:func:`serve` on its own event loop in a thread, for code that runs its own loop."""
    with in_thread(lambda: serve(routes, host)) as site:
        yield site
