"""Choose the main content of a page without a docs container: its landmark or its article.

Readability's article replaces the page's generic landmark (or stands in for a
missing one) only when it keeps every code block and table row; without either the
caller converts the whole body (its chrome removed). Readability works on HTML and
its output is parsed, so it goes through the same converter as any page.

No trafilatura fallback: on the eval sets it ran on 0 of 289 docs pages and 6 of 130
article pages, and those six scored F1 0.944 with it and 0.955 without it
(docs/architecture.md, section 7).
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser, LexborNode

from sitelore.core.convert._readability import extract_article
from sitelore.core.convert._tree import text_length

__all__ = ["article_tree"]

_PAGE_CHROME = (
    "nav, header, footer, aside, [role=navigation i], [role=banner i], [role=contentinfo i]"
)


#: Characters of text Readability's article needs to be taken.
_MIN_ARTICLE_TEXT = 250
#: A landmark shorter than this, holding most of the page's text, is kept as it is.
_MIN_ARTICLE_PAGE = 1500
#: Elements whose text no article holds (Readability deletes them before reading).
_NEVER_ARTICLE_TEXT = frozenset({"script", "style"})


def _chrome_text(body: LexborNode) -> int:
    """Characters of text in the page's outermost chrome landmarks (nav, header, ...)."""
    total = 0
    counted: set[int] = set()
    for node in body.css(_PAGE_CHROME):
        parent = node.parent
        while parent is not None and parent.mem_id not in counted:
            parent = parent.parent
        if parent is None:
            counted.add(node.mem_id)
            total += text_length(node)
    return total


def _count(node: LexborNode, selector: str) -> int:
    return len(node.css(selector))


def _holds_text(root: LexborNode, wanted: int) -> bool:
    """Whether ``root`` holds ``wanted`` characters of text outside scripts and styles.

    Counted as :func:`text_length` counts (whitespace excluded), and only until
    ``wanted``: an article page answers within its first paragraphs.
    """
    total = 0
    for node in root.traverse(include_text=True):
        if node.tag != "-text":
            continue
        parent = node.parent
        if parent is not None and parent.tag in _NEVER_ARTICLE_TEXT:
            continue
        total += len("".join((node.text_content or "").split()))
        if total >= wanted:
            return True
    return False


def _may_hold_article(body: LexborNode) -> bool:
    """Whether the page has the text an article must have, so Readability is worth asking.

    Its article is cut from the page less its scripts and styles, so a page with
    less text (an app shell, a redirect stub) cannot give one: Readability would
    still parse and clean all of it. A ``<template>``'s content is outside lexbor's
    tree but inside lxml's, where Readability may take it: such a page is asked.
    """
    root = body.parent or body
    return _holds_text(root, _MIN_ARTICLE_TEXT) or root.css_first("template") is not None


def _short_page(landmark: LexborNode, body: LexborNode) -> bool:
    """A short landmark holding most of the page: Readability guesses badly there."""
    size = text_length(landmark)
    return size < _MIN_ARTICLE_PAGE and 2 * size >= text_length(body)


def article_tree(
    html: str, body: LexborNode, landmark: LexborNode | None
) -> LexborHTMLParser | None:
    """Readability's article as a tree, when it keeps every code block and table row.

    Used on pages without a docs container (news, blogs). The article must hold
    all the ``<pre>`` blocks and table rows of the generic landmark it would
    replace, or of the whole page when there is none (Readability keeps one best
    block and drops headings it takes for page headers, and docs pages that reach
    here must not lose code or tables); without a landmark, more text than the chrome.
    Readability is not asked on a page with less text than an article needs.
    """
    if landmark is not None and _short_page(landmark, body):
        return None
    if not _may_hold_article(body):
        return None
    tree = extract_article(html)
    if tree is None:
        return None
    article = tree.body
    size = text_length(article) if article is not None else 0
    if article is None or size < _MIN_ARTICLE_TEXT:
        return None
    if landmark is None and size <= _chrome_text(body):
        return None
    source = body if landmark is None else landmark
    for selector in ("pre", "tr"):
        if _count(article, selector) < _count(source, selector):
            return None
    return tree
