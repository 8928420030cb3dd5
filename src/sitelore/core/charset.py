"""Decode a response body to text as the WHATWG Encoding and HTML standards say.

Order: a byte order mark wins, then the header's charset, then the document's own
declaration near the start (an HTML ``<meta>`` charset, or for XML its
``<?xml ... encoding="..."?>``), then UTF-8. Labels are looked up in the WHATWG
label table only (``webencodings``): a label the table does not know (``punycode``,
``rot13``, ``base64``, ``utf-7``, anything not ASCII ...) is ignored and the next
source decides, so Python's codec registry never sees a label a site wrote. Never
fails: bytes that do not decode become U+FFFD. Pages (``convert``) and sitemaps
(``sitemaps``) decode through here.
"""

from __future__ import annotations

import codecs
import re

import webencodings

__all__ = ["decode_body", "encoding_for_label"]

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16le"),
    (codecs.BOM_UTF16_BE, "utf-16be"),
)
#: How far into the body a ``<meta charset>`` declaration is looked for.
_META_SCAN_BYTES = 2048
_META_CHARSET = re.compile(
    rb"""<meta\b[^>]*?\bcharset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""",
    re.IGNORECASE,
)
#: An XML declaration's encoding, only at the very start of the document (XML 1.0 4.3.3).
_XML_ENCODING = re.compile(rb"""<\?xml\s[^>]{0,200}?\bencoding\s*=\s*["']([^"'>]{0,64})["']""")
#: WHATWG decoders that Python's codec of the same name does not match: ``gbk`` is
#: decoded with the gb18030 decoder (the standard's own rule).
_PYTHON_CODEC = {"gbk": "gb18030"}
_REPLACEMENT = "replacement"


def encoding_for_label(label: str | None) -> str | None:
    """The WHATWG encoding name a charset label stands for; None for an unknown label.

    >>> encoding_for_label(" Latin1 "), encoding_for_label("rot13")
    ('windows-1252', None)
    """
    if not label or not label.isascii():  # every WHATWG label is ASCII
        return None
    found = webencodings.lookup(label.strip().strip("\"'"))
    return found.name if found is not None else None


def _bom(body: bytes) -> tuple[str, int] | None:
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name, len(bom)
    return None


def _declared_encoding(body: bytes, *, xml: bool) -> str | None:
    """The encoding the document declares: its ``<meta>`` as the HTML prescan reads
    it, or (``xml``) its XML declaration."""
    match = _XML_ENCODING.match(body) if xml else _META_CHARSET.search(body[:_META_SCAN_BYTES])
    if match is None:
        return None
    name = encoding_for_label(match.group(1).decode("ascii", "replace"))
    # A document cannot be UTF-16 when it says so in ASCII: the standard reads it as
    # UTF-8, and x-user-defined as windows-1252.
    if name in ("utf-16le", "utf-16be"):
        return "utf-8"
    if name == "x-user-defined":
        return "windows-1252"
    return name


def _decode(body: bytes, name: str) -> str:
    if name == _REPLACEMENT:  # the standard's decoder for unsafe labels: one U+FFFD
        return "\ufffd" if body else ""
    encoding = webencodings.lookup(name)
    assert encoding is not None  # every name reaching here came from the table
    codec = _PYTHON_CODEC.get(name)
    info = codecs.lookup(codec) if codec is not None else encoding.codec_info
    return info.decode(body, "replace")[0]


def decode_body(body: bytes, header_charset: str | None, *, xml: bool = False) -> str:
    """Decode ``body``: a BOM wins, then the header's charset, then the document's
    declaration (``<meta>``; the XML declaration when ``xml``), then UTF-8.

    >>> decode_body(b'<?xml version="1.0" encoding="rot13"?><a>caf\\xc3\\xa9</a>', None, xml=True)
    '<?xml version="1.0" encoding="rot13"?><a>café</a>'
    """
    found = _bom(body)
    if found is not None:
        name, start = found
        return _decode(body[start:], name)
    name = encoding_for_label(header_charset) or _declared_encoding(body, xml=xml) or "utf-8"
    text = _decode(body, name)
    return text[1:] if text.startswith("\ufeff") else text
