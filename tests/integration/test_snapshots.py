"""Snapshots end to end: capture the bundled site as WARC, replay it with no network.

Every replay here runs inside :func:`network_disabled`, which fails on any attempt to
create an IP socket, resolve a name or create an aiohttp ``ClientSession``.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gzip
import hashlib
import io
import json
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from tests.cli_support import run_cli
from tests.fakes import FakeClock
from warcio.archiveiterator import ArchiveIterator
from warcio.cli import main as warcio_main

from sitelore.adapters.demo_site import bundled_site_path, serve_site
from sitelore.adapters.snapshots import (
    DECODED_FIELD,
    INDEX_NAME,
    PAGE_ID_FIELD,
    WARC_SUFFIX,
    ReplaySnapshots,
)
from sitelore.adapters.store import SQLiteStore
from sitelore.app.bootstrap import Runtime
from sitelore.core.config import Settings
from sitelore.core.convert import to_document
from sitelore.core.errors import ArchiveError, BlockedURLError, RobotsDeniedError
from sitelore.core.guard import AddressPolicy
from sitelore.core.models import CrawlSummary, Document, page_id
from sitelore.core.options import CrawlOptions
from sitelore.core.ports import ExchangeObserver, Fetcher

SITE = bundled_site_path()
#: The whole bundled site: nothing is cut by the caps, so the page set is order-free.
WHOLE_SITE = CrawlOptions(max_pages=100, max_depth=5)


def index_rows(archive: Path) -> list[dict[str, Any]]:
    """Every row of the archive's index, read with sqlite3, in file and offset order."""
    with contextlib.closing(sqlite3.connect(archive / INDEX_NAME)) as db:
        db.row_factory = sqlite3.Row
        rows = db.execute("SELECT * FROM records ORDER BY warc_file, record_offset").fetchall()
    return [dict(row) for row in rows]


@contextlib.contextmanager
def network_disabled() -> Iterator[list[str]]:
    """Refuse (and record) every IP socket, name lookup and aiohttp session until exit."""
    attempts: list[str] = []
    real_socket = socket.socket

    class GuardedSocket(real_socket):  # type: ignore[misc, valid-type]
        def __init__(self, family: int = -1, *args: Any, **kwargs: Any) -> None:
            if family != socket.AF_UNIX:
                attempts.append(f"socket(family={family})")
                raise OSError("this test runs with networking disabled")
            super().__init__(family, *args, **kwargs)

    def refuse(name: str) -> Any:
        def refused(*args: Any, **kwargs: Any) -> Any:
            attempts.append(name)
            raise OSError(f"{name}: networking disabled in this test")

        return refused

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "socket", GuardedSocket)
        patch.setattr(socket, "create_connection", refuse("create_connection"))
        patch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
        patch.setattr(aiohttp.ClientSession, "__init__", refuse("ClientSession"))
        yield attempts


def no_live(observer: ExchangeObserver | None) -> contextlib.AbstractAsyncContextManager[Fetcher]:
    """The live-fetcher factory handed to a replay: calling it fails the test."""
    raise AssertionError("replay must never open the live fetcher")


