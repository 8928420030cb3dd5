"""The MCP server over streamable HTTP (uvicorn on 127.0.0.1) with an API key."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from tests.fakes import FakeClock

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.app.bootstrap import Runtime
from sitelore.cli.serve import running_server
from sitelore.core.config import Settings
from sitelore.server.mcp_server import http_app

KEY = "an-mcp-key-of-some-length"


@contextlib.asynccontextmanager
async def served_mcp(tmp_path: Path) -> AsyncIterator[str]:
    """The MCP HTTP app on a free loopback port; yields the endpoint URL."""
    settings = Settings(store=str(tmp_path / "mcp.db"), allow_private=("127.0.0.1",))
    async with Runtime(settings, clock=FakeClock()) as runtime:
        app = http_app(runtime, host="127.0.0.1", api_key=KEY)
        async with running_server(app, host="127.0.0.1", port=0) as served:
            yield f"{served.url}/mcp"


async def test_http_transport_serves_tools_to_a_keyed_client(tmp_path: Path) -> None:
    """With the bearer key the SDK client lists tools and submits; without it, 401."""
    async with serve_site(bundled_site_path()) as site, served_mcp(tmp_path) as endpoint:
        async with httpx.AsyncClient() as plain:
            refused = await plain.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        http_client = httpx2.AsyncClient(headers={"authorization": f"Bearer {KEY}"}, timeout=60)
        async with (
            http_client,
            Client(streamable_http_client(endpoint, http_client=http_client)) as client,
        ):
            names = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("submit-document", {"url": f"{site}/faq.html"})
    assert refused.status_code == 401
    assert names == {"submit-document", "search-documents", "get-document", "list-documents"}
    assert result.is_error is not True
    assert (result.structured_content or {})["pagesIndexed"] == 1


async def test_malformed_bodies_get_their_json_rpc_error_with_their_id(tmp_path: Path) -> None:
    """Over HTTP too: not JSON is -32700 (id null), not JSON-RPC is -32600 with its id."""
    headers = {
        "authorization": f"Bearer {KEY}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    bodies = [
        "{oops",
        '{"jsonrpc":"2.0","id":2}',
        '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
        "[" * 30_000 + "]" * 30_000,  # under the body cap, too deep for json.loads (was a 500)
    ]
    async with served_mcp(tmp_path) as endpoint, httpx.AsyncClient() as client:
        answers = [await client.post(endpoint, content=body, headers=headers) for body in bodies]
    assert [a.status_code for a in answers] == [400, 400, 400, 400]
    assert [(a.json()["id"], a.json()["error"]["code"]) for a in answers] == [
        (None, -32700),
        (2, -32600),
        (None, -32600),
        (None, -32700),
    ]
