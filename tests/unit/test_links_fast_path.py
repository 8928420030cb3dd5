"""The fast join of links.py gives exactly what urljoin + urlsplit + quote give."""

from __future__ import annotations

from urllib.parse import quote, urljoin, urlsplit, urlunsplit

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sitelore.core.convert import DocumentConverter, to_document
from sitelore.core.links import LinkCache, link_resolver, resolve_link, resolve_links

_SAFE = "!#$%&'()*+,-./:;=?@[]_~"


def _oracle(href: str, base: str, keep_fragment: bool) -> str | None:
    """resolve_link as it was written before the fast path (non-mailto hrefs)."""
    raw = href.strip().translate({ord(c): None for c in "\t\n\r"})
    if not raw or (raw.startswith("#") and not keep_fragment):
        return None
    try:
        parts = urlsplit(urljoin(base, raw))
        _ = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    fragment = quote(parts.fragment, safe=_SAFE) if keep_fragment else ""
    path = quote(parts.path, safe=_SAFE) or "/"
    query = quote(parts.query, safe=_SAFE)
    return urlunsplit((parts.scheme, parts.netloc.lower(), path, query, fragment))


_SEGMENTS = st.sampled_from(
    ["a", "b", "x.html", ".", "..", "", "a;p", "s p", "%41", "%zz", "é", "[1]", "c:d", "~u"]
)
_BASES = st.builds(
    lambda scheme, host, path, query, fragment: f"{scheme}://{host}{path}{query}{fragment}",
    st.sampled_from(["http", "https", "HTTPS"]),
    st.sampled_from(["docs.example.com", "Docs.Example.COM:8080", "127.0.0.1:9", "h:", "u@h"]),
    st.lists(_SEGMENTS, max_size=5).map(lambda s: "/" + "/".join(s) if s else ""),
    st.sampled_from(["", "?q=1", "?"]),
    st.sampled_from(["", "#top"]),
)
_HREFS = st.one_of(
    st.builds(
        lambda lead, segments, query, fragment: lead + "/".join(segments) + query + fragment,
        st.sampled_from(
            [
                "",
                "/",
                "//",
                "./",
                "../",
                "?",
                "#",
                ";",
                "http:",
                "https:",
                "http://h/",
                "HTTP://X.org/",
            ]
        ),
        st.lists(_SEGMENTS, max_size=6),
        st.sampled_from(["", "?x=1", "?a:b", "?", "?x y"]),
        st.sampled_from(["", "#f", "#", "#a b", "#x#y"]),
    ),
    st.text(alphabet="ab./?#:;%[]@ -_~é\t", max_size=12),
)


@given(href=_HREFS, base=_BASES, keep_fragment=st.booleans())
@settings(max_examples=1000, deadline=None)
@example(href="../../../../x", base="http://h/a/b/c", keep_fragment=False)
@example(href="..", base="http://h/a/./b/../c.html", keep_fragment=False)
@example(href="/..//x", base="http://h/a", keep_fragment=False)
@example(href="a//b/", base="http://h/p//q/r", keep_fragment=True)
def test_fast_join_matches_urljoin(href: str, base: str, keep_fragment: bool) -> None:
    """Whatever the href and base, the parsed-once base gives the general path's answer."""
    expected = _oracle(href, base, keep_fragment)
    assert link_resolver(base, keep_fragment=keep_fragment)(href) == expected
    assert resolve_link(href, base, keep_fragment=keep_fragment) == expected


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("../api/x.html", "https://docs.example.com/api/x.html"),
        ("x.html#s", "https://docs.example.com/guide/x.html"),
        ("/search?q=a:b", "https://docs.example.com/search?q=a:b"),
        ("./", "https://docs.example.com/guide/"),
        ("..", "https://docs.example.com/"),
        ("sub/../y", "https://docs.example.com/guide/y"),
    ],
)
def test_resolve_links_fast_cases(href: str, expected: str) -> None:
    """The forms docs sites use most are joined by the fast path, correctly."""
    assert resolve_links([href], "https://docs.example.com/guide/page.html") == (expected,)


@given(pages=st.lists(st.tuples(_BASES, st.lists(_HREFS, max_size=8)), min_size=1, max_size=8))
@settings(max_examples=250, deadline=None)
@example(pages=[("http://h/a/b?x=1", ["?y", "\x01?z"]), ("http://h/a/c", ["?y", "\x01?z"])])
@example(pages=[("http://h/a/b", ["c", "../d"]), ("http://H/a/e", ["c", "../d"])])
@example(pages=[("https://h/a", [";", "http:", "https:?x"]), ("https://h/a?q=1", [";", "https:"])])
@example(pages=[("http://h/a/b", ["c", " mail\nto:x@y", "c#f"]), ("http://h/a/d", ["c#f", "c"])])
@example(pages=[("http://h/a/b?q", ["//", "//x/y", ";p", "tel:1"]), ("http://h/a/c", ["//", ";p"])])
def test_a_shared_cache_never_changes_an_answer(pages: list[tuple[str, list[str]]]) -> None:
    """Pages resolved through one small crawl-wide cache get what they get alone."""
    cache = LinkCache(max_entries=7)
    for base, hrefs in pages:
        assert resolve_links(hrefs, base, cache=cache) == resolve_links(hrefs, base)
        assert len(cache) <= 7
        # Content links (fragments kept, mailto allowed) may be answered from it too.
        alone = link_resolver(base, keep_fragment=True, allow_mailto=True)
        shared = link_resolver(base, keep_fragment=True, allow_mailto=True, cache=cache)
        assert [shared(href) for href in hrefs] == [alone(href) for href in hrefs]


def test_the_cache_keeps_repeated_hrefs_per_directory() -> None:
    """The sidebar of two pages in one directory is resolved once."""
    cache = LinkCache()
    sidebar = ["../api/a.html", "../api/b.html", "/", "?page=2"]
    first = resolve_links(sidebar, "https://ex.com/docs/guide/one.html", cache=cache)
    second = resolve_links(sidebar, "https://ex.com/docs/guide/two.html", cache=cache)
    assert (
        first[:3]
        == second[:3]
        == (
            "https://ex.com/docs/api/a.html",
            "https://ex.com/docs/api/b.html",
            "https://ex.com/",
        )
    )
    assert first[3] == "https://ex.com/docs/guide/one.html?page=2"
    assert second[3] == "https://ex.com/docs/guide/two.html?page=2"
    assert len(cache) == 3  # the "?page=2" answer depends on the page: never kept


def test_document_converter_shares_one_link_cache_across_pages() -> None:
    """The spider's converter gives to_document's answers and remembers links."""
    page = (
        b'<html><body><main><h1>T</h1><p>Text <a href="../api/x.html#s">x</a>'
        b' <a href="?page=2">next</a></p></main></body></html>'
    )
    convert = DocumentConverter()
    for name in ("one", "two"):
        url = f"https://ex.com/docs/guide/{name}.html"
        assert convert(page, "text/html", url) == to_document(page, "text/html", url)
    assert len(convert.link_cache) == 1
