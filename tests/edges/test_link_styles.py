"""The ``links`` option on every surface: REST (uvicorn on 127.0.0.1), MCP (the SDK's
in-memory client), the CLI's ``show`` and ``export --jsonl``, and the operator's default.

Each surface is checked against the pure function (``restyle_links``) on a stored page
whose links repeat, sit beside code and images, and span more than one MCP window.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from tests.cli_support import run_cli
from tests.edges.api_helpers import serve_api
from tests.fakes import FakeClock

from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.linkstyle import LINK_STYLES, LinkStyle, restyle_links
from sitelore.core.models import Document, FetchMeta
from sitelore.core.ports import Store
from sitelore.server.mcp_server import build_server

URL = "https://docs.example.org/guide/install.html"
SECTION = (
    'See [the API reference](https://docs.example.org/api/index.html#install "API") and '
    "[the FAQ](https://docs.example.org/faq.html); the "
    '[reference](https://docs.example.org/api/index.html#install "API") again.\n\n'
    "![diagram](https://docs.example.org/img/flow.png)\n\n"
    "```python\nprint('[not a link](https://nowhere.example)')\n```\n\n"
    "Inline `[code](https://code.example)` stays; [next page](../next.html).\n\n"
)
#: About 3 KiB: several windows of 1 KiB in every style, and two sections.
MARKDOWN = "# Install\n\n" + SECTION * 3 + "## Upgrade\n\n" + SECTION * 3
STYLES: tuple[LinkStyle, ...] = LINK_STYLES


async def _store_page(store: Store) -> str:
    meta = FetchMeta(
        status=200, content_type="text/html", fetched_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    result = await store.upsert(Document(url=URL, title="Install", markdown=MARKDOWN), meta)
    return result.id


def test_the_sample_differs_in_each_style() -> None:
    """A guard on the sample itself: the three styles give three different texts."""
    assert len({restyle_links(MARKDOWN, style) for style in STYLES}) == 3
    assert '\n[1]: https://docs.example.org/api/index.html#install "API"\n' in restyle_links(
        MARKDOWN, "reference"
    )


class TestRest:
    async def test_get_document_in_each_style_and_inline_by_default(self, tmp_path: Path) -> None:
        async with serve_api(tmp_path) as api:
            doc_id = await _store_page(api.runtime.store)
            plain = await api.client.get(f"/api/v1/documents/{doc_id}")
            styled = {
                style: await api.client.get(f"/api/v1/documents/{doc_id}", params={"links": style})
                for style in STYLES
            }
        assert plain.status_code == 200
        assert plain.json()["markdown"] == MARKDOWN
        for style, answer in styled.items():
            assert answer.status_code == 200, answer.text
            assert answer.json()["markdown"] == restyle_links(MARKDOWN, style), style
            assert answer.json()["contentHash"] == plain.json()["contentHash"]
        assert "](https://docs.example.org/faq" not in styled["reference"].json()["markdown"]
        assert "https://docs.example.org/faq.html" not in styled["none"].json()["markdown"]

    @pytest.mark.parametrize("value", ["footnote", "Reference", ""])
    async def test_an_unknown_style_is_422_naming_links(self, value: str, tmp_path: Path) -> None:
        async with serve_api(tmp_path) as api:
            doc_id = await _store_page(api.runtime.store)
            answer = await api.client.get(f"/api/v1/documents/{doc_id}", params={"links": value})
        assert answer.status_code == 422
        error = answer.json()["error"]
        assert error["field"] == "links"
        assert error["message"].startswith("links: ")

    async def test_the_operator_setting_is_the_default_and_documented(self, tmp_path: Path) -> None:
        async with serve_api(tmp_path, links="reference") as api:
            doc_id = await _store_page(api.runtime.store)
            default = await api.client.get(f"/api/v1/documents/{doc_id}")
            inline = await api.client.get(f"/api/v1/documents/{doc_id}?links=inline")
            openapi = (await api.client.get("/openapi.json")).json()
        assert default.json()["markdown"] == restyle_links(MARKDOWN, "reference")
        assert inline.json()["markdown"] == MARKDOWN
        get = openapi["paths"]["/api/v1/documents/{document_id}"]["get"]
        (links,) = [param for param in get["parameters"] if param["name"] == "links"]
        assert links["in"] == "query"
        assert links["required"] is False
        assert links["schema"]["enum"] == ["inline", "reference", "none"]
        assert links["schema"]["default"] == "reference"
        assert "422" in get["responses"]


@contextlib.asynccontextmanager
async def mcp_client(tmp_path: Path, links: LinkStyle = "inline") -> AsyncIterator[Client]:
    """An in-process MCP client over a store holding the sample page."""
    settings = Settings(store=str(tmp_path / "mcp.db"), links=links)
    async with Runtime(settings, clock=FakeClock()) as runtime:
        await _store_page(runtime.store)
        async with Client(build_server(runtime)) as client:
            yield client


def _fenced_body(result: types.CallToolResult) -> str:
    """The page text of a get-document answer: what its fence holds after the header."""
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    body = block.text.split("\n---\n", 1)[1]
    return body[: body.rindex("\n<<<END FETCHED CONTENT ")]


async def _read_all(client: Client, **args: object) -> tuple[str, list[dict[str, object]]]:
    """Every window of the sample, following cursors; the joined text and the windows."""
    windows: list[dict[str, object]] = []
    texts: list[str] = []
    cursor: object = None
    while True:
        call = {"id": URL, "maxBytes": 1024, **args}
        if cursor is not None:
            call["cursor"] = cursor
        result = await client.call_tool("get-document", call)
        assert result.is_error is not True, result
        windows.append(result.structured_content or {})
        texts.append(_fenced_body(result))
        cursor = windows[-1]["nextCursor"]
        if cursor is None:
            return "".join(texts), windows


class TestMcp:
    @pytest.mark.parametrize("style", STYLES)
    async def test_windows_and_cursors_follow_the_styled_text(
        self, style: LinkStyle, tmp_path: Path
    ) -> None:
        expected = restyle_links(MARKDOWN, style)
        async with mcp_client(tmp_path) as client:
            text, windows = await _read_all(client, links=style)
        assert text == expected
        assert len(windows) > 1
        assert {window["totalBytes"] for window in windows} == {len(expected.encode())}
        assert [window["start"] for window in windows[1:]] == [w["end"] for w in windows[:-1]]

    async def test_the_operator_setting_is_the_default_and_in_the_schema(
        self, tmp_path: Path
    ) -> None:
        async with mcp_client(tmp_path, links="none") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            default, _ = await _read_all(client)
            inline, _ = await _read_all(client, links="inline")
        links = tools["get-document"].input_schema["properties"]["links"]
        assert links["enum"] == ["inline", "reference", "none"]
        assert links["default"] == "none"
        assert default == restyle_links(MARKDOWN, "none")
        assert inline == MARKDOWN

    async def test_a_section_opens_where_it_starts_in_the_styled_text(self, tmp_path: Path) -> None:
        """Section offsets are found in the restyled text, not the stored one."""
        async with mcp_client(tmp_path) as client:
            answers = {
                style: await client.call_tool(
                    "get-document", {"id": URL, "section": "1", "links": style}
                )
                for style in STYLES
            }
        for style, answer in answers.items():
            styled = restyle_links(MARKDOWN, style)
            start = len(styled[: styled.index("## Upgrade")].encode())
            assert (answer.structured_content or {})["start"] == start, style
            assert _fenced_body(answer).startswith("## Upgrade\n"), style

    async def test_search_sections_are_restyled(self, tmp_path: Path) -> None:
        async with mcp_client(tmp_path, links="none") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            default = await client.call_tool("search-documents", {"query": "FAQ"})
            inline = await client.call_tool("search-documents", {"query": "FAQ", "links": "inline"})
        faq = "](https://docs.example.org/faq.html)"
        assert tools["search-documents"].input_schema["properties"]["links"]["default"] == "none"
        assert "the FAQ;" in _fenced_body(default)
        assert faq not in _fenced_body(default)
        assert faq in _fenced_body(inline)

    @pytest.mark.parametrize("value", ["footnote", 1, None])
    async def test_an_unknown_style_is_an_error_result_naming_links(
        self, value: object, tmp_path: Path
    ) -> None:
        async with mcp_client(tmp_path) as client:
            result = await client.call_tool("get-document", {"id": URL, "links": value})
        assert result.is_error is True
        block = result.content[0]
        assert getattr(block, "text", "").startswith("get-document: invalid arguments: links")


def _seeded_store(tmp_path: Path) -> str:
    db = str(tmp_path / "cli.db")

    async def seed() -> None:
        async with Runtime(Settings(store=db)) as runtime:
            await _store_page(runtime.store)

    asyncio.run(seed())
    return db


class TestCli:
    def test_export_jsonl_restyles_the_markdown_only(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = _seeded_store(tmp_path)
        exported = {}
        for style in STYLES:
            code, out, err = run_cli(
                ["export", "--db", db, "--jsonl", "-", "--links", style], capsys
            )
            assert code == 0, err
            (line,) = out.splitlines()
            exported[style] = json.loads(line)
        for style, line in exported.items():
            assert line["markdown"] == restyle_links(MARKDOWN, style)
            rest = {key: value for key, value in line.items() if key != "markdown"}
            assert rest == {k: v for k, v in exported["inline"].items() if k != "markdown"}

    def test_export_links_needs_jsonl(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The WARC keeps the stored Markdown, so --links alone with --warc is a usage error."""
        db = _seeded_store(tmp_path)
        warc = tmp_path / "out.warc.gz"
        code, _, err = run_cli(
            ["export", "--db", db, "--warc", str(warc), "--links", "none"], capsys
        )
        assert code == 2
        assert "--links" in err
        assert not warc.exists()
        code, _, err = run_cli(["export", "--db", db, "--jsonl", "-", "--links", "bogus"], capsys)
        assert code == 2
        assert "--links bogus" in err

    def test_the_settings_file_sets_the_default_and_the_flag_wins(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = _seeded_store(tmp_path)
        config = tmp_path / "sitelore.toml"
        config.write_text('links = "reference"\n', encoding="utf-8")
        common = ["--db", db, "--config", str(config)]
        _, shown, _ = run_cli(["show", URL, *common, "--json"], capsys)
        _, flagged, _ = run_cli(["show", URL, *common, "--json", "--links", "none"], capsys)
        _, exported, _ = run_cli(["export", *common, "--jsonl", "-"], capsys)
        assert json.loads(shown)["markdown"] == restyle_links(MARKDOWN, "reference")
        assert json.loads(flagged)["markdown"] == restyle_links(MARKDOWN, "none")
        assert json.loads(exported)["markdown"] == restyle_links(MARKDOWN, "reference")

    def test_a_wrong_setting_exits_78_naming_the_key(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = tmp_path / "sitelore.toml"
        config.write_text('links = "footnotes"\n', encoding="utf-8")
        code, out, err = run_cli(
            ["show", URL, "--db", str(tmp_path / "x.db"), "--config", str(config)], capsys
        )
        assert code == 78
        assert out == ""
        assert f"{config}: links: " in err
        assert len(err.strip().splitlines()) == 1
