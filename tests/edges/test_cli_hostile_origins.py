"""``sitelore crawl`` against hostile origins, and ``--allow-private HOST_OR_CIDR``.

A refused or throttling origin found on the way never fails the crawl: exit 0 and the
summary as usual. The allow list takes addresses, CIDRs and host names; a malformed
entry is a usage error on the command line and a configuration error in the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiohttp import web
from tests.cli_support import run_cli
from tests.loopback import html, links, serve_in_thread, text

ALLOW_ALL = text("User-agent: *\nAllow: /\n")


def crawl_args(seed: str, db: Path, *flags: str) -> list[str]:
    """An any-domain ``crawl --json`` of ``seed`` with no delay, plus ``flags``."""
    return ["crawl", seed, "--any-domain", "--delay", "0", "--db", str(db), "--json", *flags]


def test_refused_link_and_sitemap_are_blocked_and_the_crawl_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """evil.test resolves (--resolve) to 127.0.0.3, which is refused: its URLs are blocked."""
    with serve_in_thread({"/x": html("secret")}, "127.0.0.3") as evil:
        port = evil.origin.rsplit(":", 1)[1]
        bad = f"http://evil.test:{port}"
        robots = f"User-agent: *\nAllow: /\nSitemap: {bad}/sitemap.xml\n"
        routes = {"/robots.txt": text(robots), "/": links(bad + "/x", "/ok"), "/ok": html("ok")}
        with serve_in_thread(routes) as site:
            flags = ["--sitemap", "--allow-private", "127.0.0.1"]
            flags += ["--resolve", f"evil.test:{port}:127.0.0.3"]
            args = crawl_args(site.origin + "/", tmp_path / "s.db", *flags)
            code, out, err = run_cli(args, capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["pagesIndexed"] == 2
    assert summary["skipped"]["blocked"] == 1
    assert summary["skipped"]["throttled"] == 0
    assert evil.requests == []
    assert "evil.test" in err


@pytest.mark.parametrize("label", ["rot13", "base64", "punycode", "utf-7", "idna", "utf-32"])
def test_sitemaps_naming_python_codecs_or_unusable_urls_are_read_or_skipped(
    label: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sitemap declaring ``encoding="rot13"`` (exit 70 before) is read as UTF-8; a
    ``Sitemap:`` URL that is no URL (exit 2 before: only the start URL fails a crawl)
    is a warning."""
    sitemap = f'<?xml version="1.0" encoding="{label}"?><urlset><url><loc>/listed</loc></url>'
    robots = "User-agent: *\nAllow: /\nSitemap: /s.xml\nSitemap: http://127.0.0.1:99999/x.xml\n"
    routes = {"/robots.txt": text(robots), "/s.xml": text(sitemap + "</urlset>")}
    routes |= {"/": html("home"), "/listed": html("listed")}
    with serve_in_thread(routes) as site:
        args = crawl_args(site.origin + "/", tmp_path / "s.db", "--sitemap")
        code, out, err = run_cli([*args, "--allow-private", "127.0.0.1"], capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["pagesIndexed"] == 2
    assert "/listed" in site.paths
    assert any("127.0.0.1:99999" in warning for warning in summary["warnings"])


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

    routes = {"/robots.txt": ALLOW_ALL, "/x": html("x"), "/": home}
    with serve_in_thread(routes) as site:
        port = site.origin.rsplit(":", 1)[1]
        flags = ["--allow-private", "wiki.test", "--resolve", f"wiki.test:{port}:127.0.0.1"]
        flags += ["--resolve", f"other.test:{port}:127.0.0.1"]
        args = crawl_args(f"http://wiki.test:{port}/", tmp_path / "s.db", *flags)
        code, out, err = run_cli(args, capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["pagesIndexed"] == 2
    assert summary["skipped"]["blocked"] == 1
    assert all(seen.headers["Host"].startswith("wiki.test") for seen in site.requests)
