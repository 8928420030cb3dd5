"""Markdown fidelity on real documentation pages from eleven generators and themes.

The pages under tests/fixtures/fidelity are small excerpts of HTML that Debian's
*-doc packages ship (see LICENSES.md there). Each test asserts structure, not
words: every code block whole and with its language, the heading outline, table
cells, footnotes, admonitions, signatures and the title.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser, LexborNode

from sitelore.core.convert import html_to_document, to_document
from sitelore.core.models import Document

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fidelity"
_FENCE = re.compile(r"^(\s*)(`{3,})([^`\s]*)\s*$")

#: fixture -> (page URL, title, heading outline, languages of the code blocks in order)
PAGES: dict[str, tuple[str, str, list[str], list[str]]] = {
    "rustdoc-hashset.html": (
        "https://doc.rust-lang.org/1.63.0/std/collections/hash_set/struct.HashSet.html",
        "Struct std::collections::hash_set::HashSet",
        [
            "# Struct [std](https://doc.rust-lang.org/1.63.0/std/index.html)::[collections]"
            "(https://doc.rust-lang.org/1.63.0/std/collections/index.html)::[hash\\_set]"
            "(https://doc.rust-lang.org/1.63.0/std/collections/hash_set/index.html)::[HashSet]"
            "(https://doc.rust-lang.org/1.63.0/std/collections/hash_set/struct.HashSet.html)",
            "## Examples",
            "## Implementations",
            "#### `pub fn iter(&self) -> Iter<'_, T>`",
            "##### Examples",
            "##### Performance",
            "## Auto Trait Implementations",
            "### `impl<T> !Send for Rc<T> where T: ?Sized,`",
        ],
        ["rust", "rust"],
    ),
    "sphinx-python-json.html": (
        "https://docs.python.org/3.11/library/json.html",
        "json — JSON encoder and decoder",
        ["# `json` — JSON encoder and decoder", "## Basic Usage"],
        [],
    ),
    "sphinx-alabaster-install.html": (
        "https://requests.readthedocs.io/en/latest/user/install.html",
        "Installation of Requests",
        [
            "# Installation of Requests",
            "## $ python -m pip install requests",
            "## Get the Source Code",
        ],
        ["python", "python", "python", "python"],
    ),
    "mdbook-multi-bounds.html": (
        "https://doc.rust-lang.org/1.63.0/rust-by-example/generics/multi_bounds.html",
        "Multiple bounds",
        ["# Multiple bounds", "### See also:"],
        ["rust"],
    ),
    "docbook-functions-uuid.html": (
        "https://www.postgresql.org/docs/15/functions-uuid.html",
        "9.14. UUID Functions",
        ["## 9.14. UUID Functions"],
        [""],
    ),
    "docbook-tutorial.html": (
        "https://www.postgresql.org/docs/15/tutorial.html",
        "Part I. Tutorial",
        ["# Part I. Tutorial"],
        [],
    ),
    "docbook-sql-keywords.html": (
        "https://www.postgresql.org/docs/15/sql-keywords-appendix.html",
        "Appendix C. SQL Key Words",
        ["## Appendix C. SQL Key Words"],
        [],
    ),
    "javadoc-socketoption.html": (
        "https://docs.oracle.com/en/java/javase/17/docs/api/java.base/java/net/SocketOption.html",
        "Interface SocketOption<T>",
        [
            "# Interface SocketOption\\<T>",
            "## Method Summary",
            "## Method Details",
            "### name",
            "### type",
        ],
        [],
    ),
    "doxygen-a13523.html": (
        "https://gcc.gnu.org/onlinedocs/gcc-12.2.0/libstdc++/api/a13523.html",
        "__gnu_pbds::detail::left_child_next_sibling_heap_node_< _Value, _Metadata, _Alloc >"
        " Member List",
        [],
        [],
    ),
    "mkdocs-localizing.html": (
        "https://www.mkdocs.org/user-guide/localizing-your-theme.html",
        "Localizing Your Theme",
        [
            "# Localizing Your Theme",
            "## Installation",
            "## Supported locales",
            "## Usage",
            "## Contributing theme translations",
        ],
        ["bash", "yaml"],
    ),
    "asciidoc-git-count-objects.html": (
        "https://git-scm.com/docs/git-count-objects.html",
        "git-count-objects(1) Manual Page",
        [
            "# git-count-objects(1) Manual Page",
            "## NAME",
            "## SYNOPSIS",
            "## DESCRIPTION",
            "## OPTIONS",
            "## GIT",
        ],
        [""],
    ),
}


@cache
def _convert(name: str) -> Document:
    url = PAGES[name][0]
    return to_document((FIXTURES / name).read_bytes(), "text/html; charset=utf-8", url)


def _fenced(markdown: str) -> tuple[list[tuple[str, str]], list[str]]:
    """([(language, code)], prose lines) of ``markdown``."""
    blocks: list[tuple[str, str]] = []
    prose: list[str] = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            prose.append(lines[i])
            i += 1
            continue
        indent, fence, lang = match.groups()
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        blocks.append((lang, "\n".join(body)))
    return blocks, prose


def _source(name: str) -> LexborHTMLParser:
    return LexborHTMLParser((FIXTURES / name).read_text(encoding="utf-8"))


def _inside(node: LexborNode, tag: str) -> bool:
    current = node.parent
    while current is not None:
        if current.tag == tag:
            return True
        current = current.parent
    return False


def _in_page_chrome(node: LexborNode) -> bool:
    """DocBook's navigation header and footer are layout tables, not content."""
    current = node.parent
    while current is not None:
        if {"navheader", "navfooter"} & set((current.attributes.get("class") or "").split()):
            return True
        current = current.parent
    return False


