"""Turn a cleaned content element into Markdown with html-to-markdown.

Before conversion the element is prepared in place: code-language hints are moved
onto the code element (Sphinx ``div.highlight-python > pre``, rustdoc ``pre.rust``,
pandoc ``sourceCode x``), a ``<pre>`` wrapping another ``<pre>`` is unwrapped,
admonitions become block quotes headed by their title, link and image URLs are
made absolute (only http(s) and mailto links are kept as links), and the text of
links is marked so that it cannot inject Markdown. Code text is sacred: each
``<pre>`` is rebuilt from its whole text, so no markup inside it (highlighter
spans, links, line breaks) can change or drop a character. Text outside code that
Markdown would read as markup is escaped: ``<T>`` (HTML), ``!`` before a link (an
image), and a ``]`` followed by ``(``, ``[`` or ``:`` (text spelling a link).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

import html_to_markdown
from html_to_markdown import ConversionOptions, PreprocessingOptions, convert
from selectolax.lexbor import LexborHTMLParser, LexborNode

from sitelore.core.convert._anchors import mark_heading_ids, unmark_heading_ids
from sitelore.core.convert._codetables import fill_slots, slot_code_tables
from sitelore.core.convert._marks import (
    BLANK_CELL,
    LINK_TEXT,
    MARKUP_CLOSE,
    MARKUP_OPEN,
    QUOTE_BREAK,
    holds_marks,
    without_marks,
)
from sitelore.core.convert._structure import (
    blank_table_headers,
    prepare_structure,
    unwrap_layout_tables,
)
from sitelore.core.convert._tree import classes, move_children, within
from sitelore.core.fences import closes_fence, opening_fence
from sitelore.core.links import LinkCache, link_resolver

__all__ = ["content_to_markdown"]

_LANG_PREFIXES = ("language-", "lang-", "highlight-", "brush:")
#: Bare class names taken as a language when a code block carries one.
_KNOWN_LANGS = frozenset(
    {
        "bash", "c", "console", "cpp", "csharp", "css", "diff", "go", "haskell", "html",
        "ini", "java", "javascript", "js", "json", "kotlin", "lua", "make", "markdown",
        "perl", "php", "powershell", "python", "pycon", "r", "ruby", "rust", "scala",
        "shell", "sh", "sql", "swift", "text", "toml", "ts", "typescript", "xml", "yaml",
        "zsh",
    }
)  # fmt: skip
_LANG_ALIASES = {"default": "python", "python3": "python", "py3": "python", "none": "text"}
_LANG_OK = re.compile(r"^[A-Za-z0-9_+#.-]{1,32}$")

_ADMONITIONS = (
    "[class]:is(.admonition, .admonitionblock, .markdown-alert, .theme-admonition), "
    "div:is(.note, .tip, .warning, .caution, .important, .seealso, .hint)"
)
_ADMONITION_TITLES = (
    ".admonition-title, .markdown-alert-title, .admonition-heading, td.icon, "
    "h3.title, p.title, div.title"
)

#: Characters of link text replaced by marks before conversion (``_marks``).
_MARK_TABLE = str.maketrans({c: m for c, m in LINK_TEXT.items() if c != "!"})
#: Marker -> the escaped character it stands for (str.replace per marker is far faster
#: than str.translate with a dict on a whole page).
_UNMARK = (
    *((m, "\\" + c) for c, m in LINK_TEXT.items()),
    (MARKUP_OPEN, "["),
    (MARKUP_CLOSE, "]"),
    (BLANK_CELL, ""),
)
_ANGLE_MARK = str.maketrans({"<": LINK_TEXT["<"], "`": LINK_TEXT["`"]})
#: Backslashes of the page's text right before a mark that becomes an escape.
_BACKSLASHED_MARK = re.compile("(\\\\+)(?=[" + "".join(LINK_TEXT.values()) + "])")
_NEEDS_MARKING = re.compile(r"[\[\]<>*_`]")
#: A ``]`` that would close a link's text: followed by ``(`` (inline link or image),
#: ``[`` (reference link) or ``:`` (reference definition).
_LINK_CLOSE = re.compile(r"\](?=[(\[:])")
_LINK_FOLLOWERS = frozenset("([:")
_CLOSE_MARK = LINK_TEXT["]"]
#: A thematic break at the very start or end: a rule that framed the page's navigation.
_LEADING_RULE = "---\n\n"
_TRAILING_RULE = "\n\n---"
_CODE_TAGS = frozenset({"pre", "code", "kbd", "samp", "tt", "script", "style"})
#: Inline code: every <pre> now holds one <code> of plain text (see _prepare_code).
_INLINE_CODE = ":not(pre) > :is(code, kbd, samp, tt)"
_PRE = ("pre",)
#: A run of whitespace holding a line break: one space where a browser shows it.
_SOURCE_BREAK = re.compile(r"[ \t]*\n\s*")


_Options = TypeVar("_Options", ConversionOptions, PreprocessingOptions)


def _as_members(options: _Options) -> _Options:
    """``options`` with each enum setting given as text replaced by its enum member.

    html-to-markdown looks such a setting up on every call, trying several spellings,
    which cost as much as converting a page; a member it takes as it is. The member is
    the one its lookup finds first: the text upper-cased (``"atx"``: ``ATX``).
    """
    members: dict[str, Any] = {}
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        enum = getattr(html_to_markdown, str(field.type).split(" | ")[0], None)
        member = getattr(enum, value.upper(), None) if isinstance(value, str) else None
        if isinstance(enum, type) and isinstance(member, enum):
            members[field.name] = member
    return dataclasses.replace(options, **members)


@functools.cache
def _options() -> ConversionOptions:
    """The Markdown settings, built once per process."""
    preprocessing = PreprocessingOptions(
        enabled=True, preset="minimal", remove_navigation=False, remove_forms=False
    )
    return _as_members(
        ConversionOptions(
            extract_metadata=False,
            hidden_content="reachable",
            heading_style="atx",
            code_block_style="backticks",
            bullets="-",
            br_in_tables=True,
            compact_tables=True,
            preprocessing=_as_members(preprocessing),
        )
    )


def _lang_of(node: LexborNode | None, *, bare: bool) -> str | None:
    if node is None:
        return None
    data_lang = node.attributes.get("data-lang")
    if data_lang:
        return data_lang
    names = classes(node)
    for name in names:
        lower = name.lower()
        for prefix in _LANG_PREFIXES:
            if lower.startswith(prefix) and len(lower) > len(prefix):
                return name[len(prefix) :]
    others = [name for name in names if name != "sourceCode"]
    if "sourceCode" in names and others:
        return others[0]
    if bare:
        for name in names:
            if name.lower() in _KNOWN_LANGS:
                return name.lower()
    return None


def _code_language(pre: LexborNode, code: LexborNode | None) -> str | None:
    parent = pre.parent
    grandparent = parent.parent if parent is not None else None
    for node, bare in ((code, True), (pre, True), (parent, False), (grandparent, False)):
        lang = _lang_of(node, bare=bare)
        if lang:
            lang = _LANG_ALIASES.get(lang.lower(), lang)
            return lang if _LANG_OK.match(lang) else None
    return None


def _code_text(pre: LexborNode) -> str:
    """The whole text of a ``<pre>``, line breaks written as ``<br>`` included."""
    for br in pre.css("br"):
        br.replace_with("\n")
    return pre.text(deep=True)


def _prepare_code(tree: LexborHTMLParser, content: LexborNode) -> None:
    pres = content.css("pre")
    if any(within(pre, _PRE) for pre in pres):  # rare: a <pre> inside another
        for pre in pres:
            # css() matches the node itself too: look at the children.
            if pre.parent is not None and any(child.tag == "pre" for child in pre.iter()):
                pre.unwrap()
        # Outermost only: decomposing a block frees any <pre> nested deeper in it.
        pres = [pre for pre in content.css("pre") if not within(pre, _PRE)]
    for pre in pres:
        code = pre.css_first("code")
        lang = _code_language(pre, code)
        fresh = tree.create_node("pre")
        inner = tree.create_node("code")
        if lang is not None:
            fresh.attrs["class"] = f"language-{lang}"
            inner.attrs["class"] = f"language-{lang}"
        text = _code_text(pre)
        if text:
            inner.insert_child(text)
        fresh.insert_child(inner, move=True)
        pre.insert_before(fresh, move=True)
        pre.decompose()


def _collapse_inline_code(content: LexborNode) -> None:
    """Write the line breaks of inline code's source as the one space a browser shows.

    DocBook indents the continuation lines of a long ``<code>``; CommonMark keeps
    every space of a code span, so ``SELECT      pg_catalog`` would be written.
    """
    found: dict[int, tuple[LexborNode, str]] = {}  # nested code elements share text nodes
    for code in content.css(_INLINE_CODE):
        if "\n" not in code.text(deep=True):
            continue
        for node in code.traverse(include_text=True):
            text = node.text_content or "" if node.tag == "-text" else ""
            if "\n" in text:
                found[node.mem_id] = (node, _SOURCE_BREAK.sub(" ", text))
    for node, text in found.values():
        node.replace_with(text)


def _prepare_admonitions(tree: LexborHTMLParser, content: LexborNode) -> None:
    # Innermost first, so an outer admonition moves an already rebuilt inner one.
    for box in reversed(content.css(_ADMONITIONS)):
        if box.tag in ("pre", "code", "span", "a", "p") or box.parent is None:
            continue
        quote = tree.create_node("blockquote")
        title_node = box.css_first(_ADMONITION_TITLES)
        title = " ".join(title_node.text(deep=True).split()) if title_node else ""
        if title_node is not None:
            title_node.decompose()
        if title:
            para = tree.create_node("p")
            strong = tree.create_node("strong")
            strong.insert_child(title)
            para.insert_child(strong, move=True)
            quote.insert_child(para, move=True)
        body = box.css_first("td.content") if box.tag == "div" else None
        box.insert_before(move_children(body if body is not None else box, quote), move=True)
        box.decompose()


def _is_blank(node: LexborNode) -> bool:
    """Whitespace text, or an element holding nothing but whitespace (DocBook's ``<p> </p>``)."""
    if node.tag == "-text":
        return not (node.text_content or "").strip()
    if node.tag in ("img", "hr", "br", "pre", "table") or node.css_first("img, hr, pre, table"):
        return False
    return node.is_element_node and not node.text(deep=True).strip()


def _separate_quotes(tree: LexborHTMLParser, content: LexborNode) -> None:
    """Keep adjacent block quotes (admonitions) apart: Markdown would merge them.

    Quotes count as adjacent across blank text and empty elements, which write nothing.
    """
    for quote in content.css("blockquote"):
        previous = quote.prev
        while previous is not None and _is_blank(previous):
            previous = previous.prev
        if previous is not None and previous.tag == "blockquote":
            para = tree.create_node("p")
            para.insert_child(QUOTE_BREAK)
            quote.insert_before(para, move=True)


def _mark_link_text(link: LexborNode, content: LexborNode) -> None:
    texts = [
        node
        for node in link.traverse(include_text=True)
        if node.tag == "-text" and _NEEDS_MARKING.search(node.text_content or "")
    ]
    if not texts or within(link, _CODE_TAGS, content):
        return
    for node in texts:
        if not within(node, _CODE_TAGS, link) and node.tag == "-text":
            node.replace_with((node.text_content or "").translate(_MARK_TABLE))


def _to_markdown(html: str) -> str:
    markdown = convert(html, _options()).content or ""
    if "\\" in markdown and _BACKSLASHED_MARK.search(markdown) is not None:
        # The page's own backslash before an escaped character would escape the escape
        # ("x\\" + "\\<" reads as a backslash, then live HTML): it is written escaped.
        markdown = _BACKSLASHED_MARK.sub(_doubled, markdown)
    for marker, escaped in _UNMARK:
        if marker in markdown:
            markdown = markdown.replace(marker, escaped)
    return markdown.replace(QUOTE_BREAK, "")


def _drop_marks(content: LexborNode) -> None:
    """Take the characters the passes use as marks (``_marks``) out of the page's text.

    Its text as parsed, so a mark written as a character reference counts too; image
    alt text, which may become text, is cleaned where it does (``_prepare_images``).
    """
    if not holds_marks(content.text(deep=True)):
        return  # every page but a hostile one
    found = []
    for node in content.traverse(include_text=True):
        if node.tag == "-text":
            text = node.text_content or ""
            if holds_marks(text):
                found.append((node, without_marks(text)))
    for node, text in found:
        node.replace_with(text)


def _doubled(match: re.Match[str]) -> str:
    return match.group() * 2


def _escape_text(content: LexborNode) -> None:
    """Escape text outside code that Markdown would read as markup.

    ``<`` (it would start HTML), a ``!`` that would turn the link after it into an
    image, and a ``]`` that closes a link's text (``](``, ``][``, ``]:``), so that a
    page whose text spells ``[x](javascript:...)`` or ``![](https://tracker/)`` stays
    that text and never becomes a link or an image in a Markdown renderer. Both look
    across elements, as the Markdown will: the ``]`` may end one text node and the
    ``(`` start the next (``[x]<span>(...)</span>``), and the link may follow the
    ``!`` inside a ``<span>`` or after a comment.
    """
    whole = content.text(deep=True)
    brackets = _LINK_CLOSE.search(whole) is not None
    if "<" not in whole and "!" not in whole and "`" not in whole and not brackets:
        return  # most pages: one native pass instead of a Python walk of every node
    found: dict[int, tuple[LexborNode, str]] = {}
    previous: tuple[LexborNode, str] | None = None  # the last text node outside code
    bang: tuple[LexborNode, str] | None = None  # a text node ending "!", until words come
    for node in content.traverse(include_text=True):
        if node.tag == "a" and bang is not None:  # "!" then a link: not an image
            before, shown = found.get(id(bang[0]), bang)
            found[id(before)] = (before, shown[:-1] + LINK_TEXT["!"])
            bang = None
            continue
        if node.tag != "-text":
            continue
        text = node.text_content or ""
        if not text.strip():
            continue
        bang = None
        if within(node, _CODE_TAGS, content):
            previous = None
            continue
        marked = text
        if "<" in marked or "`" in marked:  # HTML, or a code span's edge moved
            marked = marked.translate(_ANGLE_MARK)
        if brackets and "]" in marked:
            marked = _LINK_CLOSE.sub(_CLOSE_MARK, marked)
        if brackets and previous is not None and marked[0] in _LINK_FOLLOWERS:
            before, shown = previous
            if shown.endswith("]"):
                found[id(before)] = (before, shown[:-1] + _CLOSE_MARK)
        if marked != text:
            found[id(node)] = (node, marked)
        previous = found.get(id(node), (node, marked))
        if marked.endswith("!"):
            bang = previous
    for node, text in found.values():
        node.replace_with(text)


def _prepare_links(content: LexborNode, resolve: Callable[[str], str | None]) -> None:
    for link in content.css("a"):
        attrs = link.attrs
        href = attrs.get("href")
        if href is not None:
            url = resolve(href)
            if url is None:
                del attrs["href"]
            else:
                attrs["href"] = url
        _unmark_attributes(attrs, ("title",))
        if _NEEDS_MARKING.search(link.text(deep=True)):
            _mark_link_text(link, content)


def _prepare_images(content: LexborNode, resolve: Callable[[str], str | None]) -> None:
    for img in content.css("img"):
        attrs = img.attrs
        src = attrs.get("src") or ""
        if not src or src.startswith("data:"):
            src = attrs.get("data-src") or src
        url = resolve(src) if src and not src.startswith("data:") else None
        if url is None or url.startswith("mailto:"):
            alt = without_marks(attrs.get("alt") or "").strip()
            if alt:  # text now: escaped with the page's text (_escape_text runs next)
                img.replace_with(alt)
            else:
                img.decompose()
        else:
            attrs["src"] = url
            _unmark_attributes(attrs, ("alt", "title"))


def _unmark_attributes(attrs: Any, names: tuple[str, ...]) -> None:
    """Take mark characters out of attributes the Markdown writes (a link's title)."""
    for name in names:
        value = attrs.get(name)
        if value and holds_marks(value):
            attrs[name] = without_marks(value)


def _tidy(markdown: str) -> str:
    """Put a blank line before block quotes and after code fences (never inside code)."""
    out: list[str] = []
    fence = ""  # the opening fence while inside a code block
    just_closed = False
    for line in markdown.split("\n"):
        if fence:
            out.append(line)
            if fence in line and closes_fence(line, fence):  # most code lines fail the first
                fence, just_closed = "", True
            continue
        previous = out[-1] if out else ""
        if line.strip() and previous.strip():
            quote_starts = line.startswith(">") and not previous.startswith(">")
            after_fence = just_closed and not previous.lstrip().startswith(">")
            if quote_starts or after_fence:
                out.append("")
        just_closed = False
        fence = opening_fence(line) or ""
        out.append(line)
    return "\n".join(out)


def content_to_markdown(
    tree: LexborHTMLParser, content: LexborNode, base_url: str, link_cache: LinkCache | None = None
) -> str:
    """Prepare ``content`` in place and return it as Markdown (``link_cache``: the crawl's)."""
    # Remembered per page: pages repeat their hrefs (tables of contents, images).
    resolve = functools.cache(
        link_resolver(base_url, keep_fragment=True, allow_mailto=True, cache=link_cache)
    )
    _drop_marks(content)
    _prepare_code(tree, content)
    _collapse_inline_code(content)
    prepare_structure(tree, content)
    _prepare_admonitions(tree, content)
    unwrap_layout_tables(tree, content)
    _separate_quotes(tree, content)
    _prepare_images(content, resolve)  # alt text left as text is escaped next
    _escape_text(content)
    _prepare_links(content, resolve)
    ids = mark_heading_ids(content)
    tables = slot_code_tables(tree, content, _to_markdown)
    blank_table_headers(tree, content)
    markdown = unmark_heading_ids(fill_slots(_to_markdown(content.html or ""), tables), ids)
    return _without_edge_rules(_tidy(markdown).strip())


def _without_edge_rules(markdown: str) -> str:
    """``markdown`` without thematic breaks at its very start and end.

    Plain string tests: a regex anchored at the end is tried at every position of a page.
    """
    while markdown.startswith(_LEADING_RULE):
        markdown = markdown[len(_LEADING_RULE) :]
    while markdown.endswith(_TRAILING_RULE):
        markdown = markdown[: -len(_TRAILING_RULE)]
    return markdown
