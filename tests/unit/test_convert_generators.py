"""Generators beyond the eval set (Texinfo, gtk-doc, Haddock, Doxygen): HTML in, Markdown out.

Small pages written for these tests in the shape each generator writes, not copies.
"""

from __future__ import annotations

import re

import pytest
from selectolax.lexbor import LexborHTMLParser

from sitelore.core.convert import html_to_document
from sitelore.core.convert._content import is_docs_page

URL = "https://docs.example.com/manual/page.html"

_FILLER = " ".join(["Each option is described below with its long and short names."] * 12)

#: A Texinfo 6 chapter page (one chapter, one section, a footnote) and the same in
#: the Texinfo 7 shape (``*-level-extent`` divisions, ``nav-panel`` headers).
TEXINFO_6 = f"""<html><head><title>Invoking tool (Tool Manual)</title>
<meta name="Generator" content="makeinfo"></head><body lang="en">
<div class="chapter" id="Invoking">
<div class="header"><p>
Next: <a href="Other.html#Other" accesskey="n" rel="next">Other things</a>, Previous:
<a href="Intro.html" rel="prev">Introduction</a>, Up: <a href="index.html" rel="up">Tool</a>
&nbsp; [<a href="index.html#SEC_Contents" rel="contents">Contents</a>]
[<a href="Ix.html">Index</a>]</p>
</div>
<span id="Invoking-tool"></span><h2 class="chapter">3 Invoking <code>tool</code></h2>
<p>An exit status of 0 means success.<a id="DOCF1" href="#FOOT1"><sup>1</sup></a></p>
<ul class="section-toc"><li><a href="#Options" accesskey="1">Options</a></li></ul>
<hr>
<div class="section" id="Options">
<div class="header"><p>
Up: <a href="#Invoking" accesskey="u" rel="up">Invoking tool</a> &nbsp;
[<a href="index.html#SEC_Contents" rel="contents">Contents</a>][<a href="Ix.html">Index</a>]</p>
</div>
<span id="Options-1"></span><h3 class="section">3.1 Options</h3>
<p>{_FILLER}</p>
<dl compact="compact"><dt><span><samp>-a</samp></span></dt><dd><p>{_FILLER}</p></dd></dl>
</div></div>
<div class="footnote"><hr><h4 class="footnotes-heading">Footnotes</h4>
<h5><a id="FOOT1" href="#DOCF1">(1)</a></h5><p>Older versions exit with 2.</p></div>
</body></html>"""

TEXINFO_7 = f"""<html><head><title>Invoking tool (Tool Manual)</title>
<meta name="Generator" content="texi2any"></head><body lang="en">
<div class="chapter-level-extent" id="Invoking">
<div class="nav-panel"><p>Next: <a href="Other.html" rel="next">Other things</a>,
Up: <a href="index.html" rel="up">Tool</a></p></div>
<h2 class="chapter" id="Invoking-tool">3 Invoking <code>tool</code></h2>
<p>An exit status of 0 means success.</p>
<ul class="mini-toc"><li><a href="#Options">Options</a></li></ul>
<div class="section-level-extent" id="Options">
<div class="nav-panel"><p>Up: <a href="#Invoking" rel="up">Invoking tool</a></p></div>
<h3 class="section" id="Options-1">3.1 Options</h3>
<p>{_FILLER}</p><p>{_FILLER}</p>
</div></div></body></html>"""


@pytest.mark.parametrize("html", [TEXINFO_6, TEXINFO_7], ids=["texinfo6", "texinfo7"])
def test_texinfo_page_is_its_whole_node_without_navigation(html: str) -> None:
    """A chapter's introduction, headings and footnotes are kept; its nav lines are not."""
    markdown = html_to_document(html, URL).markdown
    headings = re.findall(r"^(#+ .*?)(?: \{#[^}]+\})?$", markdown, re.MULTILINE)
    assert headings[:2] == ["## 3 Invoking `tool`", "### 3.1 Options"]
    assert "An exit status of 0 means success." in markdown
    assert _FILLER in markdown
    if "makeinfo" in html:
        assert "Older versions exit with 2." in markdown
        assert "`-a`" in markdown
    for chrome in ("Next:", "Up:", "Previous:", "Contents", "[Options]"):
        assert chrome not in markdown


