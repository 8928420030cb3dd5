"""URL identity and crawl scope: what one URL *is* within a crawl, and whether to follow it.

:func:`normalize_url` maps every spelling of a URL to the one string a crawl keys on;
:func:`origin` names the server a URL is fetched from; :class:`Scope` decides whether a
discovered link may be followed (same domain, path prefix, exclude globs). Pure string
work: this module never resolves names, never fetches, never reads a clock and keeps no
module-level caches (callers that want one, like the frontier, own it per crawl).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from sitelore.errors import InvalidURLError
from sitelore.models import SkipReason
from sitelore.urlparts import ipv4_from_host, remove_dot_segments

if TYPE_CHECKING:
    from sitelore.models import CrawlOptions

__all__ = ["Scope", "normalize_url", "origin"]

_DEFAULT_PORTS: Mapping[str, str] = MappingProxyType({"http": "80", "https": "443"})
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# A well-formed escape, or one character that must be escaped (anything outside RFC 3986's
# unreserved and reserved sets, a lone "%", non-ASCII). "[" and "]" stay: real sites use them
# in queries (``a[]=1``) and every client sends them as they are.
_ESCAPE_OR_UNSAFE = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]]")
_HOST_LABELS = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?")
_PORT = re.compile(r"[0-9]{1,5}")
_SAFE_ASCII = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?\[\]]*")
_WHITESPACE = "".join(chr(c) for c in range(0x21))


def normalize_url(url: str) -> str:
    """Return the identity of an absolute http(s) URL within a crawl.

    Two URLs are the same page exactly when their normalised forms are equal.
    Normalisation:

    * strips surrounding whitespace and C0 controls, and the ``#fragment``;
    * lower-cases the scheme and the host; IDNA hosts become ASCII (``xn--``);
      IPv4 in shorthand, decimal, octal or hex becomes dotted decimal; IPv6 is
      compressed;
    * drops the default port (80 for http, 443 for https) and an empty port;
    * decodes escapes of unreserved characters (``%7E`` -> ``~``), upper-cases the
      hex of every other escape (``%2f`` -> ``%2F``), and escapes, as UTF-8, what
      may not appear raw (non-ASCII, spaces, controls, ``"<>\\^`{|}``, a lone ``%``);
    * removes ``.`` and ``..`` path segments (RFC 3986 5.2.4), after decoding, so
      ``%2E%2E`` counts too; an empty path becomes ``/``.

    Kept as they are: the case of the path and query, the order and content of the
    query (``?page=1`` and ``?page=2`` are different pages), empty path segments,
    and the trailing slash (``/docs`` and ``/docs/`` are different URLs). An empty
    query (a bare ``?``) is dropped.

    Raises :class:`~sitelore.errors.InvalidURLError` for unparsable input, schemes
    other than http(s), a missing or malformed host or port, and credentials
    (``user:pass@``; the message never repeats them).

    >>> normalize_url("HTTP://Docs.Example.COM:80/a/./b/../C%7e?x=1#top")
    'http://docs.example.com/a/C~?x=1'
    >>> normalize_url("https://example.com")
    'https://example.com/'

    The function is idempotent: ``normalize_url(normalize_url(u)) == normalize_url(u)``.
    """
    scheme, authority, path, query = _normalized_parts(url)
    if query:
        return f"{scheme}://{authority}{path}?{query}"
    return f"{scheme}://{authority}{path}"


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

    @classmethod
    def compile(cls, pattern: str) -> _Glob:
        text = _escape_non_ascii(pattern).lower()
        parts = text.split("*")
        chunks = tuple(
            re.compile("".join("." if ch == "?" else re.escape(ch) for ch in part), re.DOTALL)
            for part in parts
        )
        return cls(pattern, chunks, tuple(len(part) for part in parts))

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


@dataclasses.dataclass(frozen=True, slots=True)
class Scope:
    """Which discovered links a crawl may follow, built once from the seed and the options.

    * ``same_domain``: the host must be the seed's host or one of its subdomains
      (seed ``docs.example.com`` allows ``a.docs.example.com``, not ``example.com``
      nor ``evil-docs.example.com``); scheme and port do not matter.
    * ``path_prefix``: the normalised path must start with it, as a string
      (``/docs`` also admits ``/docsearch``; write ``/docs/`` for a directory).
    * ``exclude_patterns``: globs on the whole normalised URL, case-insensitive;
      ``*`` matches any run of characters including ``/``, ``?`` exactly one; every
      other character is literal. Non-ASCII in a pattern matches its UTF-8 escape.

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
        if self.path_prefix is not None and not _path_of(url).startswith(self.path_prefix):
            return SkipReason.FILTERED
        if self.excludes:
            text = url.lower()
            if any(glob.matches(text) for glob in self.excludes):
                return SkipReason.FILTERED
        if self.url_filter is not None and not self.url_filter(url):
            return SkipReason.FILTERED
        return None


# --- normalisation ------------------------------------------------------------------------


def _normalized_parts(url: str) -> tuple[str, str, str, str]:
    scheme, netloc, path, query = _split(url)
    host, port = _host_and_port(netloc, url)
    authority = f"{host}:{port}" if port and port != _DEFAULT_PORTS[scheme] else host
    return scheme, authority, _normalize_path(path), _normalize_component(query)


def _split(url: str) -> tuple[str, str, str, str]:
    """Cut an absolute URL into scheme, authority, path and query (fragment dropped).

    Like the WHATWG parser for special schemes: surrounding C0 controls and spaces
    are ignored and tabs and newlines anywhere are removed. Only ``scheme://`` URLs
    are accepted; the scheme must be http or https.
    """
    text = url.strip(_WHITESPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.replace("\t", "").replace("\n", "").replace("\r", "")
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
    return host if ip is None else ip


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


def _normalize_path(path: str) -> str:
    if not path:
        return "/"
    path = _normalize_component(path)
    if "/." in path:
        path = remove_dot_segments(path)
    return path


def _normalize_component(text: str) -> str:
    """Normalise the escapes of a path or query; a no-op for already clean ASCII text."""
    if _SAFE_ASCII.fullmatch(text) is not None:
        return text
    return _ESCAPE_OR_UNSAFE.sub(_fix_escape, text)


def _fix_escape(match: re.Match[str]) -> str:
    token = match.group()
    if len(token) == 3:
        char = chr(int(token[1:], 16))
        return char if char in _UNRESERVED else token.upper()
    data = token.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in data)


def _escape_non_ascii(text: str) -> str:
    if text.isascii():
        return text
    return "".join(
        ch if ch.isascii() else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in text
    )


def _normalize_prefix(prefix: str) -> str:
    if not prefix.startswith("/"):
        prefix = "/" + prefix
    return _normalize_path(prefix)


def _redact(url: str) -> str:
    """Drop what looks like ``user:pass@`` from a URL for error messages; never raises.

    The one definition of that lives in the guard, so both parsers' messages hide the
    same spellings (backslashes, missing or extra slashes, an escaped ``@``).
    """
    from sitelore.guard import redact_url  # a sibling in the pure core; only error paths need it

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


def _is_same_domain(host: str, seed_host: str) -> bool:
    host = host.rstrip(".")
    if host == seed_host:
        return True
    return host.endswith(seed_host) and host[-len(seed_host) - 1] == "."
