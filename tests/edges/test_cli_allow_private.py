"""``--allow-private HOST_OR_CIDR`` and the settings file's ``allow_private``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web
from tests.loopback import html, links, serve_in_thread, text

from sitelore.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 1), out, err


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "exa mple.corp", "http://wiki.corp", "0.0.0.0/0"])
def test_malformed_flag_is_a_usage_error(
    entry: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2, one line naming the flag and the value; nothing is created."""
    db = tmp_path / "s.db"
    code, _, err = run_cli(
        ["crawl", "https://docs.example.com/", "--allow-private", entry, "--db", str(db)], capsys
    )
    assert code == 2
    assert "--allow-private" in err
    assert repr(entry) in err
    assert len(err.strip().splitlines()) == 1
    assert not db.exists()


def test_malformed_settings_entry_is_a_config_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "sitelore.toml"
    config.write_text('allow_private = ["10.0.0.0/8", "10.0.0.0/33"]\n')
    code, _, err = run_cli(
        ["crawl", "https://docs.example.com/", "--config", str(config)],
        capsys,
    )
    assert code == 78
    assert str(config) in err
    assert "allow_private" in err
    assert "'10.0.0.0/33'" in err


def test_host_name_may_resolve_to_a_private_address_other_names_stay_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--allow-private wiki.test``: wiki.test (on loopback) is crawled; other.test on the
    same address is still refused, as blocked, and the crawl goes on."""

    async def home(request: web.Request) -> web.StreamResponse:
        port = request.url.port
        return await links(f"http://other.test:{port}/x", "/x")(request)

    routes = {"/robots.txt": text("User-agent: *\nAllow: /\n"), "/x": html("x"), "/": home}
    with serve_in_thread(routes) as site:
        port = site.origin.rsplit(":", 1)[1]
        code, out, err = run_cli(
            [
                "crawl",
                f"http://wiki.test:{port}/",
                "--any-domain",
                "--delay",
                "0",
                "--allow-private",
                "wiki.test",
                "--resolve",
                f"wiki.test:{port}:127.0.0.1",
                "--resolve",
                f"other.test:{port}:127.0.0.1",
                "--db",
                str(tmp_path / "s.db"),
                "--json",
            ],
            capsys,
        )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["pagesIndexed"] == 2
    assert summary["skipped"]["blocked"] == 1
    assert all(seen.headers["Host"].startswith("wiki.test") for seen in site.requests)
