"""Pure readers: sitemap files (XML, index, gzip, text, caps) and the X-Robots-Tag header."""

from __future__ import annotations

import codecs
import encodings
import gzip
import pkgutil

import pytest
import webencodings

from sitelore.core.models import Document, Headers
from sitelore.core.robots import parse_robots_txt
from sitelore.core.sitemaps import SitemapError, parse_sitemap, same_host, sitemap_candidates
from sitelore.core.xrobots import apply_robots_tag, robots_tag_directives

BASE = "http://docs.test/sitemap.xml"
#: Python's codec modules that name no WHATWG encoding, plus aliases seen in the wild.
PYTHON_CODECS = sorted(
    name
    for name in {m.name for m in pkgutil.iter_modules(encodings.__path__)}
    | {"rot13", "base64", "bz2", "hex", "zlib", "uu", "quopri", "utf-7", "utf-32", "mbcs"}
    if webencodings.lookup(name) is None and name not in ("aliases", "__init__")
)
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str) -> bytes:
    body = "".join(f"<url><loc>{loc}</loc><lastmod>2024-05-14</lastmod></url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{body}</urlset>'.encode()


class TestParseSitemap:
    def test_urlset_locs_in_order_resolved_against_the_file(self) -> None:
        parsed = parse_sitemap(urlset("/a", "b.html", "https://other.test/c", "/a"), BASE)
        assert parsed.index is False
        assert parsed.locs == (
            "http://docs.test/a",
            "http://docs.test/b.html",
            "https://other.test/c",
        )

    def test_sitemap_index_lists_sitemaps(self) -> None:
        body = f"<sitemapindex {NS}><sitemap><loc>/s1.xml</loc></sitemap></sitemapindex>"
        parsed = parse_sitemap(body.encode(), BASE)
        assert parsed.index is True
        assert parsed.locs == ("http://docs.test/s1.xml",)

    def test_entities_and_cdata_are_text(self) -> None:
        body = f"<urlset {NS}><url><loc>/a?x=1&amp;y=2</loc></url>"
        body += "<url><loc><![CDATA[/b]]></loc></url></urlset>"
        assert parse_sitemap(body.encode(), BASE).locs == (
            "http://docs.test/a?x=1&y=2",
            "http://docs.test/b",
        )

    def test_non_http_and_blank_locs_are_dropped(self) -> None:
        parsed = parse_sitemap(urlset("mailto:x@y.z", "ftp://f.test/x", " ", "/ok"), BASE)
        assert parsed.locs == ("http://docs.test/ok",)

    def test_gzip_is_detected_by_its_magic(self) -> None:
        assert parse_sitemap(gzip.compress(urlset("/a")), BASE).locs == ("http://docs.test/a",)

    def test_a_gzip_bomb_stops_at_the_cap(self) -> None:
        bomb = gzip.compress(b"<urlset>" + b" " * 5_000_000 + b"</urlset>")
        assert len(bomb) < 10_000
        with pytest.raises(SitemapError, match="more than 1000000 bytes"):
            parse_sitemap(bomb, BASE, max_bytes=1_000_000)

    def test_a_large_plain_body_is_refused(self) -> None:
        with pytest.raises(SitemapError, match="more than 100 bytes"):
            parse_sitemap(urlset(*[f"/p{i}" for i in range(20)]), BASE, max_bytes=100)

    @pytest.mark.parametrize(
        "body",
        [
            b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "aaaa">]><urlset/>',
            b"<!doctype urlset><urlset/>",
        ],
    )
    def test_a_dtd_is_refused_before_parsing(self, body: bytes) -> None:
        with pytest.raises(SitemapError, match="DTD"):
            parse_sitemap(body, BASE)

    def test_the_url_cap_truncates(self) -> None:
        parsed = parse_sitemap(urlset(*[f"/p{i}" for i in range(10)]), BASE, max_urls=3)
        assert parsed.locs == ("http://docs.test/p0", "http://docs.test/p1", "http://docs.test/p2")
        assert parsed.truncated is True

    def test_plain_text_sitemaps(self) -> None:
        body = b"\xef\xbb\xbfhttp://docs.test/a\n\nhttp://docs.test/b\r\nnot a url\n"
        assert parse_sitemap(body, "http://docs.test/sitemap.txt").locs == (
            "http://docs.test/a",
            "http://docs.test/b",
        )

    @pytest.mark.parametrize("body", [b"<urlset><url>", b"<html><body>x</body></html>"])
    def test_broken_or_foreign_xml_is_an_error(self, body: bytes) -> None:
        with pytest.raises(SitemapError):
            parse_sitemap(body, BASE)

    @pytest.mark.parametrize("label", PYTHON_CODECS)
    def test_a_declared_python_codec_is_no_charset(self, label: str) -> None:
        """Every codec Python knows that WHATWG does not (``rot13``, ``base64``,
        ``punycode``, ``utf-7``, ``idna``, ``utf-32`` ...): the file is read as UTF-8.
        Python's parser raised LookupError, ValueError or UnicodeError: exit 70."""
        body = f'<?xml version="1.0" encoding="{label}"?><urlset {NS}>'
        body += "<url><loc>/caf\u00e9</loc></url></urlset>"
        assert parse_sitemap(body.encode(), BASE).locs == ("http://docs.test/caf\u00e9",)

    @pytest.mark.parametrize(
        ("bom", "codec"), [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")]
    )
    def test_a_utf16_sitemap_is_xml(self, bom: bytes, codec: str) -> None:
        """A BOM is not text: the file was read as a text sitemap of one garbage URL."""
        body = bom + urlset("/a").decode().replace("UTF-8", "UTF-16").encode(codec)
        assert parse_sitemap(body, BASE).locs == ("http://docs.test/a",)

    def test_bad_gzip_is_an_error(self) -> None:
        with pytest.raises(SitemapError, match="gzip"):
            parse_sitemap(b"\x1f\x8bnot gzip at all", BASE)


def test_candidates_are_robots_sitemaps_then_the_default_location() -> None:
    assert sitemap_candidates("https://d.test:8443/docs/x", ["https://d.test:8443/s.xml"]) == (
        "https://d.test:8443/s.xml",
        "https://d.test:8443/sitemap.xml",
    )
    assert sitemap_candidates("http://d.test/", ["http://d.test/sitemap.xml"]) == (
        "http://d.test/sitemap.xml",
    )


def test_same_host_compares_host_and_port() -> None:
    assert same_host("http://d.test/a.xml", ["http://D.test/b.xml"])
    assert not same_host("http://d.test:81/a.xml", ["http://d.test/b.xml"])


class TestRobotsSitemapLines:
    def test_a_path_is_resolved_against_the_robots_url(self) -> None:
        rules = parse_robots_txt(
            "Sitemap: /sitemap.xml\nSitemap: https://cdn.test/s.xml\n",
            base_url="http://127.0.0.1:8000/robots.txt",
        )
        assert rules.sitemaps == ("http://127.0.0.1:8000/sitemap.xml", "https://cdn.test/s.xml")

    def test_without_a_base_a_path_is_still_ignored(self) -> None:
        assert parse_robots_txt("Sitemap: /sitemap.xml\n").sitemaps == ()


class TestXRobotsTag:
    @pytest.mark.parametrize(
        ("values", "expected"),
        [
            ([], (False, False)),
            (["noindex"], (True, False)),
            (["NoFollow"], (False, True)),
            (["none"], (True, True)),
            (["noindex, nofollow"], (True, True)),
            (["all"], (False, False)),
            (["noarchive", "nosnippet"], (False, False)),
            (["unavailable_after: 25 Jun 2010 15:00:00 PST"], (False, False)),
            (["googlebot: noindex"], (False, False)),
            (["sitelore: noindex"], (True, False)),
            (["SiteLore: nofollow"], (False, True)),
            (["googlebot: none, sitelore: nofollow"], (False, True)),
            (["sitelore: nofollow, noindex"], (True, True)),
            (["googlebot: noindex", "nofollow"], (False, True)),
            (["max-snippet: 20, noindex"], (True, False)),
        ],
    )
    def test_directives_for_our_token(self, values: list[str], expected: tuple[bool, bool]) -> None:
        assert robots_tag_directives(values, "sitelore") == expected

    def test_the_header_adds_to_what_the_page_says(self) -> None:
        page = Document(url="http://d.test/", title="t", markdown="m", links=("http://d.test/a",))
        headers = Headers.of([("X-Robots-Tag", "nofollow")])
        tagged = apply_robots_tag(page, headers, "sitelore")
        assert (tagged.noindex, tagged.nofollow) == (False, True)
        meta_noindex = Document(url="http://d.test/", title="t", markdown="m", noindex=True)
        assert apply_robots_tag(meta_noindex, headers, "sitelore").noindex is True
        assert apply_robots_tag(page, Headers(), "sitelore") is page
