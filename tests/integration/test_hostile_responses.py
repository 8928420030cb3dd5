"""Hostile answers over a real loopback server, through the whole crawl and the CLI.

Where the page's body, not its markup, is the attack: error pages in encodings the
fetcher does not read, a compressed body cut short, control characters meant for the
reader's terminal, and a robots.txt behind a redirect chain with the operator's
redirect limit lowered. Each page gets its own typed outcome; the crawl goes on.
"""

from __future__ import annotations

import asyncio
import gzip
import random
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from tests.loopback import in_thread, serve_app

from sitelore.app.bootstrap import Runtime
from sitelore.cli.main import main
from sitelore.core.config import ConvertSettings, Settings
from sitelore.core.options import CrawlOptions, Limits

GUARD = 60.0
PATHS = ("/ctrl", "/plain", "/gone", "/busy", "/truncated", "/private", "/loop", "/self", "/after")
#: A page of incompressible text, gzipped, then cut in the middle of its stream.
_TEXT = random.Random(0).randbytes(6000).hex().encode()
TRUNCATED = gzip.compress(b"<html><body><main><p>" + _TEXT + b"</p></main></body></html>")[:4000]
#: A title written in the terminal library's own markup (a hyperlink, reverse video).
MARKUP_TITLE = "[link=https://evil.test/]Docs[/link] [reverse]x[/reverse]"
MARKUP_PAGE = f"<html><head><title>{MARKUP_TITLE}</title></head><body><main><p>M</p>".encode()
CONTROL_PAGE = (
    b"<html><head><title>Ctrl\x1b]0;pwned\x07</title></head><body><main>"
    b"<h1>Ctrl\x1b]0;pwned\x07</h1><p>Text \x1b[2J\x1b[31m that clears the screen.</p>"
    b"</main></body></html>"
)
ROBOTS = b"User-agent: *\nDisallow: /private\nSitemap: /sitemap\x1b[2J.xml\n"


