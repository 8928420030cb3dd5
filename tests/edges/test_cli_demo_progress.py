"""``sitelore demo`` end to end, and the crawl progress bar the commands show on a terminal."""

from __future__ import annotations

import asyncio
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from tests.cli_support import run_cli

from sitelore.adapters.demo_site import bundled_site_path
from sitelore.adapters.store import open_store
from sitelore.cli.output import CrawlProgress
from sitelore.core.errors import ErrorKind
from sitelore.core.models import PageError, PageOutcome

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


async def _count(db: Path) -> int:
    store = open_store(str(db))
    try:
        return await store.count()
    finally:
        await store.close()


# -- sitelore demo -----------------------------------------------------------------------


class TestDemo:
    @pytest.mark.slow  # the bundled site asks for Crawl-delay: 0.2, and the demo obeys
    def test_demo_serves_crawls_stores_and_searches_the_bundled_site(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``demo --json``: the site is crawled into --db and a question answered by a section."""
        db = tmp_path / "d.db"
        code, out, err = run_cli(["demo", "--db", str(db), "--json"], capsys)

        assert code == 0, err
        result = json.loads(out)
        crawl = result["crawl"]
        assert crawl["seed"].startswith("http://127.0.0.1:")
        assert crawl["errors"] == 3  # the site's three deliberately broken links
        assert crawl["pagesIndexed"] >= 25
        indexed = [p for p in crawl["pages"] if p["error"] is None and p.get("documentId")]
        assert len(indexed) == crawl["pagesIndexed"]
        assert asyncio.run(_count(db)) == crawl["pagesIndexed"]
        hits = result["search"]
        assert 1 <= len(hits) <= 5
        assert hits[0]["url"].endswith("/concepts/retries.html")
        assert hits[0]["anchorUrl"].startswith(hits[0]["url"] + "#")
        assert hits[0]["headingPath"]
        assert all("retr" in (h["title"] + h["snippet"]).lower() for h in hits[:2])
        assert "serving" in err

    def test_demo_query_option_is_what_is_searched(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--site serves another folder; --query is what is searched after the crawl."""
        site = tmp_path / "site"
        shutil.copytree(bundled_site_path(), site)
        (site / "robots.txt").write_text("User-agent: *\nDisallow: /internal/\n")
        db = tmp_path / "d.db"
        args = ["demo", "--db", str(db), "--json", "--site", str(site)]

        code, out, _ = run_cli([*args, "--query", "xylophonezzz"], capsys)
        assert code == 0
        result = json.loads(out)
        assert result["crawl"]["pagesIndexed"] >= 25
        assert result["search"] == []  # the default question (retries) would have found pages

        code, out, _ = run_cli([*args, "--query", "backoff"], capsys)
        assert code == 0
        hits = json.loads(out)["search"]
        assert hits
        assert all("backoff" in (h["title"] + h["snippet"]).lower() for h in hits)

    def test_demo_of_a_missing_site_folder_is_a_usage_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = tmp_path / "nope"
        code, out, err = run_cli(
            ["demo", "--db", str(tmp_path / "d.db"), "--site", str(missing)], capsys
        )

        assert code == 2
        assert str(missing) in err
        assert out == ""
        assert not (tmp_path / "d.db").exists()


# -- the progress bar --------------------------------------------------------------------


def _outcome(path: str, *, failed: bool = False) -> PageOutcome:
    error = PageError(ErrorKind.HTTP_STATUS, "404 Not Found", 404) if failed else None
    return PageOutcome(url=f"https://docs.example.com{path}", depth=1, error=error)


def _terminal() -> tuple[Console, io.StringIO]:
    sink = io.StringIO()
    return Console(file=sink, force_terminal=True, width=120), sink


class TestCrawlProgress:
    def test_it_shows_pages_done_of_the_cap_and_the_errors(self) -> None:
        console, sink = _terminal()
        with CrawlProgress(console, total=7, enabled=True) as progress:
            progress.advance(_outcome("/a"))
            progress.advance(_outcome("/missing", failed=True))
            progress.advance(_outcome("/b"))

        shown = _ANSI.sub("", sink.getvalue())
        assert "3/7" in shown
        assert "errors 1" in shown
        assert "docs.example.com/b" in shown  # the page last finished
        assert "4/7" not in shown
        assert "errors 2" not in shown

    def test_every_failed_page_counts_once(self) -> None:
        console, sink = _terminal()
        with CrawlProgress(console, total=3, enabled=True) as progress:
            for path in ("/x", "/y", "/z"):
                progress.advance(_outcome(path, failed=True))

        shown = _ANSI.sub("", sink.getvalue())
        assert "3/3" in shown
        assert "errors 3" in shown

    def test_disabled_it_prints_nothing(self) -> None:
        console, sink = _terminal()
        with CrawlProgress(console, total=7, enabled=False) as progress:
            progress.advance(_outcome("/a"))
            progress.advance(_outcome("/missing", failed=True))

        assert sink.getvalue() == ""
