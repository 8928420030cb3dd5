"""The command line of snapshots: crawl --capture / --replay, reconvert, export, show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.cli_support import run_cli
from warcio.archiveiterator import ArchiveIterator

CRAWL = ["--max-pages", "8", "--max-depth", "1", "--delay", "0", "--allow-private", "127.0.0.1"]


def crawl_json(
    capsys: pytest.CaptureFixture[str], url: str, db: Path, *extra: str
) -> tuple[int, dict[str, Any], str]:
    code, out, err = run_cli(["crawl", url, *CRAWL, "--db", str(db), "--json", *extra], capsys)
    return code, json.loads(out), err


class TestCrawlSnapshots:
    def test_capture_then_replay_gives_the_same_crawl(
        self, site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """crawl --capture DIR, then crawl --replay DIR into another store: same pages."""
        archive = tmp_path / "archive"
        code, live, _ = crawl_json(capsys, site + "/", tmp_path / "a.db", "--capture", str(archive))
        assert code == 0
        assert live["pagesIndexed"] >= 6
        assert list(archive.glob("*.warc.gz"))
        code, again, _ = crawl_json(capsys, site + "/", tmp_path / "b.db", "--replay", str(archive))
        assert code == 0
        assert again["pages"] == live["pages"]

    def test_replay_of_nothing_is_one_invalid_config_page_and_exit_78(
        self, site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--replay DIR without an archive: the summary still prints, with one page, exit 78."""
        missing = tmp_path / "none"
        code, summary, _ = crawl_json(
            capsys, site + "/", tmp_path / "s.db", "--replay", str(missing)
        )
        assert code == 78
        assert summary["pagesCrawled"] == 1
        [page] = summary["pages"]
        assert page["error"]["kind"] == "invalid-config"
        assert str(missing) in page["error"]["message"]

    def test_capture_and_replay_together_is_a_usage_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The two modes exclude each other: exit 2, one line."""
        code, _, err = run_cli(
            ["crawl", "https://x.test/", "--capture", "a", "--replay", "b"], capsys
        )
        assert code == 2
        assert "--capture and --replay" in err

    def test_seed_id_names_the_captures(
        self, site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--seed-id picks the namespace; replay under another name finds nothing."""
        archive = tmp_path / "archive"
        args = ["--max-pages", "1", "--max-depth", "0"]
        code, _, _ = crawl_json(
            capsys, site + "/", tmp_path / "a.db", "--capture", str(archive), "--seed-id", "docs"
        )
        assert code == 0
        code, named, _ = crawl_json(
            capsys,
            site + "/",
            tmp_path / "b.db",
            "--replay",
            str(archive),
            "--seed-id",
            "docs",
            *args,
        )
        assert named["pagesIndexed"] == 1
        code, other, _ = crawl_json(
            capsys, site + "/", tmp_path / "c.db", "--replay", str(archive), "--seed-id", "x", *args
        )
        assert other["pagesIndexed"] == 0
        assert {p["error"]["kind"] for p in other["pages"]} == {"no-snapshot"}


class TestReconvertAndExport:
    def test_reconvert_export_and_show(
        self, site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """reconvert reports no change for the same converter; export and show carry the links."""
        db, archive = tmp_path / "s.db", tmp_path / "archive"
        code, live, _ = crawl_json(capsys, site + "/", db, "--capture", str(archive))
        assert code == 0
        indexed = live["pagesIndexed"]

        code, out, _ = run_cli(["reconvert", "--db", str(db), "--json"], capsys)
        assert code == 0
        report = json.loads(out)
        assert (report["reconverted"], report["changed"]) == (indexed, 0)

        code, out, _ = run_cli(["reconvert", "--db", str(db)], capsys)
        assert code == 0
        assert f"reconverted {indexed} of {indexed} documents: 0 changed" in out

        warc, jsonl = tmp_path / "out.warc.gz", tmp_path / "out.jsonl"
        code, out, _ = run_cli(
            ["export", "--db", str(db), "--warc", str(warc), "--jsonl", str(jsonl), "--json"],
            capsys,
        )
        assert code == 0
        result = json.loads(out)
        assert result["warc"]["documents"] == result["warc"]["responses"] == indexed
        assert result["jsonl"]["documents"] == indexed
        lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
        assert all(line["capture"]["digest"].startswith("sha1:") for line in lines)
        with warc.open("rb") as handle:
            types = [record.rec_type for record in ArchiveIterator(handle)]
        assert types.count("conversion") == indexed

        code, out, _ = run_cli(["export", "--db", str(db), "--jsonl", "-"], capsys)
        assert code == 0
        assert len(out.splitlines()) == indexed

        code, out, _ = run_cli(["show", site + "/", "--db", str(db), "--json"], capsys)
        assert code == 0
        shown = json.loads(out)
        assert shown["capture"]["file"].startswith(str(archive))
        assert shown["capture"]["offset"] >= 0

    def test_export_needs_a_target(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """export with neither --warc nor --jsonl: exit 2."""
        code, _, err = run_cli(["export", "--db", str(tmp_path / "s.db")], capsys)
        assert code == 2
        assert "--warc" in err
