"""``sitelore crawl`` when another origin is hostile: exit 0, the summary as usual."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.loopback import html, links, serve_in_thread, text

from sitelore.cli import main

ALLOW_ALL = text("User-agent: *\nAllow: /\n")


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 1), out, err


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
            code, out, err = run_cli(
                [
                    "crawl",
                    site.origin + "/",
                    "--any-domain",
                    "--sitemap",
                    "--delay",
                    "0",
                    "--allow-private",
                    "127.0.0.1",
                    "--resolve",
                    f"evil.test:{port}:127.0.0.3",
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
    assert summary["skipped"]["throttled"] == 0
    assert evil.requests == []
    assert "evil.test" in err
