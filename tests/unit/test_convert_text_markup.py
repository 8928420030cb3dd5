"""Page text that spells Markdown links or images, or holds the converter's marks, stays text.

A page may show the characters ``[x](javascript:alert(1))`` or ``![](https://tracker/)``
as prose (release notes written in Markdown, a tutorial about Markdown, a hostile
page). Written to the Markdown unescaped, any renderer would turn them into a live
link or an image fetched on view. Each case is rendered with a CommonMark parser
(markdown-it-py, the web UI's) and must hold no link or image the page did not make;
the links and footnotes the page did make must still work. Text holding the
characters the converter's passes use as marks (``_marks``) is never read as one.
"""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from sitelore.core.convert import DocumentConverter, _marks

_URL = "https://docs.test/page.html"


def _markdown(body: str) -> str:
    html = f"<html><head><title>T</title></head><body><main><h1>T</h1>{body}</main></body></html>"
    return DocumentConverter()(html.encode(), "text/html; charset=utf-8", _URL, None).markdown


def _targets(markdown: str) -> list[str]:
    """Every link href and image src a CommonMark renderer makes of ``markdown``."""
    found: list[str] = []

    def walk(tokens: list[Token]) -> None:
        for token in tokens:
            if token.type == "link_open":
                found.append(str(token.attrs.get("href")))
            elif token.type == "image":
                found.append(str(token.attrs.get("src")))
            walk(token.children or [])

    walk(MarkdownIt("commonmark").parse(markdown))
    return found


@pytest.mark.parametrize(
    "body",
    [
        "<p>Click [x](javascript:alert(1)) now.</p>",
        "<p>![pixel](https://tracker.test/p.png)</p>",
        "<p>Split [x]<span>(https://evil.test/)</span> across nodes.</p>",
        "<p>Split [x]<b></b>(https://evil.test/) by an empty element.</p>",
        "<p>[label][ref]</p><p>[ref]: https://evil.test/</p>",
        "<p>[ref]: https://evil.test/ </p><p>[ref]</p>",
        "<ul><li>[a](https://evil.test/a)</li><li>([b](https://evil.test/b))</li></ul>",
        "<table><tr><th>h</th></tr><tr><td>[c](https://evil.test/c)</td></tr></table>",
        "<p>Footnote-like [^x](https://evil.test/f) text.</p>",
        "<blockquote><p>[q](https://evil.test/q)</p></blockquote>",
        # Alt text of an image whose source is unusable becomes text.
        "<p><img src='' alt='[a](https://evil.test/a)'></p>",
        "<p><img src='data:x' alt='![p](https://evil.test/p.png)'></p>",
        "<p>[x]<img src='' alt='(https://evil.test/)'></p>",
        # The page's own backslash before an escaped character must not cancel it.
        "<p>[a\\](https://evil.test/)</p>",
        # A stray backtick in the text must not move the edges of a code span.
        "<p>a`b <code>![i](https://evil.test/t.png)</code> c</p>",
        "<p><img src='' alt='[x]'><span>(https://evil.test/)</span></p>",
    ],
)
def test_text_spelling_a_link_or_image_renders_as_text(body: str) -> None:
    markdown = _markdown(body)
    assert _targets(markdown) == [], markdown


@pytest.mark.parametrize(
    ("body", "targets", "shown"),
    [
        # A real link keeps working; brackets in its text are its text.
        ("<p><a href='/a'>[a](b)</a></p>", ["https://docs.test/a"], "[a](b)"),
        # A "!" before a real link is text, not an image.
        ("<p>Wow!<a href='/w'>w</a></p>", ["https://docs.test/w"], "Wow!w"),
        # Brackets that close no link text are left alone.
        ("<p>a[i] = b[j] and [see below]</p>", [], "a[i] = b[j] and [see below]"),
    ],
)
def test_markup_the_page_made_still_renders(body: str, targets: list[str], shown: str) -> None:
    markdown = _markdown(body)
    assert _targets(markdown) == targets
    rendered = MarkdownIt("commonmark").render(markdown)
    assert shown in re.sub(r"<[^>]*>", "", rendered)


@pytest.mark.parametrize(
    "body",
    [
        "<p>wow!<span><a href='https://t.test/p.gif'>y</a></span></p>",
        "<p>wow!<!-- c --><a href='https://t.test/p.gif'>y</a></p>",
        "<p><img src='' alt='!'><a href='https://t.test/p.gif'>y</a></p>",
        "<p><b>wow!</b><a href='https://t.test/p.gif'>y</a></p>",
        "<p>see \\!<a href='https://t.test/p.gif'>y</a></p>",
    ],
)
def test_a_bang_before_a_link_never_makes_an_image(body: str) -> None:
    tokens = MarkdownIt("commonmark").parseInline(_markdown(body))
    kinds = [child.type for token in tokens for child in token.children or []]
    assert "image" not in kinds
    assert _targets(_markdown(body)) == ["https://t.test/p.gif"]