@pytest.mark.parametrize("name", sorted(PAGES))
def test_title(name: str) -> None:
    assert _convert(name).title == PAGES[name][1]


def headings_without_ids(headings: list[str]) -> list[str]:
    """The heading lines with any trailing `` {#id}`` removed."""
    return [re.sub(r" \{#[^\s{}#]+\}$", "", line) for line in headings]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_heading_outline(name: str) -> None:
    _, prose = _fenced(_convert(name).markdown)
    headings = [line for line in prose if re.match(r"#{1,6} ", line)]
    # A heading with an id ends " {#id}" (search anchors); the outline is the rest.
    assert headings_without_ids(headings) == PAGES[name][2]
    assert not any(re.match(r"\s*\*\*#", line) for line in prose)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_code_block_whole_with_its_language(name: str) -> None:
    outermost = [pre for pre in _source(name).css("pre") if not _inside(pre, "pre")]
    wanted = [pre.text(deep=True).strip("\n") for pre in outermost]
    blocks, _ = _fenced(_convert(name).markdown)
    assert [code.strip("\n") for _, code in blocks] == wanted
    assert [lang for lang, _ in blocks] == PAGES[name][3]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_table_cell_kept(name: str) -> None:
    _, prose = _fenced(_convert(name).markdown)
    rows = [line for line in prose if line.lstrip().startswith("|")]
    flat = re.sub(r"\\(.)", r"\1", " ".join(rows))
    flat = re.sub(r"\]\([^)]*\)|[*`\[\]]", "", flat)
    for row in _source(name).css("table tr"):
        if _in_page_chrome(row):
            continue
        for cell in row.css("td, th"):
            text = " ".join(cell.text(deep=True).split())
            assert text in " ".join(flat.split()), text


@pytest.mark.parametrize("name", sorted(PAGES))
def test_no_html_or_images_leak_outside_code(name: str) -> None:
    _, prose = _fenced(_convert(name).markdown)
    bare = re.sub(r"(`+).*?\1", "", "\n".join(prose))
    assert re.search(r"(?<!\\)<(?!br>)[A-Za-z]\w*>", bare) is None
    assert "![" not in bare
    assert "\u24d8" not in bare  # the rustdoc "notable traits" tooltip


