"""Low-level URL pieces shared by URL identity, the address guard and robots matching.

Two small, exact algorithms that must agree wherever a URL is judged: reading a
host written as an IPv4 number in any of its WHATWG/inet_aton spellings, and RFC 3986
dot-segment removal. Pure functions of strings; no parsing of whole URLs here.
"""

from __future__ import annotations

import ipaddress
import re
import string

__all__ = ["ipv4_from_host", "remove_dot_segments"]

_HEX_DIGITS = frozenset(string.hexdigits)
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#: An address already in dotted decimal (no leading zeros): its own canonical form.
_DOTTED_QUAD = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")


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
