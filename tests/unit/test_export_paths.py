"""The file a document gets in a Markdown export: readable, one per URL, never outside."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitelore.core.export_paths import markdown_path


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://docs.example.com/guide/", "docs.example.com/guide/index.md"),
        ("https://docs.example.com", "docs.example.com/index.md"),
        ("https://docs.example.com/guide/install.html", "docs.example.com/guide/install.md"),
        ("https://a.test/a/index.htm", "a.test/a/index.md"),
        ("https://a.test/api.php", "a.test/api.md"),
        ("https://a.test/notes.txt", "a.test/notes.txt.md"),
        ("https://A.TEST:8443/Guide", "a.test_8443/Guide.md"),
        ("https://[::1]:8000/p", "__1_8000/p.md"),
        ("https://a.test/caf%C3%A9/r%C3%A9sum%C3%A9.html", "a.test/café/résumé.md"),
        ("https://a.test/a%20b/c%2Fd", "a.test/a_b/c_d.md"),
        # Nothing can climb out or hide: dots, encoded separators, NUL, control characters.
        ("https://a.test/../../etc/passwd", "a.test/etc/passwd.md"),
        ("https://a.test/%2e%2e/%2E%2E/x", "a.test/_./_./x.md"),
        ("https://a.test/..%2f..%2fetc%2fpasswd", "a.test/_._.._etc_passwd.md"),
        ("https://a.test/%5C..%5Cwin", "a.test/_.._win.md"),
        ("https://a.test/.git/config", "a.test/_git/config.md"),
        ("https://a.test/x%00y/z%0a", "a.test/x_y/z_.md"),
        ("https://a.test/.html", "a.test/index.md"),
        # A folder never takes a document file's name (/a is a.md).
        ("https://a.test/a.md/b", "a.test/a.md_/b.md"),
        ("https://a.test/A.MD/b", "a.test/A.MD_/b.md"),
    ],
)
def test_paths(url: str, path: str) -> None:
    assert str(markdown_path(url)) == path


def test_a_query_gets_its_own_file() -> None:
    plain = markdown_path("https://a.test/search.html")
    one, two = (markdown_path(f"https://a.test/search.html?q={q}") for q in ("a", "b"))
    assert len({plain, one, two}) == 3
    assert one.parent == plain.parent
    assert one.name.startswith("search_")


def test_a_long_name_is_cut_with_a_hash() -> None:
    one, two = (markdown_path(f"https://a.test/{c * 400}") for c in ("é", "è"))
    assert one != two
    assert all(len(p.name.encode()) <= 255 for p in (one, two))


@given(st.text(max_size=80), st.text(max_size=20))
def test_no_path_leaves_the_folder(path: str, query: str) -> None:
    relative = markdown_path(f"https://a.test/{path}?{query}")
    assert not relative.is_absolute()
    for part in relative.parts:
        assert part not in ("", ".", "..")
        assert not part.startswith(".")
        assert "/" not in part
        assert "\\" not in part
        assert "\x00" not in part
        assert len(part.encode("utf-8", "surrogatepass")) <= 255
    assert relative.suffix == ".md"
    assert not any(folder.lower().endswith(".md") for folder in relative.parts[:-1])
