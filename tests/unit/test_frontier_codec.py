"""Pure pieces of scale-out: the frontier's item format and fingerprints; PostgreSQL search text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitelore.adapters.frontier_redis import (
    FrontierItem,
    bucket_count,
    decode_item,
    fingerprint,
    split_url,
)
from sitelore.adapters.store._pg_text import MAX_WORD_CHARS, index_text
from sitelore.adapters.store._query import search_terms, tsquery_terms


class TestItems:
    @pytest.mark.parametrize(
        ("url", "origin", "rest"),
        [
            ("https://docs.test/", "https://docs.test", "/"),
            ("http://127.0.0.2:8080/a/b?x=1|2", "http://127.0.0.2:8080", "/a/b?x=1|2"),
            ("http://[::1]:81/p", "http://[::1]:81", "/p"),
        ],
    )
    def test_a_url_splits_into_its_origin_and_the_rest(
        self, url: str, origin: str, rest: str
    ) -> None:
        assert split_url(url) == (origin, rest)

    def test_the_origin_is_stored_once_per_queue_not_per_item(self) -> None:
        host, item = FrontierItem("https://docs.test/a?b=1", 2, 1).encode()

        assert (host, item) == ("https://docs.test", "1|2|/a?b=1")

    @given(
        path=st.text(alphabet="abc/?=|&%r0123456789", max_size=20),
        depth=st.integers(0, 20),
        attempt=st.integers(0, 9),
        hops=st.integers(0, 5),
    )
    def test_items_round_trip(self, path: str, depth: int, attempt: int, hops: int) -> None:
        original = FrontierItem("https://docs.test/" + path, depth, attempt, hops)

        assert decode_item(*original.encode()) == original


class TestFingerprints:
    def test_fingerprints_are_stable_63_bit_integers_with_a_bucket(self) -> None:
        value, bucket = fingerprint("https://docs.test/a", 64)

        assert (value, bucket) == fingerprint("https://docs.test/a", 64)
        assert 0 <= value < 2**63
        assert 0 <= bucket < 64
        assert fingerprint("https://docs.test/b", 64)[0] != value

    @pytest.mark.parametrize(
        ("max_pages", "buckets"), [(1, 1), (8, 1), (9, 2), (200, 32), (10**6, 65536)]
    )
    def test_buckets_are_a_power_of_two_sized_for_the_budget(
        self, max_pages: int, buckets: int
    ) -> None:
        assert bucket_count(max_pages) == buckets


class TestSearchText:
    @pytest.mark.parametrize(
        ("text", "words"),
        [
            ("Robots.txt: the Café's RULES", "robots txt the cafe s rules"),
            ("Tiếng Việt", "tieng viet"),
            ("Straße", "straße"),
            ("snake_case and e-mail", "snake case and e mail"),
            ("🕷️ spider", "spider"),
            ("a\0b", "a b"),
        ],
    )
    def test_words_are_split_and_folded_like_fts5_unicode61(self, text: str, words: str) -> None:
        assert index_text(text) == words

    def test_indexed_words_are_capped_and_overlong_words_dropped(self) -> None:
        assert index_text("one two three four", max_chars=8) == "one two"
        assert index_text("x" * (MAX_WORD_CHARS + 1) + " kept") == "kept"

    @given(st.text(max_size=50))
    def test_no_query_can_inject_tsquery_syntax(self, query: str) -> None:
        """What the PostgreSQL store hands ``to_tsquery``: quoted words and ``<->`` only."""
        for expression in tsquery_terms(search_terms(query)):
            for operand in expression.split():
                assert operand == "<->" or (
                    operand.startswith("'") and operand.endswith("'") and "'" not in operand[1:-1]
                )
