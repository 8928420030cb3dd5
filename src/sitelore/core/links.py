"""Resolve the raw hrefs of a page into the absolute http(s) links a crawl can follow.

Pure string work: no parsing of HTML happens here (the converter hands over the
``href`` values it found) and nothing is fetched. Links are resolved against a base
URL (the page's ``<base href>`` when it has one, else its final URL), fragments are
cut off, links carrying credentials are dropped, and duplicates are removed keeping
the first occurrence::

    >>> resolve_links(["b.html#x", "/c", "#top", "mailto:a@b.c"], "https://ex.com/a/")
    ('https://ex.com/a/b.html', 'https://ex.com/c')

Hot path (a docs page carries ~90 hrefs, most of them the same on every page of a
directory: sidebar, breadcrumbs, footer): a :class:`LinkCache` that a crawl owns
remembers what each href resolved to per base directory, so a repeated href costs one
dict lookup. On a miss, the base URL is parsed once per page (:class:`_Base`), and an
href made only of characters that need no escaping, with no scheme, authority or
``;params`` of its own, is joined by plain string work that follows
``urllib.parse.urljoin`` step for step. Anything else takes the general path
(``urljoin`` + ``urlsplit`` + ``quote``); both give the same answer, which a property
test checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from urllib.parse import quote, urljoin, urlparse, urlsplit, urlunsplit

__all__ = ["LinkCache", "link_resolver", "resolve_link", "resolve_links"]

_WEB_SCHEMES = frozenset({"http", "https"})
#: Characters kept as they are when a resolved URL is re-quoted: the reserved set,
#: the unreserved set and "%" (already-escaped octets stay escaped).
_SAFE_URL_CHARS = "!#$%&'()*+,-./:;=?@[]_~"
#: Text that ``quote(text, safe=_SAFE_URL_CHARS)`` leaves as it is, minus "#" and ";"
#: (fragments and params are cut or refused before this is asked).
_PLAIN = re.compile(r"[A-Za-z0-9\-._~!$%&'()*+,/:=?@\[\]]*")


class _Base:
    """A base URL parsed once, for joining many hrefs against it by string work.

    ``usable`` is False when the fast join must not be used for this base (not
    http(s), credentials, a bad port, a path that would need escaping or has
    ``;params``); every href then takes the general path.
    """

    __slots__ = ("directory", "dotted", "key", "origin", "scheme", "url", "usable")

    def __init__(self, url: str) -> None:
        self.url = url
        self.usable = False
        self.origin = self.scheme = ""
        self.directory: list[str] = []
        self.dotted = False
        self.key = ""
        try:
            parts = urlsplit(url)
            _ = parts.port  # raises ValueError on a malformed port
        except ValueError:
            return
        path = parts.path
        if (
            parts.scheme not in _WEB_SCHEMES
            or not parts.hostname
            or parts.username is not None
            or parts.password is not None
            or not path.startswith("/")
            or ";" in path
            or _PLAIN.fullmatch(path) is None
        ):
            return
        self.scheme = parts.scheme
        self.origin = f"{parts.scheme}://{parts.netloc.lower()}"
        # urljoin: the base's last segment is not a directory unless it is empty.
        segments = path.split("/")
        if segments[-1] != "":
            del segments[-1]
        self.directory = segments
        self.dotted = "." in segments or ".." in segments
        # What an href with a path of its own resolves against: scheme, host, directory.
        self.key = self.origin + "/".join(segments) + "/"
        self.usable = True

    def takes_page(self, raw: str) -> bool:
        """Whether urljoin takes this page's file name and query for ``raw`` (``?q``, ``//``)."""
        try:
            parts = urlparse(raw, self.scheme)
        except ValueError:
            return True
        return parts.scheme == self.scheme and not (parts.netloc or parts.path or parts.params)

    def join(self, raw: str, keep_fragment: bool) -> str | None:
        """``raw`` resolved like the general path, or None when only that path can tell.

        ``raw`` is already stripped and non-empty and is not fragment-only.
        """
        rest, _, fragment = raw.partition("#")
        if (
            not rest
            or rest[0] == "?"
            or rest.startswith("//")
            or ";" in rest
            or _PLAIN.fullmatch(rest) is None
            or (keep_fragment and fragment and _PLAIN.fullmatch(fragment) is None)
        ):
            return None
        path, _, query = rest.partition("?")
        dotted = "/." in "/" + path  # a segment starting with "." may be "." or ".."
        if path[0] == "/":
            segments = path.split("/")
        elif ":" in path.partition("/")[0]:
            return None  # it may name a scheme
        else:
            # Exactly urljoin's merge: base directory + reference, inner empties dropped.
            segments = self.directory + path.split("/")
            segments[1:-1] = [segment for segment in segments[1:-1] if segment]
            dotted = dotted or self.dotted
        if dotted:
            segments = _remove_dots(segments)
        joined = "/".join(segments)
        if joined[:1] != "/":
            joined = "/" + joined
        url = self.origin + joined
        if query:
            url = f"{url}?{query}"
        if keep_fragment and fragment:
            url = f"{url}#{fragment}"
        return url


