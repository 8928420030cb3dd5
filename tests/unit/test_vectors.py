"""Ranking stored vectors against a query: the order exact arithmetic gives, ties to the lower key.

The vectors hold small integers, so every dot product is exact in float32 and the
expected order can be worked out in plain Python (no rounding to argue about).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitelore.adapters.store._vectors import VectorMatrix, nearest, to_bytes

pytest.importorskip("numpy", reason="ranking needs numpy (the semantic or dev extra)")


def _expected(
    table: dict[int, list[float]], query: list[float], limit: int
) -> list[tuple[int, float]]:
    """The reference: exact dot products, nearest first, ties to the lower key."""
    scored = [
        (1.0 - sum(a * b for a, b in zip(row, query, strict=True)), key)
        for key, row in table.items()
    ]
    return [(key, distance) for distance, key in sorted(scored)[:limit]]


def _matrix(table: dict[int, list[float]], dims: int) -> VectorMatrix:
    return VectorMatrix.from_rows(((key, to_bytes(row)) for key, row in table.items()), dims)


def test_a_table_ranks_as_exact_arithmetic_does() -> None:
    rng = random.Random(16)
    keys = rng.sample(range(1, 10_000), 400)  # stored in no particular order
    table = {key: [float(rng.randint(-3, 3)) for _ in range(12)] for key in keys}
    query = [float(rng.randint(-3, 3)) for _ in range(12)]

    found = _matrix(table, 12).nearest(query, 25)

    assert found == _expected(table, query, 25)


def test_equal_distances_go_to_the_lower_key_even_across_the_cut() -> None:
    # Keys 9, 4 and 7 are equally near; only two fit: the lower keys win, in key order.
    table = {9: [1.0, 0.0], 4: [1.0, 0.0], 7: [1.0, 0.0], 2: [0.0, 1.0], 5: [2.0, 0.0]}

    assert _matrix(table, 2).nearest([1.0, 0.0], 3) == [(5, -1.0), (4, 0.0), (7, 0.0)]


@pytest.mark.parametrize("limit", [5, 50])
def test_a_limit_past_the_rows_returns_them_all_in_order(limit: int) -> None:
    table = {3: [0.0, 1.0], 1: [1.0, 0.0], 2: [1.0, 1.0]}

    assert _matrix(table, 2).nearest([1.0, 0.0], limit) == [(1, 0.0), (2, 0.0), (3, 1.0)]


@pytest.mark.parametrize(
    ("rows", "query", "limit"),
    [
        pytest.param([], [1.0, 0.0], 3, id="empty-matrix"),
        pytest.param([(1, [1.0, 0.0])], [1.0, 0.0, 0.0], 3, id="query-of-another-length"),
        pytest.param([(1, [1.0, 0.0])], [1.0, 0.0], 0, id="limit-zero"),
    ],
)
def test_nothing_to_rank(
    rows: list[tuple[int, list[float]]], query: list[float], limit: int
) -> None:
    matrix = _matrix(dict(rows), 2)

    assert matrix.nearest(query, limit) == []


def test_rows_of_another_length_are_left_out() -> None:
    rows = [(1, to_bytes([1.0, 0.0])), (2, to_bytes([1.0, 0.0, 0.0])), (3, to_bytes([0.0, 1.0]))]

    matrix = VectorMatrix.from_rows(rows, 2)

    assert matrix.keys.tolist() == [1, 3]
    assert nearest([0.0, 1.0], rows, 5) == [(3, 0.0), (1, 1.0)]


@given(
    table=st.dictionaries(
        st.integers(1, 10**6),
        st.lists(st.integers(-4, 4).map(float), min_size=6, max_size=6),
        max_size=60,
    ),
    query=st.lists(st.integers(-4, 4).map(float), min_size=6, max_size=6),
    limit=st.integers(0, 70),
)
def test_any_table_ranks_as_exact_arithmetic_does(
    table: dict[int, list[float]], query: list[float], limit: int
) -> None:
    assert _matrix(table, 6).nearest(query, limit) == _expected(table, query, limit)
