"""to_document / html_to_document / decode_body: tables of HTML in, Markdown out."""

from __future__ import annotations

import codecs
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser
from tests.samples import tiny_pdf

from sitelore.core.convert import decode_body, html_to_document, html_view, to_document
from sitelore.core.convert._article import _may_hold_article
from sitelore.core.convert._readability import extract_article
from sitelore.core.convert._structure import blank_table_headers
from sitelore.core.convert._tree import text_length
from sitelore.core.errors import ConversionError, UnsupportedContentTypeError
from sitelore.core.models import split_content_type

URL = "https://docs.example.com/guide/page.html"
FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLE_SITE = Path(__file__).resolve().parents[2] / "examples" / "site"


def page(body: str, head: str = "") -> str:
    """A minimal HTML page with ``body`` inside ``<main>``."""
    return f"<html><head>{head}</head><body><main>{body}</main></body></html>"


def markdown_of(body: str, head: str = "", url: str = URL) -> str:
    """The Markdown the converter makes of ``body``."""
    return html_to_document(page(body, head), url).markdown


# --- hostile markup ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "present", "absent"),
    [
        (
            "<p>before</p><script>var s = '<p>evil</p>';</SCRIPT ><p>after</p>",
            ["before", "after"],
            ["evil", "var s"],
        ),
        ("<p>kept</p><script>document.write('<p>never')", ["kept"], ["never", "document"]),
        ("<p>kept</p><style>p { color: red }</style>", ["kept"], ["color"]),
        ("<p>kept</p><template><p>tmpl</p></template>", ["kept"], ["tmpl"]),
        ("<p>kept</p><noscript>enable js</noscript>", ["kept"], ["enable js"]),
        ("<p>shown</p><div hidden>secret one</div>", ["shown"], ["secret one"]),
        ("<p>shown</p><p aria-hidden='true'>secret two</p>", ["shown"], ["secret two"]),
        ("<p>shown</p><div style='DISPLAY : none'>secret three</div>", ["shown"], ["secret three"]),
        (
            "<p>shown</p><div style='visibility:hidden'>secret four</div>",
            ["shown"],
            ["secret four"],
        ),
        (
            "<div class='cookie-banner'><p>We use cookies, accept them all.</p></div><p>body</p>",
            ["body"],
            ["cookies"],
        ),
        (
            "<nav><a href='/a'>Menu entry</a></nav><p>body</p><aside>Side note</aside>"
            "<footer>Footer text</footer>",
            ["body"],
            ["Menu entry", "Side note", "Footer text"],
        ),
        (
            "<h2>Title<a class='headerlink' href='#t'>¶</a></h2><p>x <a href='#t'>#</a></p>",
            ["## Title"],
            ["¶", "](#", "#t)"],
        ),
        (
            "<p>text</p><p><a href='https://gh.example/edit/x.md'>Edit this page</a></p>",
            ["text"],
            ["Edit this page"],
        ),
        ("<form action='/s'><input name='q'><p>Search</p></form><p>body</p>", ["body"], ["Search"]),
    ],
)
def test_hostile_and_chrome_markup(body: str, present: list[str], absent: list[str]) -> None:
    """Scripts, hidden elements and chrome never reach the Markdown; content does."""
    markdown = markdown_of(body)
    for text in present:
        assert text in markdown
    for text in absent:
        assert text not in markdown


def test_page_wide_form_keeps_its_content() -> None:
    """A form wrapping the whole content (ASP.NET style) is kept, unlike search boxes."""
    words = " ".join(["content"] * 80)
    markdown = markdown_of(f"<form action='/post'><h1>Page</h1><p>{words}</p></form>")
    assert "# Page" in markdown
    assert words in markdown


def test_nested_tables_stay_readable() -> None:
    """A table inside a cell keeps its text."""
    markdown = markdown_of(
        "<table><tr><th>a</th><th>b</th></tr>"
        "<tr><td>outer<table><tr><td>inner</td></tr></table></td><td>2</td></tr></table>"
    )
    assert "outer" in markdown
    assert "inner" in markdown
    assert "| a" in markdown


