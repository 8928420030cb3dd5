"""Sections of a document: heading paths, anchors, byte ranges, whole code blocks and tables."""

from __future__ import annotations

import pickle
import time

import pytest

from sitelore.core.convert import to_document
from sitelore.core.sections import (
    anchor_url,
    heading_line,
    link_line,
    plain_text,
    split_sections,
    strip_heading_ids,
)

_DOC = """Intro with [a link](https://x.test/a.html).

# Guide {#top}

Some text.

## Timeouts {#timeouts}

```python
a = 1

b = 2
```

| key | value |
| --- | --- |
| a   | 1     |

### Deeper

Deep text.
"""


def _slice(markdown: str, start: int, end: int) -> str:
    return markdown.encode()[start:end].decode()


def test_sections_follow_the_headings_with_paths_anchors_and_byte_ranges() -> None:
    sections = split_sections(_DOC)

    assert [s.heading_path for s in sections] == [
        (),
        ("Guide",),
        ("Guide", "Timeouts"),
        ("Guide", "Timeouts", "Deeper"),
    ]
    assert [s.anchor for s in sections] == [None, "top", "timeouts", "timeouts"]
    assert [s.ordinal for s in sections] == [0, 1, 2, 3]
    assert _slice(_DOC, sections[2].start, sections[2].end).startswith("## Timeouts {#timeouts}")
    assert _slice(_DOC, sections[2].start, sections[2].end).rstrip().endswith("| a   | 1     |")
    assert sections[2].text == "a = 1\n\nb = 2\n\nkey value\na 1"  # code kept whole, table plain
    assert sections[0].text == "Intro with a link."
    assert sections[0].link_ratio == 0.0  # prose with a link in it: no link line


def test_byte_ranges_count_utf8_bytes() -> None:
    markdown = "# Café {#cafe}\n\nThé\n\n# Zoë\n\nÜber\n"
    first, second = split_sections(markdown)
    assert _slice(markdown, first.start, first.end).strip() == "# Café {#cafe}\n\nThé"
    assert _slice(markdown, second.start, second.end).strip() == "# Zoë\n\nÜber"


