"""MCP tool arguments in process (the SDK's in-memory client): strict types, operator's rules.

The same rules as the REST bodies: loose values are error results naming the field,
robots.txt cannot be switched off, delay is never below the operator's, rendering needs
the operator's consent, and a robots.txt refusal names no CLI flag.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from tests.fakes import FakeClock

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.app.bootstrap import Runtime
from sitelore.app.wire import RemotePolicy
from sitelore.core.config import Settings
from sitelore.server.mcp_server import build_server

SUBMIT = "submit-document"


@pytest.fixture
async def site() -> AsyncIterator[str]:
    async with serve_site(bundled_site_path()) as base:
        yield base


@contextlib.asynccontextmanager
async def connected(
    tmp_path: Path, remote: RemotePolicy | None = None
) -> AsyncIterator[tuple[Client, FakeClock]]:
    """An in-process client of the MCP server over a fresh store; the clock never sleeps."""
    settings = Settings(store=str(tmp_path / "mcp.db"), allow_private=("127.0.0.1",))
    clock = FakeClock()
    async with (
        Runtime(settings, clock=clock) as runtime,
        Client(build_server(runtime, remote=remote)) as client,
    ):
        yield client, clock


def text_of(result: types.CallToolResult) -> str:
    assert result.content, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def stored(client: Client) -> int:
    listed = await client.call_tool("list-documents", {})
    total = (listed.structured_content or {})["total"]
    assert isinstance(total, int)
    return total


LOOSE_CALLS: list[tuple[str, dict[str, Any], str]] = [
    (SUBMIT, {"spider": "yes"}, "spider"),
    (SUBMIT, {"spider": 1}, "spider"),
    (SUBMIT, {"maxPages": "10"}, "maxPages"),
    (SUBMIT, {"maxPages": 10.5}, "maxPages"),
    (SUBMIT, {"maxDepth": True}, "maxDepth"),
    (SUBMIT, {"sameDomain": "off"}, "sameDomain"),
    (SUBMIT, {"pathPrefix": 5}, "pathPrefix"),
    (SUBMIT, {"excludePatterns": "*/x*"}, "excludePatterns"),
    (SUBMIT, {"delay": "2"}, "delay"),
    (SUBMIT, {"respectRobots": "false"}, "respectRobots"),
    ("search-documents", {"query": "x", "limit": "5"}, "limit"),
    ("get-document", {"id": "x", "maxBytes": "2048"}, "maxBytes"),
    ("list-documents", {"offset": "1"}, "offset"),
    ("list-documents", {"limit": True}, "limit"),
]


async def test_loose_values_are_error_results_naming_the_field(site: str, tmp_path: Path) -> None:
    """No coercion on any tool; a refused submit runs nothing."""
    async with connected(tmp_path) as (client, _):
        results = []
        for tool, args, field in LOOSE_CALLS:
            if tool == SUBMIT:
                args = {"url": f"{site}/", "spider": True, **args}
            results.append((tool, field, await client.call_tool(tool, args)))
        total = await stored(client)
    wrong = [
        (tool, field, text_of(result))
        for tool, field, result in results
        if result.is_error is not True or f"invalid arguments: {field}" not in text_of(result)
    ]
    assert wrong == []
    assert total == 0


async def test_json_integer_delay_and_pattern_array_are_accepted(site: str, tmp_path: Path) -> None:
    args = {
        "url": f"{site}/guide/",
        "spider": True,
        "maxPages": 2,
        "delay": 2,
        "excludePatterns": ["*/deployment*"],
    }
    async with connected(tmp_path) as (client, _):
        result = await client.call_tool(SUBMIT, args)
    assert result.is_error is not True, text_of(result)
    applied = (result.structured_content or {})["applied"]
    assert applied["delay"] == 2.0
    assert applied["excludePatterns"] == ["*/deployment*"]


async def test_robots_off_and_render_are_the_operators(site: str, tmp_path: Path) -> None:
    """respectRobots false is refused; render true only where the operator allowed it."""
    async with connected(tmp_path) as (client, _):
        robots = await client.call_tool(SUBMIT, {"url": f"{site}/", "respectRobots": False})
        render = await client.call_tool(SUBMIT, {"url": f"{site}/", "render": True})
        total = await stored(client)
    assert robots.is_error is True
    assert "respectRobots: set by the operator only" in text_of(robots)
    assert render.is_error is True
    assert "render: " in text_of(render)
    assert "--allow-render" in text_of(render)
    assert total == 0


async def test_smaller_delay_is_raised_and_said(site: str, tmp_path: Path) -> None:
    """delay 0 runs with the operator's delay (the crawl waits it) and the result says so."""
    args = {"url": f"{site}/guide/", "spider": True, "maxPages": 3, "delay": 0}
    async with connected(tmp_path, RemotePolicy(delay=0.5)) as (client, clock):
        result = await client.call_tool(SUBMIT, args)
        listed = await client.list_tools()
    assert result.is_error is not True, text_of(result)
    summary = result.structured_content or {}
    assert summary["applied"]["delay"] == 0.5
    assert summary["clamped"] == [{"field": "delay", "requested": 0.0, "applied": 0.5}]
    assert "Clamped: delay 0.0 -> 0.5" in text_of(result)
    assert clock.sleeps
    assert min(clock.sleeps) >= 0.49
    schema = next(tool for tool in listed.tools if tool.name == SUBMIT).input_schema
    props = schema["properties"]
    assert props["delay"]["default"] == 0.5
    assert "set by the operator only" in props["respectRobots"]["description"].lower()
    assert "--allow-render" in props["render"]["description"]


async def test_robots_refusal_names_no_cli_flag(site: str, tmp_path: Path) -> None:
    async with connected(tmp_path) as (client, _):
        result = await client.call_tool(SUBMIT, {"url": f"{site}/internal/"})
    assert result.is_error is True
    text = text_of(result)
    assert f"{site}/robots.txt" in text
    assert "--no-robots" not in text
    assert "respect_robots" not in text
    assert "respectRobots is set by the operator only" in text
