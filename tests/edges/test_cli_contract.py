"""The pinned CLI contract: exit codes, one-line errors, global options, stores, crawl --json.

Every error is one line on stderr naming the input and the reason, with a pinned exit
code (0 ran, 2 usage, 78 configuration, 70 internal); commands that only read never
create a store. Sites are served on loopback from a thread (the CLI runs its own loop).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import sys
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from tests.cli_support import create_store, run_cli
from tests.edges.conftest import site_copy
from tests.loopback import in_thread

from sitelore.adapters.demo_site import serve_site
from sitelore.app.wire import clamped_fields
from sitelore.cli import main as cli
from sitelore.cli.output import print_summary, print_warnings
from sitelore.core import errors
from sitelore.core.errors import ConfigError, StoreError, StoreLocationError
from sitelore.core.models import CrawlSummary, PageOutcome
from sitelore.core.options import CrawlOptions, clamped_options

#: Commands point the root logger at the captured stderr; put it back after each test.
pytestmark = pytest.mark.usefixtures("restore_logging")

PINNED_CODES = {errors.EXIT_USAGE, errors.EXIT_CONFIG, errors.EXIT_INTERNAL}
PINNED_SKIPS = {"robots", "filtered", "duplicate", "depth"}
LOOPBACK = ["--allow-private", "127.0.0.1"]


def one_error_line(err: str) -> str:
    """The only line on stderr, which must be a ``sitelore: error:`` line."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("sitelore: error: "), err
    assert "Traceback" not in err
    return lines[0]


@contextlib.contextmanager
def served(root: Path, log: list[tuple[float, str]] | None = None) -> Iterator[str]:
    """Serve ``root`` from a thread; yield its base URL."""
    with in_thread(lambda: serve_site(root, log=log)) as base:
        yield base


# -- exit codes ----------------------------------------------------------------------------


def test_every_error_class_exits_with_a_pinned_code() -> None:
    """No error maps to an unpinned code (exit 1 is gone); page errors that escape are bugs."""
    classes = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value) and issubclass(value, errors.SiteloreError)
    ]
    assert len(classes) > 20
    assert {klass.exit_code for klass in classes} <= PINNED_CODES
    assert errors.FetchError.exit_code == errors.EXIT_INTERNAL
    assert errors.ConversionError.exit_code == errors.EXIT_INTERNAL
    assert not hasattr(errors, "EXIT_PAGE_FAILED")