class LinkCache:
    """What hrefs resolved to, per base directory, for :func:`resolve_links` in one crawl.

    An href resolves the same against every page of one directory unless urljoin
    builds it from the page's own path and query (``?q``, ``http:``, ``//`` alone), so
    the answer is kept under (directory, href); those few are resolved every time and
    not kept. Bounded: when ``max_entries`` is reached the cache starts again empty,
    so memory stays flat however long the crawl.

    >>> cache = LinkCache()
    >>> resolve_links(["../b/x.html"], "https://ex.com/a/1.html", cache=cache)
    ('https://ex.com/b/x.html',)
    >>> len(cache)
    1
    """

    __slots__ = ("_entries", "max_entries")

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._entries: dict[tuple[str, str], str | None] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"LinkCache({len(self._entries)}/{self.max_entries} entries)"

    def resolve(self, href: str, base: _Base) -> str | None:
        """``href`` resolved against ``base`` (usable), from the cache when known."""
        key = (base.key, href)
        entries = self._entries
        try:
            return entries[key]
        except KeyError:
            pass
        # As _resolve does (no fragments kept, no mailto).
        raw = _raw(href)
        if not raw or raw.startswith("#"):
            return None
        url = base.join(raw, keep_fragment=False)
        if url is None:
            url = _resolve_general(raw, base.url, keep_fragment=False)
            if base.takes_page(raw):
                return url
        if len(entries) >= self.max_entries:
            entries.clear()
        entries[key] = url
        return url


def _remove_dots(segments: list[str]) -> list[str]:
    """urljoin's treatment of ``.`` and ``..`` segments (excess ``..`` are ignored)."""
    out: list[str] = []
    for segment in segments:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")
    return out or [""]


def resolve_link(
    href: str, base_url: str, *, keep_fragment: bool = False, allow_mailto: bool = False
) -> str | None:
    """Return ``href`` made absolute against ``base_url``, or None when it is not kept.

    Kept: http(s) URLs without credentials (and ``mailto:`` when ``allow_mailto``).
    Dropped: empty and fragment-only hrefs (unless ``keep_fragment``), other schemes
    (``javascript:``, ``data:``, ``ftp:`` ...), unparsable URLs. The fragment is cut
    off unless ``keep_fragment``. Characters not allowed in a URL are percent-encoded.
    """
    return _resolve(href, _Base(base_url), keep_fragment=keep_fragment, allow_mailto=allow_mailto)


def link_resolver(
    base_url: str,
    *,
    keep_fragment: bool = False,
    allow_mailto: bool = False,
    cache: LinkCache | None = None,
) -> Callable[[str], str | None]:
    """:func:`resolve_link` with ``base_url`` and the options bound, the base parsed once.

    For resolving many hrefs of one page::

        resolve = link_resolver(page_url, keep_fragment=True)
        urls = [resolve(href) for href in hrefs]

    ``cache``, the crawl's, answers the hrefs the options leave alone (no fragment or mailto).
    """
    base = _Base(base_url)
    cached = cache if cache is not None and base.usable else None

    def resolve(href: str) -> str | None:
        if cached is None or "#" in href or (allow_mailto and _raw(href)[:7].lower() == "mailto:"):
            return _resolve(href, base, keep_fragment=keep_fragment, allow_mailto=allow_mailto)
        return cached.resolve(href, base)

    return resolve


def _raw(href: str) -> str:
    """``href`` without outer whitespace, tabs or line breaks (cheaper than str.translate)."""
    return href.strip().replace("\t", "").replace("\n", "").replace("\r", "")


def _resolve(
    href: str, base: _Base, *, keep_fragment: bool = False, allow_mailto: bool = False
) -> str | None:
    raw = _raw(href)
    if not raw or (raw.startswith("#") and not keep_fragment):
        return None
    if allow_mailto and raw[:7].lower() == "mailto:":
        address = raw[7:].split("?", 1)[0].strip()
        return "mailto:" + quote(address, safe="@+.-_~!$&'*=,;") if address else None
    joined = base.join(raw, keep_fragment) if base.usable else None
    if joined is not None:
        return joined
    return _resolve_general(raw, base.url, keep_fragment=keep_fragment)


def _resolve_general(raw: str, base_url: str, *, keep_fragment: bool) -> str | None:
    """The general path: ``urljoin``, then check, escape and reassemble."""
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


def resolve_links(
    hrefs: Iterable[str], base_url: str, *, cache: LinkCache | None = None
) -> tuple[str, ...]:
    """Resolve ``hrefs`` against ``base_url``; keep absolute http(s) links, in order, once.

    Fragments are stripped, so ``a.html#x`` and ``a.html#y`` are one link; fragment-only
    links, other schemes and links with credentials are dropped. ``cache`` (one per
    crawl) makes hrefs seen on earlier pages of the same directory cost a lookup.
    """
    base = _Base(base_url)
    cached = cache if cache is not None and base.usable else None
    urls: dict[str, None] = {}  # first occurrences, in order
    for href in dict.fromkeys(hrefs):
        url = _resolve(href, base) if cached is None else cached.resolve(href, base)
        if url is not None:
            urls[url] = None
    return tuple(urls)