def test_long_sections_split_between_paragraphs_never_inside_code() -> None:
    code = "```\n" + "\n\n".join(f"line {i} " * 20 for i in range(30)) + "\n```"
    paragraphs = "\n\n".join(f"para{i} " + "word " * 150 for i in range(4))
    markdown = f"# Long {{#long}}\n\n{paragraphs}\n\n{code}\n\nafter\n"

    sections = split_sections(markdown, max_tokens=300)

    assert all(s.heading_path == ("Long",) and s.anchor == "long" for s in sections)
    assert [s.text.split()[0] for s in sections] == [
        "para0", "para1", "para2", "para3", "line", "after"
    ]  # fmt: skip
    assert sections[-2].text.count("line ") == 600  # the code block whole, over budget
    ends = [s.end for s in sections]
    assert ends == sorted(ends)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("## Timeouts {#timeouts}", (2, "Timeouts", "timeouts")),
        ("# Title", (1, "Title", None)),
        ("### Closed ###", (3, "Closed", None)),
        ("## [Examples](https://x.test/p#ex) {#ex}", (2, "Examples", "ex")),
        ("**#### pub fn [push](https://x.test/v#m)(&mut self) {#method.push}**",
         (4, "pub fn push(&mut self)", "method.push")),
        ("## `os.path` \\_x", (2, "os.path _x", None)),
        ("#hashtag", None),
        ("####### seven", None),
        ("text # not", None),
    ],
)  # fmt: skip
def test_heading_lines(line: str, expected: tuple[int, str, str | None] | None) -> None:
    assert heading_line(line) == expected


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("See [json](https://x/library/json.html) now", "See json now"),
        ("![diagram](https://x/a.png)", "diagram"),
        ("go to <https://x/y> or https://x/z.", "go to or"),
        ("**bold** and *em* and `code_span`", "bold and em and code_span"),
        ("| a | b |\n| --- | :-: |\n| 1   | 2 |", "a b\n1 2"),
        ("```rust\nlet x = 1;\n```", "let x = 1;"),
        ("a \\* b \\_c", "a * b _c"),
        ("2 * 3 * 4", "2 * 3 * 4"),
        ("> **Note**\n>\n> > A task is *queued*", "Note\n\nA task is queued"),
        ("```pycon\n>>> print(1)\n```", ">>> print(1)"),
        ("a > b", "a > b"),
        ("one  two\tthree\u00a0four \t\u00a0 five", "one two three four five"),
        ("  single spaces stay single  ", "single spaces stay single"),
        ('[a \\] b](https://x/f(1) "t") and ![i](p.png)', "a ] b and i"),
        ("__init__ and **x** \\*y\\* a*b*", "init and x *y* a*b"),
        ("see <https://x/y>, ftp://h/f and a:b", "see , and a:b"),
        ("\t```\n> *x*\n\t```\nafter", "> *x*\nafter"),  # a fence may follow a tab here
        ('| `.key`<br>`."$v"` | member<br/>accessor<BR />x |', '.key ."$v" member accessor x'),
        ("use `<br>` or `a<br>b`, not <br>", "use <br> or a<br>b, not"),
        # An escaped tag is the page's own text (a page about HTML), not the converter's.
        ("Use the \\<br> tag to break lines.", "Use the <br> tag to break lines."),
        # Code in a block quote (an admonition) loses the quote's markers, not its own ">".
        ("> Note\n>\n> ```pycon\n> >>> f.close()\n> ```\n> after", "Note\n\n>>> f.close()\nafter"),
        ("> > ```\n> > > x\n> > ```", "> x"),
        (
            '<table>\n<tr>\n<td colspan="2">\n\n`ascii` ( text )\n\n</td>\n</tr>\n</table>',
            "ascii ( text )",
        ),
        ("  <tr>\n<tr><th>Name:</th><td>x</td></tr>", "<tr><th>Name:</th><td>x</td></tr>"),
        # Code spans keep their text: marks, escapes and URLs in them are code.
        ("`sorted(iterable, /, *, key=None)`", "sorted(iterable, /, *, key=None)"),
        (
            "call `f(*args, **kwargs)` or `__init__`, *not* this",
            "call f(*args, **kwargs) or __init__, not this",
        ),
        ("``a ` b`` and `C:\\dir\\*` and `https://x/y`", "a ` b and C:\\dir\\* and https://x/y"),
        ("[`os.path`](https://x/os.path.html) and [**b**](u)", "os.path and b"),
        ("a stray ` tick and *em*", "a stray tick and em"),
        # Code beside or inside link text: found before the links go (runs never merge).
        ("`Optional[`[`Config`](https://x/c)`]`", "Optional[Config]"),
        ("[`f(*a)` and `[i]`](https://x/u) `b`", "f(*a) and [i] b"),
        ("see https://x/ `code` and \\![y](u)", "see code and !y"),
        ("an escaped \\` tick and `x*y` and ``a ` b``", "an escaped ` tick and x*y and a ` b"),
        # The characters that stand in for code spans meanwhile, in a document's own text.
        ("a \ufdef5\ufdef and `x` [l](u) \ufdee", "a 5 and x l"),
    ],
)
def test_plain_text_keeps_words_not_markup(markdown: str, expected: str) -> None:
    assert plain_text(markdown) == expected


def test_a_document_without_headings_is_one_section_and_empty_is_none() -> None:
    (only,) = split_sections("just text\n\nmore text")
    assert only.heading_path == ()
    assert only.anchor is None
    assert split_sections("") == []
    assert split_sections("# Heading only\n\n## Another\n") == []


@pytest.mark.parametrize(
    ("url", "anchor", "expected"),
    [
        ("https://x.test/p", "a", "https://x.test/p#a"),
        ("https://x.test/p#old", "a", "https://x.test/p#a"),
        ("https://x.test/p", None, "https://x.test/p"),
    ],
)
def test_anchor_urls(url: str, anchor: str | None, expected: str) -> None:
    assert anchor_url(url, anchor) == expected


