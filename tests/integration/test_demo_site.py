"""The loopback server for the bundled example site, and the site's own consistency."""

from __future__ import annotations

import asyncio
import posixpath
import shutil
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import aiohttp
import pytest

from sitelore.adapters.demo_site import bundled_site_path, load_redirects, serve_site
from sitelore.core.errors import ConfigError

SITE = bundled_site_path()

# Links that are broken on purpose (the crawl must record them as 404s).
BROKEN = frozenset(
    {
        "/guide/upgrading.html",
        "/concepts/priorities.html",
        "/reference/api/backends.html",
    }
)
# The only off-site host the site links to: nothing listens there, and tests never fetch it.
EXTERNAL_NETLOC = "127.0.0.2:1"
API_PAGES = frozenset(
    f"/reference/api/{name}.html" for name in ("queue", "task", "worker", "result", "exceptions")
)
SECTIONS = frozenset(
    {"/guide/", "/concepts/", "/reference/", "/howto/", "/faq.html", "/changelog.html"}
)
# Listed in sitemap.xml, linked from no page: only a sitemap-seeded crawl finds it.
ORPHANS = frozenset({"/howto/graceful-shutdown.html"})


@pytest.fixture
async def base_url() -> AsyncIterator[str]:
    async with serve_site(SITE) as base:
        yield base


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def raw_get(base: str, target: str) -> tuple[int, dict[str, str], bytes]:
    """Send ``GET target`` byte for byte (no client-side normalisation of the path)."""
    parts = urlsplit(base)
    assert parts.hostname is not None
    assert parts.port is not None
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(
            f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        data = await reader.read()
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


# --------------------------------------------------------------------------- the server


async def test_serves_the_home_page_as_html(base_url: str, http: aiohttp.ClientSession) -> None:
    async with http.get(base_url + "/") as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        text = await response.text()
    assert "<title>Overview - Lumen docs</title>" in text


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/guide/quickstart.html", "text/html; charset=utf-8"),
        ("/notes.txt", "text/plain; charset=utf-8"),
        ("/robots.txt", "text/plain; charset=utf-8"),
        ("/sitemap.xml", "application/xml"),
        ("/_static/architecture.svg", "image/svg+xml"),
        ("/_static/lumen.css", "text/css; charset=utf-8"),
    ],
)
async def test_content_type_follows_the_file_suffix(
    base_url: str, http: aiohttp.ClientSession, path: str, content_type: str
) -> None:
    async with http.get(base_url + path) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == content_type
        assert await response.read() == (SITE / path.lstrip("/")).read_bytes()


async def test_directory_url_serves_its_index(base_url: str, http: aiohttp.ClientSession) -> None:
    async with http.get(base_url + "/reference/api/") as response:
        assert response.status == 200
        assert await response.read() == (SITE / "reference/api/index.html").read_bytes()


async def test_directory_without_slash_redirects_to_the_slash(
    base_url: str, http: aiohttp.ClientSession
) -> None:
    async with http.get(base_url + "/reference", allow_redirects=False) as response:
        assert response.status == 301
        assert response.headers["Location"] == "/reference/"


async def test_missing_file_is_a_404_html_page(base_url: str, http: aiohttp.ClientSession) -> None:
    async with http.get(base_url + "/guide/upgrading.html") as response:
        assert response.status == 404
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert "Not Found" in await response.text()


@pytest.mark.parametrize(
    ("path", "status", "location"),
    [
        ("/old/quickstart.html", 301, "/guide/quickstart.html"),
        ("/guide/install.html", 301, "/guide/installation.html"),
        ("/latest/", 302, "/"),
    ],
)
async def test_redirect_rules_answer_with_status_and_location(
    base_url: str, http: aiohttp.ClientSession, path: str, status: int, location: str
) -> None:
    async with http.get(base_url + path, allow_redirects=False) as response:
        assert response.status == status
        assert response.headers["Location"] == location


async def test_following_the_old_quickstart_redirect_lands_on_the_page(
    base_url: str, http: aiohttp.ClientSession
) -> None:
    async with http.get(base_url + "/old/quickstart.html") as response:
        assert response.status == 200
        assert str(response.url) == base_url + "/guide/quickstart.html"
        assert [r.status for r in response.history] == [301]


