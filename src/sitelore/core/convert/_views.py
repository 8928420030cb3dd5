"""Views of one HTML page chosen by the caller: main content or all, some tags kept or dropped.

The stored Markdown is always the default conversion (main content, cleaned). A caller
that asks for another cut (the Firecrawl routes' ``onlyMainContent``, ``includeTags``,
``excludeTags``) gets it from the page's body here, as HTML and as Markdown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from sitelore.core.convert._clean import clean_content
from sitelore.core.convert._content import find_content
from sitelore.core.convert._markdown import content_to_markdown
from sitelore.core.convert._meta import read_meta
from sitelore.core.errors import UsageError

__all__ = ["PageView", "check_selectors", "html_view"]


@dataclasses.dataclass(frozen=True, slots=True)
class PageView:
    """The part of a page a caller asked for, as HTML and as Markdown."""

    html: str
    markdown: str


def check_selectors(field: str, selectors: Sequence[str]) -> None:
    """Refuse a CSS selector that cannot be parsed (UsageError naming ``field``)."""
    probe = LexborHTMLParser("<body></body>")
    for selector in selectors:
        try:
            probe.css(selector)
        except SelectolaxError as exc:
            raise UsageError(f"{field}: {selector!r} is not a CSS selector") from exc


def html_view(
    html: str,
    url: str,
    *,
    only_main_content: bool = True,
    include_tags: Sequence[str] = (),
    exclude_tags: Sequence[str] = (),
) -> PageView:
    """Cut ``html`` (fetched from ``url``) as asked and convert the cut to Markdown.

    ``exclude_tags`` (CSS selectors) are removed first; with ``include_tags`` only the
    elements they match are kept, else the main content (``only_main_content``) or the
    whole body. The kept elements and the main content are cleaned (permalinks, edit
    links, ...) as the stored conversion is; the whole body is left as it is.
    Selectors must have passed :func:`check_selectors`.
    """
    tree = LexborHTMLParser(html)
    meta = read_meta(tree, url)
    for selector in exclude_tags:
        for node in tree.css(selector):
            node.decompose()
    work_tree = tree
    content: LexborNode | None = tree.body
    if include_tags:
        kept = "".join(node.html or "" for sel in include_tags for node in tree.css(sel))
        work_tree = LexborHTMLParser(f"<html><body>{kept}</body></html>")
        content = work_tree.body
    elif only_main_content and content is not None:
        content = find_content(content, meta.title)[0] or content
    if content is None:
        return PageView("", "")
    if include_tags or only_main_content:
        clean_content(content)
    cut = content.html or ""
    return PageView(cut, content_to_markdown(work_tree, content, meta.base_url))