def _site() -> web.Application:
    busy_answers = [0]

    def fixed(
        body: bytes, content_type: str = "text/html", status: int = 200, encoding: str = ""
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        headers = {"Content-Type": content_type}
        if encoding:
            headers["Content-Encoding"] = encoding

        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=body, status=status, headers=headers)

        return handler

    async def busy(request: web.Request) -> web.Response:
        busy_answers[0] += 1
        if busy_answers[0] == 1:  # busy, in an encoding no crawler reads: honour Retry-After
            headers = {"Retry-After": "0", "Content-Encoding": "br"}
            return web.Response(body=b"\x0b\x02\x80busy\x03", status=429, headers=headers)
        page = b"<html><body><main><p>Not busy now.</p></main></body></html>"
        return web.Response(body=page, content_type="text/html")

    def hop(target: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(status=301, headers={"Location": target})

        return handler

    home = "".join(f'<p><a href="{path}">{path}</a></p>' for path in PATHS)
    app = web.Application()
    app.router.add_get("/", fixed(f"<html><body><main>{home}</main></body></html>".encode()))
    app.router.add_get("/ctrl", fixed(CONTROL_PAGE))
    app.router.add_get("/markup", fixed(MARKUP_PAGE))  # not linked: fetched on its own
    app.router.add_get("/plain", fixed(b"Plain\x00 title\r\nbody\x1b[31m text\n", "text/plain"))
    app.router.add_get("/gone", fixed(b"\x0b\x02\x80gone\x03", status=404, encoding="br"))
    app.router.add_get("/busy", busy)
    app.router.add_get("/truncated", fixed(TRUNCATED, encoding="gzip"))
    app.router.add_get("/private", fixed(b"<p>private</p>"))
    app.router.add_get("/loop", hop("/loop-b"))
    app.router.add_get("/loop-b", hop("/loop"))
    app.router.add_get("/self", hop("/self"))
    app.router.add_get("/after", fixed(b"<html><body><main><p>After.</p></main></body></html>"))
    # robots.txt five hops away; the operator allows pages one redirect.
    app.router.add_get("/robots.txt", hop("/r1"))
    for i in range(1, 5):
        app.router.add_get(f"/r{i}", hop(f"/r{i + 1}"))
    app.router.add_get("/r5", fixed(ROBOTS, "text/plain"))
    return app


def _settings(tmp_path: Path) -> Settings:
    return Settings(
        store=str(tmp_path / "s.db"),
        allow_private=("127.0.0.1",),
        limits=Limits(max_pages=50, max_redirects=1),
        convert=ConvertSettings(workers=1),
    )


async def test_hostile_answers_each_get_their_own_outcome(tmp_path: Path) -> None:
    """Typed outcomes for each hostile answer; robots.txt five hops away is obeyed.

    Before: /gone was unsupported-content-type (not a 404), /busy was not retried,
    redirect loops were silent duplicates,
    /truncated was stored half, /ctrl and /plain were stored with their ESC and NUL
    bytes, and /private was crawled (robots.txt past the lowered redirect limit was
    taken as missing: allow all).
    """
    runtime = Runtime(_settings(tmp_path))
    options = CrawlOptions(delay=0.0, max_pages=50, max_depth=1)
    async with asyncio.timeout(GUARD), serve_app(_site()) as base, runtime:
        summary = await runtime.crawl(base + "/", options)
        pages = {p.url.removeprefix(base): p for p in summary.pages}
        stored = {path: await runtime.store.get(base + path) for path in ("/ctrl", "/plain")}
    kinds = {path: str(p.error.kind) if p.error else None for path, p in pages.items()}
    assert kinds["/gone"] == "http-status"
    assert pages["/gone"].status == 404
    assert (kinds["/busy"], pages["/busy"].indexed) == (None, True)
    assert kinds["/truncated"] == "network"
    truncated = pages["/truncated"].error
    assert truncated is not None
    assert "truncated" in truncated.message
    assert "/private" not in pages
    for loop, last in (("/loop", "/loop-b"), ("/self", "/self")):  # were silent duplicates
        error = pages[loop].error
        assert error is not None
        assert (str(error.kind), error.message) == (
            "too-many-redirects",
            f"{base}{last}: redirect loop back to {base}{loop}",
        )
    assert summary.skipped["robots"] == 1
    assert (kinds["/after"], kinds["/ctrl"], kinds["/plain"]) == (None, None, None)
    for document in stored.values():
        assert document is not None
        for text in (document.title, document.markdown):
            assert not [ch for ch in text if ch < " " and ch not in "\t\n"], text


@pytest.fixture
def threaded_site() -> Iterator[str]:
    """The site served from its own thread, for the CLI's own event loop."""
    with in_thread(lambda: serve_app(_site())) as url:
        yield url


def test_the_cli_shows_a_hostile_page_without_its_escape_sequences(
    threaded_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`crawl`, `show` and `list` write no ESC or BEL to the terminal.

    The page's title and text, and robots.txt's ``Sitemap:`` line quoted in a warning,
    reached the terminal with their escape sequences.
    """
    db = ["--db", str(tmp_path / "s.db")]
    args = ["crawl", threaded_site + "/", "--workers", "1", "--delay", "0", "--max-depth", "1"]
    with pytest.raises(SystemExit) as info:
        main([*args, *db, "--allow-private", "127.0.0.1", "--sitemap"])
    out, err = capsys.readouterr()
    assert info.value.code == 0
    assert "sitemap\\x1b[2J.xml" in err  # robots.txt's Sitemap: line, quoted in a warning
    assert "\x1b" not in out + err
    for command in (["show", threaded_site + "/ctrl"], ["list"]):
        with pytest.raises(SystemExit) as info:
            main([*command, *db])
        out, err = capsys.readouterr()
        assert info.value.code == 0, err
        assert "Ctrl" in out
        assert "\x1b" not in out + err
        assert "\x07" not in out + err


def test_fetch_prints_a_title_as_text_not_terminal_markup(
    threaded_site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fetch`` printed the stored title with Rich markup on: a page could write a
    terminal hyperlink or reverse video into the line."""
    with pytest.raises(SystemExit) as info:
        main(["fetch", threaded_site + "/markup", "--db", str(tmp_path / "s.db"),
              "--allow-private", "127.0.0.1"])  # fmt: skip
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    assert MARKUP_TITLE in out