@pytest.mark.parametrize(
    ("html", "heading"),
    [
        ('<h2 id="own">Own id</h2>', "## Own id {#own}"),
        ('<section id="sec"><h2>Sphinx</h2><p>x</p></section>', "## Sphinx {#sec}"),
        (
            '<div class="sect2" id="SQL-X"><div class="titlepage"><div><div>'
            '<h3 class="title">4.1 DocBook</h3></div></div></div><p>x</p></div>',
            "### 4.1 DocBook {#SQL-X}",
        ),
        ('<h2><a id="named"></a>Inner anchor</h2>', "## Inner anchor {#named}"),
        ('<section id="s"><h2>First</h2><h3>Second</h3></section>', "### Second"),
        ('<h2 id="has space">Bad id</h2>', "## Bad id"),
        ('<h2 id="snake_case.x">Underscore</h2>', "## Underscore {#snake_case.x}"),
    ],
)
def test_the_converter_keeps_heading_ids(html: str, heading: str) -> None:
    page = f"<html><body><main><h1>Page</h1>{html}<p>Body text here.</p></main></body></html>"
    doc = to_document(page.encode(), "text/html", "https://x.test/p")
    assert heading in doc.markdown.splitlines()


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("## Timeouts {#timeouts}\n\ntext {#kept}", "## Timeouts\n\ntext {#kept}"),
        (
            "# A {#a}\n```\n# comment {#not-a-heading}\n```\n## B {#b}",
            "# A\n```\n# comment {#not-a-heading}\n```\n## B",
        ),
        ("#hashtag {#x}", "#hashtag {#x}"),
        ("", ""),
    ],
)
def test_strip_heading_ids_leaves_text_and_code(markdown: str, expected: str) -> None:
    assert strip_heading_ids(markdown) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("- [13.1. Introduction](mvcc-intro.html)", True, id="docbook-toc"),
        pytest.param("  - [13.2.1. Read Committed](t.html#rc)", True, id="nested-toc"),
        pytest.param(
            "- vacuum_freeze_min_age configuration parameter, [Statement Behavior](c.html#s)",
            True,
            id="docbook-bookindex-entry",
        ),
        pytest.param("- determination of result type, [UNION, CASE](u.html)", True, id="subentry"),
        pytest.param("- [abs() (decimal.Context method)](d.html#abs)", True, id="sphinx-genindex"),
        pytest.param("- [A-LAW](a.html#i), [\\[1\\]](s.html#i)", True, id="genindex-two-links"),
        pytest.param("- [alloc::Global](alloc/struct.Global.html)", True, id="rustdoc-all"),
        pytest.param("1. [Getting Started](ch01-00.html)", True, id="mdbook-summary"),
        pytest.param(
            "- [add(E)](A.html#add(E)) - Method in class java.util.[ArrayList](A.html)",
            True,
            id="javadoc-index-all",
        ),
        pytest.param("[Symbols](#s) | [A](#a) | [B](#b) | [C](#c)", True, id="row-of-letters"),
        pytest.param(
            "| [`os`](os.html) | *Miscellaneous operating system interfaces.* |",
            False,
            id="modindex-row-with-description",
        ),
        pytest.param(
            "- [`json`](json.html): encode and decode JSON documents", False, id="link-then-text"
        ),
        pytest.param("See [json](json.html) to encode and decode documents.", False, id="prose"),
        pytest.param("For more, see [Capacity](v.html#capacity).", False, id="prose-ends-in-link"),
        pytest.param(
            "- one two three four five six seven eight nine, [x](y.html)", False, id="long-item"
        ),
        pytest.param("- no link here", False, id="no-link"),
    ],
)
def test_link_lines(line: str, expected: bool) -> None:
    assert link_line(line) is expected


