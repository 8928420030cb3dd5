"""Serve the REST API for a test: uvicorn on 127.0.0.1 (a free port) and an httpx client;
and a site whose pages hang until a test lets them go."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web
from fastapi import FastAPI
from tests.fakes import FakeClock, FakeResolver

from sitelore.app.bootstrap import Runtime
from sitelore.cli.serve import running_server
from sitelore.core.config import Settings
from sitelore.core.linkstyle import LinkStyle
from sitelore.core.options import Limits
from sitelore.server.api import create_app
from sitelore.server.host_guard import HostPolicy


@dataclasses.dataclass(frozen=True)
class Served:
    """A running API: its client (base URL set), runtime, base URL and app."""

    client: httpx.AsyncClient
    runtime: Runtime
    url: str
    app: FastAPI


@contextlib.asynccontextmanager
async def serve_api(
    tmp_path: Path,
    *,
    limits: Limits | None = None,
    headers: dict[str, str] | None = None,
    host: str = "127.0.0.1",
    resolver: FakeResolver | None = None,
    links: LinkStyle = "inline",
    **app_options: Any,
) -> AsyncIterator[Served]:
    """The API on ``host`` over a fresh SQLite store; 127.0.0.1 is allowed, the clock
    never sleeps. The Host/Origin policy is that of a server bound to ``host``;
    ``links`` is the operator's link style setting."""
    settings = Settings(
        store=str(tmp_path / "api.db"),
        allow_private=("127.0.0.1",),
        limits=limits or Limits(),
        links=links,
    )
    async with Runtime(settings, clock=FakeClock(), resolver=resolver) as runtime:
        app = create_app(runtime, **{"hosts": HostPolicy(host), **app_options})
        async with (
            running_server(app, host=host, port=0) as served,
            httpx.AsyncClient(base_url=served.url, timeout=30, headers=headers) as client,
        ):
            yield Served(client, runtime, served.url, app)


class GatedSite:
    """/ links to /a, /b, /c; those hang until ``gate`` opens. ``asked`` is set by /a."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.asked = asyncio.Event()

    def app(self) -> web.Application:
        async def index(_request: web.Request) -> web.Response:
            links = "".join(f'<a href="/{name}">{name}</a>' for name in "abc")
            html = "<html><head><title>Gated home</title></head><body><main><h1>Home</h1>"
            html += f"<p>Words about the gated home page.</p>{links}</main></body></html>"
            return web.Response(text=html, content_type="text/html")

        async def slow(request: web.Request) -> web.Response:
            if request.path == "/a":
                self.asked.set()
            await self.gate.wait()
            return web.Response(text="<title>late</title>late", content_type="text/html")

        app = web.Application()
        app.router.add_get("/", index)
        app.router.add_get("/{name:[abc]}", slow)
        return app
