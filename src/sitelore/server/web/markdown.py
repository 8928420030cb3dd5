"""Turn stored (untrusted) Markdown into HTML that is safe to show in the web UI.

Two maintained libraries do the work: markdown-it-py parses with raw HTML switched off
(tags in the page come out as text) except the markup the converter writes itself
(``core.rawhtml``: a table cell's ``<br>``, the tag lines of a table whose cells hold
blocks), and nh3 (the Ammonia sanitiser) then keeps only an allow-list of tags,
attributes and URL schemes, so no ``javascript:`` or ``data:`` link, no event handler
and no style survive. Images are shown as their alt text: the
UI never loads anything from the crawled site. Headings get ids ``sec-<id>`` (the
page's own ``{#id}`` when the converter kept one, else a slug of the text), so a
search result can open a document at its section without clashing with the UI's ids.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from sitelore.core.rawhtml import LINE_BREAK, is_table_tag_line

__all__ = ["SECTION_PREFIX", "render_markdown", "section_id"]

#: Prefix of every heading id in rendered Markdown (keeps page ids apart from the UI's).
SECTION_PREFIX = "sec-"

_HEADING_ID = re.compile(r"[ \t]*\{#([^\s{}]+)\}[ \t]*$")
_SLUG_DROP = re.compile(r"[^\w\- ]+")
_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4",
    "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub",
    "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "ol": {"start"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan"},
    **{f"h{level}": {"id"} for level in range(1, 7)},
}
_SCHEMES = {"http", "https", "mailto"}


def section_id(fragment: str) -> str:
    """The element id the rendered document gives the heading whose fragment is this."""
    return SECTION_PREFIX + fragment


def _slug(text: str) -> str:
    words = _SLUG_DROP.sub("", text.lower()).split()
    return "-".join(words)[:80] or "section"


def _heading_ids(state: StateCore) -> None:
    """Core rule: strip a heading's ``{#id}`` and give every heading a unique id."""
    seen: set[str] = set()
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or index + 1 >= len(tokens):
            continue
        inline = tokens[index + 1]
        fragment = None
        children = inline.children or []
        last = children[-1] if children else None
        if last is not None and last.type == "text":
            found = _HEADING_ID.search(last.content)
            if found:
                fragment = found.group(1)
                last.content = last.content[: found.start()]
        text = "".join(child.content for child in children if child.type in ("text", "code_inline"))
        fragment = fragment or _slug(text)
        unique, n = fragment, 1
        while unique in seen:
            n += 1
            unique = f"{fragment}-{n}"
        seen.add(unique)
        token.attrSet("id", section_id(unique))


def _image_as_text(
    _renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    _options: OptionsDict,
    _env: EnvType,
) -> str:
    """An image renders as its alt text (nothing is loaded from the crawled site)."""
    alt = "".join(child.content for child in tokens[idx].children or [])
    return f'<span class="img-alt">[image: {_escape(alt or "untitled")}]</span>'


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _table_tags(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """Block rule: a run of table tag lines the converter wrote, kept as HTML."""
    line = start
    while line < end and not state.is_code_block(line):
        text = state.src[state.bMarks[line] + state.tShift[line] : state.eMarks[line]]
        if not is_table_tag_line(text):
            break
        line += 1
    if line == start:
        return False
    if not silent:
        token = state.push("html_block", "", 0)
        token.map = [start, line]
        token.content = state.getLines(start, line, state.blkIndent, True)
        state.line = line
    return True


def _line_break(state: StateInline, silent: bool) -> bool:
    """Inline rule: a table cell's ``<br>``, kept as HTML."""
    if state.src[state.pos] != "<":
        return False
    found = LINE_BREAK.match(state.src, state.pos, state.posMax)
    if found is None:
        return False
    if not silent:
        state.push("html_inline", "", 0).content = "<br>"
    state.pos = found.end()
    return True


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # Raw HTML stays off; only the converter's own markup is let through as HTML.
    md.block.ruler.before("html_block", "sitelore_table_tags", _table_tags, {"alt": ["paragraph"]})
    md.inline.ruler.before("html_inline", "sitelore_line_break", _line_break)
    md.core.ruler.push("sitelore_heading_ids", _heading_ids)
    md.add_render_rule("image", _image_as_text)
    return md


def render_markdown(markdown: str) -> str:
    """Safe HTML for ``markdown``: parsed without raw HTML (but the converter's own
    markup), then sanitised by nh3."""
    html = _parser().render(markdown)
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
