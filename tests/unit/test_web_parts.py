"""The web UI's pure parts: Markdown made safe, section links, snippets, the crawl form."""

from __future__ import annotations

import dataclasses
import re
from typing import cast

import pytest

from sitelore.core.models import SearchHit
from sitelore.server.web import _safe_next
from sitelore.server.web.crawls import parse_crawl_form, skipped_line
from sitelore.server.web.documents import ResultView, result_view
from sitelore.server.web.gate import is_ui_path
from sitelore.server.web.markdown import render_markdown

HOSTILE = [
    ("<script>alert(1)</script>", "<script"),
    ('<img src=x onerror="alert(1)">', "<img"),
    ("[x](javascript:alert(1))", "javascript:"),
    ("[x](JaVaScRiPt:alert(1))", "avascript:"),
    ("[x](data:text/html;base64,PHNjcmlwdD4=)", "data:"),
    ("[x](vbscript:msgbox)", "vbscript:"),
    ("<a href='javascript:alert(1)'>x</a>", "<a "),
    ("![p](http://127.0.0.1:9/pixel.png)", "<img"),
    ('[x](http://a.test/ "t\\" onmouseover=\\"alert(1)")', "onmouseover="),
    ("<iframe src=http://a.test/></iframe>", "<iframe"),
    ("<style>body{}</style>", "<style"),
    ('## Title {#a" onclick="x}', "onclick="),
    # Only the converter's own table markup passes as HTML, and only as it writes it.
    ('<tr onclick="x">\n<td>', "onclick="),
    ("<table>\n<td>\n\n<img src=x onerror=alert(1)>", "<img"),
    ('<td colspan="2" onmouseover="x">', "onmouseover="),
    ("| a |\n|---|\n| <br onclick=x> |", "onclick="),
]


_TAG = re.compile(r"<[^>]+>")  # text is escaped, so every "<" left opens a real tag
_HREF = re.compile(r'href="([^"]*)"')
_QUOTED = re.compile(r'"[^"]*"')


@pytest.mark.parametrize(("markdown", "absent"), HOSTILE)
def test_hostile_markdown_renders_inert(markdown: str, absent: str) -> None:
    html = render_markdown(markdown)
    hrefs = [h for t in _TAG.findall(html) for h in _HREF.findall(t)]
    # Attribute values are quoted and escaped: what is inside them is text.
    tags = [_QUOTED.sub('""', t) for t in _TAG.findall(html)]
    assert not [t for t in tags if absent.lower() in t.lower()]
    assert not [t for t in tags if re.search(r"\son[a-z]+=", t, re.IGNORECASE)]
    assert not [t for t in tags if re.match(r"</?(script|img|iframe|style|object)\b", t)]
    assert all(h.startswith(("http:", "https:", "mailto:")) for h in hrefs), hrefs


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("[docs](https://a.test/x)", 'href="https://a.test/x"'),
        ("[mail](mailto:a@a.test)", 'href="mailto:a@a.test"'),
        ("## Install {#install}", '<h2 id="sec-install">Install</h2>'),
        ("# Getting started", '<h1 id="sec-getting-started">Getting started</h1>'),
        ("# A\n\n# A", 'id="sec-a-2"'),
        ("![a diagram](x.png)", "[image: a diagram]"),
        ("| a |\n|---|\n| 1 |", "<td>1</td>"),
        ("<b>kept as text</b>", "&lt;b&gt;kept as text&lt;/b&gt;"),
        # The converter's markup: a cell's line break and a table whose cells hold blocks.
        ("| a |\n|---|\n| one<br>two |", "<td>one<br>two</td>"),
        ("| a |\n|---|\n| `<br>` |", "<td><code>&lt;br&gt;</code></td>"),
        ('<table>\n<tr>\n<td rowspan="2">\n\n*x*\n\n</td>\n</tr>\n</table>',
         '<td rowspan="2">\n<p><em>x</em></p>\n</td>'),
        ("- item\n\n  <table>\n  <tr>\n  <td>\n\n  y\n\n  </td>\n  </tr>\n  </table>",
         "<td>\n<p>y</p>\n</td>"),
        ("<tr><td>x</td></tr>", "<p>&lt;tr&gt;&lt;td&gt;x&lt;/td&gt;&lt;/tr&gt;</p>"),
        ("    <table>", "<pre><code>&lt;table&gt;"),
    ],
)  # fmt: skip
def test_safe_markdown_still_renders(markdown: str, expected: str) -> None:
    assert expected in render_markdown(markdown)


