"""The sources commands end to end: add, update, sources, changes; config errors; crawl --sitemap.

Sites are served from a thread (the CLI runs its own event loop). The bundled site's
copy here has no Crawl-delay, so whole updates stay quick on the real clock.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from tests.cli_support import run_cli
from tests.loopback import in_thread

PINNED = {"name", "pagesCrawled", "new", "changed", "unchanged", "removed", "failed", "error"}


class Switch:
    """A two-page site that can be switched to answering 500 for everything."""

    def __init__(self) -> None:
        self.down = False

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            if self.down:
                return web.Response(status=500, text="down")
            if request.path == "/robots.txt":
                return web.Response(text="User-agent: *\nAllow: /\n")
            if request.path == "/":
                html = "<title>Home</title><main><h1>Home</h1><p>Quokka facts.</p>"
                return web.Response(
                    text=html + '<a href="/b">b</a></main>', content_type="text/html"
                )
            if request.path == "/b":
                html = "<title>B</title><main><h1>B</h1><p>More about quokkas.</p></main>"
                return web.Response(text=html, content_type="text/html")
            return web.Response(status=404)

        app = web.Application()
        app.router.add_get("/{tail:.*}", handle)
        return app


@pytest.fixture
def switch() -> Iterator[tuple[str, Switch]]:
    state = Switch()

    class _Served:
        async def __aenter__(self) -> str:
            self.server = TestServer(state.app(), host="127.0.0.1")
            await self.server.start_server()
            return f"http://127.0.0.1:{self.server.port}"

        async def __aexit__(self, *exc: object) -> None:
            await self.server.close()

    with in_thread(_Served) as base:
        yield base, state


def write_config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


class TestAdd:
    def test_add_appends_a_table_that_reads_back(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = write_config(tmp_path / "sitelore.toml", "# mine\nstore = 'x.db'\n")
        code, out, err = run_cli(
            ["add", "docs", "https://Docs.Example.com/guide/", "--config", str(config),
             "--max-pages", "40", "--exclude", "*/old/*", "--no-robots", "--sitemap",
             "--refresh", "6h", "--json"],
            capsys,
        )  # fmt: skip
        assert code == 0, err
        assert json.loads(out)["source"]["url"] == "https://docs.example.com/guide/"
        text = config.read_text(encoding="utf-8")
        assert text.startswith("# mine\nstore = 'x.db'\n")
        table = tomllib.loads(text)["sources"]["docs"]
        assert table == {
            "url": "https://docs.example.com/guide/",
            "max_pages": 40,
            "exclude": ["*/old/*"],
            "respect_robots": False,
            "sitemap": True,
            "refresh": "6h",
        }

    def test_add_creates_the_file_named_by_the_environment(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        config = tmp_path / "conf" / "s.toml"
        monkeypatch.setenv("SITELORE_CONFIG", str(config))
        code, _, err = run_cli(["add", "docs", "https://docs.example.com/"], capsys)
        assert code == 0, err
        assert tomllib.loads(config.read_text())["sources"]["docs"]["url"]

    @pytest.mark.parametrize(
        ("args", "named"),
        [
            (["add", "docs", "https://d.example/", "--max-pages", "0"], "--max-pages"),
            (["add", "docs", "https://d.example/", "--refresh", "6"], "--refresh"),
            (["add", "bad name", "https://d.example/"], "NAME"),
            (["add", "docs", "ftp://d.example/"], "ftp://d.example/"),
        ],
    )
    def test_bad_flags_exit_2_with_one_line(
        self, args: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = tmp_path / "sitelore.toml"
        code, _, err = run_cli([*args, "--config", str(config)], capsys)
        assert code == 2
        assert len(err.strip().splitlines()) == 1
        assert named in err
        assert not config.exists()

    def test_a_name_taken_exits_2_and_leaves_the_file(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = write_config(tmp_path / "s.toml", '[sources.docs]\nurl = "https://a.example/"\n')
        before = config.read_text()
        code, _, err = run_cli(
            ["add", "docs", "https://b.example/", "--config", str(config)], capsys
        )
        assert code == 2
        assert "sources.docs already exists" in err
        assert config.read_text() == before


BAD_VALUES = [
    ('respect_robots = "no"', "sources.docs.respect_robots"),
    ("respect_robots = 1", "sources.docs.respect_robots"),
    ('max_pages = "5"', "sources.docs.max_pages"),
    ("delay = -1", "sources.docs.delay"),
    ('refresh = "daily"', "sources.docs.refresh"),
    ('exclude = "*.pdf"', "sources.docs.exclude"),
    ("sitemap = 0", "sources.docs.sitemap"),
    ("colour = 1", "sources.docs.colour"),
]


class TestConfigErrors:
    @pytest.mark.parametrize("command", [["sources"], ["update"], ["changes", "docs"]])
    @pytest.mark.parametrize(("line", "key"), BAD_VALUES)
    def test_each_bad_value_exits_78_with_one_line_naming_key_and_file(
        self,
        command: list[str],
        line: str,
        key: str,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        config = write_config(
            tmp_path / "sitelore.toml", f'[sources.docs]\nurl = "https://d.example/"\n{line}\n'
        )
        code, out, err = run_cli([*command, "--config", str(config)], capsys)
        assert code == 78
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert key in lines[0]
        assert str(config) in lines[0]
        assert out == ""

    def test_a_bad_limit_exits_78(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        config = write_config(tmp_path / "sitelore.toml", '[limits]\nmax_pages = "5"\n')
        code, _, err = run_cli(["sources", "--config", str(config)], capsys)
        assert code == 78
        assert "limits.max_pages" in err

    def test_an_unknown_source_name_exits_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = write_config(tmp_path / "s.toml", '[sources.docs]\nurl = "https://d.example/"\n')
        code, _, err = run_cli(["update", "nope", "--config", str(config)], capsys)
        assert code == 2
        assert "'nope'" in err


class TestUpdate:
    def config(self, tmp_path: Path, base: str, extra: str = "") -> list[str]:
        config = write_config(
            tmp_path / "sitelore.toml",
            f'store = "{tmp_path / "s.db"}"\nallow_private = ["127.0.0.1"]\n\n'
            f'[sources.lumen]\nurl = "{base}/"\nmax_pages = 100\nmax_depth = 5\n'
            f"delay = 0\n{extra}",
        )
        return ["--config", str(config)]

    def test_update_json_then_not_due_then_forced_unchanged(
        self, quick_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        args = self.config(tmp_path, quick_site)
        code, out, err = run_cli(["update", "--json", *args], capsys)
        assert code == 0, err
        first = json.loads(out)
        (entry,) = first["sources"]
        assert set(entry) >= PINNED
        assert (entry["name"], entry["new"], entry["failed"], entry["error"]) == (
            "lumen",
            33,
            3,
            None,
        )

        code, out, _ = run_cli(["update", "--json", *args], capsys)
        assert json.loads(out) == {"sources": [], "notDue": ["lumen"]}

        code, out, _ = run_cli(["update", "lumen", "--force", "--json", *args], capsys)
        (again,) = json.loads(out)["sources"]
        assert (again["new"], again["changed"], again["unchanged"], again["removed"]) == (
            0,
            0,
            33,
            0,
        )

        code, out, _ = run_cli(["sources", "--json", *args], capsys)
        (status,) = json.loads(out)["sources"]
        assert status["status"] == "ok"
        assert status["documents"] == 33
        assert status["due"] is False
        assert status["lastReport"]["unchanged"] == 33

        code, out, _ = run_cli(["changes", "lumen", "--json", *args], capsys)
        reports = json.loads(out)["reports"]
        assert [r["new"] for r in reports] == [0, 33]

        code, out, _ = run_cli(["sources", *args], capsys)
        assert code == 0
        assert "lumen" in out
        assert "fresh (due in 23h)" in out

    def test_update_prints_the_changed_urls(
        self, quick_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        args = self.config(tmp_path, quick_site)
        code, out, _ = run_cli(["update", *args], capsys)
        assert code == 0
        assert "lumen: crawled 40" in out
        assert "new 33" in out
        assert "/guide/upgrading.html" in out  # a failed URL, with its reason
        assert "http-status" in out

    def test_a_failed_refresh_is_loud_and_the_old_documents_stay(
        self, switch: tuple[str, Switch], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        base, state = switch
        args = self.config(tmp_path, base, 'refresh = "1s"\n')
        code, _, err = run_cli(["update", *args], capsys)
        assert code == 0, err

        state.down = True
        code, out, err = run_cli(["update", "--force", "--json", *args], capsys)
        assert code == 0  # the update ran; the failed source is reported, loudly
        (entry,) = json.loads(out)["sources"]
        assert "robots.txt could not be read" in entry["error"]
        assert "refresh failed" in err
        assert "keeping 2 documents" in err

        code, out, _ = run_cli(["search", "quokkas", "--json", *args], capsys)
        assert len(json.loads(out)["hits"]) == 2

        code, out, _ = run_cli(["sources", *args], capsys)
        assert "failed" in out
        assert "still serving 2 documents" in out
        code, out, _ = run_cli(["sources", "--json", *args], capsys)
        (status,) = json.loads(out)["sources"]
        assert status["status"] == "failed"
        assert "robots.txt" in status["error"]

        state.down = False
        code, _, _ = run_cli(["update", "--force", *args], capsys)
        assert code == 0
        code, out, _ = run_cli(["sources", "--json", *args], capsys)
        assert json.loads(out)["sources"][0]["status"] == "ok"

    def test_no_sources_is_said_not_failed(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = write_config(tmp_path / "s.toml", f'store = "{tmp_path / "s.db"}"\n')
        code, out, err = run_cli(["update", "--config", str(config)], capsys)
        assert code == 0
        assert "no sources" in err
        code, out, _ = run_cli(["sources", "--config", str(config)], capsys)
        assert "no sources" in out


def test_crawl_sitemap_flag_finds_the_orphan(
    quick_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--db", str(tmp_path / "s.db"), "--allow-private", "127.0.0.1", "--delay", "0"]
    args = ["crawl", quick_site + "/", "--max-pages", "100", "--max-depth", "5", "--json", *common]
    code, out, _ = run_cli([*args, "--sitemap"], capsys)
    assert code == 0
    with_sitemap = json.loads(out)
    assert with_sitemap["sitemapUrls"] == 33
    assert any(p["url"].endswith("/howto/graceful-shutdown.html") for p in with_sitemap["pages"])
