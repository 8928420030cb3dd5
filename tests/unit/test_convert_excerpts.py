"""Classes of converter defects found reading real pages, one small real excerpt each.

Each case names a fixture under tests/fixtures/fidelity (licences in LICENSES.md
there), the URL it is converted from, patterns its Markdown must match and
patterns it must not (multi-line regular expressions). Every case failed before
the converter change that fixed its class.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitelore.core.convert import to_document

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "fidelity"
PY = "https://docs.python.org/3.11/"
PG = "https://www.postgresql.org/docs/15/"
GLIB = "https://docs.gtk.org/glib/"

#: (fixture, page URL, patterns that must match, patterns that must not)
CASES: dict[str, tuple[str, str, list[str], list[str]]] = {
    # Layout tables: a one-row table of columns holding lists (Sphinx's index) was
    # written by html-to-markdown with one-space nesting, which CommonMark reads as
    # siblings, and with items run together.
    "index-columns-keep-nested-lists": (
        "sphinx-python-genindex.html",
        f"{PY}genindex-J.html",
        [
            rf"^- j\n  - \[in numeric literal\]\({PY}reference/lexical_analysis\.html#index-30\)$",
            rf"^- json\.tool\n  - \[module\]\({PY}library/json\.html#module-json\.tool\)$",
        ],
        [r"^ - ", r"\) - json\.tool"],
    ),
    # Layout tables: gtk-doc's title block (h2 and purpose in a one-row table)
    # became a table cell, and the heading with it.
    "title-table-keeps-its-heading": (
        "gtkdoc-glib-arrays.html",
        f"{GLIB}glib-Arrays.html",
        [r"^## Arrays\n\nArrays — arrays of arbitrary elements which grow"],
        [r"\| Arrays<br>"],
    ),
    # Line-number gutters: gtk-doc writes them as a <pre> in a table cell beside the
    # code, which kept the numbers as a code block and the code in an HTML table.
    "line-number-gutter-dropped": (
        "gtkdoc-glib-arrays.html",
        f"{GLIB}glib-Arrays.html",
        [r"^```\nGArray \*garray;\ngint i;\n// We create a new array to store gint values\.$"],
        [r"^```\n1\n2\n3", r"<table>", r"<td>"],
    ),
    # Sphinx pages without permalinks (indexes, search) were not seen as docs pages,
    # so Readability replaced the content and dropped the letter links.
    "sphinx-page-without-permalinks-is-docs": (
        "sphinx-python-genindex-letters.html",
        f"{PY}genindex.html",
        [rf"\[\*\*A\*\*\]\({PY}genindex-A\.html\)", r"^# Index$"],
        [],
    ),
    # Adjacent admonitions with an empty paragraph between them (DocBook leaves one
    # after each) merged into one block quote.
    "adjacent-admonitions-apart-across-empty-paragraphs": (
        "docbook-libpq-connect.html",
        f"{PG}libpq-connect.html",
        [r"^> executing arbitrary SQL commands\.\n\n+> \*\*Warning\*\*$"],
        [r"commands\.\n> \*\*Warning\*\*"],
    ),
    # Inline code kept the source's line-break indentation ("SELECT      pg_catalog"),
    # which a browser shows as one space.
    "inline-code-whitespace-collapsed": (
        "docbook-libpq-connect.html",
        f"{PG}libpq-connect.html",
        [r"`PQexec\(conn, \"SELECT pg_catalog\.set_config\('search_path', '', false\)\"\)`"],
        [r"SELECT {2,}pg_catalog"],
    ),
    # Definition lists that are not API descriptions lost the term/definition
    # structure: the term became a paragraph like any other.
    "variablelist-term-heads-its-definition": (
        "docbook-libpq-connect.html",
        f"{PG}libpq-connect.html",
        [r"^- \*\*`PQconnectdbParams`\*\*\n\n  Makes a new connection to the database server\.$"],
        [r"^`PQconnectdbParams`$"],
    ),
    "glossary-term-heads-its-definition": (
        "sphinx-python-glossary.html",
        f"{PY}glossary.html",
        [
            r"^- \*\*`>>>`\*\*\n\n  The default Python prompt",
            r"^- \*\*2to3\*\*\n\n  A tool that tries to convert",
        ],
        [r"^2to3$"],
    ),
    "index-subentries-stay-nested": (
        "docbook-bookindex.html",
        f"{PG}bookindex.html",
        [
            rf"^- abbrev, \[Network Address Functions and Operators\]\({PG}functions-net\.html\)$",
            r"^- administration tools\n  - externally maintained, \[Administration Tools\]",
            r"^  - built-in, \[Aggregate Functions\]",
        ],
        [r"^built-in, "],
    ),
    # Readability deletes headings whose class looks negative or that are mostly
    # link text: the Rust error index (no docs container) lost every section heading.
    "article-headings-survive-readability": (
        "rustdoc-error-index.html",
        "https://doc.rust-lang.org/1.63.0/error-index.html",
        [r"^# Rust Compiler Error Index$", r"^## E0001$", r"^## E0002$", r"^## E0005$"],
        [],
    ),
    # Without a landmark, Readability's article was taken if it beat the chrome's
    # text, though it dropped code blocks (10 of the first 30 pages of the gettext
    # manual), and trafilatura, the last resort, writes each code line as a block.
    "article-without-landmark-keeps-code": (
        "texi2html-gettext-users-view.html",
        "https://www.gnu.org/software/gettext/manual/gettext_2.html",
        [r"^```\nset OUTPUT_CHARSET=CP850\n```$", r"^## .*2\.1 Operating System Installation"],
        [],
    ),
    # Navigation bars outside any chrome-named element (texi2html's table of
    # "[ << ] [ >> ] [Top] [Contents] [Index] [ ? ]") were kept as content, with the
    # rules that framed them.
    "navigation-bars-dropped": (
        "texi2html-gettext-users-view.html",
        "https://www.gnu.org/software/gettext/manual/gettext_2.html",
        [r"\A# \[2\. The User's View\]"],
        [r"\[Contents\]", r"\[Top\]", r"\\<\\<", r"\n---\Z"],
    ),
    # rustdoc breaks a long parameter list after "(" with <br> and non-breaking
    # spaces; the signature heading kept a space there ("difference<'a>( &'a self").
    "signature-heading-without-break-indent": (
        "rustdoc-hashset-difference.html",
        "https://doc.rust-lang.org/1.63.0/std/collections/hash_set/struct.HashSet.html",
        [
            r"^#### `pub fn difference<'a>\(&'a self, other: &'a HashSet<T, S>\) -> "
            r"Difference<'a, T, S>`$"
        ],
        [],
    ),
    # rustdoc's item tables (a module's items) came out as alternating name and
    # summary paragraphs, the stability badge glued to the name ("neverExperimental").
    "item-table-is-a-list-of-name-and-summary": (
        "rustdoc-std-primitives.html",
        "https://doc.rust-lang.org/1.63.0/std/index.html",
        [
            r"^- \[never\]\(https://doc\.rust-lang\.org/1\.63\.0/std/primitive\.never\.html "
            r"\"std::never primitive\"\) Experimental\n\n  The `!` type, also called “never”\.$",
            r"^- \[array\]\(",
        ],
        [r"\)Experimental"],
    ),
    # Javadoc 16+ lays its summaries out as a CSS grid of divs: every cell became a
    # paragraph of its own and the table was gone.
    "javadoc-grid-summary-is-a-table": (
        "javadoc-socketoption.html",
        "https://docs.oracle.com/en/java/javase/17/docs/api/java.base/java/net/SocketOption.html",
        [
            r"^\| Modifier and Type \| Method \| Description \|$",
            r"^\| \[`String`\]\([^)]*\) \| \[`name`\]\([^)]*\(\)\)`\(\)` \| "
            r"Returns the name of the socket option\. \|$",
        ],
        [r"^Modifier and Type$"],
    ),
    # Doxygen's member tables hold their section heading in the first row and an
    # empty separator row after each member: "| Classes | |" and rows of "|  | |".
    # Its rows are data, so the table gets a blank header row (and no other empty row).
    "table-heading-row-lifted-and-empty-rows-dropped": (
        "doxygen-debug-namespace.html",
        "https://gcc.gnu.org/onlinedocs/gcc-12.2.0/libstdc++/api/a01706.html",
        [
            r"^## Classes\n\n\| +\| +\|\n\| --- \| --- \|\n\| class \| \[bitset\]\(",
            r"^\| class \| \[forward\\_list\]\(",
        ],
        [r"\| Classes \|", r"^\| +\| +\|\n(?!\| --- )"],
    ),
    # GFM tables were padded to their widest cell: on the SQL key words appendix
    # most of the table's bytes were spaces.
    "tables-not-padded": (
        "docbook-sql-keywords.html",
        f"{PG}sql-keywords-appendix.html",
        [r"^\| `ABSOLUTE` \| non-reserved \| non-reserved \| non-reserved \| reserved \|$"],
        [r"[^|\s] {2,}\|"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_excerpt(case: str) -> None:
    fixture, url, present, absent = CASES[case]
    body = (FIXTURES / fixture).read_bytes()
    markdown = to_document(body, "text/html; charset=utf-8", url).markdown
    # A heading with an id ends " {#id}" (search anchors); these patterns read the rest.
    markdown = re.sub(r" \{#[^\s{}#]+\}$", "", markdown, flags=re.MULTILINE)
    for pattern in present:
        assert re.search(pattern, markdown, re.MULTILINE), pattern
    for pattern in absent:
        assert not re.search(pattern, markdown, re.MULTILINE), pattern


def test_readability_wrappers_lend_no_anchor() -> None:
    """Readability's own ``readabilityBody`` id is not the page's: no heading takes it."""
    body = (FIXTURES / "rustdoc-error-index.html").read_bytes()
    url = "https://doc.rust-lang.org/1.63.0/error-index.html"
    markdown = to_document(body, "text/html; charset=utf-8", url).markdown
    assert markdown.startswith("# Rust Compiler Error Index")
    assert "{#readability" not in markdown
