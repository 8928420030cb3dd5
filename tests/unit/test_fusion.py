"""Reciprocal rank fusion of section rankings: a table of rankings in, one order out."""

from __future__ import annotations

import pytest

from sitelore.adapters.store._fusion import RRF_K, fuse, hybrid_sections
from sitelore.adapters.store._ranking import Candidate, rank_pages


def _c(page: str, section: int = 0, score: float = -1.0, snippet: str = "") -> Candidate:
    return Candidate(
        id=page,
        url=f"https://f.test/{page}",
        title=page,
        content_hash=page,
        canonical_url=None,
        section=section,
        heading_path=(),
        anchor=None,
        start=0,
        end=1,
        snippet=snippet or page,
        score=score,
        link_ratio=0.0,
    )


@pytest.mark.parametrize(
    ("rankings", "expected"),
    [
        pytest.param([[], []], [], id="nothing"),
        pytest.param([["a", "b"], []], ["a", "b"], id="lexical-only-keeps-its-order"),
        pytest.param([[], ["b", "a"]], ["b", "a"], id="vector-only-keeps-its-order"),
        pytest.param([["a", "b", "c"], ["c", "b"]], ["c", "b", "a"], id="found-twice-beats-once"),
        pytest.param([["a", "b"], ["b", "a"]], ["a", "b"], id="a-tie-keeps-first-seen"),
        pytest.param([["a"], ["x", "y", "a"]], ["a", "x", "y"], id="both-lists-low-beats-one-top"),
    ],
)
def test_fused_order(rankings: list[list[str]], expected: list[str]) -> None:
    fused = fuse([[_c(page) for page in ranking] for ranking in rankings])

    assert [found.id for found in fused] == expected


def test_scores_are_negative_reciprocal_rank_sums_and_sections_stay_apart() -> None:
    lexical = [_c("a", 0, snippet="**marked**"), _c("a", 1)]
    vector = [_c("a", 1), _c("a", 0, snippet="plain")]

    fused = fuse([lexical, vector])

    both = -(1 / (RRF_K + 1) + 1 / (RRF_K + 2))
    assert [(f.section, round(f.score, 9)) for f in fused] == [
        (0, round(both, 9)),
        (1, round(both, 9)),
    ]
    assert fused[0].snippet == "**marked**"  # the first ranking's snippet is kept


def test_a_smaller_k_weighs_the_top_rank_more() -> None:
    lexical = [_c("a"), _c("x"), _c("b")]  # a: top of one ranking; b: third and fourth
    vector = [_c("y"), _c("z"), _c("w"), _c("b")]

    def order(k: int) -> list[str]:
        return [f.id for f in fuse([lexical, vector], k=k) if f.id in ("a", "b")]

    assert order(1) == ["a", "b"]
    assert order(60) == ["b", "a"]


@pytest.mark.parametrize(
    ("query", "lexical", "vector", "expected"),
    [
        # A name some section holds: the lexical order, then what only the vectors found.
        pytest.param("jsonb_set", ["a", "b"], ["b", "x", "y"], ["a", "b", "x", "y"], id="name"),
        pytest.param("Vec::new", ["a"], ["x", "a"], ["a", "x"], id="path"),
        pytest.param("decode", ["a"], [], ["a"], id="one-word-no-vectors"),
        # A name nothing holds: the vectors alone (as fused).
        pytest.param("zebra", [], ["x", "y"], ["x", "y"], id="name-found-nowhere"),
        # Several words: fused, so both lists low beat one top.
        pytest.param(
            "set a json key", ["a", "b"], ["x", "y", "b"], ["b", "a", "x", "y"], id="words"
        ),
        pytest.param("  padded  ", ["a"], ["x", "a"], ["a", "x"], id="spaces-around-one-word"),
    ],
)
def test_hybrid_sections(
    query: str, lexical: list[str], vector: list[str], expected: list[str]
) -> None:
    found = hybrid_sections(query, [_c(p) for p in lexical], [_c(p) for p in vector])

    assert [f.id for f in found] == expected


def test_a_name_ranks_pages_as_lexical_search_does_then_vector_pages() -> None:
    # BM25 says "a" leads far; RRF alone would put "b" (in both rankings) first.
    lexical = [_c("a", score=-20.0), _c("b", score=-5.0), _c("b", 1, score=-4.0)]
    vector = [_c("b"), _c("x"), _c("y")]

    hybrid = rank_pages(hybrid_sections("track_commit_timestamp", lexical, vector), 10)

    assert [hit.id for hit in hybrid][:2] == [hit.id for hit in rank_pages(lexical, 10)]
    assert [hit.id for hit in hybrid] == ["a", "b", "x", "y"]
    assert rank_pages(fuse([lexical, vector]), 10)[0].id == "b"