# --- code ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "fence"),
    [
        ("<pre><code class='language-rust'>fn main() {}</code></pre>", "```rust"),
        ("<pre><code class='lang-js'>let x</code></pre>", "```js"),
        ("<pre class='language-go'>package x</pre>", "```go"),
        ("<pre><code class='highlight-ruby'>puts 1</code></pre>", "```ruby"),
        (
            "<div class='highlight-python notranslate'>"
            "<div class='highlight'><pre>x = 1</pre></div></div>",
            "```python",
        ),
        (
            "<div class='highlight-default'><div class='highlight'><pre>x = 1</pre></div></div>",
            "```python",
        ),
        ("<div class='highlight-none'><pre>plain</pre></div>", "```text"),
        (
            "<pre class='sourceCode haskell'>"
            "<code class='sourceCode haskell'>main = 1</code></pre>",
            "```haskell",
        ),
        ("<pre class='rust rust-example-rendered'><code>let a = 1;</code></pre>", "```rust"),
        ("<pre data-lang='toml'>[x]</pre>", "```toml"),
        (
            "<pre><pre class='playground'><code class='language-rust'>fn f() {}</code></pre></pre>",
            "```rust",
        ),
    ],
)
def test_code_fences_carry_the_language(body: str, fence: str) -> None:
    """Each way of naming a code language ends up as the fence's info string."""
    markdown = markdown_of(body)
    assert fence in markdown
    assert markdown.count("```") == 2  # one block, not nested fences


def test_code_without_hint_is_still_fenced() -> None:
    """A bare <pre> becomes a fenced block without an info string."""
    assert markdown_of("<pre>make all</pre>") == "```\nmake all\n```"


def test_fence_is_longer_than_backtick_runs_inside() -> None:
    """Code holding ``` and ```` runs is fenced with five backticks."""
    markdown = markdown_of("<pre><code>a = '```'\nb = '````'</code></pre>")
    assert markdown.startswith("`````")
    assert markdown.endswith("`````")
    assert "a = '```'" in markdown


def test_links_inside_code_are_plain_text() -> None:
    """rustdoc links type names inside signatures; the fence shows only the names."""
    markdown = markdown_of("<pre class='rust'><code>fn f(v: <a href='s.html'>Vec</a>)</code></pre>")
    assert "fn f(v: Vec)" in markdown
    assert "](" not in markdown


def test_inline_code_and_emphasis() -> None:
    """Inline code, emphasis and strong emphasis use Markdown syntax."""
    markdown = markdown_of("<p>Use <code>x()</code>, <em>really</em> <strong>now</strong>.</p>")
    assert markdown == "Use `x()`, *really* **now**."


# --- structure -------------------------------------------------------------------


def test_gfm_table() -> None:
    """A simple table becomes a GFM pipe table with a header row."""
    markdown = markdown_of(
        "<table><thead><tr><th>Name</th><th>Value</th></tr></thead>"
        "<tbody><tr><td>a|b</td><td>1</td></tr><tr><td>c</td><td>2</td></tr></tbody></table>"
    )
    lines = markdown.splitlines()
    assert lines[0].startswith("| Name")
    assert set(lines[1].replace("|", "").replace(" ", "")) == {"-"}
    assert "a\\|b" in lines[2]
    assert len(lines) == 4


@pytest.mark.parametrize(
    ("table", "lines"),
    [
        # First row of data (a parameters table): a blank header, every row kept as data.
        (
            "<table><tr><td>key</td><td>the key</td></tr>"
            "<tr><td>value</td><td>it</td></tr></table>",
            ["|  |  |", "| --- | --- |", "| key | the key |", "| value | it |"],
        ),
        # Row headers (th then td) are data too; a colspan counts its columns.
        (
            "<table><tr><th>Name</th><td colspan='2'>x</td></tr><tr><th>Age</th><td>3</td>"
            "<td>y</td></tr></table>",
            ["|  |  |  |", "| --- | --- | --- |"],
        ),
        # A <tfoot> written first (HTML 4) is not the first row shown.
        (
            "<table><tfoot><tr><td>F1</td><td>F2</td></tr></tfoot>"
            "<tbody><tr><td>a</td><td>b</td></tr></tbody></table>",
            ["|  |  |", "| --- | --- |", "| a | b |"],
        ),
        # A header row of th, or any row in thead, stays the header.
        (
            "<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>",
            ["| A | B |", "| --- | --- |", "| 1 | 2 |"],
        ),
        (
            "<table><thead><tr><td>H1</td><td>H2</td></tr></thead><tr><td>1</td><td>2</td></tr>"
            "</table>",
            ["| H1 | H2 |", "| --- | --- |", "| 1 | 2 |"],
        ),
    ],
)
def test_a_table_without_a_header_row_gets_a_blank_one(table: str, lines: list[str]) -> None:
    """Markdown reads a table's first row as its header: data must not be put there."""
    assert markdown_of(table).splitlines()[: len(lines)] == lines


