"""Find a page's main content element, and say whether a documentation tool made the page.

Selection tries documentation-theme containers first, then generic landmarks, then
"the deepest element holding most of the page's non-link text" (one bottom-up pass
over the tree measures every element). A Texinfo page (GNU manuals) is its whole
body: one node or chapter, then its footnotes, between navigation lines that
cleaning removes. A title block just before the content
(AsciiDoc's ``#header``, Doxygen's ``div.header``) is moved into it.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

from sitelore.core.convert._title import names_page
from sitelore.core.convert._tree import (
    is_hidden,
    link_text_length,
    remove_outermost,
    squashed_text,
    text_length,
)

__all__ = ["find_content", "is_docs_page"]

#: DocBook (PostgreSQL, ...) pages: the one division between the navheader and footer.
_DOCBOOK = (
    "body > div:is(.book, .part, .chapter, .appendix, .preface, .reference, .refentry, "
    ".article, .sect1, .sect2, .sect3, .section, .index, .glossary, .bibliography, .set, "
    ".colophon, .legalnotice, .partintro)"
)
#: Containers only documentation themes use: a page with one is a docs page.
_THEME_CONTAINERS = (
    "#apicontent",  # Node.js API docs
    ".theme-doc-markdown",  # Docusaurus
    "article.md-content__inner",  # MkDocs Material
    ".md-content",  # MkDocs Material
    "div.flex-content > main",  # Javadoc 16+
    "div#content.content > main",  # mdBook
)
#: Containers of documentation generators whose names news and blog sites use too
#: (``div.section``, ``#main-content``, ``div.contents``): tried on docs pages only,
#: most specific first.
_DOCS_CONTAINERS = (
    "section#main-content",  # rustdoc
    ".markdown-body",  # GitHub-style renderers
    "div.body[role=main]",  # Sphinx basic themes
    "div[role=main]",  # Sphinx, MkDocs, SQLAlchemy
    ".bd-article",  # pydata-sphinx-theme
    "main.bd-content",  # older pydata-sphinx-theme
    "div.document div.body",  # Sphinx themes without role
    "div.contents:not(.topic)",  # Doxygen (docutils' "contents topic" is a TOC)
    "div.contentContainer",  # older Javadoc
    "body > #content",  # AsciiDoc
    _DOCBOOK,
)
#: Generic landmarks, tried last: pages that only have these (news, blogs) are
#: candidates for article extraction.
_LANDMARKS = ("main", "article", "[role=main]", "#content", ".content")
#: ``<meta name="generator">`` values of documentation tools.
_DOCS_GENERATORS = re.compile(
    r"sphinx|mkdocs|docusaurus|rustdoc|doxygen|docbook|javadoc|asciidoc|mdbook|jsdoc|typedoc"
    r"|pdoc|vitepress|vuepress|gitbook|antora|starlight|makeinfo|texi2any|texi2html",
    re.IGNORECASE,
)
#: Texinfo's generators: their pages hold nothing but the manual (no container: the
#: chapter's ``div`` would leave its footnotes out, and older versions write none).
_TEXINFO = re.compile(r"makeinfo|texi2any|texi2html", re.IGNORECASE)

#: Elements only documentation generators write (Sphinx's permalinks and options script,
#: RDoc's Darkfish theme, whose pages name no generator).
_DOCS_MARKERS = (
    "a.headerlink, script#documentation_options, script[src*=documentation_options], "
    "script[src*=darkfish]"
)
#: Share of the page's non-link text the density fallback requires of its element.
_DENSITY_SHARE = 0.8
#: What marks the block before the content as the page's title block.
_TITLE_MARKERS = "h1, .headertitle"
_TITLE_BLOCK_MAX_TEXT = 1500
_PAGE_HEADINGS = "h2, h3, .title"
_MAX_HEADINGS = 30
_TITLE_BLOCK_LOOKBACK = 1
_LINK_BLOCK_DENSITY = 0.8
#: The density fallback never descends into these (a table's rows are not a page).
_TABLE_PARTS = frozenset(
    {"table", "thead", "tbody", "tfoot", "tr", "td", "th", "pre", "ul", "ol", "dl"}
)
_SKIP_FOR_DENSITY = frozenset(
    {"script", "style", "noscript", "template", "nav", "aside", "footer", "header", "head"}
)


def _visible(node: LexborNode) -> bool:
    current: LexborNode | None = node
    while current is not None and current.tag not in ("html", "-document"):
        if current.tag in ("template", "noscript") or is_hidden(current):
            return False
        current = current.parent
    return True


def _has_text(node: LexborNode) -> bool:
    """``node.text().strip() != ""``, stopping at the first text that is not blank."""
    texts = (part for part in node.traverse(include_text=True) if part.tag == "-text")
    return any((part.text_content or "").strip() for part in texts)


def _generators(body: LexborNode) -> list[str]:
    """The ``content`` of the page's ``<meta name="generator">`` elements."""
    root = body.parent if body.parent is not None else body
    return [node.attributes.get("content") or "" for node in root.css("meta[name=generator i]")]


