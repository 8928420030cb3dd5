"""Low-level URL pieces shared by URL identity, the address guard and robots matching.

Small, exact algorithms that must agree wherever a URL is judged: reading a host
written as an IPv4 number in any of its WHATWG/inet_aton spellings, RFC 3986
dot-segment removal, and the percent-encoding rules of a path and query
(:func:`request_target`). The contract they implement is written once, in
:mod:`sitelore.core.urls`; :func:`sitelore.core.urls.normalize_url`,
:func:`sitelore.core.guard.check_url` and :func:`sitelore.core.robots.normalise_target` all
reach the path and query through this module. Pure functions of strings; no parsing
of whole URLs here.
"""

from __future__ import annotations

import ipaddress
import re
import string

__all__ = [
    "BLANKS",
    "ipv4_from_host",
    "normalize_escapes",
    "remove_dot_segments",
    "request_target",
    "trim_url",
]

#: What is stripped from both ends of a URL: C0 controls and space (WHATWG), nothing else.
BLANKS = "".join(chr(c) for c in range(0x21))
_HEX_DIGITS = frozenset(string.hexdigits)
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#: An address already in dotted decimal (no leading zeros): its own canonical form.
_DOTTED_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
# RFC 3986 lets a path carry unreserved characters, sub-delims, ":" and "@" (pchar) and
# "/"; a query also "?". Anything else is escaped: "[", "]", "#", space, controls,
# '"<>\^`{|}', non-ASCII and a "%" that starts no escape.
_CARRIED = r"A-Za-z0-9\-._~!$&'()*+,;=:@/?"
_ESCAPE_OR_UNSAFE = re.compile(rf"%[0-9A-Fa-f]{{2}}|[^{_CARRIED}]")
_CLEAN = re.compile(rf"[{_CARRIED}]*")


def ipv4_from_host(host: str) -> str | None:
    """Read a host whose last label is a number as IPv4, in dotted decimal; else None.

    Accepts decimal, octal (``0177``), hex (``0x7f``) and shorthand forms (``127.1``,
    ``2130706433``), as browsers and ``inet_aton`` do. A trailing dot is ignored.

    >>> ipv4_from_host("0x7f.1")
    '127.0.0.1'
    >>> ipv4_from_host("docs.example.com") is None
    True

    Raises:
        ValueError: the host ends in a number but is not a valid IPv4 address.
    """
    stripped = host.rstrip(".")
    if _DOTTED_QUAD.fullmatch(stripped):  # the common spelling: nothing to convert
        return stripped
    labels = stripped.split(".")
    if not _is_numeric_label(labels[-1]):
        return None
    if len(labels) > 4:
        raise ValueError("host ends in a number but is not an IPv4 address")
    numbers = [_ipv4_number(label) for label in labels]
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise ValueError("IPv4 address part out of range")
    value = last
    for index, number in enumerate(head):
        value += number << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


def _is_numeric_label(label: str) -> bool:
    if label[:2] in ("0x", "0X"):
        return _HEX_DIGITS.issuperset(label[2:])
    return label.isascii() and label.isdigit()


def _ipv4_number(label: str) -> int:
    if not _is_numeric_label(label):
        raise ValueError("host mixes numbers and names like an IPv4 address")
    if label[:2] in ("0x", "0X"):
        return int(label[2:] or "0", 16)
    if len(label) > 1 and label.startswith("0"):
        try:
            return int(label[1:], 8)
        except ValueError as exc:
            raise ValueError(f"IPv4 part {label!r} is not valid octal") from exc
    return int(label)


def remove_dot_segments(path: str) -> str:
    """Resolve ``.`` and ``..`` segments of an absolute path (RFC 3986 section 5.2.4).

    >>> remove_dot_segments("/a/b/../c/./d")
    '/a/c/d'
    """
    segments = path.split("/")
    if "." not in segments and ".." not in segments:
        return path
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")
    return "/" + "/".join(out)


def trim_url(url: str) -> str:
    """Strip :data:`BLANKS` from both ends and drop tabs and line breaks inside (WHATWG).

    >>> trim_url(" http://a.test/a\\tb\\n")
    'http://a.test/ab'
    """
    text = url.strip(BLANKS)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    return text


def normalize_escapes(text: str) -> str:
    """Bring the escapes of a path or query to their one form (no dot segments here).

    Escapes of unreserved characters are decoded (``%7e`` -> ``~``), every other escape
    gets upper-case hex (``%2f`` -> ``%2F``), and each character a path or query may
    not carry as it is becomes the percent-encoding of its UTF-8 bytes (``[`` ->
    ``%5B``, ``é`` -> ``%C3%A9``, a lone ``%`` -> ``%25``).

    >>> normalize_escapes("%7euser/a[1]%2f%")
    '~user/a%5B1%5D%2F%25'
    """
    if _CLEAN.fullmatch(text) is not None:
        return text
    return _ESCAPE_OR_UNSAFE.sub(_fix_escape, text)


def request_target(path: str, query: str) -> str:
    """The normalised path and ``?query`` of a URL: what is requested and compared.

    Escapes as :func:`normalize_escapes`; then ``.`` and ``..`` segments of the path
    are removed (after decoding, so ``%2E%2E`` counts), an empty path becomes ``/``,
    and an empty query is dropped. The query keeps its dots, order and case.

    >>> request_target("/a/./b/../c%7e", "x=%2f")
    '/a/c~?x=%2F'
    """
    path = normalize_escapes(path) if path else "/"
    if "/." in path:
        path = remove_dot_segments(path)
    return f"{path}?{normalize_escapes(query)}" if query else path


def _fix_escape(match: re.Match[str]) -> str:
    token = match.group()
    if len(token) == 3 and token[0] == "%":
        char = chr(int(token[1:], 16))
        return char if char in _UNRESERVED else token.upper()
    return "".join(f"%{byte:02X}" for byte in token.encode("utf-8", "surrogatepass"))
