"""Generate and serve a deterministic synthetic documentation site on loopback, fast.

The site has N pages. Page 0 is ``/``; page i > 0 is ``/docs/<section>/<slug>-<i>.html``.
Page i links its children 8i+1 .. 8i+8, so a breadth-first crawl from ``/`` reaches all
N pages within depth 4 (1k), 5 (10k) or 6 (100k). Every page also has a ~50-link
sidebar (relative hrefs, the same on every page, as Sphinx and MkDocs write them),
breadcrumbs, up/prev/next, 6 cross links, permalink anchors, a code block with
highlighting spans, a table and a footer: 15-40 KB and ~90 ``<a href>`` per page.

Traps that every crawler must handle the same way:

* ``robots.txt`` disallows ``/private/``, ``/search`` and ``/admin/`` (no Crawl-delay, so
  delay 0 means delay 0 for everyone); pages link to all three;
* every 20th page links a missing page (404); every 25th links ``/old/<n>.html``, a 301
  to another page; every page links ``/latest/``, a 302 to ``/``;
* links to ``127.0.0.2`` (another host), ``mailto:`` and ``#fragments``.

A robots-obeying crawl from ``/`` therefore fetches exactly N distinct pages with status
200. Pages are rendered per request from pools built once at start-up (~0.05 ms each).

The server is a bare asyncio protocol (HTTP/1.1 keep-alive, GET and HEAD), a few times
cheaper per request than aiohttp's; ``GET /__stats`` returns its request count and CPU
seconds so the bench can show the server's share::

    python bench/docsite.py --pages 1000 --port 0     # prints "PORT <n>", serves until killed
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import signal
import sys
from collections.abc import Iterator

__all__ = [
    "SECTIONS",
    "DocSite",
    "depth_for",
    "main",
    "page_index",
    "page_path",
    "serve",
]

SECTIONS = (
    "guide",
    "tutorial",
    "reference",
    "api",
    "howto",
    "concepts",
    "admin-guide",
    "cli",
    "faq",
    "release-notes",
    "internals",
    "plugins",
)
_SLUGS = (
    "install", "configure", "quickstart", "routing", "storage", "caching", "logging",
    "security", "deploy", "upgrade", "testing", "plugins", "events", "streams", "queries",
    "schema", "models", "templates", "auth", "sessions", "metrics", "tracing", "backup",
)  # fmt: skip
_WORDS = (
    "the", "a", "of", "to", "and", "in", "is", "for", "that", "with", "on", "as", "by",
    "request", "response", "server", "client", "config", "option", "value", "default",
    "handler", "module", "function", "class", "method", "return", "object", "string",
    "list", "dict", "file", "path", "directory", "command", "argument", "parameter",
    "timeout", "retry", "cache", "index", "query", "table", "column", "row", "schema",
    "migration", "version", "release", "deprecated", "feature", "example", "note",
    "warning", "error", "exception", "log", "level", "token", "session", "user", "group",
    "permission", "role", "policy", "route", "endpoint", "header", "body", "stream",
    "buffer", "thread", "process", "worker", "queue", "event", "signal", "callback",
    "plugin", "extension", "hook", "template", "render", "context", "variable", "scope",
    "build", "deploy", "container", "image", "volume", "network", "port", "host",
    "certificate", "key", "secret", "environment", "setting", "flag", "mode", "state",
)  # fmt: skip
_CODE = (
    '<span class="kn">import</span> <span class="nn">{m}</span>\n',
    '<span class="n">app</span> <span class="o">=</span> <span class="n">{m}</span>'
    '<span class="o">.</span><span class="n">App</span><span class="p">(</span>'
    '<span class="n">debug</span><span class="o">=</span><span class="kc">True</span>'
    '<span class="p">)</span>\n',
    '<span class="k">def</span> <span class="nf">handle_{w}</span><span class="p">(</span>'
    '<span class="n">request</span><span class="p">):</span>\n',
    '    <span class="k">return</span> <span class="n">{m}</span><span class="o">.</span>'
    '<span class="n">respond</span><span class="p">(</span><span class="s2">"{w}"</span>'
    '<span class="p">,</span> <span class="n">status</span><span class="o">=</span>'
    '<span class="mi">200</span><span class="p">)</span>\n',
    '<span class="c1"># {w}: see the reference for every option</span>\n',
    '<span class="n">config</span><span class="p">[</span><span class="s2">"{w}"</span>'
    '<span class="p">]</span> <span class="o">=</span> <span class="mi">{n}</span>\n',
)

CHILDREN = 8
CROSS_LINKS = 6
SIDEBAR_LINKS = 50
ROBOTS_TXT = (
    b"# robots.txt of the sitelore bench site\n"
    b"User-agent: *\n"
    b"Disallow: /private/\n"
    b"Disallow: /search\n"
    b"Disallow: /admin/\n"
)


def _mix(i: int, k: int) -> int:
    """A cheap deterministic hash of (i, k), 32 bits."""
    return ((i * 2654435761) ^ (k * 40503 + 0x9E3779B9)) & 0xFFFFFFFF


def page_path(i: int) -> str:
    """The URL path of page ``i``."""
    if i == 0:
        return "/"
    return f"/docs/{SECTIONS[i % len(SECTIONS)]}/{_SLUGS[i % len(_SLUGS)]}-{i}.html"


def page_index(path: str) -> int | None:
    """The page number a path names, or None when it names no page."""
    if path == "/":
        return 0
    stem, dot, ext = path.rpartition(".")
    number = stem.rpartition("-")[2]
    if not dot or ext != "html" or not number.isdigit() or number.startswith("0"):
        return None
    i = int(number)
    return i if page_path(i) == path else None


def depth_for(pages: int) -> int:
    """The BFS depth at which page ``pages - 1`` is found (the tree's height)."""
    depth, last, width = 0, 0, 1
    while last < pages - 1:
        width *= CHILDREN
        last += width
        depth += 1
    return depth


def _relative(path: str, from_page: int) -> str:
    """``path`` relative to the directory of page ``from_page`` (docs pages: ``../``)."""
    if from_page == 0:
        return path.lstrip("/") or "./"
    return ".." + path[len("/docs") :] if path.startswith("/docs/") else path


class DocSite:
    """The pages of one site of ``pages`` pages; ``render(path)`` answers a request."""

    def __init__(self, pages: int, *, external: str = "http://127.0.0.2:9/") -> None:
        if pages < 1:
            raise ValueError("a site has at least one page")
        self.pages = pages
        self.external = external
        rng = random.Random(20261130)
        self._paragraphs = [self._paragraph(rng) for _ in range(256)]
        self._titles = [
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 5))).capitalize()
            for _ in range(512)
        ]
        self._code = [self._code_block(rng) for _ in range(32)]
        self._tables = [self._table(rng) for _ in range(32)]
        self._sidebar = {
            root: self._sidebar_html(root) for root in (True, False)
        }  # the same for every docs page

    # ------------------------------------------------------------ pools

    @staticmethod
    def _paragraph(rng: random.Random) -> str:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(60, 140))]
        for k in range(0, len(words) - 3, rng.randint(12, 30)):
            kind = rng.randint(0, 2)
            if kind == 0:
                words[k] = f"<code>{words[k]}_{words[k + 1]}</code>"
            elif kind == 1:
                words[k] = f"<strong>{words[k]}</strong>"
            else:
                words[k] = f"<em>{words[k]}</em>"
        return "<p>" + " ".join(words).capitalize() + ".</p>\n"

    @staticmethod
    def _code_block(rng: random.Random) -> str:
        lines = [
            rng.choice(_CODE).format(
                m=rng.choice(_SLUGS), w=rng.choice(_WORDS), n=rng.randint(1, 999)
            )
            for _ in range(rng.randint(6, 18))
        ]
        return (
            '<div class="highlight-python notranslate"><div class="highlight"><pre>'
            + "".join(lines)
            + "</pre></div></div>\n"
        )

    @staticmethod
    def _table(rng: random.Random) -> str:
        head = "".join(f"<th>{rng.choice(_WORDS).title()}</th>" for _ in range(4))
        rows = "".join(
            "<tr>"
            + f"<td><code>{rng.choice(_WORDS)}</code></td>"
            + "".join(f"<td>{rng.choice(_WORDS)} {rng.choice(_WORDS)}</td>" for _ in range(2))
            + f"<td>{rng.randint(0, 10_000)}</td></tr>"
            for _ in range(rng.randint(5, 12))
        )
        return (
            '<table class="docutils align-default"><thead><tr>'
            + head
            + "</tr></thead><tbody>"
            + rows
            + "</tbody></table>\n"
        )

    def _title(self, i: int) -> str:
        return self._titles[i % len(self._titles)] + f" ({i})"

    def _sidebar_html(self, root: bool) -> str:
        items = []
        for k in range(1, SIDEBAR_LINKS + 1):
            j = k if k < self.pages else 0
            href = _relative(page_path(j), 0 if root else 1)
            items.append(
                f'<li class="toctree-l1"><a class="reference internal" href="{href}">'
                f"{self._title(j)}</a></li>"
            )
        return (
            '<nav class="sidebar" aria-label="Site navigation"><div class="sidebar-brand">'
            '<a href="/">Lumen Docs</a></div><ul class="toctree">'
            + "".join(items)
            + "</ul></nav>\n"
        )

    # ------------------------------------------------------------ pages

    def links(self, i: int) -> Iterator[int]:
        """Page numbers page ``i`` links to (children, up, prev, next, cross links)."""
        n = self.pages
        yield from range(CHILDREN * i + 1, min(n, CHILDREN * i + CHILDREN + 1))
        if i > 0:
            yield (i - 1) // CHILDREN
            yield i - 1
        if i + 1 < n:
            yield i + 1
        for k in range(CROSS_LINKS):
            yield _mix(i, k) % n

    def _a(self, j: int, i: int, text: str | None = None, fragment: str = "") -> str:
        href = _relative(page_path(j), i) + fragment
        return f'<a class="reference internal" href="{href}">{text or self._title(j)}</a>'

    def render_page(self, i: int) -> bytes:
        """The HTML of page ``i``."""
        n = self.pages
        title = self._title(i)
        crumbs = []
        j = i
        while j > 0:
            j = (j - 1) // CHILDREN
            crumbs.append(j)
        parts = [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{title} — Lumen Docs</title>\n"
            f'<meta name="description" content="{self._titles[(i * 7) % 512]}">\n'
            '<link rel="stylesheet" href="/_static/theme.css">\n'
            '<script src="/_static/theme.js" defer></script>\n'
            '</head><body><a class="skip-link" href="#content">Skip to content</a>\n'
            '<header class="site-header"><a href="/">Lumen Docs</a> '
            f'<form action="/search" role="search"><input name="q" placeholder="Search">'
            "</form></header>\n"
            '<div class="layout"><aside class="sidebar-left">',
            self._sidebar[i == 0],
            "</aside>\n<main>",
            '<nav class="breadcrumbs" aria-label="Breadcrumbs"><ol>',
            "".join(f"<li>{self._a(c, i)}</li>" for c in reversed(crumbs)),
            f"<li>{title}</li></ol></nav>\n",
            f'<article id="content" class="document" role="main"><h1>{title}'
            '<a class="headerlink" href="#" title="Permalink">¶</a></h1>\n',
        ]
        h = _mix(i, 99)
        sections = 3 + h % 4
        per_section = 2 + (h >> 8) % 5
        cross = list(self.links(i))
        for s in range(sections):
            anchor = f"section-{s}"
            parts.append(
                f'<section id="{anchor}"><h2>{self._titles[(i + s * 31) % 512]}'
                f'<a class="headerlink" href="#{anchor}" title="Permalink">¶</a></h2>\n'
            )
            for p in range(per_section):
                parts.append(self._paragraphs[_mix(i, s * 16 + p) % 256])
            if s < len(cross):
                parts.append(
                    f"<p>See also {self._a(cross[s], i)} and "
                    f"{self._a(cross[-1 - s], i, fragment='#section-1')}.</p>\n"
                )
            if s == 0:
                parts.append(self._code[h % 32])
            elif s == 1:
                parts.append(self._tables[(h >> 4) % 32])
                parts.append(
                    '<div class="admonition note"><p class="admonition-title">Note</p>'
                    + self._paragraphs[(h >> 12) % 256]
                    + "</div>\n"
                )
            parts.append("</section>\n")
        children = range(CHILDREN * i + 1, min(n, CHILDREN * i + CHILDREN + 1))
        if children:
            parts.append('<div class="toctree-wrapper"><ul>')
            parts.extend(f"<li>{self._a(c, i)}</li>" for c in children)
            parts.append("</ul></div>\n")
        extras = ['<p class="more">']
        if i % 20 == 10:
            extras.append(f'<a href="/docs/missing/page-{i}.html">an old page</a> ')
        if i % 25 == 5:
            extras.append(f'<a href="/old/{_mix(i, 7) % n}.html">the 1.x docs</a> ')
        if i % 10 == 3:
            extras.append(f'<a href="/private/notes-{i % 50}.html">internal notes</a> ')
        extras.append(
            f'<a href="/search?q={_WORDS[i % len(_WORDS)]}">search</a> '
            f'<a href="{self.external}ext/{i % 100}.html">elsewhere</a> '
            '<a href="mailto:docs@example.invalid">mail us</a></p>\n'
        )
        parts.append("".join(extras))
        parts.append('</article>\n<nav class="prev-next" aria-label="Pager">')
        if i > 0:
            parts.append(self._a(i - 1, i, "« Previous"))
            parts.append(self._a((i - 1) // CHILDREN, i, "Up"))
        if i + 1 < n:
            parts.append(self._a(i + 1, i, "Next »"))
        parts.append(
            "</nav></main></div>\n"
            '<footer class="site-footer"><a href="/latest/">latest</a> '
            '<a href="/admin/">admin</a> <a href="#top">top</a> '
            "<p>© Lumen developers. Built with a generator.</p></footer>\n"
            "</body></html>\n"
        )
        return "".join(parts).encode()

    def respond(self, method: str, target: str) -> tuple[int, str, bytes, str | None]:
        """(status, content type, body, Location) for a request."""
        path = target.partition("?")[0]
        i = page_index(path)
        if i is not None and i < self.pages:
            return 200, "text/html; charset=utf-8", self.render_page(i), None
        if path == "/robots.txt":
            return 200, "text/plain; charset=utf-8", ROBOTS_TXT, None
        if path == "/latest/":
            return 302, "text/html; charset=utf-8", b"", "/"
        if path.startswith("/old/") and path.endswith(".html"):
            number = path[5:-5]
            if number.isdigit() and int(number) < self.pages:
                return 301, "text/html; charset=utf-8", b"", page_path(int(number))
        return 404, "text/html; charset=utf-8", b"<!DOCTYPE html><h1>Not found</h1>\n", None


_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 404: "Not Found"}


class _Http(asyncio.Protocol):
    """HTTP/1.1 with keep-alive and pipelining, just enough for crawlers."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self._buffer = bytearray()
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        transport = self._transport
        assert transport is not None
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > 65536:
                    transport.close()
                return
            head = bytes(buffer[:end]).decode("latin-1")
            del buffer[: end + 4]
            request_line, _, header_text = head.partition("\r\n")
            method, _, rest = request_line.partition(" ")
            target, _, version = rest.partition(" ")
            lowered = header_text.lower()
            close = "connection: close" in lowered or (
                version == "HTTP/1.0" and "connection: keep-alive" not in lowered
            )
            transport.write(self._server.answer(method, target, close))
            if close:
                transport.close()
                return


class _Server:
    def __init__(self, site: DocSite) -> None:
        self.site = site
        self.requests = 0
        self.by_status: dict[int, int] = {}

    def answer(self, method: str, target: str, close: bool) -> bytes:
        if target == "/__stats":
            usage = resource.getrusage(resource.RUSAGE_SELF)
            stats = {
                "requests": self.requests,
                "by_status": self.by_status,
                "cpu_s": usage.ru_utime + usage.ru_stime,
                "max_rss_kb": usage.ru_maxrss,
            }
            return _response(200, "application/json", json.dumps(stats).encode(), None, True)
        self.requests += 1
        if method not in ("GET", "HEAD"):
            return _response(405, "text/plain", b"", None, close)
        status, content_type, body, location = self.site.respond(method, target)
        self.by_status[status] = self.by_status.get(status, 0) + 1
        if method == "HEAD":
            return _response(status, content_type, b"", location, close, len(body))
        return _response(status, content_type, body, location, close)


def _response(
    status: int,
    content_type: str,
    body: bytes,
    location: str | None,
    close: bool,
    length: int | None = None,
) -> bytes:
    head = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Other')}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body) if length is None else length}",
        "Server: docsite",
    ]
    if location is not None:
        head.append(f"Location: {location}")
    if close:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


async def serve(site: DocSite, host: str, port: int) -> None:
    """Serve ``site`` until SIGTERM or SIGINT; print ``PORT <n>`` once listening."""
    server = _Server(site)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: _Http(server), host, port, backlog=1024)
    bound = listener.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with listener:
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """Serve a site (``--pages N``), or print one page (``--show I``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--external", default="http://127.0.0.2:9/")
    parser.add_argument("--show", type=int, default=None, help="print page I and exit")
    args = parser.parse_args(argv)
    site = DocSite(args.pages, external=args.external)
    if args.show is not None:
        sys.stdout.write(site.render_page(args.show).decode())
        return 0
    asyncio.run(serve(site, args.host, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
