"""Read a page's head metadata: title, description, language, canonical URL, robots, base.

One pass over ``<meta>`` and ``<link>`` elements; URLs are made absolute.
"""

from __future__ import annotations

import dataclasses

from selectolax.lexbor import LexborHTMLParser

from sitelore.core.links import resolve_link

__all__ = ["PageMeta", "read_meta"]


@dataclasses.dataclass(frozen=True, slots=True)
class PageMeta:
    """What the head of a page says about it."""

    base_url: str
    title: str | None = None
    og_title: str | None = None
    description: str | None = None
    lang: str | None = None
    canonical_url: str | None = None
    noindex: bool = False
    nofollow: bool = False


def _squash(text: str | None) -> str | None:
    if text is None:
        return None
    squashed = " ".join(text.split())
    return squashed or None


def read_meta(tree: LexborHTMLParser, url: str) -> PageMeta:
    """Return the metadata of the page parsed as ``tree``, fetched from ``url``."""
    base_url = url
    base = tree.css_first("base[href]")
    if base is not None:
        resolved = resolve_link(base.attributes.get("href") or "", url, keep_fragment=True)
        if resolved is not None:
            base_url = resolved
    title_node = tree.css_first("title")
    title = _squash(title_node.text(deep=True)) if title_node is not None else None
    og_title = description = None
    robots: set[str] = set()
    for meta in tree.css("meta"):
        attrs = meta.attributes
        key = (attrs.get("name") or attrs.get("property") or "").strip().lower()
        value = attrs.get("content")
        if not key or value is None:
            continue
        if key == "description" and description is None:
            description = _squash(value)
        elif key == "og:title" and og_title is None:
            og_title = _squash(value)
        elif key == "robots":
            robots |= {part.strip().lower() for part in value.split(",")}
    canonical = None
    for link in tree.css("link[rel][href]"):
        rels = (link.attributes.get("rel") or "").lower().split()
        if "canonical" in rels:
            canonical = resolve_link(link.attributes.get("href") or "", base_url)
            break
    root = tree.root
    # XHTML (asciidoc's git manual, Javadoc) says xml:lang; HTML's lang wins when both are.
    attrs = root.attributes if root is not None else {}
    lang = _squash(attrs.get("lang")) or _squash(attrs.get("xml:lang"))
    return PageMeta(
        base_url=base_url,
        title=title,
        og_title=og_title,
        description=description,
        lang=lang,
        canonical_url=canonical,
        noindex=bool(robots & {"noindex", "none"}),
        nofollow=bool(robots & {"nofollow", "none"}),
    )