@pytest.mark.parametrize(
    ("body", "kept"),
    [
        # Labels between the links, whatever the link texts say: navigation.
        ("<p>Next: <a href='b.html'>Hunks</a>, Up: <a href='i.html'>Top</a></p>", False),
        (
            "<div>Previous: <a href='a.html'>Overview</a> | Next: <a href='c.html'>"
            "<code>diff</code> Output</a></div>",
            False,
        ),
        # Prose around the links, or one link only: content.
        ("<p>Next: read <a href='a.html'>this</a> and <a href='b.html'>that</a>.</p>", True),
        ("<p>Up: <a href='i.html'>the index</a></p>", True),
        ("<p>See <a href='a.html'>Next: a story</a>, <a href='b.html'>Up: more</a>.</p>", True),
        ("<p>Next: <a href='b.html'>Hunks</a>, Up: <a href='i.html'>Top</a> <b>new</b></p>", True),
    ],
)
def test_navigation_lines_are_chrome(body: str, kept: bool) -> None:
    markdown = html_to_document(f"<main><h1>T</h1><p>Body.</p>{body}</main>", URL).markdown
    assert ("a.html" in markdown or "b.html" in markdown or "i.html" in markdown) is kept
    assert "Body." in markdown


@pytest.mark.parametrize(
    ("body", "heading"),
    [
        # Haddock: the heading inside a link to itself.
        ("<a href='#g:1' id='g:1'><h1>Rendering</h1></a>", "# Rendering {#g:1}"),
        ("<a href='#sec' name='sec'><h2>Usage</h2></a>", "## Usage {#sec}"),
        ("<a href='#h'><h2 id='h'>Usage</h2></a>", "## Usage {#h}"),
        # A link holding its own id, inside the heading (Markdown renderers' anchors).
        ("<h2><a href='#x' id='x'>Usage</a></h2>", "## Usage {#x}"),
        # Links elsewhere stay links; the id still ends the line.
        ("<a href='#other' id='g:2'><h2>Usage</h2></a>", "## [Usage](" + URL + "#other) {#g:2}"),
        ("<h2><a href='#y' id='x'>Usage</a></h2>", "## [Usage](" + URL + "#y) {#x}"),
        (
            "<h2><a href='x.html'>Usage</a></h2>",
            "## [Usage](https://docs.example.com/manual/x.html)",
        ),
    ],
)
def test_heading_permalinks_are_unwrapped_and_keep_the_id(body: str, heading: str) -> None:
    markdown = html_to_document(f"<main>{body}<p>Text.</p></main>", URL).markdown
    assert markdown.split("\n")[0] == heading


@pytest.mark.parametrize(
    ("body", "heading"),
    [
        # gtk-doc and Doxygen: an empty anchor just before the heading names it.
        ("<div><a name='g-new'></a><h3>g_new ()</h3></div>", "### g_new () {#g-new}"),
        ("<a id='a1f2'></a>\n<!-- member -->\n<h2 class='memtitle'>f()</h2>", "## f() {#a1f2}"),
        ("<a name='m()'>\n<!--   -->\n</a>\n<h3>m</h3>", "### m {#m()}"),
        ("<span id='s-1'></span><h3>S</h3>", "### S {#s-1}"),
        # The enclosing division's id comes first (Texinfo: the node name).
        ("<div id='Hunks'><span id='Hunks-1'></span><h3>Hunks</h3></div>", "### Hunks {#Hunks}"),
        # Not an anchor: text, or an element holding something, between them.
        ("<a name='m'></a>words<h3>m</h3>", "### m"),
        ("<a name='m'><b></b></a><h3>m</h3>", "### m"),
        ("<a name='m'>Label</a><h3>m</h3>", "### m"),
    ],
)
def test_an_empty_anchor_before_a_heading_is_its_id(body: str, heading: str) -> None:
    markdown = html_to_document(f"<main><h1>T</h1>{body}<p>Text.</p></main>", URL).markdown
    assert heading in markdown.split("\n")


def _rdoc_method(name: str) -> str:
    return (
        f"<div id='method-i-{name}' class='method-detail'><div class='method-heading'>"
        f"<span class='method-name'>{name}</span><span class='method-args'>(text)</span>"
        "<span class='method-click-advice'>click to toggle source</span></div>"
        f"<div class='method-description'><p>Converts the text with {name}. {_FILLER}</p>"
        f"<div class='method-source-code'><pre><span class='ruby-keyword'>def</span> {name} "
        "text\n  text\n<span class='ruby-keyword'>end</span></pre></div></div></div>"
    )


