"""Extract the article of a page without a docs container with Readability, as a tree.

Readability is asked for HTML, and the caller converts the tree of that HTML like any
other content, so links are resolved against the page and code and tables go through
the same converter.

Cost (measured on the 100 article pages that reach it, docs/architecture.md section 7):
Readability's own scoring is most of the article path, and this module never changes
what it decides. It only spares work around it: Readability gets one string, without
the elements its cleaner deletes before reading anything, and its answer is parsed
once.
"""

from __future__ import annotations

import logging

from selectolax.lexbor import LexborHTMLParser

from sitelore.core.convert._tree import remove_outermost

__all__ = ["extract_article"]

#: Elements Readability deletes, text and all, before it scores anything (its cleaner
#: kills scripts, styles and ``<link>``; ``summary`` drops ``<noscript>``): left out of
#: the HTML it is given, they cost lxml a parse and the cleaner a walk for nothing.
_UNREAD = "script, style, link, noscript"
_HEADINGS = "h1, h2, h3, h4, h5, h6"


def _readability_input(html: str) -> str:
    """``html`` with headings Readability would drop made plain: no class, id or links.

    Readability deletes a heading whose class or id looks negative (rustdoc's
    ``section-header``) or that is mostly link text (self-links, links to a table of
    contents), so a page of such sections lost every heading. A page that is
    re-serialised for this also loses the elements Readability never reads
    (``_UNREAD``). A page without headings goes as it came: lxml parses lexbor's
    serialisation differently from the raw page, and its article would change.
    """
    tree = LexborHTMLParser(html)
    root = tree.root
    if root is None or tree.css_first(_HEADINGS) is None:
        return html
    remove_outermost(tree.css(_UNREAD), root)
    for heading in tree.css(_HEADINGS):  # after the removal: a dropped one is freed
        attrs = heading.attrs
        for name in ("class", "id"):
            if name in attrs:
                del attrs[name]
        for link in heading.css("a"):
            link.unwrap()
    return tree.html or html


def extract_article(html: str) -> LexborHTMLParser | None:
    """Readability's article for ``html`` as a tree, or None when it finds none."""
    from readability import Document  # imported on first article page only
    from readability.readability import Unparseable

    logging.getLogger("readability.readability").setLevel(logging.ERROR)
    try:
        result = Document(_readability_input(html)).summary(html_partial=True)
    except (Unparseable, ValueError, TypeError):
        return None
    if not isinstance(result, str) or not result.strip():
        return None
    tree = LexborHTMLParser(result)
    _drop_own_ids(tree)
    return tree


def _drop_own_ids(tree: LexborHTMLParser) -> None:
    """Drop the ids Readability gives its own wrappers (``readabilityBody``).

    They are not the page's: a heading anchored to one would point nowhere. The
    body's other attributes are the page's ``<body>`` tag, which Readability returns
    when it keeps the whole body: not content either.
    """
    for node in tree.css('[id^="readability"]'):
        del node.attrs["id"]
    body = tree.body
    if body is not None:
        for name in list(body.attrs.keys()):
            del body.attrs[name]
