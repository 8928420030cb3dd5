"""Find a page's main content element and strip the chrome left inside it.

Selection tries documentation-theme containers first, then generic landmarks, then
"the deepest element holding most of the page's non-link text" (one bottom-up pass
over the tree measures every element). Clean-up removes, in place, what a reader of
the content does not need: scripts and styles, hidden elements, navigation, asides,
page headers and footers, cookie banners, "edit this page" links and permalink
anchors. Every removal takes the outermost matches only, because decomposing a node
frees its whole subtree in lexbor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from selectolax.lexbor import LexborNode

from sitelore.convert._title import heading_text, names_page

__all__ = [
    "clean_content",
    "find_content",
    "is_docs_page",
    "is_hidden",
    "select_content",
    "text_length",
]

#: DocBook (PostgreSQL, ...) pages: the one division between the navheader and footer.
_DOCBOOK = ", ".join(
    f"body > div.{name}"
    for name in (
        "book", "part", "chapter", "appendix", "preface", "reference", "refentry", "article",
        "sect1", "sect2", "sect3", "section", "index", "glossary", "bibliography", "set",
        "colophon", "legalnotice", "partintro",
    )
)  # fmt: skip
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
    r"|pdoc|vitepress|vuepress|gitbook|antora|starlight",
    re.IGNORECASE,
)

#: Removed wherever they appear inside the content.
_ALWAYS_DROP = (
    "script, style, noscript, template, iframe, object, embed, canvas, svg, dialog, "
    "button, input, select, textarea, link, meta, "
    "nav, aside:not(.footnote):not(.footnote-list), footer, "
    "[hidden], [aria-hidden=true i], "
    "[role=navigation i], [role=search i], [role=complementary i], [role=contentinfo i], "
    "[role=banner i], [role=dialog i], [role=alertdialog i], "
    "a.headerlink, a.srclink, a.test-arrow, .rightside, .out-of-band, summary.hideme, "
    "a.anchor, .notable-traits, div.tooltip, "
    "div.navheader, div.navfooter, .copy-button, .clipboard-button, .linenodiv, "
    "td.linenos, .lineno"
)

#: Elements whose class or id names them as chrome; confirmed by ``_CHROME_NAME``.
_CHROME_CANDIDATES = (
    "[class*=nav i], [id*=nav i], [class*=sidebar i], [id*=sidebar i], "
    "[class*=breadcrumb i], [id*=breadcrumb i], [class*=cookie i], [id*=cookie i], "
    "[class*=consent i], [id*=consent i], [class*=gdpr i], [class*=share i], "
    "[class*=social i], [class*=related i], [class*=comment i], [id*=comment i], "
    "[class*=edit i], [class*=prev i], [class*=next i], [class*=pager i], "
    "[class*=pagination i], [class*=banner i], "
    "[class*=skip i], [class*=feedback i], [class*=toolbar i], [class*=footer i], "
    "[id*=footer i], [class*=header i], [id*=header i]"
)
_CHROME_NAME = re.compile(
    r"(?:^|[-_])(?:nav|navbar|navigation|navheader|navfooter|nav-links|sidebar|sphinxsidebar|"
    r"breadcrumbs?|cookies?|cookie-banner|consent|gdpr|share|sharing|social|related|"
    r"comments?|edit-?this-?page|edit-?page|edit-?link|pager|pagination|prev-?next|banner|"
    r"skip-?link|skip-?nav|feedback|toolbar|footer|site-?header|page-?header|"
    r"top-?bar)(?:$|[-_])|sidebar$",
    re.IGNORECASE,
)
#: Chrome names that are dropped whatever their size (consent walls can be long).
_ALWAYS_CHROME = re.compile(r"cookie|consent|gdpr", re.IGNORECASE)
#: A chrome-named element is kept when it holds this much non-link text.
_CHROME_MAX_TEXT = 400
_CHROME_MIN_LINK_DENSITY = 0.5

_PERMALINK_TEXTS = frozenset({"", "¶", "#", "§", "🔗", "link", "permalink", "¶#"})
_EDIT_LINK = re.compile(
    r"^\s*(?:edit(?: this page| on github| on gitlab| page| source)?|improve this (?:page|doc)"
    r"|view (?:page )?source|show source|suggest (?:an )?edit|report an? (?:issue|bug))\s*$",
    re.IGNORECASE,
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
#: A form holding less non-link text than this is a search or login box.
_SMALL_FORM_TEXT = 200
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


def is_hidden(node: LexborNode) -> bool:
    """Whether ``node`` itself is hidden by ``hidden``, ``aria-hidden`` or inline style."""
    attrs = node.attributes
    if "hidden" in attrs:
        return True
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = attrs.get("style")
    return bool(style and _HIDDEN_STYLE.search(style))


def _visible(node: LexborNode) -> bool:
    current: LexborNode | None = node
    while current is not None and current.tag not in ("html", "-document"):
        if current.tag in ("template", "noscript") or is_hidden(current):
            return False
        current = current.parent
    return True


def text_length(node: LexborNode) -> int:
    """Characters of visible-looking text under ``node``, whitespace excluded."""
    return sum(len(part) for part in node.text(deep=True, separator=" ").split())


def is_docs_page(body: LexborNode) -> bool:
    """Whether the page says it was made by a documentation tool (generator, permalinks)."""
    root = body.parent if body.parent is not None else body
    generator = root.css_first("meta[name=generator i]")
    if generator is not None and _DOCS_GENERATORS.search(generator.attributes.get("content") or ""):
        return True
    return body.css_first("a.headerlink") is not None


def find_content(body: LexborNode, page_title: str | None = None) -> tuple[LexborNode | None, bool]:
    """Return (main content element or None, whether the page is a docs page).

    ``page_title`` (the ``<title>`` text) helps tell the page's own heading from a
    site name when the heading sits just before the content element.
    """
    docs = is_docs_page(body)
    groups = (
        (True, _THEME_CONTAINERS),
        (docs, _DOCS_CONTAINERS if docs else ()),
        (docs, _LANDMARKS),
    )
    for found_docs, selectors in groups:
        for selector in selectors:
            for node in body.css(selector):
                if _visible(node) and node.text(deep=True).strip():
                    _adopt_title_block(node, page_title)
                    return node, found_docs
    densest = _densest(body)
    if densest is not None:
        _adopt_title_block(densest, page_title)
    return densest, docs


def select_content(body: LexborNode, page_title: str | None = None) -> LexborNode | None:
    """Return the main content element under ``body``, or None when nothing stands out."""
    return find_content(body, page_title)[0]


def _adopt_title_block(content: LexborNode, page_title: str | None) -> None:
    """Move the page's title block into ``content`` when it sits just before it.

    AsciiDoc puts the h1 in ``#header`` before ``#content``, Doxygen its title in
    ``div.header`` before ``div.contents``. Not done when the content has an h1 or
    a heading naming the page already (mdBook's site-name h1 precedes ``main``).
    """
    if content.css_first("h1") is not None:
        return
    headings = content.css(_PAGE_HEADINGS)[:_MAX_HEADINGS]
    if any(names_page(heading_text(node), page_title) for node in headings):
        return
    sibling = content.prev
    for _ in range(_TITLE_BLOCK_LOOKBACK):
        while sibling is not None and not sibling.is_element_node:
            sibling = sibling.prev
        if sibling is None:
            return
        if _is_title_block(sibling):
            _remove_outermost(sibling.css("*"), sibling, lambda node: not _is_link_block(node))
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
    return _link_text_length(node) / size if size else 0.0


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


def _has_marked_ancestor(node: LexborNode, marked: set[int], stop: LexborNode) -> bool:
    current = node.parent
    stop_id = stop.mem_id
    while current is not None and current.mem_id != stop_id:
        if current.mem_id in marked:
            return True
        current = current.parent
    return False


def _remove_outermost(
    nodes: Iterable[LexborNode],
    root: LexborNode,
    keep_if: Callable[[LexborNode], bool] | None = None,
) -> None:
    """Decompose ``nodes`` (in document order), skipping those inside another one.

    ``keep_if`` is asked only about nodes not already inside a doomed one.
    """
    marked: set[int] = set()
    doomed: list[LexborNode] = []
    root_id = root.mem_id
    for node in nodes:
        if node.mem_id == root_id or node.mem_id in marked:
            continue
        if _has_marked_ancestor(node, marked, root):
            continue
        if keep_if is not None and keep_if(node):
            continue
        marked.add(node.mem_id)
        doomed.append(node)
    for node in doomed:
        node.decompose()


def _link_text_length(node: LexborNode) -> int:
    return sum(text_length(link) for link in node.css("a"))


def _is_chrome(node: LexborNode) -> bool:
    attrs = node.attributes
    names = f"{attrs.get('class') or ''} {attrs.get('id') or ''}".split()
    if not any(_CHROME_NAME.search(name) for name in names):
        return False
    if node.css_first("pre") is not None:
        return False  # a docs section about cookies or comments, with its examples
    if any(_ALWAYS_CHROME.search(name) for name in names):
        return True
    if node.tag in ("body", "main", "article", "pre", "code", "table", "h1", "h2"):
        return False
    if node.css_first("h1") is not None:
        return False
    size = text_length(node)
    if size == 0:
        return True
    links = _link_text_length(node)
    return size - links < _CHROME_MAX_TEXT or links / size >= _CHROME_MIN_LINK_DENSITY


def _is_permalink(node: LexborNode) -> bool:
    href = node.attributes.get("href") or ""
    if not href.startswith("#"):
        return False
    return node.text(deep=True).strip().lower() in _PERMALINK_TEXTS and not node.css_first("img")


def _is_edit_link(node: LexborNode) -> bool:
    text = node.text(deep=True)
    return len(text) < 60 and _EDIT_LINK.match(text) is not None


def _is_small_form(node: LexborNode) -> bool:
    return text_length(node) - _link_text_length(node) < _SMALL_FORM_TEXT


def _is_page_header(node: LexborNode) -> bool:
    return node.css_first("h1, h2, h3") is None


def _in_code(node: LexborNode) -> bool:
    """Whether ``node`` is or sits inside ``<pre>``/``<code>``: code text is never chrome."""
    current: LexborNode | None = node
    while current is not None:
        if current.tag in ("pre", "code"):
            return True
        current = current.parent
    return False


def clean_content(content: LexborNode) -> None:
    """Remove chrome, hidden and non-content elements from ``content``, in place.

    Boilerplate rules (chrome names, hidden styles, page headers, forms) never
    remove anything inside ``<pre>`` or ``<code>``: a highlighter's
    ``<span class="comment">`` is code.
    """
    _remove_outermost(content.css(_ALWAYS_DROP), content)
    _remove_outermost(
        content.css("[style]"), content, lambda node: _in_code(node) or not is_hidden(node)
    )
    _remove_outermost(
        content.css(_CHROME_CANDIDATES),
        content,
        lambda node: _in_code(node) or not _is_chrome(node),
    )
    _remove_outermost(content.css("header"), content, lambda node: not _is_page_header(node))
    _remove_outermost(content.css("form"), content, lambda node: not _is_small_form(node))
    _remove_outermost(
        content.css("a[href]"),
        content,
        lambda node: not (_is_permalink(node) or _is_edit_link(node)),
    )
