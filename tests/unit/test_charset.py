"""Charset labels are WHATWG Encoding Standard labels only; the rest fall back as it says."""

from __future__ import annotations

import codecs

import pytest

from sitelore.core.charset import encoding_for_label
from sitelore.core.convert import decode_body, to_document

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
        # Labels that are not ASCII (a header's raw bytes arrive as lone surrogates).
        ("\udcff\udcfe", None),
        ("utf-8\u00e9", None),
        ("\u212aoi8-r", None),
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


@pytest.mark.parametrize(
    ("body", "header", "expected"),
    [
        # The XML declaration names a WHATWG label: it decides.
        (b'<?xml version="1.0" encoding="iso-8859-1"?><a>caf\xe9</a>', None, "café"),
        (b"<?xml version='1.0' encoding='windows-1251'?><a>\xe4\xe0</a>", None, "да"),
        # A Python codec, an unknown label, or UTF-16 written in ASCII: UTF-8.
        (b'<?xml version="1.0" encoding="rot13"?><a>caf\xc3\xa9</a>', None, "café"),
        (b'<?xml version="1.0" encoding="base64"?><a>caf\xc3\xa9</a>', None, "café"),
        (b'<?xml version="1.0" encoding="utf-16"?><a>caf\xc3\xa9</a>', None, "café"),
        (b'<?xml version="1.0" encoding="punycode"?><a>caf\xc3\xa9</a>', None, "café"),
        # The header's charset wins over the declaration, a BOM over both.
        (b'<?xml version="1.0" encoding="utf-8"?><a>caf\xe9</a>', "latin1", "café"),
        (codecs.BOM_UTF8 + b'<?xml version="1.0" encoding="latin1"?><a>\xc3\xa9</a>', None, "é"),
        # Only at the very start.
        (b' <?xml version="1.0" encoding="latin1"?><a>caf\xc3\xa9</a>', None, "café"),
    ],
)
def test_an_xml_declaration_is_read_as_a_whatwg_label(
    body: bytes, header: str | None, expected: str
) -> None:
    """XML (XHTML pages, sitemaps): BOM, header, the declaration's WHATWG label, UTF-8."""
    assert decode_body(body, header, xml=True).endswith(f">{expected}</a>")


def test_an_html_page_ignores_an_xml_declaration() -> None:
    """text/html is not XML: the declaration is no charset source (HTML standard)."""
    body = b'<?xml version="1.0" encoding="iso-8859-1"?><p>caf\xc3\xa9</p>'
    assert decode_body(body, None).endswith("<p>café</p>")


def test_an_xhtml_page_is_decoded_by_its_xml_declaration() -> None:
    body = (
        b'<?xml version="1.0" encoding="iso-8859-1"?><html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>T</title></head><body><main><h1>T</h1><p>caf\xe9 au lait</p></main>"
        b"</body></html>"
    )
    assert "café au lait" in to_document(body, "application/xhtml+xml", URL).markdown
