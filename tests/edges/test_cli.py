"""The command line: exit codes, one-line errors, JSON output, and crawls of a loopback site."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli_support import create_store, run_cli

BAD_URLS = [
    ("ftp://x/", "ftp://x/"),
    ("http://user:pw@host.example/", "host.example"),
    ("http://127.0.0.1/", "127.0.0.1"),
    ("http://[::ffff:7f00:1]/", "::ffff:7f00:1"),
    ("http://exa mple.com/", "exa mple.com"),
    ("not a url", "not a url"),
    ("http://metadata.google.internal/", "metadata.google.internal"),
    ("http://2130706433/", "2130706433"),
]


class TestBadInput:
    @pytest.mark.parametrize(("url", "named"), BAD_URLS)
    @pytest.mark.parametrize("command", ["fetch", "crawl"])
    def test_refused_url_exits_2_with_one_line_and_no_store(
        self,
        command: str,
        url: str,
        named: str,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A refused URL: exit 2, one line naming it (never the password), store untouched."""
        db = tmp_path / "s.db"
        code, out, err = run_cli([command, url, "--db", str(db)], capsys)
        assert code == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("sitelore: error: ")
        assert named in lines[0]
        assert "pw" not in err
        assert "Traceback" not in err
        assert out == ""
        assert not db.exists()

    def test_bad_option_value_names_the_flag(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An invalid option value exits 2 and names the option."""
        code, _, err = run_cli(
            ["crawl", "https://docs.example.com/", "--max-pages", "0", "--db", str(tmp_path / "d")],
            capsys,
        )
        assert code == 2
        assert "--max-pages" in err

    def test_unknown_option_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Click's own usage errors also exit 2."""
        code, _, _ = run_cli(["crawl", "https://x.example/", "--frobnicate"], capsys)
        assert code == 2

    def test_bad_settings_file_exits_78(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A settings file with a wrong type is a configuration error naming key and file."""
        config = tmp_path / "sitelore.toml"
        config.write_text('[limits]\nmax_pages = "many"\n')
        code, _, err = run_cli(
            ["search", "x", "--config", str(config), "--db", str(tmp_path / "s.db")], capsys
        )
        assert code == 78
        assert "limits.max_pages" in err
        assert str(config) in err

    def test_debug_shows_a_traceback(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--debug adds the traceback to the one-line error."""
        code, _, err = run_cli(["fetch", "ftp://x/", "--debug"], capsys)
        assert code == 2
        assert "Traceback" in err


class TestAgainstASite:
    def test_crawl_json_then_search_list_show(
        self, site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """crawl --json prints the pinned summary; search, list and show read the store."""
        db = str(tmp_path / "s.db")
        common = ["--db", db, "--allow-private", "127.0.0.1"]
        code, out, _ = run_cli(
            ["crawl", site + "/", "--max-pages", "5", "--delay", "0", "--json", *common], capsys
        )
        assert code == 0
        summary = json.loads(out)
        assert summary["pagesCrawled"] == 5
        assert summary["truncated"] is True
        assert summary["truncatedReason"] == "max_pages"
        assert set(summary) >= {
            "seed", "pagesCrawled", "pagesIndexed", "truncated", "truncatedReason",
            "errors", "skipped", "pages", "elapsedMs",
        }  # fmt: skip
        first = summary["pages"][0]
        assert set(first) == {"url", "finalUrl", "depth", "status", "title", "documentId", "error"}

        code, out, _ = run_cli(["search", "lumen", "--db", db, "--json"], capsys)
        assert code == 0
        hits = json.loads(out)["hits"]
        assert hits
        assert {"headingPath", "anchorUrl", "section"} <= set(hits[0])
        assert hits[0]["anchorUrl"].startswith(hits[0]["url"])

        code, out, _ = run_cli(["search", "lumen", "--db", db], capsys)
        best = hits[0]
        assert best["headingPath"][-1] in out
        assert f"{best['title']} > {best['title']} >" not in out  # the h1 is not said twice
        assert best["anchorUrl"] in out

        code, out, _ = run_cli(["reindex", "--db", db, "--json"], capsys)
        assert code == 0
        assert json.loads(out) == {"documents": 5}

        code, out, _ = run_cli(["list", "--db", db, "--json"], capsys)
        assert json.loads(out)["total"] == 5

        code, out, _ = run_cli(["show", hits[0]["id"], "--db", db], capsys)
        assert code == 0
        assert out.startswith("# ")

        code, inline, _ = run_cli(["show", hits[0]["id"], "--db", db], capsys)
        code, out, _ = run_cli(["show", hits[0]["id"], "--db", db, "--links", "reference"], capsys)
        assert code == 0
        assert "](http" not in out.split("\n\n", 2)[2]  # past the title and URL lines
        assert ("\n[1]: http" in out) == ("](http" in inline)
        code, _, err = run_cli(["show", hits[0]["id"], "--db", db, "--links", "bogus"], capsys)
        assert code == 2
        assert "--links bogus" in err

    def test_fetch_stores_one_page(
        self, site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """fetch stores exactly the page asked for and follows nothing."""
        db = str(tmp_path / "s.db")
        code, out, _ = run_cli(
            ["fetch", site + "/guide/quickstart.html", "--db", db, "--allow-private", "127.0.0.1"],
            capsys,
        )
        assert code == 0
        assert "Quickstart" in out
        code, out, _ = run_cli(["list", "--db", db, "--json"], capsys)
        assert json.loads(out)["total"] == 1

    def test_fetch_of_a_missing_page_is_reported_and_exits_0(
        self, site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A page that fails is an outcome, not a fatal error: reported, exit 0 (pinned)."""
        common = ["--db", str(tmp_path / "s.db"), "--allow-private", "127.0.0.1"]
        code, out, err = run_cli(["fetch", site + "/nope.html", *common], capsys)
        assert code == 0
        assert out == ""
        (line,) = err.strip().splitlines()
        assert line.startswith("sitelore: failed (http-status): ")
        assert "/nope.html" in line
        assert "404" in line

        code, out, err = run_cli(["fetch", site + "/nope.html", "--json", *common], capsys)
        assert code == 0
        outcome = json.loads(out)
        assert outcome["error"]["kind"] == "http-status"
        assert outcome["status"] == 404
        assert "404" in err

    def test_loopback_is_refused_without_the_operator_opt_in(
        self, site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without --allow-private the loopback site is refused as blocked (exit 2)."""
        code, _, err = run_cli(["crawl", site + "/", "--db", str(tmp_path / "s.db")], capsys)
        assert code == 2
        assert "blocked" in err

    def test_show_unknown_id_is_a_usage_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """show of an id that is not stored exits 2 naming it."""
        db = tmp_path / "s.db"
        create_store(db)
        code, _, err = run_cli(["show", "deadbeef", "--db", str(db)], capsys)
        assert code == 2
        assert "deadbeef" in err


#: Malformed spellings of a URL with a password; the CLI must never print it.
MALFORMED_USERINFO_URLS = [
    "http:\\\\someuser:secretpw@host.example/",
    "http:\\someuser:secretpw@host.example/",
    "http:someuser:secretpw@host.example/",
    "http:/someuser:secretpw@host.example/",
    "http:///someuser:secretpw@host.example/",
    "http:/\\/someuser:secretpw@host.example/",
    "HTTPS:\\\\someuser:secretpw@host.example/",
    "http://someuser:secretpw@@host.example/",
    "http://someuser:secretpw\\@host.example/",
    "http://someuser:secretpw%40host.example/",
    "http://someuser%3Asecretpw%40host.example/",
    "http://someuser:secretpw\uff20host.example/",
    "http://someuser:secretpw\uff03@host.example/",
    "http://someuser:secretpw/x@host.example/",
    "http://someuser:secretpw#x@host.example/",
    "http://someuser:secretpw@[::1/",
    "//someuser:secretpw@host.example/",
    "someuser:secretpw@host.example",
]


class TestPasswordsNeverEchoed:
    @pytest.mark.parametrize("url", MALFORMED_USERINFO_URLS)
    @pytest.mark.parametrize("command", ["fetch", "crawl"])
    def test_malformed_userinfo_is_refused_without_the_password(
        self, command: str, url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """However the slashes or the "@" are written: exit 2, one line, no password."""
        code, out, err = run_cli([command, url, "--db", str(tmp_path / "s.db")], capsys)
        assert code == 2
        assert len(err.strip().splitlines()) == 1, err
        for secret in ("secretpw", "someuser"):
            assert secret not in err
            assert secret not in out


class TestServerPolitenessFlags:
    @pytest.mark.parametrize("command", ["serve", "mcp"])
    def test_operator_flags_exist_and_delay_is_checked(
        self, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--delay (the floor for remote requests) and --allow-render; a negative delay is 2."""
        code, out, _ = run_cli([command, "--help"], capsys)
        assert code == 0
        assert "--delay" in out
        assert "--allow-render" in out
        code, _, err = run_cli([command, "--delay", "-1", "--db", str(tmp_path / "s.db")], capsys)
        assert code == 2
        assert "--delay" in err
        assert "No such option" not in err


class TestDelete:
    def test_delete_removes_documents_and_their_search_entries(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import asyncio
        from datetime import UTC, datetime

        from sitelore.adapters.store import SQLiteStore
        from sitelore.core.models import Document, FetchMeta

        db = tmp_path / "s.db"
        meta = FetchMeta(status=200, content_type="text/html", fetched_at=datetime.now(UTC))

        async def seed() -> list[str]:
            store = SQLiteStore(db)
            try:
                docs = [Document(url=f"https://a.test/{n}", title=n, markdown=f"# {n}\n\nwalrus")
                        for n in ("one", "two", "three")]  # fmt: skip
                return [(await store.upsert(doc, meta)).id for doc in docs]
            finally:
                await store.close()

        one, _, _ = asyncio.run(seed())
        args = ["--db", str(db)]
        two = ["https://a.test/two", "https://a.test/two"]  # named twice: deleted once
        code, out, err = run_cli(
            ["delete", one, "https://a.test/one", *two, *args, "--json"], capsys
        )
        assert (code, err) == (0, "")
        assert json.loads(out) == {
            "deleted": [one, "https://a.test/one", "https://a.test/two"],
            "missing": [],
        }
        code, out, _ = run_cli(["search", "walrus", *args, "--json"], capsys)
        assert [hit["url"] for hit in json.loads(out)["hits"]] == ["https://a.test/three"]
        # Those not in the store are named; the others are still deleted; exit 2.
        code, out, err = run_cli(["delete", one, "https://a.test/three", *args], capsys)
        assert code == 2
        assert "deleted 1 document" in out
        assert f"{one}: no such document in the store" in err
        code, out, _ = run_cli(["list", *args, "--json"], capsys)
        assert json.loads(out)["documents"] == []

    def test_delete_never_creates_a_store(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, _, err = run_cli(["delete", "x", "--db", str(tmp_path / "none.db")], capsys)
        assert code == 2
        assert "no sitelore store here" in err
        assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize(
    ("title", "markdown", "expected"),
    [
        # The page's own first heading is its title: printed once, as the page wrote it.
        ("Install", "## Install {#i}\n\nRun it.", "## Install {#i}\n\n<URL>\n\nRun it.\n"),
        ("Install", "Run it.", "# Install\n\n<URL>\n\nRun it.\n"),
        ("Guide", "# Install\n\nRun it.", "# Guide\n\n<URL>\n\n# Install\n\nRun it.\n"),
    ],
)  # fmt: skip
def test_show_prints_the_title_once(
    title: str, markdown: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio
    from datetime import UTC, datetime

    from sitelore.adapters.store import SQLiteStore
    from sitelore.core.models import Document, FetchMeta

    url = "https://a.test/install"
    meta = FetchMeta(status=200, content_type="text/html", fetched_at=datetime.now(UTC))

    async def seed() -> None:
        store = SQLiteStore(tmp_path / "s.db")
        try:
            await store.upsert(Document(url=url, title=title, markdown=markdown), meta)
        finally:
            await store.close()

    asyncio.run(seed())
    code, out, _ = run_cli(["show", url, "--db", str(tmp_path / "s.db")], capsys)
    assert code == 0
    assert out == expected.replace("URL", url)
