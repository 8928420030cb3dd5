"""Resolve the raw hrefs of a page into the absolute http(s) links a crawl can follow.

Pure string work: no parsing of HTML happens here (the converter hands over the
``href`` values it found) and nothing is fetched. Links are resolved against a base
URL (the page's ``<base href>`` when it has one, else its final URL), fragments are
cut off, links carrying credentials are dropped, and duplicates are removed keeping
the first occurrence::

    >>> resolve_links(["b.html#x", "/c", "#top", "mailto:a@b.c"], "https://ex.com/a/")
    ('https://ex.com/a/b.html', 'https://ex.com/c')
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

__all__ = ["resolve_link", "resolve_links"]

_WEB_SCHEMES = frozenset({"http", "https"})
#: Characters kept as they are when a resolved URL is re-quoted: the reserved set,
#: the unreserved set and "%" (already-escaped octets stay escaped).
_SAFE_URL_CHARS = "!#$%&'()*+,-./:;=?@[]_~"
#: Whitespace and control characters that browsers strip from inside URLs.
_STRIP_INSIDE = {ord(c): None for c in "\t\n\r"}


def resolve_link(
    href: str,
    base_url: str,
    *,
    keep_fragment: bool = False,
    allow_mailto: bool = False,
) -> str | None:
    """Return ``href`` made absolute against ``base_url``, or None when it is not kept.

    Kept: http(s) URLs without credentials (and ``mailto:`` when ``allow_mailto``).
    Dropped: empty and fragment-only hrefs (unless ``keep_fragment``), other schemes
    (``javascript:``, ``data:``, ``ftp:`` ...), unparsable URLs. The fragment is cut
    off unless ``keep_fragment``. Characters not allowed in a URL are percent-encoded.
    """
    raw = href.strip().translate(_STRIP_INSIDE)
    if not raw or (raw.startswith("#") and not keep_fragment):
        return None
    if allow_mailto and raw[:7].lower() == "mailto:":
        address = raw[7:].split("?", 1)[0].strip()
        return "mailto:" + quote(address, safe="@+.-_~!$&'*=,;") if address else None
    try:
        absolute = urljoin(base_url, raw)
        parts = urlsplit(absolute)
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return None
    if parts.scheme not in _WEB_SCHEMES or not parts.hostname:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    fragment = quote(parts.fragment, safe=_SAFE_URL_CHARS) if keep_fragment else ""
    path = quote(parts.path, safe=_SAFE_URL_CHARS) or "/"
    query = quote(parts.query, safe=_SAFE_URL_CHARS)
    return urlunsplit((parts.scheme, parts.netloc.lower(), path, query, fragment))


def resolve_links(hrefs: Iterable[str], base_url: str) -> tuple[str, ...]:
    """Resolve ``hrefs`` against ``base_url``; keep absolute http(s) links, in order, once.

    Fragments are stripped, so ``a.html#x`` and ``a.html#y`` are one link; fragment-only
    links, other schemes and links with credentials are dropped.
    """
    seen: set[str] = set()
    done: set[str] = set()
    out: list[str] = []
    for href in hrefs:
        if href in done:
            continue
        done.add(href)
        url = resolve_link(href, base_url)
        if url is not None and url not in seen:
            seen.add(url)
            out.append(url)
    return tuple(out)
