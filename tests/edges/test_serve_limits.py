"""Slow and greedy clients: half-open requests are closed after the read timeout, and one
address cannot take every connection, so a normal client is still served."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from tests.fakes import FakeClock

from sitelore.app.bootstrap import Runtime
from sitelore.cli.serve import running_server
from sitelore.core.config import Settings
from sitelore.server.api import create_app
from sitelore.server.asgi_guard import ConnectionLimits

pytestmark = pytest.mark.slow

LIMITS = ConnectionLimits(read_timeout=0.5, max_connections=200, per_client=16)
HALF_OPEN = 300


@contextlib.asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, int]]:
    settings = Settings(store=str(tmp_path / "api.db"))
    async with Runtime(settings, clock=FakeClock()) as runtime:
        app = create_app(runtime)
        async with running_server(app, host="127.0.0.1", port=0, limits=LIMITS) as server:
            port = urlsplit(server.url).port
            assert port is not None
            yield server.url, port


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """True when the server closed (or reset) the connection without answering."""
    try:
        return await reader.read() == b""
    except ConnectionError:
        return True


async def test_half_open_connections_leave_normal_clients_served(tmp_path: Path) -> None:
    """300 never-finished requests: another client is served at once; they are closed."""
    async with served(tmp_path) as (url, port):
        streams = []
        for _ in range(HALF_OPEN):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            streams.append((reader, writer))
        transport = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        async with httpx.AsyncClient(base_url=url, transport=transport) as client:
            during = await asyncio.wait_for(client.get("/healthz"), 5)
        closed = await asyncio.wait_for(
            asyncio.gather(*(closed_by_server(reader) for reader, _ in streams)), 30
        )
        async with httpx.AsyncClient(base_url=url) as client:
            after = await client.get("/healthz")
        for _, writer in streams:
            writer.close()
    assert during.status_code == 200
    assert all(closed)
    assert after.status_code == 200


async def test_a_body_that_never_finishes_is_cut_and_nothing_is_stored(tmp_path: Path) -> None:
    """A POST whose body stops short is closed after the read timeout, with no answer."""
    async with served(tmp_path) as (url, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /api/v1/crawls HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"url": '
        )
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        async with httpx.AsyncClient(base_url=url) as client:
            docs = (await client.get("/api/v1/documents")).json()
    assert answer == b""
    assert docs["total"] == 0


async def test_slow_headers_are_cut_even_when_they_trickle(tmp_path: Path) -> None:
    """The deadline is for the whole request, so a byte now and then does not extend it."""
    async with served(tmp_path) as (_url, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\n")
        trickled = 0
        while not reader.at_eof() and trickled < 100:
            writer.write(b"X: y\r\n")
            trickled += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reader.read(1), 0.1)
        writer.close()
    assert reader.at_eof()
    assert trickled < 100