def test_blank_headers_inside_content_that_is_a_layout_cell() -> None:
    """Content chosen inside a layout table's cell: its own tables are not "nested"."""
    tree = LexborHTMLParser(
        "<table><tr><td id='c'><table><tr><td>k</td><td colspan='\u00b2'>v</td></tr>"
        "<tr><td><table><tr><td>in</td></tr></table></td><td>w</td></tr></table>"
        "</td></tr></table>"
    )
    content = tree.css_first("#c")
    assert content is not None
    blank_table_headers(tree, content)
    outer, nested = content.css("table")
    assert len(outer.css("tr")[0].css("th")) == 2  # blank; a colspan of "²" counts one
    assert nested.css("tr")[0].css_first("th") is None  # nested tables are left alone


def test_nested_lists_stay_lists() -> None:
    """Nested lists are indented list items, never code blocks."""
    markdown = markdown_of("<ul><li>a<ul><li>b<ol><li>c</li></ol></li></ul></li><li>d</li></ul>")
    assert markdown.splitlines() == ["- a", "  - b", "    1. c", "- d"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "<div class='admonition note'><p class='admonition-title'>Note</p><p>Body</p></div>",
            "> **Note**\n>\n> Body",
        ),
        ("<blockquote><p>Quoted</p></blockquote>", "> Quoted"),
        (
            "<div class='markdown-alert markdown-alert-tip'><p class='markdown-alert-title'>Tip</p>"
            "<p>Hint</p></div>",
            "> **Tip**\n>\n> Hint",
        ),
    ],
)
def test_quotes_and_admonitions(body: str, expected: str) -> None:
    """Admonitions become block quotes headed by their title."""
    assert markdown_of(body) == expected


def test_headings_are_atx() -> None:
    """Headings use # markers."""
    assert markdown_of("<h1>One</h1><h3>Three</h3>") == "# One\n\n### Three"


# --- links and images ------------------------------------------------------------


@pytest.mark.parametrize(
    ("href", "head", "expected"),
    [
        ("other.html", "", "(https://docs.example.com/guide/other.html)"),
        ("../up.html#s", "", "(https://docs.example.com/up.html#s)"),
        ("//cdn.example.net/x", "", "(https://cdn.example.net/x)"),
        (
            "x.html",
            "<base href='https://mirror.example.org/base/'>",
            "(https://mirror.example.org/base/x.html)",
        ),
        ("mailto:a@example.com", "", "(mailto:a@example.com)"),
        ("https://user:pw@example.com/p", "", None),
        ("javascript:alert(1)", "", None),
        ("ftp://files.example.com/f", "", None),
    ],
)
def test_markdown_links_are_absolute_and_safe(href: str, head: str, expected: str | None) -> None:
    """Links resolve against <base href> or the page; unsafe ones become plain text."""
    markdown = markdown_of(f"<p>see <a href='{href}'>target</a></p>", head)
    if expected is None:
        assert markdown == "see target"
    else:
        assert f"[target]{expected}" in markdown


@pytest.mark.parametrize(
    "text",
    [
        "[evil](https://bad.example/)",
        "![pixel](https://bad.example/p.png)",
        "<img src=x onerror=alert(1)>",
        "`code` *star* _under_",
    ],
)
def test_link_text_cannot_inject_markdown(text: str) -> None:
    """Markdown syntax inside link text is escaped, so no extra link or image appears."""
    import html

    markdown = markdown_of(f"<p><a href='/t'>{html.escape(text)}</a></p>")
    assert markdown.endswith("](https://docs.example.com/t)")
    inner = markdown[1 : markdown.rindex("](")]
    for char in "[]<>`*_":
        assert inner.count(char) == inner.count("\\" + char)


def test_code_inside_link_text_stays_code() -> None:
    """An inline code element inside a link keeps its backticks."""
    assert markdown_of("<p><a href='/d'><code>Drop</code></a></p>") == (
        "[`Drop`](https://docs.example.com/d)"
    )


def test_images_are_absolute() -> None:
    """Images keep their alt text and get an absolute URL; data: images keep only alt."""
    markdown = markdown_of(
        "<p><img src='i/a.png' alt='Diagram'> <img src='data:image/png;base64,AA' alt='inline'></p>"
    )
    assert "![Diagram](https://docs.example.com/guide/i/a.png)" in markdown
    assert "data:" not in markdown
    assert "inline" in markdown


def test_document_links_cover_the_whole_page() -> None:
    """Document.links holds every crawlable link, navigation included, once each."""
    html = (
        "<html><head><base href='https://docs.example.com/v2/'></head><body>"
        "<nav><a href='a.html'>A</a><a href='#top'>top</a></nav>"
        "<main><p><a href='a.html#x'>again</a> <a href='javascript:x'>js</a></p>"
        "<map><area href='/area.html'></map></main></body></html>"
    )
    assert html_to_document(html, URL).links == (
        "https://docs.example.com/v2/a.html",
        "https://docs.example.com/area.html",
    )


