"""Snapshot parts on their own: page ids, WARC records, the index, the writer and replay rules.

Archives here are written from hand-made exchanges with :class:`CaptureWriter`, so no
server is needed; replay runs over them with a live factory that fails if called.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from sitelore.adapters.snapshots import (
    CaptureIndex,
    CaptureSnapshots,
    CaptureWriter,
    LiveSnapshots,
    ReplaySnapshots,
    payload_digest,
)
from sitelore.adapters.snapshots._records import parse_response, request_record, response_record
from sitelore.core.errors import (
    ArchiveError,
    NoSnapshotError,
    ResponseTooLargeError,
    TooManyRedirectsError,
)
from sitelore.core.guard import AddressPolicy
from sitelore.core.models import Exchange, Headers, SnapshotMode, page_id
from sitelore.core.options import Limits
from sitelore.core.ports import ExchangeObserver, Fetcher, Snapshots

WHEN = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
HTML = ("Content-Type", "text/html; charset=utf-8")


def exchange(
    url: str,
    *,
    fetch_url: str | None = None,
    status: int = 200,
    body: bytes = b"<p>hi</p>",
    headers: Sequence[tuple[str, str]] = (HTML,),
    hop: int = 0,
    body_read: bool = True,
    request_headers: Sequence[tuple[str, str]] = (("User-Agent", "t/1"),),
) -> Exchange:
    return Exchange(
        fetch_url=fetch_url or url,
        hop=hop,
        url=url,
        method="GET",
        request_headers=Headers.of(request_headers),
        status=status,
        reason="OK" if status == 200 else "",
        http_version="1.1",
        headers=Headers.of(headers),
        body=body,
        body_read=body_read,
        address="93.184.216.34",
        started_at=WHEN,
    )


def redirect(url: str, to: str, *, fetch_url: str | None = None, hop: int = 0) -> Exchange:
    return exchange(
        url,
        fetch_url=fetch_url,
        status=301,
        body=b"",
        headers=(("Location", to), ("Content-Length", "5")),
        hop=hop,
        body_read=False,
    )


async def write_archive(directory: Path, seed_id: str, exchanges: Sequence[Exchange]) -> Path:
    writer = CaptureWriter.open(directory, seed_id, now=WHEN, info={})
    for item in exchanges:
        await writer.record(item)
    await writer.aclose()
    return writer.path


def warc_files(directory: Path) -> list[Path]:
    return list(directory.glob("*.warc.gz"))


def snapshot_of(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


def no_live(observer: ExchangeObserver | None) -> contextlib.AbstractAsyncContextManager[Fetcher]:
    raise AssertionError("replay must never open the live fetcher")


def first_record(data: bytes) -> object:
    return next(iter(ArchiveIterator(io.BytesIO(data))))


class TestPageId:
    @pytest.mark.parametrize(
        ("seed_id", "url", "expected"),
        [
            ("a::b", "c", "a%3A%3Ab::c"),
            ("a", "b::c", "a::b::c"),
            ("https://docs.example.com/", "https://docs.example.com/x", None),
            ("a%3A", "u", "a%253A::u"),
            ("", "u", "::u"),
        ],
    )
    def test_format(self, seed_id: str, url: str, expected: str | None) -> None:
        """quote(seed_id, safe="") + "::" + url, exactly."""
        from urllib.parse import quote

        assert page_id(seed_id, url) == (expected or quote(seed_id, safe="") + "::" + url)

    def test_the_issue_pair_never_collides(self) -> None:
        """Seed a::b with URL c and seed a with URL b::c get different ids."""
        assert page_id("a::b", "c") != page_id("a", "b::c")

    @given(st.text(), st.text(), st.text(), st.text())
    def test_distinct_pairs_get_distinct_ids(self, s1: str, u1: str, s2: str, u2: str) -> None:
        """The first '::' is the join, so an id decodes back to its one (seed id, url) pair."""
        for seed_id, url in ((s1, u1), (s2, u2)):
            quoted, _, rest = page_id(seed_id, url).partition("::")
            assert (unquote(quoted, errors="surrogatepass"), rest) == (seed_id, url)
        if (s1, u1) != (s2, u2):
            assert page_id(s1, u1) != page_id(s2, u2)

    async def test_two_crawls_in_one_archive_keep_their_own_records(self, tmp_path: Path) -> None:
        """The colliding pair of the naive scheme lands in two index rows."""
        await write_archive(tmp_path, "a::b", [exchange("c", body=b"first")])
        await write_archive(tmp_path, "a", [exchange("b::c", body=b"second")])
        index = CaptureIndex(tmp_path, create=False)
        try:
            first = index.lookup(page_id("a::b", "c"), "c")
            second = index.lookup(page_id("a", "b::c"), "b::c")
            assert first is not None
            assert second is not None
            assert first.digest == payload_digest(b"first")
            assert second.digest == payload_digest(b"second")
            with contextlib.closing(sqlite3.connect(index.path)) as db:
                assert db.execute("SELECT count(*) FROM records").fetchone() == (2,)
        finally:
            index.close()


class TestRecords:
    def test_decoded_body_headers_are_renamed_and_restored(self) -> None:
        """A gzip response is stored decoded with X-Orig-* headers and read back as received."""
        received = (
            HTML,
            ("Content-Encoding", "gzip"),
            ("Content-Length", "123"),
            ("ETag", '"v1"'),
        )
        record = response_record(exchange("https://x.test/", headers=received), "p::u")
        parsed = parse_response(record.data, where="test")
        assert list(parsed.headers) == list(received)
        assert parsed.body == b"<p>hi</p>"
        assert parsed.digest == record.digest == payload_digest(b"<p>hi</p>")
        stored = first_record(record.data)
        http = stored.http_headers  # type: ignore[attr-defined]
        assert http.get_header("Content-Encoding") is None
        assert http.get_header("X-Orig-Content-Encoding") == "gzip"
        assert http.get_header("X-Orig-Content-Length") == "123"
        assert http.get_header("Content-Length") == str(len(b"<p>hi</p>"))

    def test_plain_response_headers_are_stored_untouched(self) -> None:
        """Nothing is renamed when the stored body is the wire body."""
        received = (HTML, ("Content-Length", "9"))
        record = response_record(exchange("https://x.test/", headers=received), "p::u")
        stored = first_record(record.data)
        assert stored.http_headers.headers == list(received)  # type: ignore[attr-defined]
        assert stored.rec_headers.get_header("WARC-Sitelore-Decoded") is None  # type: ignore[attr-defined]

    @pytest.mark.parametrize(("length", "truncated"), [("5", True), ("0", False)])
    def test_unread_redirect_body_is_marked(self, length: str, truncated: bool) -> None:
        """Unread redirect body: empty payload, Content-Length 0, WARC-Truncated if it had one."""
        item = exchange(
            "https://x.test/a",
            status=301,
            body=b"",
            headers=(("Location", "/b"), ("Content-Length", length)),
            body_read=False,
        )
        record = first_record(response_record(item, "p::u").data)
        fields = record.rec_headers  # type: ignore[attr-defined]
        assert (fields.get_header("WARC-Truncated") == "unspecified") is truncated
        assert record.http_headers.get_header("Content-Length") == "0"  # type: ignore[attr-defined]
        parsed = parse_response(response_record(item, "p::u").data, where="t")
        assert parsed.headers.get("content-length") == length
        assert parsed.headers.get("location") == "/b"

    def test_request_record_never_holds_credentials(self) -> None:
        """Authorization, Cookie and Proxy-Authorization values are redacted in request records."""
        item = exchange(
            "https://x.test/p?q=1",
            request_headers=(
                ("Authorization", "Bearer secret-token"),
                ("Cookie", "session=secret"),
                ("Proxy-Authorization", "Basic c2VjcmV0"),
                ("User-Agent", "t/1"),
            ),
        )
        data = request_record(item, "p::u", concurrent_to="<urn:uuid:x>")
        text = gzip.decompress(data)
        assert b"secret" not in text
        assert b"c2VjcmV0" not in text
        assert b"GET /p?q=1 HTTP/1.1\r\n" in text
        assert b"WARC-Concurrent-To: <urn:uuid:x>\r\n" in text

    def test_undecodable_and_non_ascii_header_values_do_not_break_writing(self) -> None:
        """Header text aiohttp kept as surrogates, or non-ASCII, still makes a valid record."""
        headers = (HTML, ("X-Odd", "caf\udce9"), ("X-Name", "café"))
        record = response_record(exchange("https://x.test/", headers=headers), "p::u")
        assert parse_response(record.data, where="t").status == 200

    def test_a_damaged_body_fails_its_digest(self) -> None:
        """A payload that no longer matches WARC-Payload-Digest is refused."""
        record = response_record(exchange("https://x.test/", body=b"<p>original</p>"), "p::u")
        damaged = gzip.compress(gzip.decompress(record.data).replace(b"original", b"tampered"))
        with pytest.raises(ArchiveError, match="WARC-Payload-Digest"):
            parse_response(damaged, where="t")

    def test_not_a_response_record_is_refused(self) -> None:
        """A request record (or garbage) where a response should be is an ArchiveError."""
        request = request_record(exchange("https://x.test/"), "p::u", concurrent_to="<urn:x>")
        with pytest.raises(ArchiveError, match="request record"):
            parse_response(request, where="t")
        with pytest.raises(ArchiveError):
            parse_response(b"not a warc at all", where="t")


class TestWriterAndIndex:
    async def test_offsets_are_exact_under_concurrent_writes(self, tmp_path: Path) -> None:
        """Many exchanges recorded at once: every index entry points at its own record."""
        writer = CaptureWriter.open(tmp_path, "seed", now=WHEN, info={})
        urls = [f"https://x.test/{n}" for n in range(40)]
        await asyncio.gather(*(writer.record(exchange(url, body=url.encode())) for url in urls))
        refs = [writer.ref_for(url, url) for url in urls]
        await writer.aclose()
        data = writer.path.read_bytes()
        assert writer.records == 40
        for url, ref in zip(urls, refs, strict=True):
            assert ref is not None
            parsed = parse_response(data[ref.offset : ref.offset + ref.length], where=url)
            assert parsed.body == url.encode()
            assert parsed.target_uri == url
        offsets = [ref.offset for ref in refs if ref is not None]
        assert len(set(offsets)) == 40

    async def test_later_capture_of_a_page_wins(self, tmp_path: Path) -> None:
        """Re-capturing the same page and URL replaces the index entry (newest wins)."""
        await write_archive(tmp_path, "s", [exchange("https://x.test/", body=b"old")])
        await write_archive(tmp_path, "s", [exchange("https://x.test/", body=b"new")])
        index = CaptureIndex(tmp_path, create=False)
        try:
            entry = index.lookup(page_id("s", "https://x.test/"), "https://x.test/")
            latest = index.latest("https://x.test/")
            assert entry is not None
            assert entry.digest == payload_digest(b"new")
            assert latest == entry
        finally:
            index.close()
        assert len(warc_files(tmp_path)) == 2

    def test_opening_a_missing_archive_for_replay_is_an_archive_error(self, tmp_path: Path) -> None:
        """create=False never creates anything: no directory, no index."""
        with pytest.raises(ArchiveError, match="directory missing"):
            CaptureIndex(tmp_path / "nope", create=False)
        with pytest.raises(ArchiveError, match="not a snapshot archive"):
            CaptureIndex(tmp_path, create=False)
        assert list(tmp_path.iterdir()) == []


async def replay_fetcher_for(
    tmp_path: Path, exchanges: Sequence[Exchange], *, limits: Limits | None = None
) -> contextlib.AbstractAsyncContextManager[Fetcher]:
    await write_archive(tmp_path, "seed", exchanges)
    return ReplaySnapshots(tmp_path, policy=AddressPolicy(), limits=limits).fetch_path(
        "seed", no_live
    )


class TestReplayRules:
    async def test_a_redirect_chain_replays_with_each_hop_checked(self, tmp_path: Path) -> None:
        """Hops come from the archive in order; check_hop sees each target."""
        start = "https://x.test/a"
        path = await replay_fetcher_for(
            tmp_path,
            [
                redirect(start, "/b"),
                redirect("https://x.test/b", "https://x.test/c", fetch_url=start, hop=1),
                exchange("https://x.test/c", fetch_url=start, hop=2, body=b"<p>c</p>"),
            ],
        )
        hops: list[str] = []

        async def note(url: str) -> None:
            hops.append(url)

        async with path as fetcher:
            snapshot = await fetcher.fetch(start, check_hop=note)
        assert hops == ["https://x.test/b", "https://x.test/c"]
        assert snapshot.redirects == (start, "https://x.test/b")
        assert snapshot.final_url == "https://x.test/c"
        assert snapshot.body == b"<p>c</p>"
        assert snapshot.fetched_at == WHEN
        assert snapshot.address == "93.184.216.34"
        assert snapshot.capture is not None
        assert snapshot.capture.page_id == page_id("seed", start)

    async def test_a_hop_missing_from_the_archive_is_no_snapshot(self, tmp_path: Path) -> None:
        """The page's first hop is there but the redirect target is not: no-snapshot."""
        start = "https://x.test/a"
        path = await replay_fetcher_for(tmp_path, [redirect(start, "/b")])
        async with path as fetcher:
            with pytest.raises(NoSnapshotError, match=r"https://x\.test/b") as caught:
                await fetcher.fetch(start)
            with pytest.raises(NoSnapshotError) as other:
                await fetcher.fetch("https://x.test/never")
        assert caught.value.kind == "no-snapshot"
        assert other.value.url == "https://x.test/never"

    async def test_redirect_limits_apply_as_live(self, tmp_path: Path) -> None:
        """A loop and a chain longer than max_redirects fail as they would live."""
        start, other = "https://x.test/loop", "https://x.test/long"
        path = await replay_fetcher_for(
            tmp_path,
            [
                redirect(start, "/loop2"),
                redirect("https://x.test/loop2", "/loop", fetch_url=start, hop=1),
                redirect(other, "/l1"),
                redirect("https://x.test/l1", "/l2", fetch_url=other, hop=1),
                exchange("https://x.test/l2", fetch_url=other, hop=2),
            ],
            limits=Limits(max_redirects=1),
        )
        async with path as fetcher:
            with pytest.raises(TooManyRedirectsError, match="loop"):
                await fetcher.fetch(start)
            with pytest.raises(TooManyRedirectsError, match="more than 1"):
                await fetcher.fetch(other)

    async def test_byte_cap_applies_to_replayed_bodies(self, tmp_path: Path) -> None:
        """A captured body over max_bytes is too-large, as live."""
        url = "https://x.test/big"
        path = await replay_fetcher_for(tmp_path, [exchange(url, body=b"x" * 2000)])
        async with path as fetcher:
            with pytest.raises(ResponseTooLargeError):
                await fetcher.fetch(url, max_bytes=1024)
            assert len((await fetcher.fetch(url)).body) == 2000

    async def test_a_damaged_warc_file_is_no_snapshot_for_that_page(self, tmp_path: Path) -> None:
        """A record cut off by a damaged file fails only its page, with the reason."""
        url = "https://x.test/"
        warc = await write_archive(tmp_path, "seed", [exchange(url)])
        index = CaptureIndex(tmp_path, create=False)
        entry = index.lookup(page_id("seed", url), url)
        index.close()
        assert entry is not None
        warc.write_bytes(warc.read_bytes()[: entry.offset + entry.length // 2])
        async with ReplaySnapshots(tmp_path).fetch_path("seed", no_live) as fetcher:
            with pytest.raises(NoSnapshotError, match="unreadable"):
                await fetcher.fetch(url)


class TestModes:
    def test_modes_name_themselves_and_satisfy_the_port(self, tmp_path: Path) -> None:
        """Each mode is a ports.Snapshots with its own SnapshotMode."""
        modes: list[Snapshots] = [
            LiveSnapshots(),
            CaptureSnapshots(tmp_path),
            ReplaySnapshots(tmp_path),
        ]
        assert [m.mode for m in modes] == [
            SnapshotMode.LIVE,
            SnapshotMode.CAPTURE,
            SnapshotMode.REPLAY,
        ]
        assert all(isinstance(m, Snapshots) for m in modes)

    async def test_replay_without_an_archive_raises_archive_error_on_entry(
        self, tmp_path: Path
    ) -> None:
        """Entering the replay fetch path over nothing is an ArchiveError (invalid-config)."""
        with pytest.raises(ArchiveError) as caught:
            async with ReplaySnapshots(tmp_path / "none").fetch_path("s", no_live):
                pass
        assert caught.value.kind == "invalid-config"

    async def test_replay_never_writes_to_the_archive(self, tmp_path: Path) -> None:
        """Every file of the archive is byte-identical after a replay, and none is added."""
        url = "https://x.test/"
        await write_archive(tmp_path, "seed", [exchange(url)])
        before = snapshot_of(tmp_path)
        async with ReplaySnapshots(tmp_path).fetch_path("seed", no_live) as fetcher:
            assert (await fetcher.fetch(url)).status == 200
            with pytest.raises(NoSnapshotError):
                await fetcher.fetch(url + "missing")
        assert snapshot_of(tmp_path) == before

    def test_a_file_that_is_not_an_index_is_an_archive_error(self, tmp_path: Path) -> None:
        """Garbage where index.sqlite3 should be: ArchiveError, in both open modes."""
        (tmp_path / "index.sqlite3").write_bytes(b"this is not sqlite " * 100)
        for readonly in (True, False):
            with pytest.raises(ArchiveError, match=r"snapshot archive|index"):
                CaptureIndex(tmp_path, create=False, readonly=readonly)
