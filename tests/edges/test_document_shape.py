"""One stored document, one JSON shape: ``show --json``, ``export --jsonl``, REST and MCP agree.

Every surface answers ``document_wire.DocumentOut`` (MCP: the same fields but the
Markdown, which it sends as fenced windows). One document with every optional field
set (a capture, a removal, validators) is read through all four, and the field sets
and values must be identical.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from tests.cli_support import run_cli

from sitelore.adapters.store import SQLiteStore
from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.document_wire import DocumentOut
from sitelore.core.models import CaptureRef, Document, FetchMeta
from sitelore.server.api import create_app
from sitelore.server.host_guard import HostPolicy
from sitelore.server.mcp_server import build_server

_URL = "https://docs.test/guide/"
_MARKDOWN = (
    "# Guide {#guide}\n\nRead [the intro](https://docs.test/intro).\n\n## Next {#next}\n\nMore."
)
_T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
_WINDOW = {"start", "end", "totalBytes", "nextCursor"}


async def _fill(db: Path) -> str:
    store = SQLiteStore(db)
    try:
        document = Document(
            url=_URL,
            title="Guide",
            markdown=_MARKDOWN,
            description="How to start.",
            lang="en",
            canonical_url=_URL,
        )
        meta = FetchMeta(
            status=200,
            content_type="text/html",
            fetched_at=_T0,
            etag='"v1"',
            last_modified="Sun, 01 Mar 2026 11:00:00 GMT",
        )
        stored = await store.upsert(document, meta)
        ref = CaptureRef(
            warc_file="crawl-1.warc.gz",
            offset=0,
            length=512,
            digest="sha1:AAAA",
            record_id="<urn:uuid:1>",
            page_id="seed::" + _URL,
        )
        assert await store.link_capture(stored.id, ref)
        assert await store.mark_removed(_URL, status=410, at=_T0) == stored.id
        return stored.id
    finally:
        await store.close()


async def _remote(db: Path, doc_id: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The REST answer, MCP's structured answer, and the Markdown MCP sends in windows."""
    async with Runtime(Settings(store=str(db)), create_store=False) as runtime:
        app = create_app(runtime, hosts=HostPolicy("127.0.0.1"))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answer = await http.get(f"/api/v1/documents/{doc_id}")
            assert answer.status_code == 200, answer.text
        async with Client(build_server(runtime)) as mcp:
            got = await mcp.call_tool("get-document", {"id": doc_id, "maxBytes": 1024})
        structured = got.structured_content or {}
        text = "".join(part.text for part in got.content if part.type == "text")
    return answer.json(), structured, text


def test_all_four_surfaces_give_the_same_fields_and_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "shape.db"
    doc_id = asyncio.run(_fill(db))

    code, out, err = run_cli(["show", doc_id, "--json", "--db", str(db)], capsys)
    assert (code, err) == (0, "")
    shown = json.loads(out)
    code, out, err = run_cli(["export", "--jsonl", "-", "--db", str(db)], capsys)
    assert code == 0, err
    (exported,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    rest, mcp, mcp_text = asyncio.run(_remote(db, doc_id))

    fields = {field.alias or name for name, field in DocumentOut.model_fields.items()}
    assert set(shown) == fields
    assert shown == exported == rest
    assert set(mcp) == (fields - {"markdown"}) | _WINDOW
    assert {key: mcp[key] for key in fields - {"markdown"}} == {
        key: value for key, value in shown.items() if key != "markdown"
    }
    assert shown["markdown"] in mcp_text  # the text, sent once, fenced
    # Every optional field is set, so a surface that dropped one would show here.
    assert shown["removedAt"] == "2026-03-01T12:00:00Z"
    assert shown["capture"]["recordId"] == "<urn:uuid:1>"
    assert (shown["sections"], shown["canonicalUrl"]) == (2, _URL)
