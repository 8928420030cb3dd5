"""Strip, in place, the chrome left inside a page's main content element.

Removed: scripts and styles, hidden elements, navigation, asides, page headers and
footers, cookie banners, navigation tables (Prev, Up, Next), small forms, "edit this
page" links and permalink anchors, and navigation lines that label their links
("Next: <a>, Previous: <a>, Up: <a>", Texinfo's node header). Nothing inside
``<pre>`` or ``<code>`` is ever removed by a boilerplate rule. Every removal takes
the outermost matches only, because decomposing a node frees its whole subtree in
lexbor.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

from sitelore.core.convert._tree import (
    is_hidden,
    link_text_length,
    remove_outermost,
    text_length,
    within,
)

__all__ = ["clean_content"]

_CODE = ("pre", "code")
#: Removed wherever they appear inside the content. (lexbor tries each selector of a
#: list on every element: those sharing a test are grouped under it, here and below.)
_ALWAYS_DROP = (
    "script, style, noscript, template, iframe, object, embed, canvas, svg, dialog, "
    "button, input, select, textarea, link, meta, "
    "nav, aside:not(.footnote):not(.footnote-list), footer, "
    "[hidden], [aria-hidden=true i], "
    "[role]:is([role=navigation i], [role=search i], [role=complementary i], "
    "[role=contentinfo i], [role=banner i], [role=dialog i], [role=alertdialog i]), "
    "a:is(.headerlink, .srclink, .test-arrow, .anchor), summary.hideme, "
    "div:is(.tooltip, .navheader, .navfooter), td:is(.linenos, .listing_lines, .rouge-gutter), "
    "[class]:is(.rightside, .out-of-band, .notable-traits, .copy-button, .clipboard-button, "
    ".linenodiv, .lineno, .section-toc, .mini-toc, .method-click-advice)"
)
#: Elements whose class or id holds one of these words (any case); confirmed by ``_CHROME_NAME``.
#: (Code is never chrome: a highlighter's many spans are not even tried.)
_CHROME_CANDIDATES = ", ".join(
    f"[{name}]:not(pre *):is({', '.join(f'[{name}*={word} i]' for word in words.split())})"
    for name, words in (
        ("class", "nav sidebar breadcrumb cookie consent gdpr share social related comment edit "
         "prev next pager pagination banner skip feedback toolbar footer header"),
        ("id", "nav sidebar breadcrumb cookie consent comment footer header"),
    )
)  # fmt: skip
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
_NEVER_CHROME = frozenset({"body", "main", "article", "pre", "code", "table", "h1", "h2"})
_CHROME_MIN_LINK_DENSITY = 0.5
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_HEADING_SELECTOR = ", ".join(sorted(_HEADINGS))
_NOT_LETTERS = re.compile(r"[\W_]+")

#: Link texts of a navigation bar ("[ << ] [ >> ] [Top] [Contents]", "Prev Up Next").
_NAV_WORDS = frozenset(
    {"<", ">", "<<", ">>", "«", "»", "←", "→", "↑", "?", "prev", "previous", "next", "up",
     "top", "home", "contents", "index", "back", "forward", "toc", "table of contents"}
)  # fmt: skip
#: What a navigation bar may hold besides its links.
_NAV_FILLER = re.compile(r"^[\s\[\]|()·•:,-]*$")
_NAV_MAX_TEXT = 200
_PERMALINK_TEXTS = frozenset({"", "¶", "#", "§", "🔗", "link", "permalink", "¶#"})
_EDIT_LINK = re.compile(
    r"^\s*(?:edit(?: this page| on github| on gitlab| page| source)?|improve this (?:page|doc)"
    r"|view (?:page )?source|show source|suggest (?:an )?edit|report an? (?:issue|bug))\s*$",
    re.IGNORECASE,
)
#: The labels of a navigation line: "Next: <a>...</a>, Up: <a>...</a>" (Texinfo).
_NAV_LABEL = re.compile(r"\b(?:next|previous|prev|up|forward|back|top)\s*:", re.IGNORECASE)
#: Elements a navigation line may hold besides its labels and links.
_NAV_LINE_PARTS = frozenset({"a", "br", "span"})
#: A form holding less non-link text than this is a search or login box.
_SMALL_FORM_TEXT = 200


def _chrome_names(node: LexborNode) -> list[str]:
    """The class names of ``node``, and its id unless that id is its heading's anchor.

    An id spelled by the element's own heading names a section of the text, not a
    page part: ``<h3 id="nav">nav</h3>`` (an option called ``nav``) and ``<section
    id="cookie-objects"><h2>Cookie Objects</h2>`` are content. A section whose title is
    a chrome word alone (``<div id="comments"><h2>Comments</h2>``) keeps its id.
    """
    attrs = node.attributes
    names = (attrs.get("class") or "").split()
    anchor = attrs.get("id") or ""
    if node.tag in _HEADINGS:
        heading: LexborNode | None = node
    else:
        heading = node.css_first(_HEADING_SELECTOR)
        if _CHROME_NAME.fullmatch(anchor) is not None:
            heading = None
    if heading is None or _letters(heading.text(deep=True)) != _letters(anchor):
        names.extend(anchor.split())
    return names


def _letters(text: str) -> str:
    return _NOT_LETTERS.sub("", text).lower()


def _is_chrome(node: LexborNode) -> bool:
    names = _chrome_names(node)
    if not any(_CHROME_NAME.search(name) for name in names):
        return False
    if node.css_first("pre") is not None:
        return False  # a docs section about cookies or comments, with its examples
    if any(_ALWAYS_CHROME.search(name) for name in names):
        return True
    if node.tag in _NEVER_CHROME or node.css_first("h1") is not None:
        return False
    size = text_length(node)
    if size == 0:
        return True
    links = link_text_length(node)
    return size - links < _CHROME_MAX_TEXT or links / size >= _CHROME_MIN_LINK_DENSITY


def _is_permalink(node: LexborNode) -> bool:
    href = node.attributes.get("href") or ""
    if not href.startswith("#"):
        return False
    return node.text(deep=True).strip().lower() in _PERMALINK_TEXTS and not node.css_first("img")


def _is_edit_link(node: LexborNode) -> bool:
    text = node.text(deep=True)
    return len(text) < 60 and _EDIT_LINK.match(text) is not None


def _is_nav_bar(node: LexborNode) -> bool:
    """A short table of two or more links that all say where to go (Prev, Next, Up, Top)."""
    if text_length(node) > _NAV_MAX_TEXT:
        return False
    links = node.css("a")
    if len(links) < 2:
        return False
    rest = node.text(deep=True)
    for link in links:
        text = " ".join(link.text(deep=True).split())
        if text.lower() not in _NAV_WORDS:
            return False
        rest = rest.replace(link.text(deep=True), " ", 1)
    return _NAV_FILLER.match(rest) is not None


def _is_nav_line(node: LexborNode) -> bool:
    """A paragraph of two or more links whose own text is only their labels (``Next:``).

    The link texts may be anything (Texinfo names the next node); the text between
    them may not, so prose that starts "Next: read <a>this</a>" stays.
    """
    text = node.text(deep=False)  # its own text, without its children's
    if ":" not in text or _NAV_LABEL.search(text) is None:
        return False  # nearly every paragraph: one C call, no walk
    links = 0
    for child in node.iter():
        if child.tag == "a" and child.attributes.get("href"):
            links += 1
        elif child.tag not in _NAV_LINE_PARTS:
            return False
    return links >= 2 and _NAV_FILLER.match(_NAV_LABEL.sub(" ", text)) is not None


def _is_small_form(node: LexborNode) -> bool:
    return text_length(node) - link_text_length(node) < _SMALL_FORM_TEXT


def _is_page_header(node: LexborNode) -> bool:
    return node.css_first("h1, h2, h3") is None


def _in_code(node: LexborNode) -> bool:
    """Whether ``node`` is or sits inside ``<pre>``/``<code>``: code text is never chrome."""
    return node.tag in _CODE or within(node, _CODE)


def clean_content(content: LexborNode) -> None:
    """Remove chrome, hidden and non-content elements from ``content``, in place.

    Boilerplate rules (chrome names, hidden styles, page headers, forms) never
    remove anything inside ``<pre>`` or ``<code>``: a highlighter's
    ``<span class="comment">`` is code.
    """
    remove_outermost(content.css(_ALWAYS_DROP), content)
    remove_outermost(
        content.css("[style]"), content, lambda node: _in_code(node) or not is_hidden(node)
    )
    remove_outermost(
        content.css(_CHROME_CANDIDATES),
        content,
        lambda node: _in_code(node) or not _is_chrome(node),
    )
    remove_outermost(content.css("header"), content, lambda node: not _is_page_header(node))
    remove_outermost(content.css("form"), content, lambda node: not _is_small_form(node))
    remove_outermost(
        content.css("table"), content, lambda node: _in_code(node) or not _is_nav_bar(node)
    )
    # Filtered first: the outermost test walks ancestors, and pages have many paragraphs.
    remove_outermost([node for node in content.css("p, div") if _is_nav_line(node)], content)
    remove_outermost(
        content.css("a[href]"),
        content,
        lambda node: not (_is_permalink(node) or _is_edit_link(node)),
    )
