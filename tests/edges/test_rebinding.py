"""DNS rebinding: the REST API and MCP over HTTP refuse a foreign Host (421) and Origin (403).

Each server listens on a loopback address (127.0.0.1, 127.0.0.2 and ::1); a request
carrying the Host and Origin a rebinding web page would send is refused before any
route runs, while the server's own Host, and its own Origin, are served.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from tests.edges.api_helpers import serve_api
from tests.edges.test_mcp_stdio import INIT
from tests.fakes import FakeClock

from sitelore.app.bootstrap import Runtime
from sitelore.cli.serve import running_server
from sitelore.core.config import Settings
from sitelore.server.host_guard import HostPolicy
from sitelore.server.mcp_server import http_app

BINDS = ["127.0.0.1", "127.0.0.2", "::1"]
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


def foreign(url: str) -> tuple[str, str]:
    """The Host and Origin a rebinding page would send to the server at ``url``."""
    port = urlsplit(url).port
    return f"evil.example:{port}", f"http://evil.example:{port}"


@pytest.mark.parametrize("bind", BINDS)
async def test_rest_api_refuses_foreign_host_and_origin(bind: str, tmp_path: Path) -> None:
    """421 for a foreign Host, 403 for a foreign Origin, even to write; own ones served."""
    async with serve_api(tmp_path, host=bind) as api:
        evil_host, evil_origin = foreign(api.url)
        own_origin = api.url
        docs = "/api/v1/documents"
        by_host = await api.client.get(docs, headers={"host": evil_host})
        by_origin = await api.client.get(docs, headers={"origin": evil_origin})
        crawl = await api.client.post(
            "/api/v1/crawls",
            json={"url": "http://127.0.0.1:9/"},
            headers={"host": evil_host, "origin": evil_origin},
        )
        own = await api.client.get(docs)
        own_with_origin = await api.client.get(docs, headers={"origin": own_origin})
    assert by_host.status_code == 421
    assert by_host.json()["error"]["code"] == "misdirected"
    assert by_origin.status_code == 403
    assert by_origin.json()["error"]["code"] == "forbidden-origin"
    assert crawl.status_code == 421
    assert own.status_code == 200
    assert own_with_origin.status_code == 200
    assert "access-control-allow-origin" not in own_with_origin.headers


async def test_listed_host_and_cors_origin_are_served(tmp_path: Path) -> None:
    """--allowed-host names are answered; --cors-origin origins get CORS headers."""
    policy = HostPolicy(
        "127.0.0.1", allowed_hosts=("docs.internal",), cors_origins=("https://app.example",)
    )
    async with serve_api(tmp_path, hosts=policy) as api:
        listed = await api.client.get("/healthz", headers={"host": "docs.internal"})
        preflight = await api.client.options(
            "/api/v1/documents",
            headers={
                "origin": "https://app.example",
                "access-control-request-method": "GET",
            },
        )
        cors = await api.client.get("/healthz", headers={"origin": "https://app.example"})
        other = await api.client.get("/healthz", headers={"origin": "https://other.example"})
    assert listed.status_code == 200
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert cors.headers["access-control-allow-origin"] == "https://app.example"
    assert other.status_code == 403


@contextlib.asynccontextmanager
async def served_mcp(tmp_path: Path, bind: str) -> AsyncIterator[str]:
    """MCP over streamable HTTP on ``bind`` without a key (loopback); yields its URL."""
    settings = Settings(store=str(tmp_path / "mcp.db"))
    async with Runtime(settings, clock=FakeClock()) as runtime:
        app = http_app(runtime, host=bind)
        async with running_server(app, host=bind, port=0) as served:
            yield f"{served.url}/mcp"


@pytest.mark.parametrize("bind", BINDS)
async def test_mcp_over_http_refuses_foreign_host_and_origin(bind: str, tmp_path: Path) -> None:
    """The same rule on MCP's endpoint, 127.0.0.2 included (the SDK guards 3 names only)."""
    async with served_mcp(tmp_path, bind) as endpoint, httpx.AsyncClient() as client:
        evil_host, evil_origin = foreign(endpoint)
        own_origin = endpoint.removesuffix("/mcp")
        by_host = await client.post(endpoint, json=INIT, headers={**MCP_HEADERS, "host": evil_host})
        by_origin = await client.post(
            endpoint, json=INIT, headers={**MCP_HEADERS, "origin": evil_origin}
        )
        own = await client.post(endpoint, json=INIT, headers={**MCP_HEADERS, "origin": own_origin})
    assert by_host.status_code == 421
    assert by_origin.status_code == 403
    assert own.status_code == 200, own.text
    assert "serverInfo" in own.text
