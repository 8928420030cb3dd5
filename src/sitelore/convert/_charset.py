"""Decode a response body to text: header charset, then BOM, then ``<meta>``, then UTF-8.

Never fails: unknown charset names fall through to the next source, and bytes that
do not decode are replaced with U+FFFD.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["decode_body"]

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
#: How far into the body a ``<meta charset>`` declaration is looked for.
_META_SCAN_BYTES = 2048
_META_CHARSET = re.compile(
    rb"""<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""",
    re.IGNORECASE,
)
#: Labels that browsers (WHATWG Encoding) read as a superset codec.
_ALIASES = {
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "iso8859-1": "cp1252",
    "x-sjis": "shift_jis",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "utf8": "utf-8",
}


def _codec(label: str | None) -> str | None:
    """The Python codec for a charset label, or None when it is unknown or unusable."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    name = _ALIASES.get(name, name)
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    # A page cannot really be UTF-16 when its <meta> says so in ASCII; browsers
    # read that as UTF-8. Binary-to-text codecs (base64, rot13 ...) are not charsets.
    if not getattr(info, "_is_text_encoding", True):
        return None
    return info.name


def _bom(body: bytes) -> tuple[str, int] | None:
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec, len(bom)
    return None


def _meta_charset(body: bytes) -> str | None:
    match = _META_CHARSET.search(body[:_META_SCAN_BYTES])
    if match is None:
        return None
    codec = _codec(match.group(1).decode("ascii", "replace"))
    if codec is not None and codec.startswith(("utf-16", "utf-32")):
        return "utf-8"
    return codec


def decode_body(body: bytes, header_charset: str | None) -> str:
    """Decode ``body``: the header's charset wins, then a BOM, then ``<meta>``, then UTF-8."""
    codec = _codec(header_charset)
    start = 0
    if codec is None:
        found = _bom(body)
        if found is not None:
            codec, start = found
    elif (found := _bom(body)) is not None and found[0] == codec.replace("_", "-"):
        start = found[1]
    if codec is None:
        codec = _meta_charset(body) or "utf-8"
    text = body[start:].decode(codec, errors="replace")
    if start == 0 and text.startswith("\ufeff"):
        text = text[1:]
    return text
