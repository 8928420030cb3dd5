"""Read sitemap files: XML ``urlset`` / ``sitemapindex``, plain-text lists, gzip; bounded.

Pure: bytes in, URLs out. It never fetches (``sitemap_loader`` does, through the
fetcher), never follows a DTD or an entity (a document that declares one is refused
before parsing), never inflates past its byte cap and never returns more than its
URL cap. ``<loc>`` values are resolved against the sitemap's own URL (the bundled site
writes paths, as its port is only known at run time) and only http(s) URLs are kept.

::

    >>> parse_sitemap(b'<urlset><url><loc>/a</loc></url></urlset>', "http://e.test/s.xml")
    ParsedSitemap(index=False, locs=('http://e.test/a',), truncated=False)
"""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from urllib.parse import urljoin, urlsplit

from sitelore.core.charset import decode_body

__all__ = [
    "MAX_SITEMAP_BYTES",
    "MAX_SITEMAP_FILES",
    "MAX_SITEMAP_URLS",
    "BeforeFetch",
    "ParsedSitemap",
    "SitemapError",
    "SitemapLoader",
    "SitemapResult",
    "parse_sitemap",
    "same_host",
    "sitemap_candidates",
    "sitemap_url",
]

#: Decompressed bytes read from one sitemap file (the protocol allows 50 MB).
MAX_SITEMAP_BYTES = 10 * 1024 * 1024
#: Sitemap files fetched per crawl (indexes included).
MAX_SITEMAP_FILES = 20
#: URLs taken from all sitemaps of one crawl (the protocol allows 50 000 per file).
MAX_SITEMAP_URLS = 50_000

_GZIP_MAGIC = b"\x1f\x8b"
_DECLARATION = re.compile(r"<!\s*(?:DOCTYPE|ENTITY)", re.IGNORECASE)
#: Characters of text fed to the XML parser at a time (its events are read in between).
_FEED_CHARS = 64 * 1024
_SCHEMES = frozenset({"http", "https"})


class SitemapError(ValueError):
    """A sitemap file that cannot be read (bad gzip, bad XML, a DTD, too large)."""


@dataclasses.dataclass(frozen=True, slots=True)
class SitemapResult:
    """What the sitemaps of one crawl gave: page URLs, files read, problems."""

    urls: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    truncated: bool = False


#: Awaited before each sitemap request; False skips that file (robots, deadline).
BeforeFetch = Callable[[str], Awaitable[bool]]
#: ``(seed, robots.txt Sitemap: URLs, before_fetch) -> SitemapResult``; never raises
#: for a sitemap it cannot read (``sitemap_loader`` implements it over the fetcher).
SitemapLoader = Callable[[str, Sequence[str], BeforeFetch], Awaitable[SitemapResult]]


@dataclasses.dataclass(frozen=True, slots=True)
class ParsedSitemap:
    """One sitemap file: page URLs, or (``index``) the URLs of more sitemap files."""

    index: bool
    locs: tuple[str, ...]
    truncated: bool = False


def sitemap_candidates(seed: str, declared: Iterable[str]) -> tuple[str, ...]:
    """Sitemap files to read for ``seed``: robots.txt's ``Sitemap:`` lines, then
    ``/sitemap.xml`` on the seed's origin, without duplicates."""
    parts = urlsplit(seed)
    fallback = f"{parts.scheme}://{parts.netloc}/sitemap.xml"
    return tuple(dict.fromkeys([*declared, fallback]))


def _inflate(body: bytes, cap: int) -> bytes:
    """Gunzip ``body`` (every member) to at most ``cap`` bytes."""
    out = bytearray()
    data = body
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(data, cap + 1 - len(out))
        except zlib.error as exc:
            raise SitemapError(f"not valid gzip: {exc}") from None
        if len(out) > cap:
            raise SitemapError(f"more than {cap} bytes once decompressed")
        if not inflater.eof:
            if inflater.unconsumed_tail:
                raise SitemapError(f"more than {cap} bytes once decompressed")
            raise SitemapError("truncated gzip data")
        data = inflater.unused_data.lstrip(b"\0")
        if data and not data.startswith(_GZIP_MAGIC):
            break
    return bytes(out)


