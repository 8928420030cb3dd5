"""Generators beyond the eval set (Texinfo, gtk-doc, Haddock, Doxygen): HTML in, Markdown out.

Small pages written for these tests in the shape each generator writes, not copies.
"""

from __future__ import annotations

import pytest

from sitelore.core.convert import html_to_document

URL = "https://docs.example.com/manual/page.html"

_FILLER = " ".join(["Each option is described below with its long and short names."] * 12)


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