def test_rustdoc_comments_in_examples_survive() -> None:
    blocks, _ = _fenced(_convert("rustdoc-hashset.html").markdown)
    assert "// Type inference lets us omit an explicit type signature (which" in blocks[0][1]
    assert "// Will print in an arbitrary order." in blocks[1][1]


def test_docbook_toc_is_a_linked_nested_list() -> None:
    markdown = _convert("docbook-tutorial.html").markdown
    base = "https://www.postgresql.org/docs/15/"
    assert f"- [1. Getting Started]({base}tutorial-start.html)" in markdown
    assert f"  - [1.1. Installation]({base}tutorial-install.html)" in markdown
    for chrome in ("Prev", "Up", "Home", "Next"):
        assert not re.search(rf"^\s*\[?{chrome}\b", markdown, re.MULTILINE)


def test_docbook_key_words_table_stays_a_table() -> None:
    markdown = _convert("docbook-sql-keywords.html").markdown
    rows = [line for line in markdown.split("\n") if line.startswith("|")]
    assert len(rows) == 1 + 1 + 40  # header, separator, rows
    assert all(row.count("|") == 6 for row in rows)
    assert re.search(r"^\| `ABSOLUTE` +\| non-reserved +\| non-reserved", markdown, re.MULTILINE)


def test_docbook_function_synopsis_is_one_code_block() -> None:
    markdown = _convert("docbook-functions-uuid.html").markdown
    assert "```\ngen_random_uuid () → uuid\n```" in markdown
    assert not any(line.startswith(">") for line in markdown.split("\n"))


def test_sphinx_footnotes_are_gfm_footnotes() -> None:
    markdown = _convert("sphinx-python-json.html").markdown
    assert "JavaScript [^1]" in markdown
    assert re.search(r"^\[\^1\]: As noted in the errata for RFC 7159, JSON", markdown, re.M)
    assert "Footnotes" not in markdown  # the rubric would dangle where GFM moves them


def test_sphinx_adjacent_admonitions_stay_apart() -> None:
    markdown = _convert("sphinx-python-json.html").markdown
    quotes = re.findall(r"(?:^>.*\n?)+", markdown, re.MULTILINE)
    titled = [quote for quote in quotes if quote.startswith("> **Note**")]
    assert len(titled) == 2
    assert "used as a YAML serializer." in titled[0]
    assert "Order is only lost" in titled[1]


def test_sphinx_signature_is_code_followed_by_its_body() -> None:
    markdown = _convert("sphinx-python-json.html").markdown
    signature = (
        "- `json.dump(obj, fp, *, skipkeys=False, ensure_ascii=True, check_circular=True, "
        "allow_nan=True, cls=None, indent=None, separators=None, default=None, "
        "sort_keys=False, **kw)`\n\n  Serialize *obj* as a JSON formatted stream to *fp*"
    )
    assert signature in markdown
    assert "*obj*, *fp*" not in markdown


def test_a_footnote_cited_several_times_loses_its_back_links() -> None:
    """docutils lists the references back to a note as "(1,2,3)": not the note's text."""
    html = (
        "<html><body><main><h1>Types</h1><p>Cased<a class='footnote-reference brackets' "
        "href='#id15' id='id6'>4</a> and again<a class='footnote-reference brackets' "
        "href='#id15' id='id7'>4</a>.</p><aside class='footnote-list brackets'>"
        "<aside class='footnote brackets' id='id15' role='note'><span class='label'>"
        "<span class='fn-bracket'>[</span>4<span class='fn-bracket'>]</span></span>"
        "<span class='backrefs'>(<a role='doc-backlink' href='#id6'>1</a>,"
        "<a role='doc-backlink' href='#id7'>2</a>)</span>"
        "<p>Cased characters are those with a case.</p></aside></aside></main></body></html>"
    )
    markdown = html_to_document(html, "https://docs.test/t.html").markdown
    assert "[^4]: Cased characters are those with a case." in markdown
    assert "(1,2)" not in markdown