# --- titles and metadata ---------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "url", "expected"),
    [
        (  # <title> segment matching the first h1
            "<title>Install guide | Acme docs</title><main><h1>Install  guide¶</h1></main>",
            URL,
            "Install guide",
        ),
        (  # first h1 of the content when the title says something else
            "<title>Acme</title><main><h1>Getting started</h1></main>",
            URL,
            "Getting started",
        ),
        (  # site-name h1 outside the content is skipped for a matching h2
            "<title>Drop trait - The Book</title><body><h1>The Book</h1>"
            "<main><h2>Drop trait</h2><p>x</p></main></body>",
            URL,
            "Drop trait",
        ),
        (  # og:title when there is no heading
            "<title>Raw title</title><meta property='og:title' content='OG title'>"
            "<main><p>x</p></main>",
            URL,
            "OG title",
        ),
        ("<title>Only title</title><main><p>x</p></main>", URL, "Only title"),
        (  # the h1's text content: no spaces injected around inline elements
            "<title>x</title><main><h1>What Is <acronym>PostgreSQL</acronym>?</h1></main>",
            URL,
            "What Is PostgreSQL?",
        ),
        (  # <title> without its site suffix when nothing else names the page
            "<title>Page name - Acme docs</title><main><p>x</p></main>",
            URL,
            "Page name",
        ),
        ("<main><p>x</p></main>", "https://ex.com/docs/the-page.html", "the-page"),
        ("<main><p>x</p></main>", "https://ex.com/", "ex.com"),
    ],
)
def test_title_rules(html: str, url: str, expected: str) -> None:
    """The title comes from <title>/h1, then h1, then og:title, then the URL."""
    assert html_to_document(html, url).title == expected


def test_multi_paragraph_cells_keep_their_breaks() -> None:
    body = (
        "<main><h1>T</h1><table><tr><th>Function</th><th>Notes</th></tr>"
        "<tr><td><p>f ()</p><p>Returns x.</p></td><td>y</td></tr></table></main>"
    )
    markdown = html_to_document(body, URL).markdown
    assert "| f ()<br>Returns x. | y" in markdown


def test_table_with_code_in_a_cell_is_an_html_table_holding_markdown() -> None:
    body = (
        "<main><h1>T</h1><table><tr><th>Function</th></tr><tr><td><p>Wraps the result:</p>"
        "<pre class='programlisting'>&lt;toptag&gt;\n  &lt;itemtag&gt;1&lt;/itemtag&gt;\n"
        "&lt;/toptag&gt;</pre></td></tr></table></main>"
    )
    markdown = html_to_document(body, URL).markdown
    assert "<table>\n<tr>\n<th>\n\nFunction\n\n</th>" in markdown
    assert "Wraps the result:\n\n```\n<toptag>\n  <itemtag>1</itemtag>\n</toptag>\n```" in markdown


def test_pre_nested_deep_in_pre_is_one_block() -> None:
    body = "<main><h1>T</h1><pre><span>a = 1\n<pre>b = 2</pre></span></pre></main>"
    assert "```\na = 1\nb = 2\n```" in html_to_document(body, URL).markdown


def test_nested_tables_with_code_are_written_once() -> None:
    inner = "<table><tr><td><pre>inner()</pre></td></tr></table>"
    body = f"<main><h1>T</h1><table><tr><td><pre>outer()</pre>{inner}</td></tr></table></main>"
    markdown = html_to_document(body, URL).markdown
    assert markdown.count("```\nouter()\n```") == 1
    assert markdown.count("```\ninner()\n```") == 1
    assert "\ue011" not in markdown


@pytest.mark.parametrize("name", ["cookies", "comments"])
def test_docs_section_named_like_chrome_keeps_its_examples(name: str) -> None:
    body = (
        f"<main><h1>T</h1><section id='{name}'><h2>{name}</h2><p>Read them:</p>"
        "<pre>r.cookies['example_cookie_name']</pre></section></main>"
    )
    assert "r.cookies['example_cookie_name']" in html_to_document(body, URL).markdown


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        # MkDocs' configuration page: an option called nav, a heading alone.
        ("<h3 id='nav'>nav</h3><p>The layout of the global navigation.</p>", "### nav {#nav}"),
        ("<h5 id='nav-example'>Nav Example</h5><p>Nested lists.</p>", "##### Nav Example"),
        # Python's http.cookiejar and xml.dom: sections of prose named like chrome.
        (
            "<section id='cookie-objects'><h2>Cookie Objects<a class='headerlink' "
            "href='#cookie-objects'>¶</a></h2><p>Cookie instances have attributes.</p>"
            "</section>",
            "Cookie instances have attributes.",
        ),
        (
            "<section id='comment-objects'><h2>Comment Objects</h2>"
            "<p>Comment represents a comment in the XML document.</p></section>",
            "Comment represents a comment",
        ),
    ],
)
def test_id_that_is_its_headings_anchor_is_no_chrome_name(body: str, kept: str) -> None:
    """An id spelled by the element's own heading names a section, not a page part."""
    assert kept in markdown_of(f"<h1>T</h1>{body}<p>End.</p>")


