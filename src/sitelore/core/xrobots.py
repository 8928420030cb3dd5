"""Read the ``X-Robots-Tag`` response header: does this page say noindex or nofollow?

The header carries the same directives as ``<meta name="robots">`` (which the
converter reads), for any content type, PDFs included. Values are comma-separated
directives, optionally led by a crawler's product token (``otherbot: noindex``), which
then applies to that crawler only, up to the next token. ``none`` means both
``noindex`` and ``nofollow``. Unknown directives are ignored. Pure: no I/O.

::

    >>> robots_tag_directives(["noindex"], "sitelore")
    (True, False)
    >>> robots_tag_directives(["otherbot: none", "sitelore: nofollow"], "sitelore")
    (False, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from sitelore.core.models import Document, Headers

__all__ = ["apply_robots_tag", "robots_tag_directives"]

# Directives whose own value contains a colon: never taken for a crawler's token.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})
_NOINDEX = frozenset({"noindex", "none"})
_NOFOLLOW = frozenset({"nofollow", "none"})


def _directives_for(value: str, token: str) -> Iterable[str]:
    """The directives of one header value that apply to the crawler ``token`` (lower case)."""
    agent: str | None = None
    for raw in value.split(","):
        part = raw.strip()
        head, colon, rest = part.partition(":")
        name = head.strip().lower()
        if colon and name and name not in _VALUED and " " not in name:
            agent, part = name, rest.strip()
        if agent is None or agent == token:
            yield part.lower()


def robots_tag_directives(values: Iterable[str], token: str) -> tuple[bool, bool]:
    """``(noindex, nofollow)`` from every ``X-Robots-Tag`` value, for crawler ``token``."""
    lowered = token.strip().lower()
    found = {directive for value in values for directive in _directives_for(value, lowered)}
    return bool(found & _NOINDEX), bool(found & _NOFOLLOW)


def apply_robots_tag(document: Document, headers: Headers, token: str) -> Document:
    """``document`` with the response's ``X-Robots-Tag`` noindex/nofollow added to its own."""
    values = headers.get_all("x-robots-tag")
    if not values:
        return document
    noindex, nofollow = robots_tag_directives(values, token)
    noindex, nofollow = noindex or document.noindex, nofollow or document.nofollow
    if (noindex, nofollow) == (document.noindex, document.nofollow):
        return document
    return dataclasses.replace(document, noindex=noindex, nofollow=nofollow)
