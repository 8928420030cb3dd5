"""Markdown export of a real SQLite store: one file per document, whole, inside the folder."""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

import pytest
from tests.cli_support import run_cli

from sitelore.adapters.store import SQLiteStore
from sitelore.app.export_markdown import _unique, export_markdown, front_matter
from sitelore.core.errors import ConfigError
from sitelore.core.models import Document, FetchMeta, StoredDocument

META = FetchMeta(status=200, content_type="text/html", fetched_at=datetime(2026, 1, 2, tzinfo=UTC))


async def _store(path: Path, pages: dict[str, tuple[str, str]]) -> SQLiteStore:
    store = SQLiteStore(path)
    for url, (title, markdown) in pages.items():
        await store.upsert(Document(url=url, title=title, markdown=markdown), META)
    return store


async def test_each_document_is_a_file_with_its_provenance(tmp_path: Path) -> None:
    store = await _store(
        tmp_path / "s.db",
        {
            "https://a.test/guide/": ('Guide "one"', "# Guide\n\nSee [x](https://a.test/x)."),
            "https://a.test/guide/index.html": ("Guide two", "# Two\n"),
            "https://b.test:8080/api.html?v=2": ("API", "# API\n"),
        },
    )
    try:
        assert await export_markdown(store, tmp_path / "out", style="none") == 3
    finally:
        await store.close()
    out = tmp_path / "out"
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.md"))
    assert len(files) == 3
    assert [f for f in files if f.startswith("b.test_8080/api_")]
    # /guide/ and /guide/index.html map to one name: both kept, the second named by its id.
    guides = sorted(out.joinpath("a.test", "guide").iterdir(), key=lambda p: len(p.name))
    assert guides[0].name == "index.md"
    assert guides[1].name.startswith("index-")
    texts = [path.read_text(encoding="utf-8") for path in guides]
    assert all(text.startswith("---\ntitle: ") for text in texts)
    assert any('title: "Guide \\"one\\""\nurl: "https://a.test/guide/"\n' in t for t in texts)
    assert any(t.endswith("---\n\n# Guide\n\nSee x.\n") for t in texts)  # links: none
    assert not list(out.rglob(".sitelore-*"))  # no temporary file left


def test_the_front_matter_reads_back_as_yaml() -> None:
    yaml = pytest.importorskip("yaml")
    # DEL and C1 controls are not allowed in YAML; NEL and U+2028 are line breaks there.
    title = 'A "quoted"\x7f\x9b title\x85with\u2028breaks\n\tand é'
    document = StoredDocument(
        id="0123456789abcdef", url="https://a.test/p", title=title, markdown="# P\n",
        content_hash="ab", content_type="text/html", status=200,
        fetched_at=datetime(2026, 1, 2, tzinfo=UTC),
        created_at=datetime(2026, 1, 2, tzinfo=UTC), updated_at=datetime(2026, 1, 2, tzinfo=UTC),
    )  # fmt: skip
    block = front_matter(document).split("---\n")[1]
    fields = yaml.safe_load(block)
    assert fields["title"] == title
    assert fields["status"] == 200
    assert "é" in block  # readable: only what YAML cannot hold is escaped


def test_a_renamed_file_never_takes_another_documents_name() -> None:
    taken: set[str] = set()
    first = _unique(PurePosixPath("a.test/x/index.md"), "id1", taken)
    # A page whose URL spells the name a later duplicate would be given.
    crafted = _unique(PurePosixPath("a.test/x/index-id2.md"), "id3", taken)
    second = _unique(PurePosixPath("a.test/x/index.md"), "id2", taken)
    assert len({first, crafted, second}) == 3


async def test_a_folder_never_takes_a_files_name(tmp_path: Path) -> None:
    # /a is the file a.md; /a.md/b needs a folder: a.md_ (the export wrote one and
    # then failed on the other, "Is a directory").
    pages = {"https://a.test/a": ("A", "# A\n"), "https://a.test/a.md/b": ("B", "# B\n")}
    store = await _store(tmp_path / "s.db", pages)
    try:
        assert await export_markdown(store, tmp_path / "out") == 2
    finally:
        await store.close()
    assert (tmp_path / "out/a.test/a.md").read_text().endswith("# A\n")
    assert (tmp_path / "out/a.test/a.md_/b.md").read_text().endswith("# B\n")


async def test_a_link_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "out"
    folder.mkdir()
    os.symlink(outside, folder / "a.test")
    store = await _store(tmp_path / "s.db", {"https://a.test/p": ("P", "# P\n")})
    try:
        with pytest.raises(ConfigError, match="leads out of the export folder"):
            await export_markdown(store, folder)
    finally:
        await store.close()
    assert list(outside.iterdir()) == []


def test_cli_export_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async def seed() -> None:
        await (await _store(tmp_path / "s.db", {"https://a.test/p.html": ("P", "# P\n")})).close()

    asyncio.run(seed())
    db = str(tmp_path / "s.db")
    code, out, err = run_cli(["export", "--db", db, "--markdown", str(tmp_path / "md")], capsys)
    assert (code, err) == (0, "")
    assert "wrote 1 Markdown files" in out
    assert (tmp_path / "md/a.test/p.md").read_text().endswith("---\n\n# P\n")
    (tmp_path / "file").write_text("x")
    code, _, err = run_cli(["export", "--db", db, "--markdown", str(tmp_path / "file")], capsys)
    assert code == 78
    assert "is not a directory" in err