async def test_robots_txt_disallows_internal_with_a_crawl_delay(
    base_url: str, http: aiohttp.ClientSession
) -> None:
    async with http.get(base_url + "/robots.txt") as response:
        lines = (await response.text()).splitlines()
    for expected in (
        "User-agent: *",
        "Disallow: /internal/",
        "Crawl-delay: 0.2",
        "Sitemap: /sitemap.xml",
    ):
        assert expected in lines
    # The disallowed page exists, so a crawl that ignores robots.txt would find it.
    async with http.get(base_url + "/internal/release-checklist.html") as response:
        assert response.status == 200


@pytest.mark.parametrize(
    "target",
    [
        "/../pyproject.toml",
        "/../../pyproject.toml",
        "/%2e%2e/%2e%2e/pyproject.toml",
        "/%2E%2E/%2E%2E/pyproject.toml",
        "/guide/%2e%2e/%2e%2e/%2e%2e/pyproject.toml",
        "/..%2f..%2fpyproject.toml",
        "/%2e%2e%5c%2e%2e%5cpyproject.toml",
        "/..\\..\\pyproject.toml",
    ],
)
async def test_paths_outside_the_bundled_site_are_refused(base_url: str, target: str) -> None:
    status, _, body = await raw_get(base_url, target)
    assert status in (400, 404)
    assert b"[build-system]" not in body


@pytest.fixture
def fenced_site(tmp_path: Path) -> Path:
    """A copy of the site with a secret beside it and symlinks pointing at the secret."""
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    (tmp_path / "secret-dir").mkdir()
    (tmp_path / "secret-dir" / "index.html").write_text("TOP SECRET\n")
    root = tmp_path / "site"
    shutil.copytree(SITE, root)
    (root / "escape.txt").symlink_to(tmp_path / "secret.txt")
    (root / "escape-dir").symlink_to(tmp_path / "secret-dir", target_is_directory=True)
    (root / ".env").write_text("TOP SECRET\n")
    return root


@pytest.mark.parametrize(
    "target",
    [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/guide/../../secret.txt",
        "/guide/%2e%2e/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/%2e%2e%5csecret.txt",
        "/escape.txt",
        "/escape-dir/",
        "/escape-dir/index.html",
        "/.env",
        "/%2eenv",
        "/_redirects",
        "/README.md",
        "/guide/%00.html",
    ],
)
async def test_nothing_outside_the_root_nor_the_site_source_is_served(
    fenced_site: Path, target: str
) -> None:
    async with serve_site(fenced_site) as base:
        status, _, body = await raw_get(base, target)
    assert status in (400, 404)
    assert b"TOP SECRET" not in body


@pytest.mark.parametrize("path", ["/_redirects", "/README.md", "/guide/README.md"])
async def test_site_source_files_are_hidden(
    base_url: str, http: aiohttp.ClientSession, path: str
) -> None:
    async with http.get(base_url + path) as response:
        assert response.status == 404


async def test_head_is_served_and_post_is_not(base_url: str, http: aiohttp.ClientSession) -> None:
    async with http.head(base_url + "/faq.html") as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    async with http.post(base_url + "/faq.html") as response:
        assert response.status == 405


async def test_log_records_each_request_target_in_arrival_order(
    http: aiohttp.ClientSession,
) -> None:
    log: list[tuple[float, str]] = []
    async with serve_site(SITE, log=log) as base:
        for target in ("/robots.txt", "/", "/faq.html?x=1", "/missing%20page.html"):
            async with http.get(base + target, allow_redirects=False) as response:
                await response.read()
    assert [path for _, path in log] == [
        "/robots.txt",
        "/",
        "/faq.html?x=1",
        "/missing%20page.html",
    ]
    times = [t for t, _ in log]
    assert times == sorted(times)


async def test_serves_on_the_requested_loopback_host() -> None:
    async with serve_site(SITE, host="127.0.0.2") as base:
        assert base.startswith("http://127.0.0.2:")
        status, headers, _ = await raw_get(base, "/faq.html")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"


@pytest.mark.parametrize(
    "line",
    ["/a /b", "/a /b 200", "a /b 301", "/a /b 301 extra", "/a /b moved"],
)
def test_malformed_redirect_rules_are_a_config_error(tmp_path: Path, line: str) -> None:
    (tmp_path / "_redirects").write_text(f"# comment\n\n{line}\n")
    with pytest.raises(ConfigError, match=r"_redirects:3"):
        load_redirects(tmp_path)


