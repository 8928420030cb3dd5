"""Refuse markup no real page has, before the HTML parser spends seconds on it.

lexbor's attribute handling is quadratic: one tag with 100 000 attributes takes it
about a minute. A page with a tag of more than :data:`MAX_ATTRIBUTES` attributes is
refused at once as ``conversion-failed``. This is a cheap shortcut for the known
case; the conversion time cap is what guarantees a page cannot stall a crawl.
"""

from __future__ import annotations

import re

from sitelore.core.errors import ConversionFailedError

__all__ = ["MAX_ATTRIBUTES", "check_markup"]

#: More attributes than this on one tag is refused (real pages stay far below 100).
MAX_ATTRIBUTES = 1000
#: A tag with MAX_ATTRIBUTES attributes is at least this long ("<x" + " a" per attribute).
_LONG_TAG = re.compile(rb"<[A-Za-z][^<>]{%d}" % (2 * MAX_ATTRIBUTES))
#: One start tag with more than MAX_ATTRIBUTES attributes; atomic groups, no backtracking.
_MANY_ATTRIBUTES = re.compile(
    rb"<[A-Za-z](?>[^\s<>]*)"
    rb"(?>\s+(?>[^\s<>=\"'/]+)(?>=(?>\"[^\"]*\"|'[^']*'|[^\s<>\"']*))?){%d}" % MAX_ATTRIBUTES
)


def check_markup(body: bytes, url: str) -> None:
    """Raise ``ConversionFailedError`` when one tag of ``body`` has too many attributes."""
    if _LONG_TAG.search(body) is not None and _MANY_ATTRIBUTES.search(body) is not None:
        raise ConversionFailedError(
            url,
            f"a tag has more than {MAX_ATTRIBUTES} attributes (refused before parsing)",
        )