def test_links_to_the_crawled_site_leak_nothing() -> None:
    html = render_markdown("[docs](https://a.test/x)")
    assert 'rel="noopener noreferrer nofollow"' in html


@dataclasses.dataclass(frozen=True)
class SectionHit:
    """A hit as a store with sections gives it (older stores give a bare SearchHit)."""

    id: str = "d1"
    url: str = "https://a.test/p"
    title: str = "P"
    snippet: str = "s"
    score: float = 1.0
    heading_path: tuple[str, ...] = ()
    anchor_url: str | None = None


@pytest.mark.parametrize(
    ("hit", "href", "headings"),
    [
        (SearchHit(id="d1", url="https://a.test/p", title="P", snippet="s", score=1.0),
         "/documents/d1", ()),
        (SectionHit(heading_path=("Guide", "Install"), anchor_url="https://a.test/p#install"),
         "/documents/d1#sec-install", ("Guide", "Install")),
        (SectionHit(heading_path=("Guide",), anchor_url="https://a.test/p"),
         "/documents/d1", ("Guide",)),
        (SectionHit(anchor_url=None), "/documents/d1", ()),
    ],
)  # fmt: skip
def test_a_result_opens_its_section_when_the_store_knows_it(
    hit: object, href: str, headings: tuple[str, ...]
) -> None:
    view = result_view(cast(SearchHit, hit))
    assert view.href == href
    assert view.headings == headings


@pytest.mark.parametrize(
    ("snippet", "parts"),
    [
        ("plain", [("plain", False)]),
        ("…the **install** step…", [("…the ", False), ("install", True), (" step…", False)]),
        ("**a** and **b**", [("a", True), (" and ", False), ("b", True)]),
        ("odd ** marker", [("odd ** marker", False)]),
    ],
)
def test_snippet_matches_are_marked(snippet: str, parts: list[tuple[str, bool]]) -> None:
    assert ResultView("t", "u", snippet, (), "/").snippet_parts == parts


@pytest.mark.parametrize(
    ("form", "body"),
    [
        ({"url": " http://a.test/ "}, {"url": "http://a.test/", "excludePatterns": (),
          "sameDomain": False, "sitemap": False, "render": False}),
        ({"url": "u", "maxPages": "7", "delay": "0.5", "sameDomain": "1",
          "excludePatterns": "*.pdf\n\n */old/* "},
         {"url": "u", "maxPages": 7, "delay": 0.5, "sameDomain": True,
          "excludePatterns": ("*.pdf", "*/old/*"), "sitemap": False, "render": False}),
        ({"url": "u", "pathPrefix": "/docs/", "maxDepth": ""},
         {"url": "u", "pathPrefix": "/docs/", "excludePatterns": (), "sameDomain": False,
          "sitemap": False, "render": False}),
    ],
)  # fmt: skip
def test_crawl_form_becomes_the_rest_body(form: dict[str, str], body: dict[str, object]) -> None:
    assert parse_crawl_form(form) == body


def test_a_number_field_without_a_number_names_it() -> None:
    with pytest.raises(ValueError, match=r"^maxPages: 'ten' is not a number$"):
        parse_crawl_form({"url": "u", "maxPages": "ten"})


@pytest.mark.parametrize(
    ("target", "safe"),
    [
        ("/documents?host=a.test", "/documents?host=a.test"),
        ("//evil.test/", "/"),
        ("https://evil.test/", "/"),
        ("/\\evil.test", "/"),
        ("", "/"),
    ],
)
def test_login_goes_back_only_to_this_server(target: str, safe: str) -> None:
    assert _safe_next(target) == safe