def _local(tag: str) -> str:
    return tag.rpartition("}")[2].lower()


def sitemap_url(loc: str, base: str = "") -> str | None:
    """``loc`` as an absolute http(s) URL, resolved against ``base`` (None: not one)."""
    text = loc.strip()
    if not text or any(ch.isspace() for ch in text):
        return None
    try:
        url = urljoin(base, text)
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in _SCHEMES or not parts.netloc:
        return None
    return url


def _parse_xml(text: str, base: str, max_urls: int) -> ParsedSitemap:
    if _DECLARATION.search(text):
        raise SitemapError("declares a DTD or entities; refused")
    locs: list[str] = []
    index: bool | None = None
    truncated = False
    # Fed as text, so the parser never looks up the declaration's encoding itself.
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("end",))  # no DTD: above
    try:
        for start in range(0, len(text), _FEED_CHARS):
            parser.feed(text[start : start + _FEED_CHARS])
            for event in parser.read_events():
                element = event[-1]
                if not isinstance(element, ET.Element):  # "end" events carry elements
                    continue
                name = _local(element.tag)
                if name == "loc" and not truncated:
                    url = sitemap_url(element.text or "", base)
                    if url is not None:
                        if len(locs) >= max_urls:
                            truncated = True
                        else:
                            locs.append(url)
                elif name in ("urlset", "sitemapindex"):
                    index = name == "sitemapindex"
                elif name in ("url", "sitemap"):
                    element.clear()
        parser.close()
    except ET.ParseError as exc:
        raise SitemapError(f"not valid XML: {exc}") from None
    if index is None:
        raise SitemapError("no <urlset> or <sitemapindex> root")
    return ParsedSitemap(index, tuple(dict.fromkeys(locs)), truncated)


def _parse_text(text: str, base: str, max_urls: int) -> ParsedSitemap:
    locs: list[str] = []
    for line in text.splitlines():
        url = sitemap_url(line, base)
        if url is None:
            continue
        if len(locs) >= max_urls:
            return ParsedSitemap(False, tuple(dict.fromkeys(locs)), True)
        locs.append(url)
    return ParsedSitemap(False, tuple(dict.fromkeys(locs)))


def parse_sitemap(
    body: bytes,
    url: str,
    *,
    max_bytes: int = MAX_SITEMAP_BYTES,
    max_urls: int = MAX_SITEMAP_URLS,
) -> ParsedSitemap:
    """Read one sitemap file fetched from ``url`` (gzip detected by its magic bytes).

    The text is decoded as the WHATWG Encoding Standard says (a BOM, else the XML
    declaration's label if the standard knows it, else UTF-8), never by a codec a
    file names.

    Raises:
        SitemapError: bad gzip or XML, a DTD, or more than ``max_bytes`` of text.
    """
    if body.startswith(_GZIP_MAGIC):
        body = _inflate(body, max_bytes)
    elif len(body) > max_bytes:
        raise SitemapError(f"more than {max_bytes} bytes")
    text = decode_body(body, None, xml=True)
    head = text.lstrip(" \t\r\n")
    try:
        if head.startswith("<"):
            return _parse_xml(head, url, max_urls)
        return _parse_text(head, url, max_urls)
    except SitemapError:
        raise
    except Exception as exc:  # a parser's surprise costs this file, never the crawl
        raise SitemapError(f"could not be read: {type(exc).__name__}: {exc}") from exc


def same_host(url: str, others: Sequence[str]) -> bool:
    """True when ``url`` has the host (and port) of one of ``others``."""
    netloc = urlsplit(url).netloc.lower()
    return any(urlsplit(other).netloc.lower() == netloc for other in others)
