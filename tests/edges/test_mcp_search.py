"""Agent-sized answers over MCP (in process): sections from search, documents opened at one."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

from mcp import Client
from tests.edges.test_mcp_remote import text_of

from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.models import Document, FetchMeta
from sitelore.server.mcp_server import build_server

_URL = "https://docs.test/client.html"
_FILLER = "\n\n".join(f"Paragraph {i} about connection pools and sockets." for i in range(400))
_MARKDOWN = f"""# Client {{#client}}

{_FILLER}

## Timeouts {{#timeouts}}

Pass `timeout=5` to give up after five seconds.

### Connect timeouts {{#connect-timeouts}}

The connect timeout bounds the TCP handshake.

## Retries {{#retries}}

Retries use exponential backoff.
"""


@contextlib.asynccontextmanager
async def filled(tmp_path: Path) -> AsyncIterator[Client]:
    settings = Settings(store=str(tmp_path / "mcp.db"))
    async with Runtime(settings) as runtime:
        meta = FetchMeta(status=200, content_type="text/html", fetched_at=datetime.now(UTC))
        await runtime.store.upsert(Document(url=_URL, title="Client", markdown=_MARKDOWN), meta)
        async with Client(build_server(runtime)) as client:
            yield client


async def test_search_returns_the_best_section_itself_once(tmp_path: Path) -> None:
    async with filled(tmp_path) as client:
        question = {"query": "how do I give up after five seconds?"}
        found = await client.call_tool("search-documents", question)

    text = text_of(found)
    assert "[1] Client > Timeouts" in text
    assert f"url: {_URL}#timeouts" in text
    assert "Pass `timeout=5` to give up after five seconds." in text  # the section's Markdown
    assert "Paragraph 3 " not in text  # not the whole page
    assert len(text.encode()) < 2000
    (hit,) = (found.structured_content or {})["hits"]
    assert hit["headingPath"] == ["Client", "Timeouts"]
    assert hit["anchorUrl"] == f"{_URL}#timeouts"
    assert "Pass `timeout=5`" not in str(found.structured_content)  # the text is not repeated


async def test_a_long_section_is_cut_to_the_budget_and_says_how_to_read_on(
    tmp_path: Path,
) -> None:
    async with filled(tmp_path) as client:
        found = await client.call_tool(
            "search-documents", {"query": "connection pools sockets", "maxBytes": 1024}
        )

    text = text_of(found)
    assert "section continues: get-document id=" in text
    assert len(text.encode()) < 1024 + 600  # the budget plus the fence and the headers


async def test_get_document_opens_at_a_section_by_anchor_number_or_anchor_url(
    tmp_path: Path,
) -> None:
    async with filled(tmp_path) as client:
        by_anchor = await client.call_tool(
            "get-document", {"id": _URL, "section": "connect-timeouts", "maxBytes": 1024}
        )
        by_url = await client.call_tool("get-document", {"id": f"{_URL}#retries"})
        listed = await client.call_tool("search-documents", {"query": "retries backoff"})
        number = (listed.structured_content or {})["hits"][0]["section"]
        by_number = await client.call_tool("get-document", {"id": _URL, "section": str(number)})
        missing = await client.call_tool("get-document", {"id": _URL, "section": "nope"})

    assert "---\n### Connect timeouts {#connect-timeouts}" in text_of(by_anchor)
    assert (by_anchor.structured_content or {})["start"] == _MARKDOWN.index("### Connect")
    assert "---\n## Retries {#retries}" in text_of(by_url)
    assert "---\n## Retries {#retries}" in text_of(by_number)
    assert missing.is_error is True
    assert "section 'nope'" in text_of(missing)
    assert "timeouts" in text_of(missing)  # names the anchors there are