@pytest.mark.parametrize(
    "chrome",
    [
        "<div id='comments'><h2>Comments</h2><p>Nice post! Thanks.</p></div>",
        "<div id='navigation'><h3>Navigation</h3><p>Up to the index.</p></div>",
        "<div id='cookie-banner'><h2>We use cookies</h2><p>Accept them all.</p></div>",
        "<h3 class='sidebar-title'>On this page</h3>",
    ],
)
def test_chrome_titled_by_its_chrome_word_is_still_dropped(chrome: str) -> None:
    """A section titled only by its chrome word, or named chrome otherwise, is chrome."""
    markdown = markdown_of(f"<h1>T</h1><p>Body text.</p>{chrome}")
    assert "Body text." in markdown
    for text in ("Comments", "Navigation", "cookies", "On this page"):
        assert text not in markdown


def test_density_fallback_never_picks_a_table_alone() -> None:
    rows = "".join(f"<tr><td><code>KW{i}</code></td><td>reserved word</td></tr>" for i in range(60))
    body = (
        "<body><div class='x'><h2>Key Words</h2><p>Intro.</p>"
        f"<table><tr><th>Key Word</th><th>Status</th></tr>{rows}</table></div></body>"
    )
    markdown = html_to_document(body, URL).markdown
    assert "## Key Words" in markdown
    assert re.search(r"^\| `KW59` +\| reserved word \|$", markdown, re.MULTILINE)


def test_metadata() -> None:
    """Description, language, canonical URL and robots directives are read."""
    html = (
        "<html lang='de'><head><meta name='Description' content=' About  this '>"
        "<link rel='canonical' href='/c.html'><meta name='robots' content='NOINDEX, follow'>"
        "</head><body><main><p>x</p></main></body></html>"
    )
    doc = html_to_document(html, URL)
    assert (doc.description, doc.lang, doc.canonical_url) == (
        "About this",
        "de",
        "https://docs.example.com/c.html",
    )
    assert (doc.noindex, doc.nofollow) == (True, False)
    assert html_to_document("<meta name=robots content=none><p>x", URL).nofollow


@pytest.mark.parametrize(
    ("root", "lang"),
    [
        # asciidoc's XHTML (the git manual pages)
        ("<html xmlns='http://www.w3.org/1999/xhtml' xml:lang='en'>", "en"),
        ("<html lang='de' xml:lang='en'>", "de"),
        ("<html lang='' xml:lang='fr'>", "fr"),
        ("<html>", None),
    ],
)
def test_language_of_an_xhtml_page_is_its_xml_lang(root: str, lang: str | None) -> None:
    """An XHTML page's xml:lang is its language when no HTML lang says otherwise."""
    html = f"<?xml version='1.0'?>{root}<head></head><body><main><p>x</p></main></body></html>"
    assert html_to_document(html, URL).lang == lang


def test_page_without_container_keeps_its_text() -> None:
    """A page with no content container still yields its text, without the menu."""
    words = " ".join(f"word{i}" for i in range(300))
    html = (
        "<html><body><nav><a href='/a'>Home link</a> <a href='/b'>About link</a></nav>"
        f"<div><div><h1>Article</h1><p>{words}</p></div></div></body></html>"
    )
    doc = html_to_document(html, URL)
    assert "word299" in doc.markdown
    assert "Home link" not in doc.markdown
    assert doc.title == "Article"


# --- content types and charsets --------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type", "title"),
    [
        (b"# Heading\n\nText *kept*.\n", "text/markdown", "Heading"),
        (b"\n\nFirst line\nsecond\n", "text/plain; charset=utf-8", "First line"),
        (b"", "text/plain", "notes"),
    ],
)
def test_text_is_stored_as_it_is(body: bytes, content_type: str, title: str) -> None:
    """text/plain and text/markdown bodies are stored unchanged, with a title."""
    doc = to_document(body, content_type, "https://ex.com/notes.txt")
    assert doc.markdown == body.decode()
    assert doc.title == title
    assert doc.content_type == content_type.split(";")[0]
    assert doc.links == ()


