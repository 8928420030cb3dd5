"""Extract the article of a page without a docs container with Readability.

Readability is asked for HTML, and the caller converts that HTML like any other
content, so links are resolved against the page and code and tables go through the
same converter.
"""

from __future__ import annotations

import logging

from selectolax.lexbor import LexborHTMLParser

__all__ = ["extract_article_html"]


def _plain_headings(html: str) -> str:
    """``html`` with headings Readability would drop made plain: no class, id or links.

    Readability deletes a heading whose class or id looks negative (rustdoc's
    ``section-header``) or that is mostly link text (self-links, links to a table of
    contents), so a page of such sections lost every heading.
    """
    tree = LexborHTMLParser(html)
    headings = tree.css("h1, h2, h3, h4, h5, h6")
    for heading in headings:
        attrs = heading.attrs
        for name in ("class", "id"):
            if name in attrs:
                del attrs[name]
        for link in heading.css("a"):
            link.unwrap()
    return tree.html or html if headings else html


def extract_article_html(html: str) -> str | None:
    """Return Readability's article HTML for ``html``, or None when it finds none."""
    from readability import Document  # imported on first article page only
    from readability.readability import Unparseable

    logging.getLogger("readability.readability").setLevel(logging.ERROR)
    try:
        result = Document(_plain_headings(html)).summary(html_partial=True)
    except (Unparseable, ValueError, TypeError):
        return None
    if not isinstance(result, str) or not result.strip():
        return None
    return _without_own_ids(result)


def _without_own_ids(html: str) -> str:
    """Drop the ids Readability gives its own wrappers (``readabilityBody``).

    They are not the page's: a heading anchored to one would point nowhere.
    """
    tree = LexborHTMLParser(html)
    wrappers = tree.css('[id^="readability"]')
    for node in wrappers:
        del node.attrs["id"]
    return (tree.body.inner_html or html) if wrappers and tree.body is not None else html