def test_a_closed_stdout_is_not_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sitelore list --json | head -c 1``: typer exits 1 on EPIPE; the command ran."""

    def run_async(coro: Coroutine[Any, Any, Any]) -> Any:
        coro.close()
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "run_async", run_async)
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # typer wraps it; put it back after
    code, _, err = run_cli(["list", "--json"], capsys)
    assert code == 0
    assert err == ""


def test_an_unpinned_exit_status_from_inside_is_internal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run_async(coro: Coroutine[Any, Any, Any]) -> Any:
        coro.close()
        raise SystemExit(5)

    monkeypatch.setattr(cli, "run_async", run_async)
    code, _, err = run_cli(["list"], capsys)
    assert code == 70
    (line,) = err.strip().splitlines()
    assert line.startswith("sitelore: internal error: exit status 5")


# -- click's usage errors: one line, exit 2 --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["crawl", "http://127.0.0.1:9/", "--max-pages", "x"], "--max-pages"),
        (["search", "--limit", "0", "x"], "--limit"),
        (["crawl", "http://127.0.0.1:9/", "--frobnicate"], "--frobnicate"),
        (["crawl"], "argument 'url'"),
        (["frobnicate"], "frobnicate"),
        (["--frobnicate"], "--frobnicate"),
    ],
    ids=["bad-value", "out-of-range", "unknown-option", "missing-argument", "no-command", "root"],
)
def test_usage_errors_are_one_line_naming_the_input(
    args: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(args, capsys)
    assert code == 2
    assert out == ""
    line = one_error_line(err)
    assert named in line
    assert "Usage:" not in err


@pytest.mark.parametrize(
    ("args", "shown"),
    [(["--help"], "crawl-status"), ([], "crawl-status"), (["crawl", "--help"], "--max-pages")],
    ids=["help", "bare", "command"],
)
def test_help_still_shows(args: list[str], shown: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(args, capsys)
    assert code == 0
    assert "Usage:" in out
    assert shown in out
    assert err == ""


@pytest.mark.parametrize("args", [["--version"], ["version"], ["--version", "crawl"]])
def test_version_prints_and_exits(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from sitelore import __version__

    code, out, err = run_cli(args, capsys)
    assert (code, out.strip(), err) == (0, f"sitelore {__version__}", "")


# -- global options before the command name --------------------------------------------------


class TestGlobalOptions:
    def test_config_is_read_before_or_after_the_command(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "s.db"
        create_store(db)
        config = tmp_path / "elsewhere.toml"
        config.write_text(f'store = "{db}"\n[sources.docs]\nurl = "https://docs.test/"\n')
        for args in (
            ["--config", str(config), "sources", "--json"],
            ["sources", "--json", "--config", str(config)],
        ):
            code, out, err = run_cli(args, capsys)
            assert code == 0, err
            assert [s["name"] for s in json.loads(out)["sources"]] == ["docs"]

    def test_a_global_config_that_cannot_be_read_is_named(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = tmp_path / "missing.toml"
        code, _, err = run_cli(["--config", str(missing), "list"], capsys)
        assert code == 78
        assert str(missing) in one_error_line(err)

    def test_the_command_own_config_wins(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "s.db"
        create_store(db)
        good = tmp_path / "good.toml"
        good.write_text(f'store = "{db}"\n')
        code, out, err = run_cli(
            ["--config", str(tmp_path / "missing.toml"), "list", "--json", "--config", str(good)],
            capsys,
        )
        assert code == 0, err
        assert json.loads(out)["total"] == 0

    def test_debug_before_the_command_adds_a_traceback(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, _, err = run_cli(["--debug", "fetch", "ftp://x/"], capsys)
        assert code == 2
        assert "Traceback" in err
        assert "sitelore: error: ftp://x/" in err


# -- flags are validated like the settings file ---------------------------------------------


class TestFlagValues:
    def test_a_bad_resolve_flag_is_a_usage_error_said_once(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "s.db"
        code, _, err = run_cli(
            ["crawl", "http://docs.test/", "--resolve", "bogus", "--db", str(db)], capsys
        )
        assert code == 2
        line = one_error_line(err)
        assert line == "sitelore: error: --resolve 'bogus': expected HOST:PORT:ADDR"
        assert not db.exists()

    def test_a_bad_resolve_entry_of_the_settings_file_is_a_config_error_naming_it(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = tmp_path / "sitelore.toml"
        config.write_text('resolve = ["bogus"]\n')
        code, _, err = run_cli(
            ["crawl", "http://docs.test/", "--config", str(config), "--db", str(tmp_path / "d")],
            capsys,
        )
        assert code == 78
        line = one_error_line(err)
        assert str(config) in line
        assert line.count("bogus") == 1

    @pytest.mark.parametrize("agent", ["Foo\r\nX-Evil: 1", "", "   ", "tab\there", "caf\u00e9"])
    def test_a_bad_user_agent_flag_is_a_usage_error_naming_it(
        self, agent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = tmp_path / "s.db"
        code, out, err = run_cli(
            ["crawl", "http://127.0.0.1:9/", "--user-agent", agent, "--db", str(db), *LOOPBACK],
            capsys,
        )
        assert code == 2
        assert out == ""
        assert "--user-agent" in one_error_line(err)
        assert not db.exists()

    def test_a_bad_user_agent_in_the_settings_file_is_a_config_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = tmp_path / "sitelore.toml"
        config.write_text('user_agent = "Foo\\r\\nX-Evil: 1"\n')
        code, _, err = run_cli(
            ["fetch", "http://127.0.0.1:9/", "--config", str(config), *LOOPBACK], capsys
        )
        assert code == 78
        line = one_error_line(err)
        assert str(config) in line
        assert "user_agent" in line

    def test_a_bad_user_agent_in_the_environment_is_named(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setenv("SITELORE_USER_AGENT", "bell\x07")
        code, _, err = run_cli(
            ["fetch", "http://127.0.0.1:9/", "--db", str(tmp_path / "s.db"), *LOOPBACK], capsys
        )
        assert code == 78
        assert "SITELORE_USER_AGENT" in one_error_line(err)


# -- stores: unusable, missing, never created by readers ------------------------------------


READERS = [
    ["search", "x"],
    ["list"],
    ["show", "deadbeef"],
    ["export", "--jsonl", "{tmp}/out.jsonl"],
    ["reconvert"],
    ["sources"],
    ["changes", "docs"],
]


class TestStores:
    def test_a_file_that_is_not_sqlite_is_a_config_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        junk = tmp_path / "passwd"
        junk.write_text("root:x:0:0:root:/root:/bin/bash\n" * 20)
        before = junk.read_bytes()
        code, _, err = run_cli(["search", "x", "--db", str(junk)], capsys)
        assert code == 78
        line = one_error_line(err)
        assert str(junk) in line
        assert "not an SQLite database" in line
        assert junk.read_bytes() == before

    @pytest.mark.parametrize("command", READERS, ids=lambda args: args[0])
    def test_readers_never_create_a_store(
        self, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = tmp_path / "sitelore.toml"
        config.write_text('[sources.docs]\nurl = "https://docs.test/"\n')
        db = tmp_path / "nodir" / "x.db"
        args = [part.format(tmp=tmp_path) for part in command]
        code, out, err = run_cli([*args, "--db", str(db), "--config", str(config)], capsys)
        assert code == 2
        assert out == ""
        line = one_error_line(err)
        assert line == f"sitelore: error: {db}: no sitelore store here (crawl or fetch creates one)"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["sitelore.toml"]

    @pytest.mark.parametrize("command", ["crawl", "fetch"])
    def test_a_start_url_refused_by_robots_leaves_no_store(
        self, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        root = site_copy(tmp_path / "site", robots="User-agent: *\nDisallow: /\n")
        db = tmp_path / "out" / "s.db"
        with served(root) as base:
            code, _, err = run_cli([command, base + "/", "--db", str(db), *LOOPBACK], capsys)
        assert code == 2
        assert "robots.txt" in one_error_line(err)
        assert not (tmp_path / "out").exists()


class TestPostgresDown:
    @pytest.mark.parametrize("command", ["crawl", "fetch"])
    def test_an_unreachable_database_fails_before_any_request(
        self, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        pytest.importorskip("psycopg")
        log: list[tuple[float, str]] = []
        with served(site_copy(tmp_path / "site"), log=log) as base:
            code, out, err = run_cli(
                [command, base + "/", "--db", "postgresql://postgres:pw@127.0.0.1:1/x", *LOOPBACK],
                capsys,
            )
        assert code == 78
        assert out == ""
        line = one_error_line(err)
        assert "cannot connect to PostgreSQL" in line
        assert ":pw@" not in err
        assert log == []  # not even robots.txt was asked for

    def test_an_error_inside_a_task_group_is_reported_as_itself(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        def run_async(coro: Coroutine[Any, Any, Any]) -> Any:
            coro.close()
            raise ExceptionGroup(
                "unhandled errors in a TaskGroup (1 sub-exception)",
                [ExceptionGroup("inner", [ConfigError("db.test: cannot connect to PostgreSQL")])],
            )

        monkeypatch.setattr(cli, "run_async", run_async)
        code, _, err = run_cli(["search", "x"], capsys)
        assert code == 78
        assert one_error_line(err) == "sitelore: error: db.test: cannot connect to PostgreSQL"

    def test_a_group_without_sitelore_errors_is_internal(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        def run_async(coro: Coroutine[Any, Any, Any]) -> Any:
            coro.close()
            raise ExceptionGroup("unhandled errors in a TaskGroup", [KeyError("x")])

        monkeypatch.setattr(cli, "run_async", run_async)
        code, _, err = run_cli(["search", "x"], capsys)
        assert code == 70
        (line,) = err.strip().splitlines()
        assert line.startswith("sitelore: internal error: unhandled errors in a TaskGroup")

    def test_the_rest_api_answers_a_group_as_its_first_sitelore_error(self) -> None:
        pytest.importorskip("fastapi")
        from sitelore.server.api import error_detail

        group = ExceptionGroup("tg", [KeyError("x"), StoreError("s.db: disk I/O error")])
        status, detail = error_detail(group)
        assert status == 503
        assert detail.code == "store"
        assert detail.message == "s.db: disk I/O error"
        status, _ = error_detail(ExceptionGroup("tg", [StoreLocationError("s.db: not SQLite")]))
        assert status == 503


# -- export files ---------------------------------------------------------------------------


class TestExportTargets:
    @pytest.mark.parametrize(
        ("flag", "target", "reason"),
        [
            ("--jsonl", "nodir/x.jsonl", "no such directory"),
            ("--jsonl", ".", "is a directory"),
            ("--warc", "nodir/x.warc", "No such file or directory"),
            ("--warc", ".", "is a directory"),
        ],
    )
    def test_an_unwritable_export_file_is_a_config_error_naming_it(
        self,
        flag: str,
        target: str,
        reason: str,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        db = tmp_path / "s.db"
        create_store(db)
        path = tmp_path / target
        code, _, err = run_cli(["export", flag, str(path), "--db", str(db)], capsys)
        assert code == 78
        line = one_error_line(err)
        assert str(path.absolute()).rstrip("/.") in line
        assert reason in line
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


# -- fetch and crawl output -----------------------------------------------------------------


class TestAgainstASite:
    def test_fetch_logs_nothing_below_warning_without_debug(
        self, quick_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        args = [
            "fetch",
            quick_site + "/guide/quickstart.html",
            "--db",
            str(tmp_path / "s.db"),
            *LOOPBACK,
        ]
        code, out, err = run_cli(args, capsys)
        assert code == 0
        assert out.startswith("stored ")
        assert err == ""

        code, out, err = run_cli([*args, "--debug"], capsys)
        assert code == 0
        assert "fetched " in err  # the per-page log line, back with --debug

    def test_crawl_json_skipped_has_every_pinned_reason_and_clamped_objects(
        self, quick_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = tmp_path / "sitelore.toml"
        config.write_text("[limits]\nmax_pages = 2\n")
        code, out, err = run_cli(
            ["crawl", quick_site + "/", "--max-pages", "5", "--no-robots", "--delay", "0", "--json",
             "--config", str(config), "--db", str(tmp_path / "s.db"), *LOOPBACK],
            capsys,
        )  # fmt: skip
        assert code == 0, err
        summary = json.loads(out)
        assert set(summary["skipped"]) >= PINNED_SKIPS
        assert summary["skipped"]["robots"] == 0
        assert all(isinstance(n, int) for n in summary["skipped"].values())
        assert summary["clamped"] == [{"field": "maxPages", "requested": 5, "applied": 2}]
        assert summary["pagesCrawled"] == 2

    def test_crawl_says_it_was_truncated_once(
        self, quick_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, out, err = run_cli(
            ["crawl", quick_site + "/", "--max-pages", "3", "--delay", "0",
             "--db", str(tmp_path / "s.db"), *LOOPBACK],
            capsys,
        )  # fmt: skip
        assert code == 0, err
        assert (out + err).count("not fetched") == 1
        assert "warning: stopped at max_pages" in err


def test_the_cli_and_rest_describe_clamped_options_alike() -> None:
    requested = CrawlOptions(max_pages=500, max_depth=1, concurrency=100, delay=0.5)
    applied = CrawlOptions(max_pages=200, max_depth=1, concurrency=64, delay=2.0)
    notes = clamped_options(requested, applied)
    rest = [c.model_dump(mode="json", by_alias=True) for c in clamped_fields(requested, applied)]
    assert [note.to_json() for note in notes] == rest
    assert [note.field for note in notes] == ["maxPages", "concurrency", "delay"]
    assert [str(note) for note in notes] == [
        "max_pages 500 clamped to the operator's cap 200",
        "concurrency 100 clamped to the operator's cap 64",
        "delay 0.5 raised to the operator's minimum 2.0",
    ]


class TestHumanSummary:
    @staticmethod
    def render(summary: CrawlSummary) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        print_summary(Console(file=out, width=200), summary)
        print_warnings(Console(file=err, width=200), summary)
        return out.getvalue(), err.getvalue()

    def test_a_long_url_is_shown_whole_on_a_narrow_console(self) -> None:
        """On 80 columns (any pipe) a URL folds onto more lines; no part is cut off."""
        url = "https://docs.test/reference/sql-commands/create-index-concurrently.html"
        summary = CrawlSummary(seed=url, options=CrawlOptions())
        summary.record(
            PageOutcome(url=url, depth=0, final_url=url, status=200, title="CREATE INDEX")
        )
        out = io.StringIO()
        print_summary(Console(file=out, width=80), summary)
        cells = [line.split("│")[3].strip() for line in out.getvalue().splitlines()[4:-2]]
        assert "".join(cells) == url
        assert "…" not in out.getvalue()

    def test_a_redirect_onto_a_fetched_page_is_shown_as_one(self) -> None:
        base = "https://docs.test"
        summary = CrawlSummary(seed=base + "/", options=CrawlOptions())
        for page in (
            PageOutcome(
                url=base + "/", depth=0, final_url=base + "/", status=200, title="Home",
                document_id="d1", indexed=True,
            ),
            PageOutcome(url=base + "/latest/", depth=1, final_url=base + "/", status=200),
        ):  # fmt: skip
            summary.record(page)
        out, _ = self.render(summary)
        (row,) = [line for line in out.splitlines() if "/latest/" in line]
        assert "→" in row
        assert "redirect to an already-fetched page" in row
        assert " 200 " not in row

    def test_a_clamped_option_says_where_the_caps_are_raised(self) -> None:
        summary = CrawlSummary(seed="https://docs.test/", options=CrawlOptions())
        requested, applied = CrawlOptions(max_pages=500), CrawlOptions(max_pages=200)
        summary.clamped = tuple(clamped_options(requested, applied))
        out, _ = self.render(summary)
        assert "max_pages 500 clamped to the operator's cap 200" in out
        assert "[limits] in the settings file" in out
        summary.clamped = ()
        assert "[limits]" not in self.render(summary)[0]

    def test_truncation_is_said_once_even_without_the_crawl_warning(self) -> None:
        summary = CrawlSummary(seed="https://docs.test/", options=CrawlOptions())
        summary.truncated, summary.truncated_reason, summary.unfetched = True, "deadline", 7
        out, err = self.render(summary)
        assert (out + err).count("not fetched") == 1
        summary.warnings = ["stopped at deadline; 7 discovered URLs were not fetched"]
        out, err = self.render(summary)
        assert (out + err).count("not fetched") == 1


def test_a_start_site_that_is_down_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its robots.txt is unreachable: exit 2, and the error says why (not only 'network')."""
    import socket

    with socket.socket() as closed:  # a port nothing listens on once this is closed
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    args = ["crawl", url, "--allow-private", "127.0.0.1", "--db", str(tmp_path / "s.db")]
    code, out, err = run_cli(args, capsys)
    assert (code, out) == (2, "")
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"sitelore: error: {url}: robots.txt could not be read")
    assert "could not connect" in last
