"""Hostile pages over a real loopback server: each costs its own page, never the crawl.

Exotic charset labels, an attribute bomb, markup that keeps the parser busy past its
cap, and converters that hang or crash their worker: the crawl (through the real
worker pool, and through the CLI) finishes, reports each such page's typed error and
still stores the pages that come after them. A guard bounds each test's time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from tests.loopback import in_thread, serve_app

from sitelore.adapters.convert_pool import ProcessConverter
from sitelore.app.bootstrap import Runtime
from sitelore.cli.main import main
from sitelore.core.config import ConvertSettings, Settings
from sitelore.core.models import CrawlSummary
from sitelore.core.options import CrawlOptions, Limits

EXOTIC = ("punycode", "rot13", "base64", "bz2", "hex", "unicode_escape", "utf-7", "x-no-such")
#: One tag with 100 000 attributes (~1 MB): lexbor would take about a minute on it.
BOMB = b"<html><body><div " + b" ".join(b"a%d=1" % i for i in range(100_000)) + b">x</div>"
#: 700 tags just under the attribute limit (4.8 MB): ~14 s of parsing, past a 1 s cap.
SLOW = b"<html><body>" + b"".join(
    b"<p " + b" ".join(b"a%d=1" % i for i in range(999)) + b">x</p>" for _ in range(700)
)
GUARD = 90.0


def _page(title: str, *links: str, head: str = "") -> bytes:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return (
        f"<html><head>{head}<title>{title}</title></head><body><main><h1>{title}</h1>"
        f"<p>Text of {title}, café.</p><p>{anchors}</p></main></body></html>"
    ).encode()


def _hostile_app(extra: tuple[str, ...] = ()) -> web.Application:
    charset_paths = [f"/charset/{label}" for label in EXOTIC]
    later = ["/after-1", "/after-2"]
    home = _page("Home", *charset_paths, "/bomb", "/slow-markup", *extra, *later)

    async def index(request: web.Request) -> web.Response:
        return web.Response(body=home, content_type="text/html")

    async def charset(request: web.Request) -> web.Response:
        label = request.match_info["label"]
        body = _page(f"Charset {label}", head=f'<meta charset="{label}">')
        return web.Response(body=body, headers={"Content-Type": f"text/html; charset={label}"})

    def fixed(body: bytes) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=body, content_type="text/html")

        return handler

    app = web.Application()
    app.router.add_get("/", index)
    app.router.add_get("/charset/{label}", charset)
    app.router.add_get("/bomb", fixed(BOMB))
    app.router.add_get("/slow-markup", fixed(SLOW))
    for path in (*extra, *later):
        app.router.add_get(path, fixed(_page(path.strip("/"))))
    app.router.add_get("/robots.txt", fixed(b"User-agent: *\nAllow: /\n"))
    return app


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        store=str(tmp_path / "s.db"),
        allow_private=("127.0.0.1",),
        limits=Limits(max_pages=50),
        convert=ConvertSettings(workers=2, page_timeout_seconds=1.0),
    )


def _kinds(summary: CrawlSummary, base: str) -> dict[str, str | None]:
    return {
        p.url.removeprefix(base): (str(p.error.kind) if p.error else None) for p in summary.pages
    }


def _messages(summary: CrawlSummary, base: str) -> dict[str, str]:
    return {p.url.removeprefix(base): p.error.message for p in summary.pages if p.error}


OPTIONS = CrawlOptions(delay=0.0, max_pages=50, max_depth=1)


@pytest.mark.slow
async def test_hostile_markup_costs_its_own_page_in_a_real_crawl(tmp_path: Path) -> None:
    """Exotic charsets convert; the bomb and the slow markup fail alone, within the cap."""
    runtime = Runtime(_settings(tmp_path))
    async with asyncio.timeout(GUARD), serve_app(_hostile_app()) as base, runtime:
        summary = await runtime.crawl(base + "/", OPTIONS)
    kinds, messages = _kinds(summary, base), _messages(summary, base)
    assert {kinds[f"/charset/{label}"] for label in EXOTIC} == {None}
    assert kinds["/bomb"] == "conversion-failed"
    assert "more than 1000 attributes" in messages["/bomb"]
    assert kinds["/slow-markup"] == "conversion-failed"
    assert "1 s conversion cap" in messages["/slow-markup"]
    assert kinds["/after-1"] is None
    assert kinds["/after-2"] is None
    assert summary.pages_indexed == len(EXOTIC) + 3


@pytest.mark.slow
async def test_a_worker_that_hangs_or_crashes_is_replaced_and_the_crawl_goes_on(
    tmp_path: Path,
) -> None:
    """Hang, crash and exit each cost one page and one worker; later pages are stored."""
    app = _hostile_app(extra=("/hang", "/crash", "/exit"))
    pool = ProcessConverter(workers=1, page_timeout=1.0, factory="tests.pool_targets:Hostile")
    runtime = Runtime(_settings(tmp_path), converter=pool)
    async with asyncio.timeout(GUARD), serve_app(app) as base, pool, runtime:
        summary = await runtime.crawl(base + "/", OPTIONS)
    kinds, messages = _kinds(summary, base), _messages(summary, base)
    assert "1 s conversion cap" in messages["/hang"]
    assert "killed by signal 11" in messages["/crash"]
    assert "exit code 3" in messages["/exit"]
    assert {kinds[path] for path in ("/hang", "/crash", "/exit")} == {"conversion-failed"}
    assert kinds["/after-1"] is None
    assert kinds["/after-2"] is None
    assert kinds["/slow-markup"] == "conversion-failed"
    assert pool.replaced == 4  # hang, crash, exit and the slow markup


@pytest.fixture
def threaded_site() -> Iterator[str]:
    """The hostile site served from its own thread, for the CLI's own event loop."""
    with in_thread(lambda: serve_app(_hostile_app())) as url:
        yield url


@pytest.mark.slow
def test_the_cli_crawl_of_hostile_pages_exits_0_with_each_error_typed(
    threaded_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sitelore crawl --workers 1` over the hostile site: exit 0, summary printed."""
    config = tmp_path / "sitelore.toml"
    config.write_text("[convert]\npage_timeout_seconds = 1\n", encoding="utf-8")
    args = ["crawl", threaded_site + "/", "--workers", "1", "--delay", "0", "--max-depth", "1"]
    args += ["--max-pages", "50", "--db", str(tmp_path / "s.db"), "--config", str(config)]
    with pytest.raises(SystemExit) as info:
        main([*args, "--allow-private", "127.0.0.1", "--json"])
    out, _ = capsys.readouterr()
    assert info.value.code == 0
    pages = {p["url"].removeprefix(threaded_site): p["error"] for p in json.loads(out)["pages"]}
    assert pages["/bomb"]["kind"] == "conversion-failed"
    assert pages["/slow-markup"]["kind"] == "conversion-failed"
    assert "1 s conversion cap" in pages["/slow-markup"]["message"]
    assert {pages[f"/charset/{label}"] for label in EXOTIC} == {None}
    assert pages["/after-2"] is None


def test_workers_must_be_at_least_one(capsys: pytest.CaptureFixture[str]) -> None:
    """--workers 0 is a usage error naming the flag (exit 2)."""
    with pytest.raises(SystemExit) as info:
        main(["crawl", "http://127.0.0.1:9/", "--workers", "0"])
    _, err = capsys.readouterr()
    assert info.value.code == 2
    assert "--workers" in err