def test_brackets_in_code_are_never_escaped() -> None:
    markdown = _markdown("<pre><code>x = [a](b)</code></pre><p>Use <code>m[0](x)</code>.</p>")
    assert "x = [a](b)" in markdown
    assert "`m[0](x)`" in markdown


def test_footnotes_the_converter_writes_stay_footnotes() -> None:
    body = (
        "<p>Cited<a class='footnote-reference' href='#f1' id='r1'>[1]</a>.</p>"
        "<aside class='footnote' id='f1'><span class='label'>"
        "<a role='doc-backlink' href='#r1'>1</a></span><p>The note.</p></aside>"
    )
    markdown = _markdown(body)
    assert "Cited[^1]." in markdown
    assert "[^1]: The note." in markdown


_MARKS = (
    *_marks.LINK_TEXT.values(),
    _marks.QUOTE_BREAK,
    _marks.TABLE,
    _marks.HEADING_ID_OPEN,
    _marks.HEADING_ID_CLOSE,
    _marks.MARKUP_OPEN,
    _marks.MARKUP_CLOSE,
    _marks.BLANK_CELL,
)


def _is_mark_range(ch: str) -> bool:
    return 0xFDD0 <= ord(ch) <= 0xFDEF


def test_marks_are_distinct_noncharacters() -> None:
    assert len(set(_MARKS)) == len(_MARKS)
    assert all(len(mark) == 1 and _is_mark_range(mark) for mark in _MARKS)
    assert set(_marks.MARKS) == set(_MARKS)


@pytest.mark.parametrize(
    "attribute",
    [
        "<a href='/a' title='&#xFDDA;99&#xFDDB;'>a</a>",
        "<img src='/i.png' alt='&#xFDD9;7&#xFDD9;' title='&#xFDDA;5&#xFDDB;'>",
    ],
)
def test_marks_in_attributes_the_markdown_writes_are_dropped(attribute: str) -> None:
    markdown = _markdown(f"<h2 id='h'>Head</h2><p>{attribute}</p>")
    assert not any(mark in markdown for mark in _MARKS)
    assert "## Head {#h}" in markdown


def test_marks_spelling_a_link_stay_text() -> None:
    """Footnote brackets are marks that become plain ``[``/``]``: a page must not spell them."""
    open_, close = _marks.MARKUP_OPEN, _marks.MARKUP_CLOSE
    for text in (f"{open_}x{close}(https://evil.test/)", "&#xFDDC;x&#xFDDD;(https://evil.test/)"):
        markdown = _markdown(f"<p>{text}</p><p><img src='' alt='{text}'></p>")
        assert _targets(markdown) == [], markdown


@pytest.mark.parametrize(
    "text",
    [
        # Each mark alone, and the shapes the passes write (a heading id, a table slot).
        *_MARKS,
        f"{_marks.HEADING_ID_OPEN}7{_marks.HEADING_ID_CLOSE}",
        f"{_marks.TABLE}0{_marks.TABLE}",
        # Private-use glyphs of icon fonts (Material Icons' "warning" is U+E002).
        "\ue002 \ue000 \ue001 \ue010 \ue011 \ue020 \ue021 \uf0c1",
    ],
)
@pytest.mark.parametrize("written", ["raw", "as character references"])
def test_text_holding_marks_converts_as_text(text: str, written: str) -> None:
    if written != "raw":  # the parser decodes &#xFDDA; into the mark itself
        text = "".join(f"&#x{ord(ch):X};" if _is_mark_range(ch) else ch for ch in text)
    body = (
        f"<p>Before {text} after</p><h2 id='h'>Head {text}</h2>"
        f"<table><tr><td><pre>x</pre></td><td>y</td></tr></table><pre><code>c {text}</code></pre>"
    )
    markdown = _markdown(body)
    shown = "".join(ch for ch in text if not _is_mark_range(ch))
    shown = re.sub(r"&#x[0-9A-F]+;", "", shown)
    lines = [" ".join(line.split()) for line in markdown.split("\n")]
    assert " ".join(f"Before {shown} after".split()) in lines
    assert " ".join(f"## Head {shown} {{#h}}".split()) in lines
    assert " ".join(f"c {shown}".split()) in lines
    assert "<table>" in markdown  # the code table's slot was filled
    assert not any(mark in markdown for mark in _MARKS)


@pytest.mark.parametrize(
    "body",
    [
        "<p>x\\&lt;img src=x onerror=alert(1)&gt;</p>",
        "<p>x&lt;img src=x onerror=alert(1)&gt;</p>",
        "<p>a`b <code>&lt;img src=x onerror=alert(1)&gt;</code> c ` d</p>",
    ],
)
def test_text_spelling_html_renders_as_text(body: str) -> None:
    """Raw HTML is on in CommonMark: text that spells a tag must stay text."""
    rendered = MarkdownIt("commonmark").render(_markdown(body))
    assert "<img" not in rendered, rendered