_TOC = """## Chapter 13. Concurrency Control {#MVCC}

**Table of Contents**

- [13.1. Introduction](https://d.test/mvcc-intro.html)
- [13.2. Transaction Isolation](https://d.test/transaction-iso.html)
  - [13.2.1. Read Committed Isolation Level](https://d.test/transaction-iso.html#rc)
- [13.3. Explicit Locking](https://d.test/explicit-locking.html)

This chapter describes the behavior of the database system when two or
more sessions try to access the same data at the same time.
"""
_BOOKINDEX = """### V {#indexdiv-V}

- vacuum, [Routine Vacuuming](https://d.test/routine-vacuuming.html)
- vacuum_cost_delay configuration parameter, [Cost-based Vacuum Delay](https://d.test/r.html#c)
- vacuum_freeze_min_age configuration parameter, [Statement Behavior](https://d.test/c.html#s)
- VALUES, [VALUES Lists](https://d.test/queries-values.html), [VALUES](https://d.test/v.html)
  - determination of result type, [UNION, CASE](https://d.test/typeconv-union-case.html)
"""
_PROSE = """# Freezing {#freeze}

VACUUM marks old rows frozen, see [vacuum_freeze_min_age](https://d.test/c.html#s), so
that their transaction IDs can be reused. It freezes a page once all its rows are
visible; [Section 25.1.5](https://d.test/routine-vacuuming.html#wrap) tells why.

- [`VACUUM FREEZE`](https://d.test/sql-vacuum.html): freeze every row it scans
"""
_SEE_ALSO = """# Timeouts

A request that takes longer than its timeout raises an error. The timeout counts
from the first byte sent to the last byte read, redirects included.

See also:

- [Retries](https://d.test/retries.html)
- [Limits](https://d.test/limits.html)
"""


@pytest.mark.parametrize(
    ("markdown", "ratios"),
    [
        pytest.param(_TOC, [(0.8, 1.0), (0.0, 0.0)], id="toc-own-section-then-prose"),
        pytest.param(_BOOKINDEX, [(0.9, 1.0)], id="back-of-book-index"),
        pytest.param(_PROSE, [(0.0, 0.0)], id="prose-with-links"),
        pytest.param(_SEE_ALSO, [(0.05, 0.2)], id="prose-with-a-short-see-also"),
        pytest.param(
            "# Code\n\n```markdown\n- [a](b.html)\n- [c](d.html)\n- [e](f.html)\n```\n",
            [(0.0, 0.0)],
            id="links-in-code",
        ),
    ],
)
def test_link_ratio_is_the_share_of_text_on_link_lines(
    markdown: str, ratios: list[tuple[float, float]]
) -> None:
    found = [round(section.link_ratio, 2) for section in split_sections(markdown)]
    assert len(found) == len(ratios)
    assert all(low <= ratio <= high for ratio, (low, high) in zip(found, ratios, strict=True))


def test_a_list_of_links_is_a_section_of_its_own_with_its_lead_in() -> None:
    """A table of contents is cut from the prose after it, its label stays with it."""
    toc, prose = split_sections(_TOC)
    assert toc.text.startswith("Table of Contents\n\n- 13.1. Introduction")
    assert toc.start == 0  # the first part holds the heading
    assert prose.text.startswith("This chapter describes")
    assert _slice(_TOC, prose.start, prose.end).startswith("This chapter")
    assert toc.heading_path == prose.heading_path == ("Chapter 13. Concurrency Control",)


def test_a_short_lead_in_stays_with_a_long_block() -> None:
    """A label before a block longer than the budget is not a section alone."""
    code = "```\n" + "x = 1\n" * 400 + "```"
    sections = split_sections(f"# Stack\n\nUse a list as a stack:\n\n{code}\n", max_tokens=100)
    assert len(sections) == 1
    assert sections[0].text.startswith("Use a list as a stack:\n\nx = 1")


def test_sections_survive_pickling_between_processes() -> None:
    """Conversion workers pickle a page's sections to the loop: every field comes back."""
    sections = split_sections("intro\n\n## A {#a}\n\nsee [x](https://x/) *now*\n")
    assert pickle.loads(pickle.dumps(sections)) == sections


def test_unmatched_backtick_runs_cost_linear_time() -> None:
    """Runs of every length, none closed: one pass, not a scan to the end per run."""
    line = "".join("`" * length + "x" for length in range(1, 1200))
    started = time.perf_counter()
    assert "x" in plain_text(line)
    assert time.perf_counter() - started < 1.0  # a guard against blow-ups (was 8 s)
