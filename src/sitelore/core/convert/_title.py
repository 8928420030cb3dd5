"""Choose a document's title from its ``<title>``, headings, ``og:title`` and URL.

In order: the content's first ``h1``, written as the matching ``<title>`` segment
when one matches, or replaced by a caption before it that is the whole ``<title>``
(Haddock); else a heading of the content, then of the page, that matches a
``<title>`` segment (mdBook and DocBook start pages with h2, Doxygen with a div);
else the page's first ``h1`` that is not a site-name link; else ``og:title``; else
``<title>`` without its site suffix; else the last segment of the URL path. Heading
text is the text content with whitespace collapsed, nothing added.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from selectolax.lexbor import LexborNode

from sitelore.core.convert._tree import squashed_text, within

__all__ = ["MAX_TITLE", "choose_title", "last_path_segment", "names_page"]

#: Separators between the segments of a <title>: hyphen, en and em dash, bar, dots,
#: guillemet, colon (written as escapes, so no look-alike characters hide here).
_DASHES = "\u2013\u2014\u00b7\u2022\u00bb"
_SEPARATORS = re.compile(rf"\s+(?:[-|{_DASHES}:]|::)\s+|\s*[|{_DASHES}]\s*|(?<=[\w+)\]]):\s+")
_NORMALIZE = re.compile(r"[^\w]+")
#: Headings that name a page when it has no h1 (Doxygen writes its title in a div).
_SUBSTITUTE_HEADINGS = "h1, h2, h3, .title"
_MAX_HEADINGS = 30
#: Page parts whose headings never name the page.
_NAVIGATION = frozenset({"nav", "aside"})
#: Elements that caption a page whose h1s are its sections.
_CAPTIONS = ".caption, .title"
#: Characters a title is cut to.
MAX_TITLE = 300


def _norm(text: str) -> str:
    return _NORMALIZE.sub(" ", text.lower()).strip()


def _segments(title: str) -> list[str]:
    parts = [part.strip() for part in _SEPARATORS.split(title)]
    return [part for part in parts if part]


def _matching_segment(heading: str, title: str | None) -> str | None:
    """The part of ``title`` that names the same thing as ``heading``, if any."""
    wanted = _norm(heading)
    if not title or not wanted:
        return None
    whole = _norm(title)
    if whole == wanted:
        return title
    for segment in _segments(title):
        if _norm(segment) == wanted:
            return segment
    # A heading repeated as the title's start ("Logging - Django docs").
    if whole.startswith(wanted + " "):
        return heading
    return None


def names_page(heading: str, title: str | None) -> bool:
    """Whether ``heading`` matches ``title`` or ends with one of its longer segments."""
    wanted = _norm(heading)
    whole = _norm(title or "")
    if not wanted or not whole:
        return False
    if wanted == whole or wanted.startswith(whole + " "):
        return True
    for segment in _segments(title or ""):
        norm = _norm(segment)
        if norm == wanted or (" " in norm and wanted.endswith(" " + norm)):
            return True
    return False


def _is_site_link(h1: LexborNode) -> bool:
    links = h1.css("a")
    return len(links) == 1 and squashed_text(links[0]) == squashed_text(h1)


def last_path_segment(url: str) -> str:
    """The last segment of the URL path without its extension, else the host."""
    path = urlsplit(url).path.rstrip("/")
    segment = unquote(path.rsplit("/", 1)[-1]) if path else ""
    segment = re.sub(r"\.(?:html?|php|aspx?|md|markdown|txt)$", "", segment, flags=re.IGNORECASE)
    return segment or urlsplit(url).hostname or url


def _caption_before_h1(content: LexborNode, page_title: str | None) -> str | None:
    """A caption before the first h1 that is the whole ``<title>`` (Haddock's module name).

    Haddock writes the module's name as ``p.caption`` and its sections as h1s.
    """
    if not page_title or len(_segments(page_title)) != 1:
        return None  # "Page - Site" titles name the page in a segment, matched before
    for node in content.css(f"h1, {_CAPTIONS}")[:_MAX_HEADINGS]:
        if node.tag == "h1":
            return None
        text = squashed_text(node)
        if text and _norm(text) == _norm(page_title):
            return text
    return None


def choose_title(
    page_title: str | None,
    og_title: str | None,
    content: LexborNode | None,
    page: LexborNode | None,
    url: str,
) -> str:
    """Return the best title for the page (never empty)."""
    h1 = content.css_first("h1") if content is not None else None
    text = squashed_text(h1) if h1 is not None else ""
    if text:
        matching = _matching_segment(text, page_title)
        if matching is None and content is not None:
            matching = _caption_before_h1(content, page_title)
        return (matching or text)[:MAX_TITLE]
    if page_title:
        for scope in (content, page):
            if scope is None:
                continue
            for node in scope.css(_SUBSTITUTE_HEADINGS)[:_MAX_HEADINGS]:
                if scope is page and within(node, _NAVIGATION):
                    continue  # a sidebar's heading names the site (gi-docgen's namespace)
                text = squashed_text(node)
                if text and names_page(text, page_title):
                    return text[:MAX_TITLE]
    if page is not None:
        for node in page.css("h1"):
            text = squashed_text(node)
            if text and not _is_site_link(node):
                return text[:MAX_TITLE]
    if og_title:
        return og_title[:MAX_TITLE]
    if page_title:
        # Without its site suffix ("Page - Site"): the first segment names the page.
        return (_segments(page_title) or [page_title])[0][:MAX_TITLE]
    return last_path_segment(url)