def read_member(path: Path, offset: int, length: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(offset)
        return handle.read(length)


def partial_files(directory: Path) -> list[Path]:
    return list(directory.glob("*.partial"))


def remove_warc_files(archive: Path) -> None:
    for path in warc_files(archive):
        path.unlink()


def settings(path: Path) -> Settings:
    return Settings(store=str(path), allow_private=("127.0.0.1",))


@dataclasses.dataclass
class Captured:
    base: str
    archive: Path
    summary: CrawlSummary
    db: Path

    @property
    def seed(self) -> str:
        return self.base + "/"


async def capture(tmp_path: Path, options: CrawlOptions = WHOLE_SITE) -> Captured:
    """Crawl the bundled site live, capturing into tmp_path/archive, storing into live.db."""
    archive, db = tmp_path / "archive", tmp_path / "live.db"
    async with serve_site(SITE) as base, Runtime(settings(db), clock=FakeClock()) as runtime:
        summary = await runtime.crawl(
            base + "/", options, snapshots=runtime.snapshots(capture=archive)
        )
    return Captured(base, archive, summary, db)


async def replay(
    captured: Captured, db: Path, archive: Path | None = None, **kwargs: Any
) -> CrawlSummary:
    async with Runtime(settings(db), clock=FakeClock()) as runtime:
        return await runtime.crawl(
            captured.seed,
            WHOLE_SITE,
            snapshots=runtime.snapshots(replay=archive or captured.archive),
            **kwargs,
        )


async def documents(db: Path) -> dict[str, tuple[str, str, str]]:
    """url -> (id, title, markdown) of every stored document."""
    store = SQLiteStore(db)
    try:
        return {d.url: (d.id, d.title, d.markdown) for d in await store.list(limit=1000)}
    finally:
        await store.close()


def outcomes(summary: CrawlSummary) -> set[tuple[str, str | None, int | None, str | None]]:
    return {
        (p.url, p.final_url, p.status, str(p.error.kind) if p.error else None)
        for p in summary.pages
    }


def warc_files(archive: Path) -> list[Path]:
    return sorted(archive.glob("*" + WARC_SUFFIX))


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


class TestCaptureAndReplay:
    async def test_replay_with_networking_disabled_is_identical(self, tmp_path: Path) -> None:
        """Replaying a capture with no network gives the same pages and byte-identical Markdown."""
        captured = await capture(tmp_path)
        assert captured.summary.pages_indexed >= 30  # the bundled site's public pages
        with network_disabled() as attempts:
            replayed = await replay(captured, tmp_path / "replay.db")
        assert attempts == []
        assert outcomes(replayed) == outcomes(captured.summary)
        assert replayed.pages_indexed == captured.summary.pages_indexed
        live, again = await documents(captured.db), await documents(tmp_path / "replay.db")
        assert set(again) == set(live)
        for url, (doc_id, title, markdown) in live.items():
            assert again[url][0] == doc_id
            assert again[url][1] == title
            assert again[url][2].encode() == markdown.encode(), url

    async def test_replay_walks_redirects_and_robots_from_the_archive(self, tmp_path: Path) -> None:
        """Redirects replay hop by hop, check_hop runs per hop, robots.txt is archived too."""
        captured = await capture(tmp_path)
        old = captured.base + "/old/quickstart.html"
        assert any(p.url == old for p in captured.summary.pages)
        snapshots = ReplaySnapshots(captured.archive, policy=AddressPolicy(["127.0.0.1"]))
        hops: list[str] = []

        async def note(url: str) -> None:
            hops.append(url)

        with network_disabled() as attempts:
            async with snapshots.fetch_path(captured.seed, no_live) as fetcher:
                snapshot = await fetcher.fetch(old, check_hop=note)
                robots = await fetcher.fetch(captured.base + "/robots.txt")

                async def deny(url: str) -> None:
                    raise RobotsDeniedError(url, "disallowed")

                with pytest.raises(RobotsDeniedError):
                    await fetcher.fetch(old, check_hop=deny)
            # Replay guards URLs as strictly as live: the default policy refuses loopback.
            async with ReplaySnapshots(captured.archive).fetch_path(
                captured.seed, no_live
            ) as strict:
                with pytest.raises(BlockedURLError):
                    await strict.fetch(old)
        assert attempts == []
        assert hops == [captured.base + "/guide/quickstart.html"]
        assert snapshot.redirects == (old,)
        assert snapshot.final_url == captured.base + "/guide/quickstart.html"
        assert snapshot.status == 200
        assert snapshot.capture is not None
        assert b"Disallow: /internal/" in robots.body

    async def test_a_page_missing_from_the_index_fails_alone(self, tmp_path: Path) -> None:
        """A page deleted from the index replays as no-snapshot; every other page is indexed."""
        captured = await capture(tmp_path)
        missing = captured.base + "/concepts/retries.html"
        with contextlib.closing(sqlite3.connect(captured.archive / INDEX_NAME)) as db, db:
            gone = db.execute(
                "DELETE FROM records WHERE page_id = ?", (page_id(captured.seed, missing),)
            )
            assert gone.rowcount == 1
        with network_disabled() as attempts:
            replayed = await replay(captured, tmp_path / "replay.db")
        assert attempts == []
        failed = [(p.url, p.error.kind) for p in replayed.pages if p.error is not None]
        live_failed = [(p.url, p.error.kind) for p in captured.summary.pages if p.error]
        assert sorted(failed) == sorted([*live_failed, (missing, "no-snapshot")])
        assert {p.url for p in replayed.pages} == {p.url for p in captured.summary.pages}
        assert replayed.pages_indexed == captured.summary.pages_indexed - 1
        assert missing not in await documents(tmp_path / "replay.db")

    @pytest.mark.parametrize("archive", ["missing", "empty-dir"])
    async def test_replay_without_an_archive_is_one_invalid_config_outcome(
        self, tmp_path: Path, archive: str
    ) -> None:
        """No archive: the crawl returns one invalid-config page outcome; nothing raises."""
        where = tmp_path / archive
        if archive == "empty-dir":
            where.mkdir()
        async with Runtime(settings(tmp_path / "s.db"), clock=FakeClock()) as runtime:
            with network_disabled() as attempts:
                summary = await runtime.crawl(
                    "http://127.0.0.1:9/", CrawlOptions(), snapshots=runtime.snapshots(replay=where)
                )
            assert await runtime.store.count() == 0
        assert attempts == []
        assert len(summary.pages) == 1
        page = summary.pages[0]
        assert page.url == "http://127.0.0.1:9/"
        assert page.error is not None
        assert page.error.kind == "invalid-config"
        assert str(where) in page.error.message
        assert summary.to_json()["pages"][0]["error"]["kind"] == "invalid-config"

    async def test_capture_into_an_unwritable_place_is_one_invalid_config_outcome(
        self, tmp_path: Path
    ) -> None:
        """A capture directory that cannot be created is reported the same way, not raised."""
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        async with Runtime(settings(tmp_path / "s.db"), clock=FakeClock()) as runtime:
            summary = await runtime.crawl(
                "http://127.0.0.1:9/", CrawlOptions(), snapshots=runtime.snapshots(capture=blocker)
            )
        assert [p.error.kind for p in summary.pages if p.error] == ["invalid-config"]

    async def test_the_index_holds_nothing_the_warc_files_lack(self, tmp_path: Path) -> None:
        """Every index row can be recreated from a response record's own WARC fields."""
        captured = await capture(tmp_path)
        from_warc: list[dict[str, Any]] = []
        for path in warc_files(captured.archive):
            with path.open("rb") as handle:
                iterator = ArchiveIterator(handle)
                for record in iterator:
                    if record.rec_type != "response":
                        continue
                    fields = record.rec_headers
                    assert record.http_headers is not None
                    from_warc.append(
                        {
                            "page_id": fields.get_header(PAGE_ID_FIELD),
                            "url": fields.get_header("WARC-Target-URI"),
                            "hop": int(fields.get_header("WARC-Sitelore-Hop")),
                            "status": int(record.http_headers.get_statuscode()),
                            "warc_file": path.name,
                            "record_offset": iterator.get_record_offset(),
                            "record_length": iterator.get_record_length(),
                            "digest": fields.get_header("WARC-Payload-Digest"),
                            "record_id": fields.get_header("WARC-Record-ID"),
                            "captured_at": fields.get_header("WARC-Date"),
                        }
                    )
        rows = index_rows(captured.archive)
        assert rows
        key = ("page_id", "url")
        newest = {tuple(r[k] for k in key): r for r in from_warc}  # a later capture wins
        assert sorted(rows, key=repr) == sorted(newest.values(), key=repr)


class TestArchiveFormat:
    async def test_warcio_reads_checks_and_indexes_the_archive(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """warcio's own reader, `warcio check` and `warcio index` accept every record."""
        captured = await capture(tmp_path)
        [path] = warc_files(captured.archive)
        kinds: list[str] = []
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle, check_digests=True):
                assert record.rec_headers.protocol == "WARC/1.1"
                kinds.append(record.rec_type)
                payload = record.raw_stream.read()
                if record.rec_type in ("response", "request"):
                    assert record.rec_headers.get_header("WARC-Payload-Digest") == sha1_b32(payload)
                    assert record.rec_headers.get_header(PAGE_ID_FIELD)
                assert record.digest_checker.passed is not False
        assert kinds[0] == "warcinfo"
        assert kinds.count("response") == kinds.count("request") == len(kinds) // 2
        # One response per request made: pages, redirect hops and robots.txt.
        assert kinds.count("response") > captured.summary.pages_crawled
        capsys.readouterr()
        with pytest.raises(SystemExit) as checked:
            warcio_main(["check", str(path)])
        assert checked.value.code == 0
        warcio_main(["index", "-f", "warc-type,warc-target-uri,offset", str(path)])
        listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [entry["warc-type"] for entry in listed] == kinds

    async def test_each_record_is_its_own_gzip_member(self, tmp_path: Path) -> None:
        """Every indexed (offset, length) is one whole gzip member holding one WARC record."""
        captured = await capture(tmp_path)
        entries = index_rows(captured.archive)
        assert entries
        data = {path.name: path.read_bytes() for path in warc_files(captured.archive)}
        for entry in entries:
            start, length = entry["record_offset"], entry["record_length"]
            text = gzip.decompress(data[entry["warc_file"]][start : start + length])
            assert text.startswith(b"WARC/1.1\r\n")
            assert f"WARC-Target-URI: {entry['url']}\r\n".encode() in text

    async def test_every_document_links_to_its_capture_record(self, tmp_path: Path) -> None:
        """Each stored document names its record (file, offset, digest); the bytes match."""
        captured = await capture(tmp_path)
        store = SQLiteStore(captured.db)
        try:
            docs = await store.list(limit=1000)
            assert len(docs) == captured.summary.pages_indexed
            for doc in docs:
                ref = await store.capture_of(doc.id)
                assert ref is not None, doc.url
                member = read_member(Path(ref.warc_file), ref.offset, ref.length)
                record = next(iter(ArchiveIterator(io.BytesIO(member))))
                body = record.raw_stream.read()
                assert record.rec_headers.get_header("WARC-Target-URI") == doc.url
                assert record.rec_headers.get_header("WARC-Payload-Digest") == ref.digest
                assert sha1_b32(body) == ref.digest
                assert ref.page_id.startswith("http%3A%2F%2F127.0.0.1%3A")
            assert len(await store.captures()) == len(docs)
        finally:
            await store.close()


def _encoded_app() -> web.Application:
    page = (
        b"<html><head><title>Zipped</title></head><body><main><h1>Zipped</h1>"
        b"<p>This page travels gzip-encoded and comes back the same.</p>"
        b'<a href="/chunked">chunked</a></main></body></html>'
    )

    async def home(request: web.Request) -> web.Response:
        return web.Response(
            body=gzip.compress(page),
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"},
        )

    async def chunked(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html; charset=utf-8"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(b"<html><head><title>Chunks</title></head><body><main>")
        await response.write(b"<h1>Chunks</h1><p>Sent in pieces, stored whole.</p></main></body>")
        await response.write_eof()
        return response

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nAllow: /\n")

    app = web.Application()
    app.router.add_get("/", home)
    app.router.add_get("/chunked", chunked)
    app.router.add_get("/robots.txt", robots)
    return app


class TestEncodedBodies:
    async def test_decoded_bodies_are_recorded_honestly_and_replay_as_received(
        self, tmp_path: Path
    ) -> None:
        """gzip and chunked bodies are stored decoded, headers say so, replay restores them."""
        server = TestServer(_encoded_app(), host="127.0.0.1")
        await server.start_server()
        archive = tmp_path / "archive"
        try:
            base = str(server.make_url("")).rstrip("/")
            async with Runtime(settings(tmp_path / "live.db"), clock=FakeClock()) as runtime:
                live = await runtime.crawl(
                    base + "/", CrawlOptions(), snapshots=runtime.snapshots(capture=archive)
                )
        finally:
            await server.close()
        assert live.pages_indexed == 2
        records: dict[str, Any] = {}
        [path] = warc_files(archive)
        with path.open("rb") as handle:
            for record in ArchiveIterator(handle, check_digests=True):
                if record.rec_type == "response":
                    body = record.content_stream().read()
                    assert record.digest_checker.passed is not False
                    records[record.rec_headers.get_header("WARC-Target-URI")] = (record, body)
        zipped, zipped_body = records[base + "/"]
        assert zipped_body.startswith(b"<html><head><title>Zipped")
        assert zipped.http_headers.get_header("Content-Encoding") is None
        assert zipped.http_headers.get_header("X-Orig-Content-Encoding") == "gzip"
        assert zipped.http_headers.get_header("Content-Length") == str(len(zipped_body))
        assert "content-encoding" in zipped.rec_headers.get_header(DECODED_FIELD)
        pieces, pieces_body = records[base + "/chunked"]
        assert pieces_body.endswith(b"stored whole.</p></main></body>")
        assert pieces.http_headers.get_header("Transfer-Encoding") is None
        assert pieces.http_headers.get_header("X-Orig-Transfer-Encoding") == "chunked"

        with network_disabled() as attempts:
            async with ReplaySnapshots(archive, policy=runtime.policy).fetch_path(
                base + "/", no_live
            ) as fetcher:
                snapshot = await fetcher.fetch(base + "/")
        assert attempts == []
        assert snapshot.body == zipped_body
        assert snapshot.headers.get("content-encoding") == "gzip"
        assert snapshot.headers.get("x-orig-content-encoding") is None
        with network_disabled():
            again = await replay(
                Captured(base, archive, live, tmp_path / "live.db"), tmp_path / "replay.db"
            )
        assert outcomes(again) == outcomes(live)
        assert await documents(tmp_path / "replay.db") == await documents(tmp_path / "live.db")


def _changed_converter(body: bytes, content_type: str, url: str, charset: str | None) -> Document:
    """'Converter v2': the same as v1 except for pages that talk about retries."""
    document = to_document(body, content_type, url, charset=charset)
    if "retr" not in document.markdown.lower():
        return document
    return dataclasses.replace(document, markdown=document.markdown + "\n\n(converter v2)\n")


class TestReconvert:
    async def test_reconvert_updates_only_changed_documents_without_network(
        self, tmp_path: Path
    ) -> None:
        """After a converter change, only documents whose Markdown changed are rewritten."""
        captured = await capture(tmp_path)
        async with Runtime(settings(captured.db)) as runtime:
            before = {d.url: d for d in await runtime.store.list(limit=1000)}
        expected = {doc.id for doc in before.values() if "retr" in doc.markdown.lower()}
        assert 0 < len(expected) < len(before)
        async with Runtime(settings(captured.db)) as runtime:
            with network_disabled() as attempts:
                same = await runtime.reconvert()
                report = await runtime.reconvert(convert=_changed_converter)
            after = {d.url: d for d in await runtime.store.list(limit=1000)}
        assert attempts == []
        assert same.changed == 0
        total = len(before)
        assert total == captured.summary.pages_indexed
        assert same.reconverted == same.unchanged == total
        assert report.reconverted == total
        assert report.changed == len(expected)
        assert set(report.changed_ids) == expected
        assert report.unchanged == total - len(expected)
        assert report.no_capture == report.unreadable == report.failed == 0
        assert set(after) == set(before)
        for url, doc in after.items():
            old = before[url]
            assert doc.id == old.id
            if doc.id in expected:
                assert doc.markdown == old.markdown + "\n\n(converter v2)\n"
                assert doc.updated_at > old.updated_at
            else:
                assert doc.markdown == old.markdown
                assert doc.updated_at == old.updated_at
            assert (doc.fetched_at, doc.status, doc.etag) == (old.fetched_at, old.status, old.etag)

    async def test_a_moved_archive_is_found_with_archive_and_a_lost_one_is_reported(
        self, tmp_path: Path
    ) -> None:
        """--archive finds moved WARC files; without it the documents count as unreadable."""
        captured = await capture(tmp_path)
        moved = captured.archive.rename(tmp_path / "moved")
        async with Runtime(settings(captured.db)) as runtime:
            lost = await runtime.reconvert()
            found = await runtime.reconvert(archive=moved)
        assert lost.unreadable == captured.summary.pages_indexed
        assert lost.reconverted == 0
        assert lost.problems
        assert found.reconverted == captured.summary.pages_indexed
        assert found.unreadable == 0


class TestExport:
    async def test_jsonl_has_one_document_per_line_with_provenance(self, tmp_path: Path) -> None:
        """export --jsonl: every document once, with its capture record (file, offset, digest)."""
        captured = await capture(tmp_path)
        out = io.StringIO()
        async with Runtime(settings(captured.db)) as runtime:
            written = await runtime.export_jsonl(out)
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        assert written == len(lines) == captured.summary.pages_indexed
        assert len({line["id"] for line in lines}) == written
        for line in lines:
            assert line["markdown"]
            assert line["contentHash"]
            assert line["fetchedAt"]
            capture_ref = line["capture"]
            assert {"file", "offset", "length", "digest", "recordId", "pageId"} <= set(capture_ref)
            assert capture_ref["file"].startswith(str(captured.archive))

    async def test_warc_export_holds_responses_and_their_markdown(self, tmp_path: Path) -> None:
        """export --warc: each captured response verbatim, then a conversion record citing it."""
        captured = await capture(tmp_path)
        target = tmp_path / "export.warc.gz"
        async with Runtime(settings(captured.db)) as runtime:
            report = await runtime.export_warc(target)
            markdown = {d.url: d.markdown for d in await runtime.store.list(limit=1000)}
        total = captured.summary.pages_indexed
        assert (report.documents, report.responses, report.missing) == (total, total, [])
        responses: dict[str, str] = {}
        conversions: list[Any] = []
        with target.open("rb") as handle:
            for record in ArchiveIterator(handle, check_digests=True):
                body = record.raw_stream.read()
                assert record.digest_checker.passed is not False
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "response":
                    responses[record.rec_headers.get_header("WARC-Record-ID")] = uri
                elif record.rec_type == "conversion":
                    conversions.append(record)
                    assert body.decode() == markdown[uri]
                    refers = record.rec_headers.get_header("WARC-Refers-To")
                    assert responses[refers] == uri
        assert len(conversions) == total
        assert not partial_files(tmp_path)

    async def test_an_unreadable_capture_is_exported_as_markdown_only(self, tmp_path: Path) -> None:
        """A document whose WARC file is gone keeps its Markdown in the export and is named."""
        captured = await capture(tmp_path, CrawlOptions(max_pages=3))
        remove_warc_files(captured.archive)
        async with Runtime(settings(captured.db)) as runtime:
            report = await runtime.export_warc(tmp_path / "export.warc.gz")
        assert report.documents == 3
        assert report.responses == 0
        assert len(report.missing) == 3


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_replay_of_an_empty_archive_dir_exits_78_with_one_invalid_config_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """``crawl --replay EMPTY_DIR``: the summary is printed with its one page, exit 78.

    The archive error is the crawl's outcome (kind invalid-config, naming the folder),
    not a crash; nothing is fetched, and no socket or lookup is even attempted.
    """
    empty = tmp_path / "archive"
    empty.mkdir()
    db = tmp_path / "s.db"
    args = ["crawl", "https://docs.example.com/", "--replay", str(empty), "--db", str(db)]
    with network_disabled() as attempts:
        code, out, err = run_cli(args + (["--json"] if as_json else []), capsys)
    assert attempts == []
    assert code == 78
    if as_json:
        summary = json.loads(out)
        assert summary["pagesCrawled"] == 1
        assert summary["pagesIndexed"] == 0
        [page] = summary["pages"]
        assert page["url"] == "https://docs.example.com/"
        assert page["error"]["kind"] == "invalid-config"
        assert str(empty) in page["error"]["message"]
    else:
        assert "invalid-config" in out
        assert "https://docs.example.com/" in out
    assert "Traceback" not in out + err
    assert ArchiveError.exit_code == code
