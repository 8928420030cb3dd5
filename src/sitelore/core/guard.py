"""Decide whether a URL, or an address its host resolved to, may be fetched.

Never resolves names and never opens anything: callers pass the addresses they
resolved (the fetcher's guarded resolver passes every answer of every hop). The
pure functions here are the single definition of "allowed" for the whole program.

Choices made here, so callers need not guess:

- Host forms are normalised before they are classified, in this order: IDNA to
  ASCII (so full-width digits and ideographic dots become ASCII), lower case, one
  trailing dot removed, then a host whose last label is a number is read the way
  ``inet_aton`` reads it (``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1`` all
  become ``127.0.0.1``) or refused as invalid. Bracketed IPv6 is unbracketed and
  written in its compressed form.
- IPv6 zone ids (``[fe80::1%25eth0]``) are refused as invalid: they name a local
  interface, and every address that takes one is link-local anyway.
- Names refused without a lookup: ``localhost`` and ``*.localhost``, ``invalid``
  and ``*.invalid`` (RFC 6761), the loopback aliases of common ``/etc/hosts``
  files, and the cloud metadata names. The whole ``.internal`` zone is *not*
  refused by name: intranet hosts live there and an operator may open their
  addresses; the addresses of the metadata services are refused by the address
  checks whatever name leads to them.
- The operator's allow list holds addresses, CIDRs and host names. A host name in
  it may be fetched even when it is refused by name (``localhost``) and may resolve
  to any address; every other name stays refused as below.
- An address is allowed when it, or the IPv4 address embedded in it, is in the
  operator's allow list. Otherwise an IPv6 address that embeds an IPv4 address
  (mapped, translated ``::ffff:0:0:0/96``, compatible, NAT64, 6to4, Teredo) is
  judged by the embedded IPv4 address, and any other address by the tables below,
  then by every ``ipaddress`` flag that marks it as not globally routable unicast
  (loopback, unspecified, multicast, link-local, site-local, private, reserved, or
  not ``is_global``). Only what passes all of them is allowed.
- Messages never repeat what looks like userinfo, however malformed the URL
  (:func:`redact_url`).
- An accepted URL is spelled exactly as :func:`sitelore.core.urls.normalize_url` spells it
  (the URL contract in :mod:`sitelore.core.urls`): the fetcher requests, and the store
  keeps, the crawl's own identity of the page.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import string
import urllib.parse
from collections.abc import Iterable

from sitelore.core.errors import BlockedURLError, ConfigError, InvalidURLError, UsageError
from sitelore.core.urlparts import BLANKS, ipv4_from_host, request_target

__all__ = [
    "AddressPolicy",
    "Target",
    "check_url",
    "parse_allow_entry",
    "parse_resolve_entry",
    "redact_url",
    "resolve_problem",
    "without_userinfo",
]

_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_DEFAULT_PORTS = (("http", 80), ("https", 443))
_HOST_CHARS = frozenset(string.ascii_lowercase + string.digits + "-_")
_REDACTED_MAX = 300
#: A control character or DEL: refused in URLs, shown as ``?`` when printing one.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# The "@" that ends userinfo: plain, percent-escaped (once or more), or a full-width
# form that NFKC folds to "@".
_USERINFO_END = re.compile(r"@|%(?:25)*40|\uff20|\ufe6b", re.IGNORECASE)
# A scheme, after leading blanks; parsers drop tabs and line breaks inside it.
_SCHEME = re.compile(r"[\x00-\x20]*([A-Za-z][A-Za-z0-9+.\-\t\n\r]*):")
# Schemes whose authority parsers find even without "//" (``http:host``).
_SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
# What parsers skip between "scheme:" and the authority.
_BEFORE_HOST = "/\\" + "".join(map(chr, range(0x21)))
# An authority with nothing userinfo-like left: a host (or [literal]) and a numeric port.
#: A host, an optional port and a path, with no scheme: "docs.python.org/3/", "localhost:8000".
_SCHEMELESS = re.compile(r"[^:/?#@\s]+(?::[0-9]+)?(?:[/?#]\S*)?")
_HOST_PORT = re.compile(r"(?:\[[^\]]*\]|[^:\[\]]*)(?::[0-9]*)?")
_MAX_HOST = 253
_MAX_LABEL = 63

_REFUSED_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "ip6-loopback",
        "invalid",
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
_REFUSED_SUFFIXES = (".localhost", ".invalid")


def _nets(*rows: tuple[str, str]) -> tuple[tuple[_IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(cidr), reason) for cidr, reason in rows)


_IPV4_TABLE = _nets(
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared address space (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved (IETF protocol assignments)"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "reserved (6to4 relay anycast)"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)
_IPV6_TABLE = _nets(
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("100::/64", "reserved (discard-only)"),
    ("2001:db8::/32", "documentation"),
    ("2001::/23", "reserved (IETF protocol assignments)"),
    ("3fff::/20", "documentation"),
    ("fc00::/7", "private (unique local)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT, RFC 7915
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """A URL that passed the checks, in the normalised form the fetcher requests.

    ``host`` is lower-case ASCII without brackets or trailing dot; ``ip`` is set
    when the host is an IP literal; ``path`` is the percent-encoded path and query
    (never empty, no fragment); ``redacted`` is the whole normalised URL, which
    carries no credentials and is safe to print.
    """

    scheme: str
    host: str
    port: int
    path: str
    redacted: str
    ip: str | None = None

    @property
    def url(self) -> str:
        """The normalised URL to request (the same text as ``redacted``)."""
        return self.redacted

    @property
    def origin(self) -> tuple[str, str, int]:
        """(scheme, host, port): what "same origin" compares."""
        return (self.scheme, self.host, self.port)


class AddressPolicy:
    """Which IP addresses may be connected to: public ones, plus the operator's allow list.

    The allow list holds addresses or CIDRs (any host resolving into them may be
    fetched) and host names (that host may resolve to any address).

    >>> AddressPolicy(["10.1.0.0/16"]).refusal("10.1.2.3") is None
    True
    >>> AddressPolicy().refusal("127.0.0.1")
    'loopback'
    >>> policy = AddressPolicy(["wiki.corp"])
    >>> policy.refusal("10.0.0.7", host="WIKI.corp."), policy.refusal("10.0.0.7", host="x.corp")
    (None, 'private')
    """

    __slots__ = ("_allowed", "_hosts")

    def __init__(self, allow_private: Iterable[str] | str = ()) -> None:
        """Build the policy; raise ``ConfigError`` naming the first bad allow entry."""
        entries = (allow_private,) if isinstance(allow_private, str) else tuple(allow_private)
        parsed = [_parse_allow_entry(entry) for entry in entries]
        self._allowed: tuple[_IPNetwork, ...] = tuple(e for e in parsed if not isinstance(e, str))
        self._hosts: frozenset[str] = frozenset(e for e in parsed if isinstance(e, str))

    @property
    def allowed(self) -> tuple[str, ...]:
        """The allow list: canonical CIDR strings, then host names."""
        return (*(str(net) for net in self._allowed), *sorted(self._hosts))

    def __repr__(self) -> str:
        return f"AddressPolicy({list(self.allowed)!r})"

    def allows_host(self, host: str) -> bool:
        """True when the operator allowed this host name (it may resolve to any address)."""
        return bool(self._hosts) and host.lower().rstrip(".") in self._hosts

    def refusal(self, ip: str, *, host: str | None = None) -> str | None:
        """Return why ``ip`` (an answer for ``host``, if given) may not be connected to.

        None when it may: ``ip`` is allowed, or ``host`` is a host name the operator
        allowed.
        """
        if host is not None and self.allows_host(host):
            return None
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return "not an IP address"
        if self._is_allowed(addr):
            return None
        if isinstance(addr, ipaddress.IPv6Address):
            embedded = _embedded_ipv4(addr)
            if embedded:
                return self._embedded_refusal(addr, embedded)
        return _classify(addr)

    def _is_allowed(self, addr: _IPAddress) -> bool:
        return any(addr.version == net.version and addr in net for net in self._allowed)

    def _embedded_refusal(
        self, addr: ipaddress.IPv6Address, embedded: tuple[tuple[str, ipaddress.IPv4Address], ...]
    ) -> str | None:
        for kind, v4 in embedded:
            if self._is_allowed(v4):
                continue
            reason = _classify(v4)
            if reason is not None:
                return f"{reason} (IPv4 {v4} embedded in {kind} address {addr.compressed})"
        return None


def check_url(url: str, *, policy: AddressPolicy | None = None) -> Target:
    """Parse and normalise ``url``; refuse it when it can never be fetched.

    IP-literal hosts are judged by ``policy`` (by default one that allows no
    private address), so pass the operator's policy whenever there is one.

    Raises:
        InvalidURLError: unparsable, scheme other than http(s), credentials in the
            URL, or a malformed host or port. The message never repeats credentials.
        BlockedURLError: a name refused without lookup, or a refused IP literal. Its
            ``url`` is the URL as given (redacted) and its reason names the canonical
            address (``http://0x7f.1/: blocked: 127.0.0.1 is loopback``).
    """
    text = url.strip(BLANKS)  # as normalize_url: C0 and space only, not U+00A0 & co.
    shown = redact_url(text)
    target = _parse_target(text, shown)
    if target.ip is not None:
        reason = (policy or AddressPolicy()).refusal(target.ip)
        if reason is not None:
            raise BlockedURLError(shown, f"{target.ip} is {reason}", target.ip)
        return target
    reason = _name_refusal(target.host)
    if reason is not None and not (policy is not None and policy.allows_host(target.host)):
        raise BlockedURLError(shown, reason)
    return target


def parse_resolve_entry(entry: str) -> tuple[str, int, str]:
    """Read a curl-style ``--resolve HOST:PORT:ADDR`` entry into (host, port, address).

    HOST is normalised like a URL host and must be a name; ADDR may be bracketed
    IPv6 (``docs.test:443:[::1]``). The address is *not* judged here: the fetcher
    checks it against the policy on every use, like any resolver answer.

    Raises:
        UsageError: the entry is malformed (it comes from a flag or request).
    """
    host_text, sep1, rest = entry.strip().partition(":")
    port_text, sep2, addr_text = rest.partition(":")
    if not (sep1 and sep2 and host_text and port_text and addr_text):
        raise UsageError(f"--resolve {entry!r}: expected HOST:PORT:ADDR")
    try:
        host = _normalise_host(host_text)
        port = _parse_port(port_text)
        address = _parse_address(addr_text)
    except ValueError as exc:
        raise UsageError(f"--resolve {entry!r}: {exc}") from exc
    if ipv4_from_host(host) is not None:
        raise UsageError(f"--resolve {entry!r}: HOST must be a name, not an address")
    return host, port, address


def resolve_problem(exc: UsageError) -> str:
    """What is wrong with a ``--resolve`` entry, without the flag's name: ``'x': why``."""
    return str(exc).removeprefix("--resolve ")


def parse_allow_entry(entry: str) -> str:
    """Read one ``--allow-private`` / ``allow_private`` entry: an address, CIDR or host name.

    Returns its canonical form (``10.1.0.0/16``, ``wiki.corp``).

    Raises:
        ValueError: the entry is none of those, or would allow every address.

    >>> parse_allow_entry("10.1.0.0/16"), parse_allow_entry("Wiki.Corp."), parse_allow_entry("::1")
    ('10.1.0.0/16', 'wiki.corp', '::1/128')
    """
    parsed = _read_allow_entry(entry)
    return parsed if isinstance(parsed, str) else str(parsed)


def redact_url(text: str) -> str:
    """Return ``text`` safe to print: userinfo as ``***``, controls as ``?``, clipped.

    Works on any string, parsable or not; use it for URLs that failed the checks.
    What looks like userinfo is hidden however the URL is spelled: everything from
    the start of the authority (after ``scheme:`` and any run of slashes, backslashes
    or blanks, so ``http:\\u:p@h``, ``http:u:p@h`` and ``http:///u:p@h`` count) up to
    its last ``@``, also when that ``@`` is escaped (``%40``) or full-width. When what
    follows that point is not a plain ``host[:port]`` (a password holding ``/``, ``?``
    or ``#`` cut the authority short), the cut moves to the last ``@`` in the text.

    >>> redact_url("http://alice:pw@example.com/x")
    'http://***@example.com/x'
    >>> redact_url("http:\\\\alice:pw@example.com/x")
    'http:\\\\***@example.com/x'
    """
    shown = _CONTROL.sub("?", without_userinfo(text))
    return shown if len(shown) <= _REDACTED_MAX else shown[: _REDACTED_MAX - 3] + "..."


def without_userinfo(text: str) -> str:
    """``text`` with what :func:`redact_url` takes for userinfo as ``***``, nothing else changed.

    For a URL a caller sent that is shown back to them (a form filled in again, a list
    of the URLs refused): the rest stays as typed.

    >>> without_userinfo("http://alice:pw@example.com/x"), without_userinfo("http://a.test/")
    ('http://***@example.com/x', 'http://a.test/')
    """
    span = _userinfo_span(text)
    if span is None:
        return text
    return f"{text[: span[0]]}***@{text[span[1] :]}"


def _userinfo_span(text: str) -> tuple[int, int] | None:
    """Where the userinfo of ``text`` starts, and where its ``@`` ends; None without one."""
    if _USERINFO_END.search(text) is None:  # the common case: no "@" in any spelling
        return None
    scheme = _SCHEME.match(text)
    start = 0
    if scheme is not None:
        name = "".join(scheme.group(1).split()).lower()
        if name in _SPECIAL_SCHEMES or text[scheme.end() : scheme.end() + 1] in ("/", "\\"):
            start = scheme.end()
    start = len(text) - len(text[start:].lstrip(_BEFORE_HOST))
    netloc_end = _find_first(text, "/?#", start)  # urlsplit's view: backslashes inside
    ats = list(_USERINFO_END.finditer(text, start))
    cut = next((m for m in reversed(ats) if m.end() <= netloc_end), None)
    host_start = start if cut is None else cut.end()
    host = text[host_start : _find_first(text, "/\\?#", host_start)]  # WHATWG's view
    if _HOST_PORT.fullmatch(host) is None and ats and ats[-1].end() > host_start:
        cut = ats[-1]
    return None if cut is None else (start, cut.end())


def _find_first(text: str, chars: str, start: int) -> int:
    found = [i for i in (text.find(ch, start) for ch in chars) if i >= 0]
    return min(found, default=len(text))


# ---------------------------------------------------------------- URL parsing


def _parse_target(text: str, shown: str) -> Target:
    if _CONTROL.search(text) is not None:
        raise InvalidURLError(shown, "control character or line break in URL")
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError as exc:
        # The parser's own message may quote the authority, userinfo and all.
        raise InvalidURLError(shown, "not a valid URL (brackets or characters it refuses)") from exc
    scheme = parts.scheme.lower()
    default_port = dict(_DEFAULT_PORTS).get(scheme)
    if default_port is None:
        if _SCHEMELESS.fullmatch(text) is not None:
            raise InvalidURLError(shown, f"no scheme: did you mean https://{shown} ?")
        # Without "//" the "scheme" of "user:pw@host" is the user name: name it only
        # when the redacted URL still shows it.
        named = scheme if shown.lower().startswith(f"{scheme}:") else ""
        raise InvalidURLError(shown, f"scheme {named or '(none)'!r} is not http or https")
    if "@" in parts.netloc:
        raise InvalidURLError(shown, "credentials in URLs are not allowed")
    host_text, bracketed, port_text = _split_netloc(parts.netloc)
    try:
        host, ip = _host_and_ip(host_text, bracketed=bracketed)
        port = _parse_port(port_text) if port_text else default_port
    except ValueError as exc:
        raise InvalidURLError(shown, str(exc)) from exc
    path = request_target(parts.path, parts.query)  # the URL contract (sitelore.core.urls)
    return Target(
        scheme=scheme,
        host=host,
        port=port,
        path=path,
        ip=ip,
        redacted=_unparse(scheme, host, port, path, default_port),
    )


def _split_netloc(netloc: str) -> tuple[str, bool, str]:
    """Split an authority without userinfo into (host, was bracketed, port text)."""
    if netloc.startswith("["):
        host, _, after = netloc[1:].partition("]")
        if after and not after.startswith(":"):
            return netloc, False, ""  # garbage after "]": refused by the host checks
        return host, True, after[1:]
    host, _, port = netloc.partition(":")
    return host, False, port


def _host_and_ip(host_text: str, *, bracketed: bool) -> tuple[str, str | None]:
    if bracketed:
        return _parse_ipv6_literal(host_text)
    host = _normalise_host(host_text)
    ip = ipv4_from_host(host)
    return (ip, ip) if ip is not None else (host, None)


def _parse_ipv6_literal(text: str) -> tuple[str, str]:
    if "%" in text:
        raise ValueError("IPv6 zone ids are not allowed")
    try:
        addr = ipaddress.IPv6Address(text)
    except ValueError as exc:
        raise ValueError("bracketed host is not an IPv6 address") from exc
    return addr.compressed, addr.compressed


def _normalise_host(text: str) -> str:
    host = text
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ValueError("host is not a valid internationalised name") from exc
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host:
        raise ValueError("URL has no host")
    labels = host.split(".")
    if len(host) > _MAX_HOST or any(not 0 < len(label) <= _MAX_LABEL for label in labels):
        raise ValueError("host name is malformed (empty or over-long label)")
    if any(not _HOST_CHARS.issuperset(label) for label in labels):
        raise ValueError("host contains characters not allowed in a name")
    return host


def _parse_port(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 0 < int(text) < 65536:
        raise ValueError("port is not a number from 1 to 65535")  # may be a password
    return int(text)


def _parse_address(text: str) -> str:
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if "%" in inner:
        raise ValueError("IPv6 zone ids are not allowed")
    try:
        return ipaddress.ip_address(inner).compressed
    except ValueError as exc:
        raise ValueError(f"{text!r} is not an IP address") from exc


def _unparse(scheme: str, host: str, port: int, path: str, default_port: int) -> str:
    shown_host = f"[{host}]" if ":" in host else host
    shown_port = "" if port == default_port else f":{port}"
    return f"{scheme}://{shown_host}{shown_port}{path}"


# ---------------------------------------------------------------- IPv4 forms


def _allowed_host(text: str) -> str | None:
    """``text`` as a normalised host name, or None when it is not a name (an address...)."""
    if any(ch in text for ch in "/:[]%"):
        return None  # a CIDR or an IPv6 address
    try:
        host = _normalise_host(text)
        numeric = ipv4_from_host(host) is not None
    except ValueError:  # not a name, or a last label that is a bad number
        return None
    return None if numeric else host


def _name_refusal(host: str) -> str | None:
    if host in _REFUSED_NAMES or host.endswith(_REFUSED_SUFFIXES):
        return f"{host} is a local, reserved or cloud-metadata name"
    return None


def _classify(addr: _IPAddress) -> str | None:
    table = _IPV4_TABLE if addr.version == 4 else _IPV6_TABLE
    for net, reason in table:
        if addr.version == net.version and addr in net:
            return reason
    return _flag_refusal(addr)


def _flag_refusal(addr: _IPAddress) -> str | None:
    """Why ``ipaddress`` says ``addr`` is not globally routable unicast, or None."""
    flags = (
        (addr.is_loopback, "loopback"),
        (addr.is_unspecified, "unspecified"),
        (addr.is_multicast, "multicast"),
        (addr.is_link_local, "link-local"),
        (isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local, "site-local"),
        (addr.is_private, "private"),
        (addr.is_reserved, "reserved"),
        (not addr.is_global, "not globally routable"),
    )
    return next((reason for flagged, reason in flags if flagged), None)


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> tuple[tuple[str, ipaddress.IPv4Address], ...]:
    """Every IPv4 address carried inside ``addr`` by a transition mechanism."""
    value = int(addr)
    if addr.ipv4_mapped is not None:
        return (("IPv4-mapped", addr.ipv4_mapped),)
    if addr in _IPV4_TRANSLATED:
        return (("IPv4-translated", ipaddress.IPv4Address(value & 0xFFFFFFFF)),)
    if addr in _NAT64_WELL_KNOWN:
        return (("NAT64", ipaddress.IPv4Address(value & 0xFFFFFFFF)),)
    if addr in _NAT64_LOCAL:
        packed = addr.packed
        return (("NAT64", ipaddress.IPv4Address(packed[6:8] + packed[9:11])),)
    if addr.sixtofour is not None:
        return (("6to4", addr.sixtofour),)
    if addr.teredo is not None:
        server, client = addr.teredo
        return (("Teredo", client), ("Teredo server", server))
    if addr in _IPV4_COMPATIBLE and value > 1:
        return (("IPv4-compatible", ipaddress.IPv4Address(value)),)
    return ()


def _parse_allow_entry(entry: str) -> _IPNetwork | str:
    try:
        return _read_allow_entry(entry)
    except ValueError as exc:
        raise ConfigError(f"allow_private: {exc}") from exc


def _read_allow_entry(entry: str) -> _IPNetwork | str:
    """An allow entry as a network, or as a normalised host name (a str)."""
    text = str(entry).strip()
    host = _allowed_host(text)
    if host is not None:
        return host
    if text.startswith("[") and "]" in text:
        text = text[1:].replace("]", "", 1)
    try:
        if "%" in text:
            raise ValueError("IPv6 zone ids are not allowed")
        net = ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        raise ValueError(f"{entry!r} is not an IP address, CIDR or host name ({exc})") from exc
    if net.prefixlen == 0:
        raise ValueError(f"{entry!r} would allow every address")
    if isinstance(net, ipaddress.IPv6Network) and net.prefixlen >= 96:
        mapped = net.network_address.ipv4_mapped
        if mapped is not None:
            return ipaddress.IPv4Network((mapped, net.prefixlen - 96))
    return net
