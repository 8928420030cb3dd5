"""Keep each heading's fragment id in the Markdown, as ``## Heading {#id}``.

Search points into a page at a section (``URL#id``), so a heading's id must survive
conversion. The id is the heading's own ``id``, else that of an ``<a id|name>`` inside
it, else that of the nearest enclosing element whose first heading it is (Sphinx
``<section id>``, DocBook ``<div class="sect2" id>``, rustdoc ``<div id="method.x">``),
else that of an empty ``<a name>`` or ``<span id>`` just before it (gtk-doc, Doxygen).
Before conversion a numbered marker is appended to the heading's text; after it, the
markers become `` {#id}`` (an id never passes through the Markdown escaper).
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborNode

from sitelore.core.convert._marks import HEADING_ID_CLOSE, HEADING_ID_OPEN

__all__ = ["mark_heading_ids", "unmark_heading_ids"]

_HEADINGS = "h1, h2, h3, h4, h5, h6"
_HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_MARKER = re.compile(f"[ \t]*{HEADING_ID_OPEN}([0-9]+){HEADING_ID_CLOSE}")
_ID_OK = re.compile(r"^[^\s{}#\\]{1,256}$")
#: Empty elements that name the heading after them.
_ANCHOR_TAGS = frozenset({"a", "span"})
#: Enclosing elements looked at, upwards from the heading.
_MAX_LEVELS = 4


def _usable(value: str | None) -> str | None:
    return value if value and _ID_OK.match(value) else None


def _heading_id(heading: LexborNode) -> str | None:
    own = _usable(heading.attributes.get("id"))
    if own:
        return own
    # Walks, not queries: cheaper than parsing a selector here (same nodes, same order).
    for anchor in (node for node in heading.traverse() if node.tag == "a"):
        found = _usable(anchor.attributes.get("id")) or _usable(anchor.attributes.get("name"))
        if found:
            return found
    node = heading.parent
    for _ in range(_MAX_LEVELS):
        if node is None:
            break
        first = next((element for element in node.traverse() if element.tag in _HEADING_TAGS), None)
        if first is None or first.mem_id != heading.mem_id:
            break
        found = _usable(node.attributes.get("id"))
        if found:
            return found
        node = node.parent
    return _anchor_before(heading)


def _anchor_before(heading: LexborNode) -> str | None:
    """The id of an empty ``<a name>``/``<span id>`` just before ``heading`` (gtk-doc,
    Doxygen, Texinfo), blank text and comments between them allowed."""
    node = heading.prev
    while node is not None:
        if node.is_element_node:
            if node.tag not in _ANCHOR_TAGS or any(part.is_element_node for part in node.iter()):
                return None
            if (node.text(deep=True) or "").strip():
                return None
            found = _usable(node.attributes.get("id")) or _usable(node.attributes.get("name"))
            if found:
                return found
        elif node.is_text_node and (node.text_content or "").strip():
            return None
        node = node.prev
    return None


def mark_heading_ids(content: LexborNode) -> list[str]:
    """Append a marker to each heading of ``content`` that has an id; the ids, in order."""
    ids: list[str] = []
    for heading in content.css(_HEADINGS):
        found = _heading_id(heading)
        if found is not None and heading.text(deep=True).strip():
            heading.insert_child(f"{HEADING_ID_OPEN}{len(ids)}{HEADING_ID_CLOSE}")
            ids.append(found)
    return ids


def unmark_heading_ids(markdown: str, ids: list[str]) -> str:
    """Turn the markers in ``markdown`` into `` {#id}`` on heading lines, drop any other."""

    def keep(match: re.Match[str]) -> str:
        number = int(match.group(1))
        return f" {{#{ids[number]}}}" if number < len(ids) else ""  # not one of ours: dropped

    lines = markdown.split("\n")
    for number, line in enumerate(lines):
        if HEADING_ID_OPEN not in line:
            continue
        # "**#### x**" is a heading too (html-to-markdown's form inside <summary>).
        if not line.lstrip("*").startswith("#"):
            lines[number] = _MARKER.sub("", line)
            continue
        first = _MARKER.search(line)
        if first is not None and line[first.end() :].strip("* "):
            # Inside a link that wraps the heading's text: the id goes after the link.
            lines[number] = _MARKER.sub("", line).rstrip() + keep(first)
        else:
            lines[number] = _MARKER.sub(keep, line)
    return "\n".join(lines)
