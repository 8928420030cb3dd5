"""The MCP server over stdio, driven by the SDK's own client: ``python -m sitelore mcp``.

The example site is served from the test on 127.0.0.1; the server subprocess is told
to allow that address (an operator flag) and talks to nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from sitelore.adapters.demo_site import bundled_site_path, serve_site

pytestmark = pytest.mark.slow

TOOLS = {"submit-document", "search-documents", "get-document", "list-documents"}


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async with serve_site(bundled_site_path()) as base:
        yield base


@contextlib.asynccontextmanager
async def server_client(tmp_path: Path, *extra: str) -> AsyncIterator[Client]:
    """An SDK client connected to ``sitelore mcp`` spawned over stdio (store in tmp_path)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "sitelore", "mcp",
            "--db", str(tmp_path / "mcp.db"),
            "--allow-private", "127.0.0.1",
            *extra,
        ],
        cwd=str(tmp_path),
    )  # fmt: skip
    with (tmp_path / "server-stderr.txt").open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=60) as client:
            yield client


def text_of(result: types.CallToolResult) -> str:
    assert result.content, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


class TestTools:
    async def test_tools_are_listed_with_json_schemas(self, tmp_path: Path) -> None:
        """Four tools, each with a compact object input schema; submit shows fields and caps.

        No output schemas and no titles: the listing is about a third of its former 15 KB.
        """
        async with server_client(tmp_path, "--cap-max-pages", "60") as client:
            listed = (await client.list_tools()).tools
        by_name = {tool.name: tool for tool in listed}
        assert set(by_name) == TOOLS
        size = len(json.dumps([tool.model_dump(mode="json", by_alias=True) for tool in listed]))
        assert size < 7000
        for tool in listed:
            assert tool.input_schema["type"] == "object"
            assert tool.input_schema["additionalProperties"] is False
            assert "title" not in tool.input_schema
            assert tool.description
        submit = by_name["submit-document"].input_schema
        props = submit["properties"]
        assert submit["required"] == ["url"]
        assert list(props)[:2] == ["url", "spider"]
        for name in ("spider", "maxPages", "maxDepth", "sameDomain", "pathPrefix"):
            assert "default" in props[name], name
        assert props["maxPages"]["x-hard-cap"] == 60
        assert "allowPrivate" not in props
        get = by_name["get-document"].input_schema["properties"]
        assert get["maxBytes"]["maximum"] == 64 * 1024

    async def test_submit_indexes_pages_then_search_get_and_list_find_them(
        self, site: str, tmp_path: Path
    ) -> None:
        """submit-document crawls with progress; the pages are then searchable and readable."""
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        async with server_client(tmp_path, "--delay", "0") as client:
            submitted = await client.call_tool(
                "submit-document",
                {
                    "url": f"{site}/guide/",
                    "spider": True,
                    "maxPages": 4,
                    "pathPrefix": "/guide/",
                    "delay": 0,
                },
                progress_callback=on_progress,
            )
            assert submitted.is_error is not True, text_of(submitted)
            summary: dict[str, Any] = submitted.structured_content or {}
            found = await client.call_tool("search-documents", {"query": "installation"})
            first = summary["documents"][0]
            window = await client.call_tool("get-document", {"id": first["url"], "maxBytes": 1024})
            cursor = (window.structured_content or {})["nextCursor"]
            rest = await client.call_tool("get-document", {"id": first["id"], "cursor": cursor})
            listed = await client.call_tool("list-documents", {"limit": 2})

        assert summary["pagesIndexed"] == 4
        assert summary["truncated"] is True
        assert f"{site}/guide/" in text_of(submitted)
        assert [done for done, _, _ in seen] == [1, 2, 3, 4]
        assert all(total == 4 for _, total, _ in seen)
        assert all(message and site in message for _, _, message in seen)

        hits = (found.structured_content or {})["hits"]
        assert any(hit["url"] == f"{site}/guide/installation.html" for hit in hits)
        assert "<<<FETCHED CONTENT" in text_of(found)

        shown = window.structured_content or {}
        assert shown["url"] == first["url"]
        assert "text" not in shown  # the text is sent once, as the fenced text content
        assert shown["end"] - shown["start"] <= 1024
        assert shown["totalBytes"] > 1024
        text = text_of(window)
        assert text.startswith("<<<FETCHED CONTENT ")
        assert f"url: {first['url']}" in text
        assert "fetched-at: " in text
        assert text.rstrip().endswith(">>>")
        more = rest.structured_content or {}
        assert more["start"] == shown["end"]
        listing = listed.structured_content or {}
        assert listing["total"] == 4
        assert len(listing["documents"]) == 2

    async def test_bad_arguments_are_error_results_and_the_server_lives_on(
        self, site: str, tmp_path: Path
    ) -> None:
        """Wrong types, unknown fields, refused URLs and unknown tools are error results."""
        calls: list[tuple[str, dict[str, Any], str]] = [
            ("submit-document", {"url": f"{site}/", "maxPages": "x"}, "maxPages"),
            ("submit-document", {"url": f"{site}/", "maxPages": "10"}, "maxPages"),
            ("submit-document", {"url": f"{site}/", "spider": "yes"}, "spider"),
            ("submit-document", {"url": f"{site}/", "sameDomain": "off"}, "sameDomain"),
            (
                "submit-document",
                {"url": f"{site}/", "respectRobots": False},
                "respectRobots: set by the operator only",
            ),
            ("submit-document", {"url": f"{site}/", "render": True}, "--allow-render"),
            ("submit-document", {"url": f"{site}/internal/"}, "set by the operator only"),
            ("search-documents", {"query": "x", "limit": "5"}, "limit"),
            (
                "submit-document",
                {"url": f"{site}/", "allowPrivate": ["10.0.0.0/8"]},
                "allowPrivate",
            ),
            ("submit-document", {"spider": True}, "url"),
            ("submit-document", {"url": "http://10.0.0.1/"}, "10.0.0.1 is private"),
            ("submit-document", {"url": f"{site}/missing.html"}, "404"),
            ("get-document", {"id": "nope"}, "no such document"),
            # The URL asked for is named without its password (it was repeated).
            ("get-document", {"id": "http://bob:hunter2@a.test/"}, "'http://***@a.test/'"),
            ("get-document", {"id": "http://bob:hunter2@a.test/#x"}, "'http://***@a.test/#x'"),
            ("get-document", {"id": "nope", "maxBytes": 10}, "maxBytes"),
            ("search-documents", {"query": ""}, "query"),
            ("no-such-tool", {}, "no such tool"),
        ]
        async with server_client(tmp_path) as client:
            results = [(await client.call_tool(name, args), needle) for name, args, needle in calls]
            alive = await client.call_tool("list-documents", {})
        for result, needle in results:
            assert result.is_error is True
            assert needle in text_of(result)
            assert "hunter2" not in text_of(result)
        assert alive.is_error is not True
        assert (alive.structured_content or {})["total"] == 0


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


