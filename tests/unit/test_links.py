"""resolve_links / resolve_link: absolute http(s) links, no fragments, no credentials."""

from __future__ import annotations

import pytest

from sitelore.core.links import resolve_link, resolve_links

BASE = "https://docs.example.com/guide/page.html"


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("other.html", "https://docs.example.com/guide/other.html"),
        ("../index.html", "https://docs.example.com/index.html"),
        ("/api/", "https://docs.example.com/api/"),
        ("//cdn.example.net/x.js", "https://cdn.example.net/x.js"),
        ("http://other.example/a?b=1", "http://other.example/a?b=1"),
        ("other.html#section", "https://docs.example.com/guide/other.html"),
        ("  spaced.html \n", "https://docs.example.com/guide/spaced.html"),
        ("a b.html", "https://docs.example.com/guide/a%20b.html"),
        ("HTTPS://Docs.Example.com/X", "https://docs.example.com/X"),
        ("https://example.com", "https://example.com/"),
        ("?page=2", "https://docs.example.com/guide/page.html?page=2"),
    ],
)
def test_resolves_against_the_base(href: str, expected: str) -> None:
    """Relative, root-relative, protocol-relative and absolute hrefs become absolute."""
    assert resolve_link(href, BASE) == expected


@pytest.mark.parametrize(
    "href",
    [
        "",
        "#top",
        "javascript:alert(1)",
        "JaVaScRiPt:void(0)",
        "mailto:someone@example.com",
        "data:text/html,<b>x</b>",
        "ftp://files.example.com/x",
        "https://user:secret@example.com/",
        "https://user@example.com/",
        "http://example.com:99999/",
        "http://[::1/",
        "tel:+123",
    ],
)
def test_drops_links_that_cannot_be_crawled(href: str) -> None:
    """Fragment-only links, other schemes, credentials and malformed URLs are dropped."""
    assert resolve_link(href, BASE) is None


@pytest.mark.parametrize(
    ("href", "kwargs", "expected"),
    [
        ("#top", {"keep_fragment": True}, "https://docs.example.com/guide/page.html#top"),
        ("a.html#x", {"keep_fragment": True}, "https://docs.example.com/guide/a.html#x"),
        ("mailto:a@example.com", {"allow_mailto": True}, "mailto:a@example.com"),
        ("mailto:a@example.com?subject=hi", {"allow_mailto": True}, "mailto:a@example.com"),
        ("mailto:", {"allow_mailto": True}, None),
    ],
)
def test_options_for_markdown_links(
    href: str, kwargs: dict[str, bool], expected: str | None
) -> None:
    """Markdown links may keep their fragment and may be mailto links."""
    assert resolve_link(href, BASE, **kwargs) == expected


@pytest.mark.parametrize(
    ("hrefs", "base", "expected"),
    [
        (
            ["b.html#x", "/c", "#top", "mailto:a@b.c", "b.html#y", "/c"],
            "https://ex.com/a/",
            ("https://ex.com/a/b.html", "https://ex.com/c"),
        ),
        ([], "https://ex.com/", ()),
        (["z", "y", "z", "x"], "https://ex.com/", tuple(f"https://ex.com/{c}" for c in "zyx")),
        (["https://u:p@ex.com/", "javascript:x", "#"], "https://ex.com/", ()),
    ],
)
def test_resolve_links_dedups_in_order(
    hrefs: list[str], base: str, expected: tuple[str, ...]
) -> None:
    """Kept links come out once each, in first-seen order, without fragments."""
    assert resolve_links(hrefs, base) == expected


def test_resolve_links_accepts_any_iterable() -> None:
    """A generator of hrefs works (the converter passes one)."""
    assert resolve_links((h for h in ["a", "b"]), "https://ex.com/") == (
        "https://ex.com/a",
        "https://ex.com/b",
    )
