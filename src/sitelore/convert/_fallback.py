"""Extract the main content of a page without a docs container: Readability, then trafilatura.

Both are asked for HTML without a URL (trafilatura would resolve links against the
site root), and the caller converts that HTML like any other content, so links are
resolved against the page and code and tables go through the same converter.
"""

from __future__ import annotations

import logging

__all__ = ["extract_article_html", "extract_main_html"]


def extract_article_html(html: str) -> str | None:
    """Return Readability's article HTML for ``html``, or None when it finds none."""
    from readability import Document  # imported on first article page only
    from readability.readability import Unparseable

    logging.getLogger("readability.readability").setLevel(logging.ERROR)
    try:
        result = Document(html).summary(html_partial=True)
    except (Unparseable, ValueError, TypeError):
        return None
    return result if isinstance(result, str) and result.strip() else None


def extract_main_html(html: str) -> str | None:
    """Return trafilatura's main-content HTML for ``html``, or None when it finds none."""
    import trafilatura  # slow import: needed only for pages without a container

    result = trafilatura.extract(
        html,
        url=None,
        output_format="html",
        include_links=True,
        include_images=True,
        include_tables=True,
        include_formatting=True,
        include_comments=False,
        with_metadata=False,
        fast=True,
    )
    return result if isinstance(result, str) and result.strip() else None
