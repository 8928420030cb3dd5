"""URL identity and crawl scope: what one URL *is* within a crawl, and whether to follow it.

:func:`normalize_url` maps every spelling of a URL to the one string a crawl keys on;
:func:`origin` names the server a URL is fetched from; :class:`Scope` decides whether a
discovered link may be followed (same domain, path prefix, exclude globs). Pure string
work: this module never resolves names, never fetches, never reads a clock and keeps no
module-level caches (callers that want one, like the frontier, own it per crawl).

The URL contract
----------------

One normal form, RFC 3986 section 6 (syntax- and scheme-based normalisation), is what
the frontier keys on, what the fetcher requests and what the store keeps. Three entry
points give it, and ``tests/conformance/test_url_contract.py`` runs one table through
all of them:

* :func:`normalize_url` (this module): the whole URL, the crawl's identity;
* :func:`sitelore.core.guard.check_url`: the same URL (``Target.url``), or a refusal: the
  guard accepts less (credentials, control characters, escaped hosts, refused
  addresses) but never spells an accepted URL differently;
* :func:`sitelore.core.robots.normalise_target`: the path and query of that URL, plus the
  one rule RFC 9309 adds (below).

The rules, in order:

1. **Whitespace**: surrounding spaces and C0 controls are stripped; tabs and line
   breaks inside are removed (WHATWG). The guard refuses controls instead.
2. **Scheme**: ``http`` or ``https``, lower-cased; anything else is invalid.
3. **Credentials** (``user:pass@``) are invalid, and never repeated in a message.
4. **Host**: lower-cased; IDNA names become ASCII (``xn--``); escapes in a name are
   decoded (the guard refuses them); one trailing dot is dropped (``a.test.`` is
   ``a.test``: the name the fetcher sends in ``Host``); IPv4 in shorthand,
   decimal, octal or hex becomes dotted decimal; IPv6 is compressed, in brackets;
   zone ids are invalid.
5. **Port**: the default port (80 for http, 443 for https) and an empty port are
   dropped; leading zeros go.
6. **Percent-encoding** of path and query (:func:`sitelore.core.urlparts.normalize_escapes`):
   escapes of unreserved characters (``A-Z a-z 0-9 - . _ ~``) are decoded (``%7e``
   -> ``~``); every other escape keeps its meaning with upper-case hex (``%2f`` ->
   ``%2F``, never ``/``); every character outside RFC 3986's ``pchar / "/" / "?"``
   is percent-encoded as UTF-8: non-ASCII, space, controls, ``"<>\\^`{|}``, ``#``,
   a ``%`` that starts no escape, and ``[`` / ``]`` (``a[1]`` -> ``a%5B1%5D``; RFC
   3986 allows brackets only around an IPv6 host, and this is the form the fetcher
   has always sent and stored). Sub-delims (``!$&'()*+,;=``), ``:`` and ``@`` stay.
7. **Dot segments** (RFC 3986 5.2.4): ``.`` and ``..`` path segments are removed,
   after decoding, so ``%2E%2E`` counts too; ``..`` above the root stays at the root.
   The query keeps its dots.
8. **Path**: an empty path becomes ``/``; otherwise the case, empty segments and the
   trailing slash are kept (``/docs`` and ``/docs/`` are different URLs).
9. **Query**: kept as written (order, case, ``+``, repeated keys); an empty query
   (a bare ``?``) is dropped.
10. **Fragment**: dropped.

What is *not* normalised: no query parameter is sorted or removed, ``www.`` is not
added or dropped, ``index.html`` is not stripped, and ``http`` and ``https`` stay
different URLs. These would merge pages a server may serve differently. (A directory
and its index file with the same text are stored once by the crawl, not by the URL
contract: ``core.twins``.)

**Robots matching** (RFC 9309 2.2.2 and 2.2.3) uses the same escapes on both the
rule's path and the URL's path and query, plus one rule of its own: a literal ``*`` or
``$`` in the URL is written ``%2A`` / ``%24``, so that it matches a rule that escapes
it and never acts as a wildcard or an end anchor. Rule paths are not dot-resolved
(they are patterns, not requests).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from sitelore.core.errors import InvalidURLError
from sitelore.core.models import SkipReason
from sitelore.core.urlparts import ipv4_from_host, normalize_escapes, request_target, trim_url

if TYPE_CHECKING:
    from sitelore.core.options import CrawlOptions

__all__ = ["NOT_DOCUMENTS", "Scope", "normalize_url", "origin"]

_DEFAULT_PORTS: Mapping[str, str] = MappingProxyType({"http": "80", "https": "443"})
_HOST_LABELS = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
_PORT = re.compile(r"[0-9]{1,5}")


def normalize_url(url: str) -> str:
    """Return the identity of an absolute http(s) URL within a crawl.

    Two URLs are the same page exactly when their normalised forms are equal. The
    rules are the module's URL contract (above): scheme and host lower-cased, default
    port dropped, escapes of unreserved characters decoded and others upper-cased,
    what a path or query may not carry escaped (``[`` too), dot segments removed,
    empty query and fragment dropped; path case, query and trailing slash kept.

    Raises :class:`~sitelore.core.errors.InvalidURLError` for unparsable input, schemes
    other than http(s), a missing or malformed host or port, and credentials
    (``user:pass@``; the message never repeats them).

    >>> normalize_url("HTTP://Docs.Example.COM.:80/a/./b/../C%7e[1]?x=1#top")
    'http://docs.example.com/a/C~%5B1%5D?x=1'
    >>> normalize_url("https://example.com")
    'https://example.com/'

    The function is idempotent: ``normalize_url(normalize_url(u)) == normalize_url(u)``.
    """
    scheme, authority, path, query = _normalized_parts(url)
    return f"{scheme}://{authority}{request_target(path, query)}"


def origin(url: str) -> str:
    """Return ``scheme://host[:port]`` of ``url``, normalised (default port dropped).

    >>> origin("https://Docs.Example.com:443/guide/")
    'https://docs.example.com'
    """
    scheme, authority, _, _ = _normalized_parts(url)
    return f"{scheme}://{authority}"


@dataclasses.dataclass(frozen=True, slots=True)
class _Glob:
    """One exclude pattern, matched without backtracking.

    The pattern is cut at every ``*`` into chunks of fixed length (``?`` is one
    character). A text matches when it starts with the first chunk, ends with the
    last, and holds the middle chunks in order in between. Placing each middle
    chunk at its leftmost occurrence is optimal, so matching costs at most one
    scan per chunk: O(len(text) * len(pattern)) in the worst case, never exponential.
    """

    pattern: str
    chunks: tuple[re.Pattern[str], ...]
    widths: tuple[int, ...]
    #: A pattern starting with ``/`` is matched against the path and query only.
    on_path: bool = False

    @classmethod
    def compile(cls, pattern: str) -> _Glob:
        # Escaped as a URL is (rule 6 above), so "a[1]" or "é" matches what the URL holds.
        text = "*".join(normalize_escapes(part) for part in pattern.split("*")).lower()
        parts = text.split("*")
        chunks = tuple(
            re.compile("".join("." if ch == "?" else re.escape(ch) for ch in part), re.DOTALL)
            for part in parts
        )
        widths = tuple(len(part) for part in parts)
        return cls(pattern, chunks, widths, on_path=pattern.startswith("/"))

    def matches(self, text: str) -> bool:
        """Return True if ``text`` (already lower-cased) matches the whole pattern."""
        chunks, widths = self.chunks, self.widths
        if len(chunks) == 1:
            return chunks[0].fullmatch(text) is not None
        end = len(text) - widths[-1]
        if end < widths[0] or chunks[-1].fullmatch(text, end) is None:
            return False
        if chunks[0].match(text) is None:
            return False
        pos = widths[0]
        for chunk in chunks[1:-1]:
            found = chunk.search(text, pos, end)
            if found is None:
                return False
            pos = found.end()
        return True


#: Extensions of files that no converter reads: links to them are not followed.
NOT_DOCUMENTS = frozenset({
    # images
    "png", "jpg", "jpeg", "gif", "webp", "avif", "bmp", "ico", "svg", "svgz", "tif", "tiff",
    "psd", "heic",
    # audio and video
    "mp3", "m4a", "wav", "ogg", "oga", "flac", "aac", "opus", "mp4", "m4v", "webm", "mkv",
    "mov", "avi", "wmv", "mpg", "mpeg",
    # archives and packages
    "zip", "gz", "tgz", "bz2", "tbz2", "xz", "txz", "zst", "7z", "rar", "tar", "lz", "lzma",
    "z", "jar", "war", "whl", "egg", "gem", "deb", "rpm", "apk", "dmg", "iso", "img", "exe",
    "msi", "bin", "so", "dll", "dylib", "pkg",
    # fonts and build output
    "woff", "woff2", "ttf", "otf", "eot", "map", "wasm",
    # office files
    "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "epub",
})  # fmt: skip


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
    """Which discovered links a crawl may follow, built once from the seed and the options.

    * ``same_domain``: the host must be the seed's host or one of its subdomains
      (seed ``docs.example.com`` allows ``a.docs.example.com``, not ``example.com``
      nor ``evil-docs.example.com``); scheme and port do not matter.
    * ``path_prefix``: the normalised path must start with it, as a string
      (``/docs`` also admits ``/docsearch``; write ``/docs/`` for a directory).
    * ``exclude_patterns``: globs on the whole normalised URL, or on its path and
      query when the glob starts with ``/`` (``/api/*``), case-insensitive;
      ``*`` matches any run of characters including ``/``, ``?`` exactly one; every
      other character is literal, escaped as URLs are (``é`` matches ``%C3%A9``,
      ``[`` matches ``%5B``).
    * A link to a file no converter reads, by the extension of its path (images,
      audio, video, archives, packages, fonts, office files: :data:`NOT_DOCUMENTS`)
      is not followed: fetching it would spend a request, a page slot and the
      origin's delay to end as ``unsupported-content-type`` (Sphinx links every
      figure to its full-size image). ``.js`` and ``.css`` are not among them: page
      names such as ``express.js`` exist.

    The seed itself is not judged here: the frontier always admits it.

    >>> scope = Scope.build("https://docs.example.com/", exclude_patterns=["*/private/*"])
    >>> scope.allows("https://a.docs.example.com/x") is None
    True
    >>> scope.allows("https://docs.example.com/private/key")
    <SkipReason.FILTERED: 'filtered'>
    """

    seed_host: str | None
    path_prefix: str | None = None
    excludes: tuple[_Glob, ...] = ()
    #: One more test a normalised URL must pass (``CrawlOptions.url_filter``).
    url_filter: Callable[[str], bool] | None = None

    @classmethod
    def build(
        cls,
        seed: str,
        *,
        same_domain: bool = True,
        path_prefix: str | None = None,
        exclude_patterns: Iterable[str] = (),
    ) -> Scope:
        """Build the scope of a crawl from its seed URL (raises InvalidURLError if bad)."""
        seed_url = normalize_url(seed)
        host = _host_of(seed_url).rstrip(".") if same_domain else None
        prefix = _normalize_prefix(path_prefix) if path_prefix else None
        return cls(host, prefix, tuple(_Glob.compile(p) for p in exclude_patterns))

    @classmethod
    def from_options(cls, seed: str, options: CrawlOptions) -> Scope:
        """Build the scope of a crawl from its seed and its (clamped) options."""
        scope = cls.build(
            seed,
            same_domain=options.same_domain,
            path_prefix=options.path_prefix,
            exclude_patterns=options.exclude_patterns,
        )
        if options.url_filter is None:
            return scope
        return dataclasses.replace(scope, url_filter=options.url_filter)

    def allows(self, url: str) -> SkipReason | None:
        """Return None if ``url`` is in scope, else why not (FILTERED, or INVALID)."""
        try:
            normalized = normalize_url(url)
        except InvalidURLError:
            return SkipReason.INVALID
        return self.allows_normalized(normalized)

    def allows_normalized(self, url: str) -> SkipReason | None:
        """Like :meth:`allows` for a result of :func:`normalize_url` (the hot path)."""
        if self.seed_host is not None and not _is_same_domain(_host_of(url), self.seed_host):
            return SkipReason.FILTERED
        path = _path_of(url)
        if self.path_prefix is not None and not path.startswith(self.path_prefix):
            return SkipReason.FILTERED
        if _extension(path) in NOT_DOCUMENTS:
            return SkipReason.FILTERED
        if self.excludes:
            text = url.lower()
            target = text[text.index("/", text.index("://") + 3) :]  # a normalised URL has a path
            if any(glob.matches(target if glob.on_path else text) for glob in self.excludes):
                return SkipReason.FILTERED
        if self.url_filter is not None and not self.url_filter(url):
            return SkipReason.FILTERED
        return None


# --- normalisation ------------------------------------------------------------------------


def _normalized_parts(url: str) -> tuple[str, str, str, str]:
    scheme, netloc, path, query = _split(url)
    host, port = _host_and_port(netloc, url)
    authority = f"{host}:{port}" if port and port != _DEFAULT_PORTS[scheme] else host
    return scheme, authority, path, query


def _split(url: str) -> tuple[str, str, str, str]:
    """Cut an absolute URL into scheme, authority, path and query (fragment dropped).

    Like the WHATWG parser for special schemes: surrounding C0 controls and spaces
    are ignored and tabs and newlines anywhere are removed. Only ``scheme://`` URLs
    are accepted; the scheme must be http or https.
    """
    text = trim_url(url)
    scheme, sep, rest = text.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in _DEFAULT_PORTS:
        raise InvalidURLError(_redact(url), "only absolute http and https URLs can be crawled")
    rest = rest.partition("#")[0]
    rest, _, query = rest.partition("?")
    slash = rest.find("/")
    if slash < 0:
        return scheme, rest, "", query
    return scheme, rest[:slash], rest[slash:], query


def _host_and_port(netloc: str, url: str) -> tuple[str, str]:
    if "@" in netloc:
        raise InvalidURLError(_redact(url), "credentials in URLs are refused")
    if netloc.startswith("["):
        raw_host, bracket, rest = netloc.partition("]")
        host = _ipv6_host(raw_host[1:], url)
        if not bracket or (rest and not rest.startswith(":")):
            raise InvalidURLError(_redact(url), "malformed authority")
        port = rest[1:]
    else:
        raw_host, _, port = netloc.partition(":")
        host = _name_host(raw_host, url)
    if port:
        if _PORT.fullmatch(port) is None or int(port) > 65535:
            # The port text is not repeated: in a malformed URL it may be a password.
            raise InvalidURLError(_redact(url), "invalid port")
        port = str(int(port))
    return host, port


def _name_host(raw: str, url: str) -> str:
    host = raw.lower()
    if "%" in host:
        host = _unquote_host(host, url)
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            raise InvalidURLError(_redact(url), "invalid internationalised host") from None
    if not host or _HOST_LABELS.fullmatch(host) is None:
        raise InvalidURLError(_redact(url), "missing or malformed host")
    try:
        ip = ipv4_from_host(host)
    except ValueError:
        raise InvalidURLError(_redact(url), "malformed IPv4 host") from None
    if ip is not None:
        return ip
    return host.removesuffix(".")  # the name the fetcher sends (rule 4)


def _unquote_host(host: str, url: str) -> str:
    try:
        raw = re.sub(r"%([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), host).encode(
            "latin-1"
        )
        return raw.decode("utf-8").lower()
    except UnicodeError:
        raise InvalidURLError(_redact(url), "malformed escape in host") from None


def _ipv6_host(raw: str, url: str) -> str:
    try:
        address = ipaddress.IPv6Address(raw)
    except ValueError:
        raise InvalidURLError(_redact(url), "malformed IPv6 host") from None
    if address.scope_id is not None:
        raise InvalidURLError(_redact(url), "IPv6 zone ids are not crawlable")
    return f"[{address.compressed}]"


def _normalize_prefix(prefix: str) -> str:
    if not prefix.startswith("/"):
        prefix = "/" + prefix
    return request_target(prefix, "")


def _redact(url: str) -> str:
    """Drop what looks like ``user:pass@`` from a URL for error messages; never raises.

    The one definition of that lives in the guard, so both parsers' messages hide the
    same spellings (backslashes, missing or extra slashes, an escaped ``@``).
    """
    from sitelore.core.guard import (
        redact_url,  # a sibling in the pure core; only error paths need it
    )

    return redact_url(str(url)[:2000])


# --- reading normalised URLs ---------------------------------------------------------------


def _host_of(normalized: str) -> str:
    start = normalized.index("://") + 3
    end = normalized.find("/", start)
    authority = normalized[start:end] if end >= 0 else normalized[start:]
    if authority.startswith("["):
        return authority[: authority.index("]") + 1]
    return authority.partition(":")[0]


def _path_of(normalized: str) -> str:
    start = normalized.index("://") + 3
    end = normalized.find("/", start)
    return normalized[end:].partition("?")[0] if end >= 0 else "/"


def _extension(path: str) -> str:
    """The lower-cased extension of the last segment of ``path`` (``""`` when none).

    A wiki page named after a file (MediaWiki's ``/wiki/File:Diagram.png``, an HTML
    page about the file) has none: a ``:`` marks a namespaced title.
    """
    name = path[path.rfind("/") + 1 :]
    if ":" in name:
        return ""
    dot = name.rfind(".")
    return name[dot + 1 :].lower() if dot > 0 else ""


def _is_same_domain(host: str, seed_host: str) -> bool:
    host = host.rstrip(".")
    if host == seed_host:
        return True
    return host.endswith(seed_host) and host[-len(seed_host) - 1] == "."
