"""Charset labels are WHATWG Encoding Standard labels only; the rest fall back as it says."""

from __future__ import annotations

import codecs

import pytest

from sitelore.core.convert import decode_body, to_document
from sitelore.core.convert._charset import encoding_for_label

URL = "https://ex.com/page.html"


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("utf-8", "utf-8"),
        ("UTF8", "utf-8"),
        (" unicode-1-1-utf-8\t", "utf-8"),
        ('"utf-8"', "utf-8"),
        ("latin1", "windows-1252"),
        ("ISO-8859-1", "windows-1252"),
        ("us-ascii", "windows-1252"),
        ("ascii", "windows-1252"),
        ("gb2312", "gbk"),
        ("x-sjis", "shift_jis"),
        ("koi8-u", "koi8-u"),
        ("utf-16", "utf-16le"),
        ("iso-2022-kr", "replacement"),
        # Python codecs that are not charsets, or not WHATWG labels: unknown.
        ("punycode", None),
        ("rot13", None),
        ("rot_13", None),
        ("base64", None),
        ("bz2", None),
        ("zlib", None),
        ("hex", None),
        ("unicode_escape", None),
        ("raw_unicode_escape", None),
        ("idna", None),
        ("utf-7", None),
        ("utf-32", None),
        ("cp1252", "windows-1252"),
        ("latin-1", None),
        ("mbcs", None),
        ("", None),
        (None, None),
    ],
)
def test_labels_are_whatwg_labels_only(label: str | None, expected: str | None) -> None:
    """A label names a WHATWG encoding, or nothing at all (never a Python codec)."""
    assert encoding_for_label(label) == expected


@pytest.mark.parametrize(
    "label",
    ["punycode", "rot13", "base64", "bz2", "hex", "unicode_escape", "utf-7", "uu", "quopri"],
)
def test_an_unknown_header_label_falls_back_to_meta_then_utf8(label: str) -> None:
    """An unusable header label is skipped: the <meta> decides, else UTF-8."""
    with_meta = b'<meta charset="windows-1252"><p>\x93q\x94</p>'
    assert decode_body(with_meta, label).endswith("\u201cq\u201d</p>")
    assert decode_body("café ☃".encode(), label) == "café ☃"


@pytest.mark.parametrize(
    "label", ["punycode", "rot13", "base64", "bz2", "hex", "unicode_escape", "utf-7"]
)
def test_an_unknown_meta_label_falls_back_to_utf8(label: str) -> None:
    """A <meta> naming a codec that is not a WHATWG encoding is ignored."""
    body = f'<meta charset="{label}"><p>café</p>'.encode()
    assert decode_body(body, None) == body.decode()


@pytest.mark.parametrize(
    ("body", "header", "expected"),
    [
        # A BOM wins over the header, as the standard says.
        (codecs.BOM_UTF8 + "é".encode(), "windows-1252", "é"),
        (codecs.BOM_UTF16_LE + "é".encode("utf-16-le"), "utf-8", "é"),
        (codecs.BOM_UTF16_BE + "é".encode("utf-16-be"), None, "é"),
        # The header may name UTF-16; a <meta> saying UTF-16 means UTF-8.
        ("é".encode("utf-16-le"), "utf-16le", "é"),
        (b'<meta charset="utf-16">\xc3\xa9', None, '<meta charset="utf-16">é'),
        # x-user-defined in a <meta> means windows-1252.
        (b'<meta charset="x-user-defined">\x93', None, '<meta charset="x-user-defined">\u201c'),
        # Unsafe encodings decode to one replacement character.
        (b"<p>secret</p>", "iso-2022-kr", "\ufffd"),
        (b"", "iso-2022-kr", ""),
        # gbk is decoded with the gb18030 decoder (a superset).
        ("汉".encode("gb18030"), "gbk", "汉"),
        ("€".encode("cp1252"), "ascii", "€"),
    ],
)
def test_decoding_follows_the_standard(body: bytes, header: str | None, expected: str) -> None:
    """BOM, then header, then <meta>, then UTF-8, with the standard's special cases."""
    assert decode_body(body, header) == expected


@pytest.mark.parametrize("label", ["punycode", "rot13", "base64", "bz2", "hex", "unicode_escape"])
def test_an_exotic_charset_page_converts(label: str) -> None:
    """A whole page declaring an exotic charset converts instead of raising."""
    html = f"<html><head><meta charset='{label}'><title>T</title></head>"
    html += "<body><main><h1>Title</h1><p>Body text of the page, café.</p></main></body></html>"
    for content_type in (f"text/html; charset={label}", "text/html"):
        doc = to_document(html.encode(), content_type, URL)
        assert "café" in doc.markdown