RDOC = f"""<html><head><title>class Tool::Converter - RDoc Documentation</title>
<script src="../js/darkfish.js" defer></script></head>
<body id="top" role="document" class="class">
<nav role="navigation"><div id="home-section"><h2><a href="../index.html">Home</a></h2></div>
<ul><li><a href="#method-i-convert">#convert</a></li><li><a href="#method-i-render">#render</a>
</li></ul></nav>
<main role="main" aria-labelledby="class-Tool::Converter">
<h1 id="class-Tool::Converter" class="class">class Tool::Converter</h1>
<section class="description"><p>Converts documents. {_FILLER}</p></section>
<section id="5Buntitled-5D" class="documentation-section">
<section id="public-class-method-details" class="method-section">
<header><h3>Public Class Methods</h3></header>
{"".join(_rdoc_method(name) for name in ("create", "register", "lookup", "resolve"))}
</section>
<section id="public-instance-method-details" class="method-section">
<header><h3>Public Instance Methods</h3></header>
{"".join(_rdoc_method(name) for name in ("convert", "render", "handles", "backend"))}
</section></section></main></body></html>"""


def test_rdoc_page_keeps_its_section_headings() -> None:
    """RDoc's Darkfish pages are docs pages: their method sections keep their headings."""
    body = LexborHTMLParser(RDOC).body
    assert body is not None
    assert is_docs_page(body)
    markdown = html_to_document(RDOC, URL).markdown
    headings = re.findall(r"^#+ [^{]*", markdown, re.MULTILINE)
    assert headings == [
        "# class Tool::Converter ",
        "### Public Class Methods ",
        "### Public Instance Methods ",
    ]
    assert "click to toggle source" not in markdown
    assert markdown.count("```") == 16


@pytest.mark.parametrize(
    ("body", "title"),
    [
        # Haddock: the module's name is a caption, its sections are h1s.
        (
            "<div id='module-header'><p class='caption'>Text.Layout</p></div>"
            "<p class='caption'>Contents</p><h1>Rendering</h1><p>Render a doc.</p>",
            "Text.Layout",
        ),
        # A caption that is not the whole <title>, or one after the h1: the h1 wins.
        ("<p class='caption'>Text</p><h1>Rendering</h1><p>Render a doc.</p>", "Rendering"),
        ("<h1>Rendering</h1><p class='caption'>Text.Layout</p><p>Render.</p>", "Rendering"),
    ],
)
def test_a_caption_naming_the_page_before_section_h1s_is_the_title(body: str, title: str) -> None:
    html = f"<html><head><title>Text.Layout</title></head><body><main>{body}</main></body></html>"
    assert html_to_document(html, URL).title == title


@pytest.mark.parametrize(
    ("table", "markdown"),
    [
        # gtk-doc's book title, Doxygen's member name: one cell is no data table.
        ("<table><tr><th><p class='title'>Manual</p></th></tr></table>", "Manual"),
        ("<table><tr><td>unsigned int <b>size</b></td></tr></table>", "unsigned int **size**"),
        # A header and a row, or two cells: tables.
        ("<table><tr><th>Key</th></tr><tr><td>4</td></tr></table>", "| Key |\n| --- |\n| 4 |"),
        (
            "<table><tr><td>size</td><td>bytes</td></tr></table>",
            "|  |  |\n| --- | --- |\n| size | bytes |",
        ),
    ],
)
def test_a_table_of_one_cell_is_its_content(table: str, markdown: str) -> None:
    converted = html_to_document(f"<main><h1>T</h1>{table}<p>End.</p></main>", URL).markdown
    assert converted == f"# T\n\n{markdown}\n\nEnd."


@pytest.mark.parametrize(
    ("sidebar", "title"),
    [
        # gi-docgen: the sidebar's namespace heading is the <title>'s first segment.
        ("<nav class='sidebar'><h3><a href='index.html'>Gtk</a></h3></nav>", "Gtk: CSS in GTK"),
        ("<aside><h2>Gtk</h2></aside>", "Gtk: CSS in GTK"),
        # Outside navigation, a heading naming the page still names it.
        ("<div class='banner'><h2>CSS in GTK</h2></div>", "CSS in GTK"),
    ],
)
def test_a_navigation_heading_never_names_the_page(sidebar: str, title: str) -> None:
    html = (
        "<html><head><title>Gtk \u2013 4.0: CSS in GTK</title>"
        "<meta property='og:title' content='Gtk: CSS in GTK'></head>"
        f"<body>{sidebar}<section id='main' class='content'><p>How GTK uses CSS.</p>"
        "<h2>CSS nodes</h2><p>Nodes.</p></section></body></html>"
    )
    assert html_to_document(html, URL).title == title
