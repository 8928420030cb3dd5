"""Query terms and page ranking, the pure parts of search shared by both stores."""

from __future__ import annotations

import pytest

from sitelore.adapters.store._query import fts5_query, search_terms, tsquery_terms
from sitelore.adapters.store._ranking import (
    Candidate,
    candidate_sizes,
    enough_pages,
    hub_weight,
    page_key,
    rank_pages,
)
from sitelore.core.models import SearchHit


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("how do I read a file line by line", [("read",), ("file",), ("line",)]),
        ("os.path.exists", [("os", "path", "exists"), ("os",), ("path",), ("exists",)]),
        ("HashMap::entry", [("hashmap", "entry"), ("hashmap",), ("entry",)]),
        ("jsonb_set", [("jsonb", "set"), ("jsonb",), ("set",)]),
        ('"full jitter" backoff', [("full", "jitter"), ("backoff",)]),
        ('"the who"', [("the", "who")]),  # a quoted phrase keeps its stop words
        ("the to be", [("the",), ("to",), ("be",)]),  # nothing but stop words: kept
        ("Café CAFÉ cafe", [("cafe",)]),  # folded, then once
        ('NOT "x" OR y*', [("x",), ("y",)]),
        ("' ; DROP", [("drop",)]),  # quotes and operators are never syntax
        ("", []),
        ("\0 \ud800", []),
    ],
)
def test_search_terms(query: str, terms: list[tuple[str, ...]]) -> None:
    assert search_terms(query) == terms


def test_terms_become_quoted_fts5_phrases_and_tsquery_sequences() -> None:
    terms = [("os", "path"), ("os",)]
    assert fts5_query(terms) == '"os path" OR "os"'
    assert tsquery_terms(terms) == ["'os' <-> 'path'", "'os'"]
    assert fts5_query([]) == ""


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://d.test/lib/index.html", "https://d.test/lib/"),
        ("https://d.test/lib/", "https://d.test/lib/"),
        ("HTTPS://D.test/lib/index.htm#x", "https://d.test/lib/"),
        ("https://d.test/index.php", "https://d.test/"),
        ("https://d.test/myindex.html", "https://d.test/myindex.html"),
        ("https://d.test/a?q=1#f", "https://d.test/a?q=1"),
    ],
)
def test_page_keys(url: str, key: str) -> None:
    assert page_key(url) == key


_A = "https://d.test/a"


def _found(url: str, score: float, **extra: object) -> Candidate:
    fields: dict[str, object] = {
        "id": url,
        "url": url,
        "title": "T",
        "content_hash": url,
        "canonical_url": None,
        "section": 0,
        "heading_path": ("T",),
        "anchor": None,
        "start": 0,
        "end": 1,
        "snippet": "s",
        "score": score,
        "link_ratio": 0.0,
    } | extra
    return Candidate(**fields)  # type: ignore[arg-type]


def test_a_page_is_shown_once_by_its_best_section_plus_some_of_its_second() -> None:
    hits = rank_pages(
        [
            _found("https://d.test/a", -5.0, section=3, anchor="x"),
            _found("https://d.test/b", -5.5),
            _found("https://d.test/a", -4.0, section=1),
        ],
        10,
    )

    assert [hit.url for hit in hits] == ["https://d.test/a", "https://d.test/b"]
    assert hits[0].section == 3
    assert hits[0].anchor_url == "https://d.test/a#x"
    assert hits[0].score == pytest.approx(-5.0 + 0.2 * -4.0)


@pytest.mark.parametrize(
    ("first", "second", "extra"),
    [
        pytest.param(_A, "https://d.test/b", {"content_hash": _A}, id="same-hash"),
        pytest.param(_A + "/", _A + "/index.html", {}, id="index-html"),
        pytest.param(_A, "https://d.test/c", {"canonical_url": _A}, id="canonical"),
    ],
)
def test_one_result_per_content(first: str, second: str, extra: dict[str, object]) -> None:
    hits = rank_pages([_found(first, -5.0), _found(second, -4.0, **extra)], 10)
    assert [hit.url for hit in hits] == [first]


def test_hub_sections_rank_below_content_and_the_limit_holds() -> None:
    hits = rank_pages(
        [
            _found("https://d.test/genindex", -9.0, link_ratio=0.9),
            _found("https://d.test/guide", -4.0),
            _found("https://d.test/other", -3.0),
        ],
        2,
    )
    assert [hit.url for hit in hits] == ["https://d.test/guide", "https://d.test/other"]


@pytest.mark.parametrize(
    ("link_ratio", "weight"),
    [
        pytest.param(0.0, 1.0, id="prose"),
        pytest.param(0.5, 1.0, id="half-links-still-whole"),
        pytest.param(0.7, 0.625, id="prose-with-a-list-of-names-a-little-lower"),
        pytest.param(0.9, 0.25, id="table-of-contents"),
        pytest.param(1.0, 0.25, id="all-links"),
    ],
)
def test_hub_weight_falls_from_half_link_lines_to_a_quarter(
    link_ratio: float, weight: float
) -> None:
    assert hub_weight(link_ratio) == pytest.approx(weight)


def test_a_query_that_is_a_page_title_lifts_that_page_even_a_hub() -> None:
    found = [
        _found("https://d.test/for", -19.6, title="Keyword for"),
        _found("https://d.test/loop", -17.1, title="Keyword loop"),
        _found(
            "https://d.test/chapter", -30.0, title="Chapter 2. The SQL Language", link_ratio=0.8
        ),
        _found("https://d.test/functions", -12.0, title="SQL Functions"),
    ]

    loop = rank_pages(found, 2, query="keyword LOOP")
    chapter = rank_pages(found, 1, query="Chapter 2. The SQL Language")
    neither = rank_pages(found, 2, query="keyword loop chapter")

    assert [hit.url for hit in loop] == ["https://d.test/loop", "https://d.test/for"]
    assert loop[0].score == pytest.approx(-17.1 * 2)
    assert [hit.url for hit in chapter] == ["https://d.test/chapter"]
    assert [hit.url for hit in neither] == ["https://d.test/for", "https://d.test/loop"]


def test_more_sections_are_fetched_until_enough_pages() -> None:
    assert candidate_sizes(10) == (80, 320, 1280)
    assert candidate_sizes(1)[0] == 50
    few_pages = [_found("https://d.test/a", -1.0)] * 80
    assert not enough_pages(few_pages, 80, 10)  # 80 sections of one page: ask for more
    assert enough_pages(few_pages[:30], 80, 10)  # fewer than asked: that is all there is
    many = [_found(f"https://d.test/{i}", -1.0) for i in range(80)]
    assert enough_pages(many, 80, 10)


@pytest.mark.parametrize(
    ("title", "path", "where"),
    [
        (
            "Retries and backoff",
            ("Retries and backoff", "Backoff schedule"),
            "Retries and backoff > Backoff schedule",
        ),
        ("Retries  and backoff", ("Retries and backoff",), "Retries  and backoff"),
        ("Tasks - Lumen", ("Tasks", "Lifecycle"), "Tasks - Lumen > Tasks > Lifecycle"),
        ("Notes", (), "Notes"),
    ],
)
def test_a_hit_says_where_it_is_without_repeating_the_title(
    title: str, path: tuple[str, ...], where: str
) -> None:
    hit = SearchHit(id="x", url="u", title=title, snippet="", score=0.0, heading_path=path)
    assert hit.where() == where
