"""Twin URLs (``core.twins``): which spellings may serve one document, and claim keys."""

from __future__ import annotations

import pytest

from sitelore.core.models import content_hash
from sitelore.core.twins import claim_key, twin_urls

D = "https://d.test"


@pytest.mark.parametrize(
    ("url", "twins"),
    [
        (f"{D}/", (f"{D}/index.html", f"{D}/index.htm")),
        (f"{D}/a/b/", (f"{D}/a/b/index.html", f"{D}/a/b/index.htm")),
        (f"{D}/a/b/index.html", (f"{D}/a/b/", f"{D}/a/b/index.htm")),
        (f"{D}/a/b/index.htm", (f"{D}/a/b/", f"{D}/a/b/index.html")),
        (f"{D}/a/?v=1", (f"{D}/a/index.html?v=1", f"{D}/a/index.htm?v=1")),
        (f"{D}/a/index.html?v=1", (f"{D}/a/?v=1", f"{D}/a/index.htm?v=1")),
        # A slash inside the query is not the path's.
        (f"{D}/a?next=/b/", ()),
        # No other file is a directory's index; no trailing-slash or extension folding.
        (f"{D}/a/b", ()),
        (f"{D}/a/b.html", ()),
        (f"{D}/a/index.php", ()),
        (f"{D}/a/INDEX.HTML", ()),
        (f"{D}/a/index.html/", (f"{D}/a/index.html/index.html", f"{D}/a/index.html/index.htm")),
        (f"{D}/v1/x", ()),
    ],
)
def test_twin_urls(url: str, twins: tuple[str, ...]) -> None:
    assert twin_urls(url) == twins


def test_twins_of_one_group_with_equal_text_share_a_claim_key() -> None:
    text = content_hash("Guide", "# Guide")
    keys = {claim_key(url, text) for url in (f"{D}/g/", f"{D}/g/index.html", f"{D}/g/index.htm")}
    assert len(keys) == 1
    assert len(keys.pop()) == 32


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (f"{D}/g/", f"{D}/h/"),  # another directory
        (f"{D}/g/", f"{D}/g/?v=2"),  # another query
        (f"{D}/v1/x", f"{D}/v2/x"),  # equal text under different paths stays two documents
        (f"{D}/g/", "https://e.test/g/"),  # another origin
    ],
)
def test_claim_keys_differ_outside_one_twin_group(one: str, other: str) -> None:
    text = content_hash("Same", "same")
    assert claim_key(one, text) != claim_key(other, text)


def test_claim_keys_differ_for_different_text() -> None:
    assert claim_key(f"{D}/g/", content_hash("A", "a")) != claim_key(
        f"{D}/g/", content_hash("A", "b")
    )