def test_the_first_charset_parameter_wins_as_in_the_snapshot() -> None:
    """Two charset parameters: conversion and Snapshot.charset both take the first."""
    content_type = "text/plain; charset=windows-1252; charset=utf-8"
    doc = to_document(b"caf\xe9", content_type, "https://ex.com/notes.txt")
    assert doc.markdown == "caf\u00e9"
    assert split_content_type(content_type) == ("text/plain", "windows-1252")


@pytest.mark.parametrize(
    "content_type", ["image/png", "application/json", "", "text/css", "application/zip"]
)
def test_unsupported_content_type_raises(content_type: str) -> None:
    """Types that are not converted raise UnsupportedContentTypeError naming the URL."""
    with pytest.raises(UnsupportedContentTypeError) as info:
        to_document(b"%PDF", content_type, "https://ex.com/x")
    assert info.value.url == "https://ex.com/x"


def test_xhtml_is_converted() -> None:
    """application/xhtml+xml goes through the HTML converter."""
    doc = to_document(
        b"<html><body><main><h1>X</h1></main></body></html>", "application/xhtml+xml", URL
    )
    assert doc.markdown == "# X"
    assert doc.content_type == "application/xhtml+xml"


@pytest.mark.parametrize(
    ("body", "header", "expected"),
    [
        ("café".encode("latin-1"), "iso-8859-1", "café"),
        ("café".encode(), "utf-8", "café"),
        (codecs.BOM_UTF8 + "café".encode(), None, "café"),
        (codecs.BOM_UTF8 + "café".encode(), "utf-8", "café"),
        ("café".encode("utf-16"), None, "café"),
        (
            b'<meta charset="windows-1252">\x93q\x94',
            None,
            '<meta charset="windows-1252">\u201cq\u201d',
        ),
        (
            b"<meta http-equiv='Content-Type' content='text/html; charset=shift_jis'>\x82\xa0",
            None,
            "<meta http-equiv='Content-Type' content='text/html; charset=shift_jis'>\u3042",
        ),
        (b"ok \xff\xfe bad", None, "ok \ufffd\ufffd bad"),
        (b"caf\xc3\xa9", "no-such-charset", "café"),
        (b"x", "base64", "x"),
        ("é".encode(), '"UTF-8"', "é"),
    ],
)
def test_decode_body(body: bytes, header: str | None, expected: str) -> None:
    """Header charset, then BOM, then <meta>, then UTF-8; bad bytes are replaced."""
    assert decode_body(body, header) == expected


def test_charset_from_content_type_header() -> None:
    """to_document reads the charset parameter of the Content-Type."""
    body = "<main><p>naïve</p></main>".encode("latin-1")
    assert to_document(body, "text/html; charset=ISO-8859-1", URL).markdown == "naïve"
    assert to_document(body, "text/html", URL, charset="latin1").markdown == "naïve"


# --- a realistic page ------------------------------------------------------------


def test_realistic_docs_page() -> None:
    """Sidebar, breadcrumbs, cookie banner and footer are dropped; content survives."""
    html = (FIXTURES / "docs_page.html").read_bytes()
    doc = to_document(
        html, "text/html; charset=utf-8", "https://widgetry.example/docs/2.4/pool.html"
    )
    assert doc.title == "Configuring the widget pool"
    assert doc.description == "How to size and tune the widget pool."
    assert doc.lang == "en-GB"
    assert doc.canonical_url == "https://widgetry.example/docs/2.4/pool.html"
    markdown = doc.markdown
    assert markdown.startswith("# Configuring the widget pool {#pool}\n")  # the heading's id
    assert "```python\npool = Pool(size=8)\n```" in markdown
    assert "> **Warning**\n>\n> Never set the pool size" in markdown
    assert "| `size`" in markdown
    assert "- Small pools\n  - fewer threads" in markdown
    assert "![Pool diagram](https://widgetry.example/docs/2.4/img/pool.png)" in markdown
    assert (
        "[the requirements](https://widgetry.example/docs/2.4/install.html#requirements)"
        in markdown
    )
    for chrome in (
        "cookies",
        "Documentation home",
        "Installing Widgetry locally",
        "breadcrumb",
        "Advanced performance tuning",
        "Edit this page",
        "Copyright",
        "Tracking pixel",
        "¶",
        "analytics",
        "Search the docs",
    ):
        assert chrome not in markdown, chrome
    assert "https://widgetry.example/docs/2.4/tuning.html" in doc.links
    assert "https://widgetry.example/privacy/" in doc.links


def _example_pages() -> list[Path]:
    if not EXAMPLE_SITE.is_dir():
        return []
    return sorted(EXAMPLE_SITE.rglob("*.html"))[:8]