def test_bundled_site_path_is_the_example_site() -> None:
    assert (SITE / "index.html").is_file()
    assert (SITE / "robots.txt").is_file()


# --------------------------------------------------------------------------- the site


@dataclass
class PageFacts:
    """What the consistency checks need to know about one HTML page."""

    links: list[str] = field(default_factory=list)  # a/area href
    resources: list[str] = field(default_factory=list)  # img src, link href
    ids: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    base: str | None = None
    lang: str | None = None
    title: str = ""
    description: str | None = None
    img_alts: list[str] = field(default_factory=list)
    cookie_banner_dialog: bool = False
    code_languages: set[str] = field(default_factory=set)
    _in_title: bool = False


class _FactsParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.facts = PageFacts()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        facts = self.facts
        facts.tags.add(tag)
        classes = a.get("class", "").split()
        facts.classes.update(classes)
        if "id" in a:
            facts.ids.add(a["id"])
        if tag in ("a", "area") and "href" in a:
            facts.links.append(a["href"])
        elif tag == "img":
            facts.resources.append(a.get("src", ""))
            facts.img_alts.append(a.get("alt", ""))
        elif tag == "link" and "href" in a:
            facts.resources.append(a["href"])
        elif tag == "base" and facts.base is None:
            facts.base = a.get("href")
        elif tag == "html":
            facts.lang = a.get("lang")
        elif tag == "title":
            facts._in_title = True
        elif tag == "meta" and a.get("name") == "description":
            facts.description = a.get("content")
        if tag == "div" and "cookie-banner" in classes and a.get("role") == "dialog":
            facts.cookie_banner_dialog = True
        if tag == "code":
            facts.code_languages.update(c[9:] for c in classes if c.startswith("language-"))
        if tag == "div":
            facts.code_languages.update(c[10:] for c in classes if c.startswith("highlight-"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.facts._in_title = False

    def handle_data(self, data: str) -> None:
        if self.facts._in_title:
            self.facts.title += data


def parse_page(path: Path) -> PageFacts:
    parser = _FactsParser()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser.facts


def url_path_of(file: Path) -> str:
    """The URL path the server answers for a site file (``dir/index.html`` -> ``/dir/``)."""
    rel = file.relative_to(SITE).as_posix()
    if rel == "index.html":
        return "/"
    if rel.endswith("/index.html"):
        return "/" + rel[: -len("index.html")]
    return "/" + rel


PAGES: dict[str, PageFacts] = {url_path_of(f): parse_page(f) for f in sorted(SITE.rglob("*.html"))}
REDIRECTS = load_redirects(SITE)
ORIGIN = "http://site.test"


def resolve_internal(path: str) -> str | None:
    """Where the server sends ``path`` (following rules and slash redirects), None if 404."""
    for _ in range(5):
        rule = REDIRECTS.get(path)
        if rule is not None:
            path = urlsplit(urljoin(ORIGIN + path, rule.target)).path
            continue
        target = SITE / path.lstrip("/")
        if target.is_dir() and not path.endswith("/"):
            path += "/"
            continue
        if path.endswith("/"):
            target = target / "index.html"
        return path if target.is_file() else None
    return None


def page_links(url_path: str) -> list[tuple[str, str]]:
    """(resolved absolute URL, raw href) of each a/area link on a page, like a crawler."""
    facts = PAGES[url_path]
    base = urljoin(ORIGIN + url_path, facts.base) if facts.base else ORIGIN + url_path
    out = []
    for href in facts.links:
        if href.startswith(("#", "mailto:")):
            continue
        out.append((urljoin(base, href), href))
    return out


def test_site_has_enough_pages() -> None:
    assert len(PAGES) >= 28


def test_every_page_has_the_chrome_of_a_docs_site() -> None:
    for url_path, facts in PAGES.items():
        assert facts.lang == "en", url_path
        assert facts.title.endswith(" - Lumen docs"), url_path
        assert facts.description, url_path
        assert {"header", "nav", "main", "article", "footer", "h1"} <= facts.tags, url_path
        assert {"sidebar", "breadcrumbs", "edit-link", "headerlink"} <= facts.classes, url_path
        assert facts.cookie_banner_dialog, url_path


def test_pages_carry_code_blocks_tables_and_admonitions() -> None:
    assert sum("h2" in f.tags for f in PAGES.values()) >= 25
    with_code = [u for u, f in PAGES.items() if f.code_languages]
    assert len(with_code) >= 20
    languages = set().union(*(f.code_languages for f in PAGES.values()))
    assert {"python", "bash", "toml", "json"} <= languages
    sphinx = [u for u, f in PAGES.items() if "highlight" in f.classes]
    assert sphinx == ["/reference/api/queue.html"]
    assert sum("table" in f.tags for f in PAGES.values()) >= 15
    assert sum("thead" not in f.tags and "table" in f.tags for f in PAGES.values()) >= 1
    assert sum("admonition" in f.classes for f in PAGES.values()) >= 15


def test_one_page_sets_a_base_href() -> None:
    assert {u: f.base for u, f in PAGES.items() if f.base} == {
        "/howto/monitoring.html": "/reference/"
    }


def test_internal_links_resolve_or_are_the_known_broken_ones() -> None:
    broken_seen: set[str] = set()
    externals: set[str] = set()
    for url_path in PAGES:
        for url, href in page_links(url_path):
            parts = urlsplit(url)
            if parts.scheme + "://" + parts.netloc != ORIGIN:
                assert parts.netloc == EXTERNAL_NETLOC, (url_path, href)
                externals.add(url)
                continue
            landing = resolve_internal(parts.path)
            if landing is None:
                assert parts.path in BROKEN, (url_path, href)
                broken_seen.add(parts.path)
                continue
            if parts.fragment and landing.endswith(("/", ".html")):
                assert parts.fragment in PAGES[landing].ids, (url_path, href)
    assert broken_seen == BROKEN
    assert "http://127.0.0.2:1/never" in externals


def test_fragment_only_links_point_at_ids_on_the_same_page() -> None:
    for url_path, facts in PAGES.items():
        for href in facts.links:
            if href.startswith("#"):
                assert href[1:] in facts.ids, (url_path, href)


def test_images_and_stylesheets_exist() -> None:
    for url_path, facts in PAGES.items():
        base = urljoin(ORIGIN + url_path, facts.base) if facts.base else ORIGIN + url_path
        for src in facts.resources:
            path = urlsplit(urljoin(base, src)).path
            assert (SITE / path.lstrip("/")).is_file(), (url_path, src)
        assert all(facts.img_alts), url_path
    assert any(f.img_alts for f in PAGES.values())


def test_every_redirect_rule_and_special_link_is_used() -> None:
    hrefs = {url for u in PAGES for url, _ in page_links(u)}
    for rule in REDIRECTS.values():
        assert ORIGIN + rule.source in hrefs, rule
        assert resolve_internal(rule.source) is not None, rule
    assert ORIGIN + "/notes.txt" in hrefs
    assert ORIGIN + "/reference" in hrefs  # a directory link without its slash
    assert any(h.startswith("mailto:") for f in PAGES.values() for h in f.links)


def bfs_depths() -> dict[str, int]:
    """Hops from ``/`` to each HTML page (redirects followed within one hop)."""
    depths = {"/": 0}
    queue = deque(["/"])
    while queue:
        current = queue.popleft()
        for url, _ in page_links(current):
            parts = urlsplit(url)
            if parts.scheme + "://" + parts.netloc != ORIGIN:
                continue
            landing = resolve_internal(parts.path)
            if landing is None or landing not in PAGES or landing in depths:
                continue
            depths[landing] = depths[current] + 1
            queue.append(landing)
    return depths


def test_pages_form_a_tree_three_levels_deep() -> None:
    depths = bfs_depths()
    assert set(depths) == set(PAGES) - ORPHANS, set(PAGES) - set(depths)
    assert {p for p, d in depths.items() if d == 1} == SECTIONS
    assert {p for p, d in depths.items() if d == 3} == API_PAGES
    assert max(depths.values()) == 3
    assert depths["/internal/release-checklist.html"] == 2


def test_sitemap_lists_every_public_page_by_path() -> None:
    ns = {"sm": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    tree = ET.parse(SITE / "sitemap.xml")
    locs = [loc.text or "" for loc in tree.getroot().findall("sm:url/sm:loc", ns)]
    public = {p for p in PAGES if not p.startswith("/internal/")}
    assert sorted(locs) == sorted(public)
    assert all(posixpath.isabs(loc) for loc in locs)