def is_docs_page(body: LexborNode, generators: list[str] | None = None) -> bool:
    """Whether the page says it was made by a documentation tool.

    The signs: a ``<meta name="generator">`` naming one, Sphinx's permalinks, or
    Sphinx's ``documentation_options`` script, which its pages without permalinks
    (general index, module index, search) carry too, or RDoc's ``darkfish.js``.
    ``generators``: the page's generator names, when the caller has read them.
    """
    if generators is None:
        generators = _generators(body)
    if any(_DOCS_GENERATORS.search(generator) for generator in generators):
        return True
    root = body.parent if body.parent is not None else body
    return root.css_first(_DOCS_MARKERS) is not None


def find_content(body: LexborNode, page_title: str | None = None) -> tuple[LexborNode | None, bool]:
    """Return (main content element or None, whether the page is a docs page).

    ``page_title`` (the ``<title>`` text) helps tell the page's own heading from a
    site name when the heading sits just before the content element.
    """
    generators = _generators(body)
    if any(_TEXINFO.search(generator) for generator in generators):
        return body, True
    docs = is_docs_page(body, generators)
    groups = (
        (True, _THEME_CONTAINERS),
        (docs, _DOCS_CONTAINERS if docs else ()),
        (docs, _LANDMARKS),
    )
    for found_docs, selectors in groups:
        # One walk rules out the whole group (a page holds few of these containers).
        if not selectors or body.css_first(", ".join(selectors)) is None:
            continue
        for selector in selectors:
            for node in body.css(selector):
                if _visible(node) and _has_text(node):
                    _adopt_title_block(node, page_title)
                    return node, found_docs
    densest = _densest(body)
    if densest is not None:
        _adopt_title_block(densest, page_title)
    return densest, docs


def _adopt_title_block(content: LexborNode, page_title: str | None) -> None:
    """Move the page's title block into ``content`` when it sits just before it.

    AsciiDoc puts the h1 in ``#header`` before ``#content``, Doxygen its title in
    ``div.header`` before ``div.contents``. Not done when the content has an h1 or
    a heading naming the page already (mdBook's site-name h1 precedes ``main``).
    """
    if content.css_first("h1") is not None:
        return
    headings = content.css(_PAGE_HEADINGS)[:_MAX_HEADINGS]
    if any(names_page(squashed_text(node), page_title) for node in headings):
        return
    sibling = content.prev
    for _ in range(_TITLE_BLOCK_LOOKBACK):
        while sibling is not None and not sibling.is_element_node:
            sibling = sibling.prev
        if sibling is None:
            return
        if _is_title_block(sibling):
            remove_outermost(sibling.css("*"), sibling, lambda node: not _is_link_block(node))
            first = content.first_child
            if first is None:
                content.insert_child(sibling, move=True)
            else:
                first.insert_before(sibling, move=True)
            return
        sibling = sibling.prev


def _measure(root: LexborNode) -> dict[int, tuple[int, int]]:
    """Map every element under ``root`` to (text chars, link text chars), bottom-up."""
    sizes: dict[int, tuple[int, int]] = {}
    # Iterative post-order: (node, in_link, children_done)
    stack: list[tuple[LexborNode, bool, bool]] = [(root, False, False)]
    pending: list[list[int]] = []
    while stack:
        node, in_link, done = stack.pop()
        if not done:
            stack.append((node, in_link, True))
            pending.append([0, 0])
            child_in_link = in_link or node.tag == "a"
            for child in reversed(list(node.iter(include_text=True))):
                tag = child.tag
                if tag == "-text":
                    size = len((child.text_content or "").strip())
                    pending[-1][0] += size
                    if child_in_link:
                        pending[-1][1] += size
                elif tag and tag[0] != "-" and tag not in _SKIP_FOR_DENSITY:
                    stack.append((child, child_in_link, False))
            continue
        total, links = pending.pop()
        sizes[node.mem_id] = (total, links)
        if pending:
            pending[-1][0] += total
            pending[-1][1] += links
    return sizes


def _link_density(node: LexborNode) -> float:
    size = text_length(node)
    return link_text_length(node) / size if size else 0.0


def _is_link_block(node: LexborNode) -> bool:
    """Breadcrumbs and jump menus: elements whose text is nearly all link text."""
    return node.tag not in ("a", "code") and _link_density(node) >= _LINK_BLOCK_DENSITY


def _is_title_block(node: LexborNode) -> bool:
    """A short block holding a heading that is not just a link (a site name)."""
    if node.tag in ("nav", "aside", "footer") or text_length(node) > _TITLE_BLOCK_MAX_TEXT:
        return False
    return any(_link_density(marker) < _LINK_BLOCK_DENSITY for marker in node.css(_TITLE_MARKERS))


def _densest(body: LexborNode) -> LexborNode | None:
    """The deepest element holding most of the page's non-link text, if not ``body``."""
    sizes = _measure(body)
    total, links = sizes.get(body.mem_id, (0, 0))
    wanted = (total - links) * _DENSITY_SHARE
    if wanted <= 0:
        return None
    node = body
    while True:
        heading = node.css_first("h1")
        for child in node.iter():
            size, child_links = sizes.get(child.mem_id, (0, 0))
            if size - child_links >= wanted:
                if child.tag in _TABLE_PARTS:
                    return None if node is body else node
                # Never descend past the page's heading.
                if heading is not None and child.css_first("h1") is None:
                    return None if node is body else node
                node = child
                break
        else:
            break
    return None if node is body else node