@pytest.mark.parametrize(
    ("path", "ui"),
    [
        ("/", True),
        ("/documents/abc", True),
        ("/crawls", True),
        ("/login", True),
        ("/api/v1/search", False),
        ("/api", False),
        ("/v2/scrape", False),  # Firecrawl clients send a bearer key, never the UI cookie
        ("/v2/crawl/abc/errors", False),
        ("/healthz", False),
        ("/openapi.json", False),
    ],
)
def test_the_gate_leaves_machine_routes_alone(path: str, ui: bool) -> None:
    assert is_ui_path(path) is ui


@pytest.mark.parametrize(
    ("skipped", "line"),
    [
        ({}, "none"),
        ({"robots": 0, "filtered": 0}, "none"),
        ({"robots": 2, "filtered": 0, "depth": 5}, "robots 2 · depth 5"),
    ],
)
def test_live_skips_read_as_one_line(skipped: dict[str, int], line: str) -> None:
    assert skipped_line(skipped) == line


def test_a_table_the_converter_wrote_as_html_renders_as_a_table() -> None:
    """Its cells hold code blocks (DocBook's function tables): the UI shows a table."""
    from sitelore.core.convert import html_to_document

    page = (
        "<html><body><main><h1>Functions</h1><table><tr><th>Function</th></tr>"
        '<tr><td colspan="2"><p><code>ascii(text)</code> gives a code.</p>'
        "<pre>SELECT ascii('x');</pre></td></tr></table></main></body></html>"
    )
    markdown = html_to_document(page, "https://a.test/f").markdown
    assert '<td colspan="2">' in markdown  # written as HTML: a GFM cell holds no code block
    html = render_markdown(markdown)
    assert '<td colspan="2">' in html
    assert "<pre><code>SELECT ascii('x');" in html
    assert "&lt;t" not in html


@pytest.mark.parametrize(
    ("url", "host", "matches"),
    [
        ("https://Docs.Test/x", "docs.test", True),
        ("http://127.0.0.1:8765/x", "127.0.0.1", True),
        ("http://127.0.0.1:8765/x", "127.0.0.1:8765", True),  # as the URL writes it
        ("http://127.0.0.1:8765/x", "127.0.0.1:80", False),
        ("https://docs.test/x", "docs.test:443", True),  # the default port, as typed
        ("https://docs.test/x", "docs.test:80", False),
        ("http://[::1]:8000/x", "::1", True),
        ("http://[::1]:8000/x", "[::1]:8000", True),
        ("https://a.test/x", "b.test", False),
    ],
)
def test_the_document_list_filters_by_host_with_or_without_port(
    url: str, host: str, matches: bool
) -> None:
    from datetime import UTC, datetime

    from sitelore.core.models import StoredDocument
    from sitelore.server.web.documents import DocumentFilter

    now = datetime.now(UTC)
    doc = StoredDocument(
        id="d", url=url, title="t", markdown="m", content_hash="h", content_type="text/html",
        status=200, fetched_at=now, created_at=now, updated_at=now,
    )  # fmt: skip
    assert DocumentFilter(host=host).matches(doc) is matches


@pytest.mark.parametrize(
    ("warnings", "stopped"),
    [([], 1), (["stopped at max_pages (max_pages=25); 5 discovered URLs were not fetched"], 0)],
)
def test_the_crawl_page_says_why_it_stopped_once(warnings: list[str], stopped: int) -> None:
    from types import SimpleNamespace

    from sitelore.core.models import CrawlSummary
    from sitelore.core.options import CrawlOptions
    from sitelore.server.web.crawls import SKIP_REASONS
    from sitelore.server.web.views import Pages

    summary = CrawlSummary(seed="https://a.test/", options=CrawlOptions())
    summary.truncated, summary.truncated_reason, summary.unfetched = True, "max_pages", 5
    summary.warnings = warnings
    progress = SimpleNamespace(status="done", done=25, cap=25, indexed=25, errors=0, skipped="")
    context = {
        "job": SimpleNamespace(seed="https://a.test/", id="j1", finished=True),
        "progress": progress, "rows": [], "summary": summary, "skipped": {},
        "reasons": SKIP_REASONS, "error": None, "options": {}, "csrf": "", "path": "/",
    }  # fmt: skip
    html = Pages(secured=False)._env.get_template("crawl.html").render(**context)
    assert html.count("Stopped early: max_pages.") == stopped
    assert html.count("not fetched") == len(warnings)