@pytest.mark.skipif(not _example_pages(), reason="examples/site has no pages yet")
@pytest.mark.parametrize("path", _example_pages(), ids=lambda p: p.name)
def test_example_site_pages(path: Path) -> None:
    """Pages of the bundled example site convert without navigation text or lost languages."""
    from selectolax.lexbor import LexborHTMLParser

    html = path.read_text(encoding="utf-8")
    url = "https://example.invalid/" + path.relative_to(EXAMPLE_SITE).as_posix()
    doc = html_to_document(html, url)
    assert doc.title
    tree = LexborHTMLParser(html)
    for nav in tree.css("nav"):
        for link in nav.css("a"):
            text = " ".join(link.text().split())
            if len(text.split()) >= 3 and text not in " ".join(
                " ".join(node.text().split()) for node in tree.css("main, article")
            ):
                assert f"[{text}]" not in doc.markdown, text
    hinted = len(tree.css("pre code[class*=language-], pre[class*=language-]"))
    info_fences = sum(
        1
        for line in doc.markdown.splitlines()
        if line.lstrip(" >").startswith("```") and len(line.strip(" >`")) > 0
    )
    assert info_fences >= hinted


def test_page_with_spread_out_text_is_the_body_without_its_chrome() -> None:
    """No container, no dominant element, no article: the body, nav and footer removed."""
    paragraphs = "".join(
        f"<p>Paragraph {i} explains one more detail of the topic at some length, "
        f"so that the extractor sees real prose here number {i}.</p>"
        for i in range(12)
    )
    html = (
        "<html><head><title>Spread out</title></head><body>"
        "<nav><a href='/a'>Home link</a> <a href='/b'>About link</a></nav>"
        f"{paragraphs}<footer>Footer text here</footer></body></html>"
    )
    doc = html_to_document(html, URL)
    assert "Paragraph 0 explains" in doc.markdown
    assert "Paragraph 11 explains" in doc.markdown
    assert "Home link" not in doc.markdown
    assert "Footer text" not in doc.markdown
    assert doc.title == "Spread out"


class TestPdf:
    def test_pdf_text_becomes_the_document(self) -> None:
        """A PDF's text is extracted with pypdf and titled from its first line."""
        doc = to_document(tiny_pdf("Release notes 2.0"), "application/pdf", "https://ex.com/n.pdf")
        assert "Release notes 2.0" in doc.markdown
        assert doc.title == "Release notes 2.0"
        assert doc.content_type == "application/pdf"

    def test_broken_pdf_is_a_conversion_error(self) -> None:
        """A body that is not a readable PDF raises ConversionError naming the URL."""
        with pytest.raises(ConversionError, match=r"https://ex\.com/x\.pdf"):
            to_document(b"%PDF-1.4 garbage", "application/pdf", "https://ex.com/x.pdf")


def _news_page(extra: str = "") -> str:
    story = "".join(
        f"<p>Paragraph {i} of the story tells what happened in the harbour town, who saw it, "
        "and why the council met twice that week to talk about the flooded roads.</p>"
        for i in range(14)
    )
    teasers = "".join(
        f"<li><a href='/news/{i}'>Another headline number {i} worth a click</a></li>"
        for i in range(12)
    )
    return (
        "<html><head><title>Harbour floods - The Daily</title>"
        "<meta property='og:type' content='article'></head><body><main>"
        f"<article><h1>Harbour floods</h1>{story}{extra}</article>"
        f"<div class='more'><h2>More stories</h2><ul>{teasers}</ul></div>"
        "<div class='promo'><p>Subscribe today and get the first month for one coin.</p></div>"
        "</main></body></html>"
    )


def test_article_page_keeps_the_story_and_drops_teasers() -> None:
    document = html_to_document(_news_page(), URL)
    assert "Paragraph 13 of the story" in document.markdown
    assert "Another headline number" not in document.markdown
    assert document.title == "Harbour floods"


def test_article_extraction_never_loses_code() -> None:
    code = "<p>Teasers:</p><ul><li><pre>print('kept')</pre></li></ul>"
    page_html = _news_page().replace("<div class='more'>", f"<div class='more'>{code}")
    assert "print('kept')" in html_to_document(page_html, URL).markdown


_STORY = "The council met twice that week to talk about the flooded harbour roads. "  # 61 chars


