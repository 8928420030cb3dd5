"""Sections of a document: heading paths, anchors, byte ranges, whole code blocks and tables."""

from __future__ import annotations

import pickle

import pytest

from sitelore.core.convert import to_document
from sitelore.core.sections import (
    anchor_url,
    heading_line,
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
    assert sections[0].link_ratio == pytest.approx(len("a link") / len("Intro with a link."))


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
        (
            '<table>\n<tr>\n<td colspan="2">\n\n`ascii` ( text )\n\n</td>\n</tr>\n</table>',
            "ascii ( text )",
        ),
        ("  <tr>\n<tr><th>Name:</th><td>x</td></tr>", "<tr><th>Name:</th><td>x</td></tr>"),
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


def test_sections_survive_pickling_between_processes() -> None:
    """Conversion workers pickle a page's sections to the loop: every field comes back."""
    sections = split_sections("intro\n\n## A {#a}\n\nsee [x](https://x/) *now*\n")
    assert pickle.loads(pickle.dumps(sections)) == sections