class TestMalformedLines:
    async def test_every_malformed_line_gets_its_json_rpc_error(self, tmp_path: Path) -> None:
        """Raw lines to ``sitelore mcp``: each bad one is answered (with its id when it has
        one), in order, and the session goes on answering good requests."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "sitelore", "mcp", "--db", str(tmp_path / "mcp.db"),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=tmp_path,
        )  # fmt: skip
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None

        async def ask(line: str) -> dict[str, Any]:
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(line.encode() + b"\n")
            await process.stdin.drain()
            answer: dict[str, Any] = json.loads(
                await asyncio.wait_for(process.stdout.readline(), 30)
            )
            return answer

        try:
            init = await ask(json.dumps(INIT))
            process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n\n')
            answers = [
                await ask("not json at all"),
                await ask('{"jsonrpc":"2.0","id":2}'),
                await ask('{"jsonrpc":"1.0","id":"three","method":"ping"}'),
                await ask('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"}'),
                await ask('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'),
                await ask('{"jsonrpc":"2.0","id":6,"method":"no/such/method"}'),
                await ask("[" * 100_000 + "]" * 100_000),  # too deep for json.loads
            ]
            alive = await ask('{"jsonrpc":"2.0","id":7,"method":"ping"}')
        finally:
            process.stdin.close()
            await asyncio.wait_for(process.wait(), 30)
        stderr = (await process.stderr.read()).decode()
        assert init["id"] == 1
        assert "result" in init
        assert [(a["id"], a["error"]["code"]) for a in answers] == [
            (None, -32700),
            (2, -32600),
            ("three", -32600),
            (4, -32600),
            (None, -32600),
            (6, -32601),
            (None, -32700),
        ]
        assert alive == {"jsonrpc": "2.0", "id": 7, "result": {}}
        assert process.returncode == 0
        assert "Traceback" not in stderr