class TestArticleNeedsText:
    """Readability is skipped on a page without the text its article must have (250 chars)."""

    @staticmethod
    def may_hold(html: str) -> bool:
        body = LexborHTMLParser(html).body
        assert body is not None
        return _may_hold_article(body)

    def test_app_shell_is_skipped(self) -> None:
        """Scripts and styles are never an article's text, however long."""
        data = "window.__DATA__ = " + repr(["item " * 20] * 200)
        html = (
            f"<html><head><title>App</title><style>{'body{margin:0}' * 500}</style></head>"
            f"<body><div id=root></div><script>{data}</script>"
            "<noscript>You need to enable JavaScript to run this app.</noscript></body></html>"
        )
        assert not self.may_hold(html)

    @pytest.mark.parametrize(("length", "expected"), [(249, False), (250, True)])
    def test_threshold_counts_text_as_the_article_check_does(
        self, length: int, expected: bool
    ) -> None:
        """Whitespace is not counted, text after an empty script is: the article's own measure."""
        text = "x" * length
        html = f"<html><body><p>{text[:100]}</p>\n  <script src=a.js></script>{text[100:]}</body>"
        assert self.may_hold(html) is expected

    def test_page_with_template_is_asked(self) -> None:
        """Template content is outside lexbor's tree, but Readability (lxml) may take it."""
        html = f"<html><body><template><div><p>{_STORY * 6}</p></div></template></body></html>"
        assert self.may_hold(html)

    @given(
        st.lists(
            st.sampled_from(
                [
                    f"<p>{_STORY}</p>",
                    f"<p>{_STORY * 3}</p>",
                    "<script src=a.js></script>",
                    f"<script>var s = '{_STORY * 5}';</script>",
                    f"<style>/* {_STORY * 5} */</style>",
                    f"<template><div><p>{_STORY * 5}</p></div></template>",
                    f"<noscript><p>{_STORY}</p></noscript>",
                    "<h2 class=section-header><a href=#s>Section</a></h2>",
                    "<div>",
                    "</div>",
                ]
            ),
            max_size=12,
        )
    )
    @settings(max_examples=60, deadline=None)
    def test_a_skipped_page_has_no_article_to_lose(self, parts: list[str]) -> None:
        """Whenever the page is skipped, Readability's article is under the threshold."""
        html = f"<html><body>{''.join(parts)}</body></html>"
        if self.may_hold(html):
            return
        article = extract_article(html)
        assert article is None or article.body is None or text_length(article.body) < 250


class TestHtmlView:
    PAGE = (
        "<html lang='en'><head><title>T</title></head><body><nav><a href='/a'>Home</a></nav>"
        "<main><h1>Title<a class='headerlink' href='#t'>¶</a></h1><p>Body text here.</p>"
        "<div class='ad'>Buy</div></main></body></html>"
    )

    @pytest.mark.parametrize(
        ("options", "present", "absent"),
        [
            ({}, ["# Title", "Body text here."], ["Home", "¶"]),
            ({"only_main_content": False}, ["Home", "Body text here."], []),
            ({"include_tags": ["h1"]}, ["# Title"], ["Body text", "¶"]),
            ({"exclude_tags": [".ad"]}, ["Body text here."], ["Buy"]),
        ],
    )
    def test_cuts(self, options: dict[str, Any], present: list[str], absent: list[str]) -> None:
        view = html_view(self.PAGE, "https://docs.example/p", **options)
        for text in present:
            assert text in view.markdown
        for text in absent:
            assert text not in view.markdown

    def test_the_html_is_the_cut_not_the_page(self) -> None:
        view = html_view(self.PAGE, "https://docs.example/p")
        assert "<nav" not in view.html
        assert "Body text here." in view.html


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("more than 2<sup>31</sup> ids", "more than 2^31 ids"),
        ("x<sup>12</sup> + x<sup>5</sup> + 1", "x^12 + x^5 + 1"),
        ("within 10<sup>-6</sup> s", "within 10^-6 s"),
        ("2<sup>n-1</sup> and e<sup>x</sup>", "2^(n-1) and e^x"),
        ("O(n<sup>2</sup>) and (a+b)<sup>2</sup>", "O(n^2) and (a+b)^2"),
        ("the 1<sup>st</sup> one, Acme<sup>TM</sup>", "the 1st one, AcmeTM"),  # marks
        ("a <sup>3</sup> alone", "a 3 alone"),  # no base before it
        ("x<sup>\u2020</sup>", "x\u2020"),
        ('a note<sup><a href="https://a.test/n">1</a></sup>', "a note[1](https://a.test/n)"),
        ("<code>a<sup>2</sup></code>", "`a2`"),  # code keeps its text
    ],
)
def test_exponents_keep_their_meaning(body: str, expected: str) -> None:
    """html-to-markdown writes 2<sup>31</sup> as "231": a different number."""
    assert markdown_of(f"<h1>T</h1><p>{body}</p>").split("\n\n", 1)[1] == expected
