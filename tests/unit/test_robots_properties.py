"""Properties of sitelore.robots: parsing never raises; the matcher agrees with a reference."""

from __future__ import annotations

import functools
import time

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sitelore.robots import (
    RobotsRule,
    is_allowed,
    normalise_target,
    parse_robots_txt,
)

ALPHABET = "*$/ab"


def reference_match(pattern: str, path: str) -> bool:
    """A plain recursive matcher over the raw strings: the meaning, not the speed.

    ``*`` in the pattern matches any run; a final ``$`` anchors the end; any other
    ``$`` is literal; the match is anchored at the start only.
    """
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(body):
            return j == len(path) or not anchored
        if body[i] == "*":
            return match(i + 1, j) or (j < len(path) and match(i, j + 1))
        return j < len(path) and body[i] == path[j] and match(i + 1, j + 1)

    return match(0, 0)


patterns = st.text(alphabet=ALPHABET, max_size=10)
paths = st.text(alphabet=ALPHABET, max_size=14).map(lambda p: "/" + p)


class TestMatcherAgreesWithReference:
    @given(pattern=patterns, path=paths)
    @settings(max_examples=3000)
    @example(pattern="/*a*a$", path="/aa")
    @example(pattern="/*ab$", path="/ab")
    @example(pattern="/a$$", path="/a$")
    @example(pattern="**", path="/")
    @example(pattern="$", path="/")
    def test_segment_matcher_equals_reference(self, pattern: str, path: str) -> None:
        """Compiled segments + forward scan decide exactly like the recursive matcher."""
        compiled = RobotsRule.compile(pattern, allow=False)
        assert compiled.matches(normalise_target(path)) is reference_match(pattern, path)


class TestParsingNeverRaises:
    @given(text=st.text())
    @settings(max_examples=500)
    def test_arbitrary_text(self, text: str) -> None:
        """Any text parses into rules that answer questions."""
        rules = parse_robots_txt(text)
        assert isinstance(is_allowed(rules, "https://example.com/a?b"), bool)

    @given(
        lines=st.lists(
            st.tuples(
                st.sampled_from(
                    ["User-agent", "Allow", "Disallow", "Crawl-delay", "Sitemap", "x", ""]
                ),
                st.sampled_from([":", " :", "", "::"]),
                st.text(max_size=20),
            ),
            max_size=20,
        ),
        ending=st.sampled_from(["\n", "\r", "\r\n"]),
        user_agent=st.text(max_size=10),
        url=st.text(max_size=30),
    )
    def test_robots_shaped_text(
        self, lines: list[tuple[str, str, str]], ending: str, user_agent: str, url: str
    ) -> None:
        """Robots-shaped text with arbitrary values, agents and URLs never raises."""
        text = ending.join(key + sep + value for key, sep, value in lines)
        rules = parse_robots_txt(text, user_agent)
        assert isinstance(is_allowed(rules, url), bool)
        delay = rules.crawl_delay_ms
        assert delay is None or 0 < delay <= 10_000

    @given(data=st.binary(max_size=200))
    def test_decoded_bytes(self, data: bytes) -> None:
        """Bytes decoded with replacement (as the loader does) always parse."""
        parse_robots_txt(data.decode("utf-8", "replace"))


class TestNoBacktracking:
    """The adversarial patterns of the spec are decided in far under a second."""

    def _decide(self, pattern: str, path: str) -> tuple[bool, float]:
        rules = parse_robots_txt(f"User-agent: *\nDisallow: {pattern}\n")
        start = time.perf_counter()
        verdict = is_allowed(rules, "https://example.com" + path)
        return verdict, time.perf_counter() - start

    def test_many_a_segments_near_miss(self) -> None:
        """``/*a*a...a$`` against a 100 000-char path that never ends in ``a``."""
        verdict, seconds = self._decide("/" + "*a" * 11 + "$", "/" + "a" * 99_998 + "b")
        assert verdict is True
        assert seconds < 1.0

    def test_many_a_segments_sparse_near_miss(self) -> None:
        """The same pattern where the path has only ten ``a`` before the end."""
        path = "/" + ("b" * 9_999 + "a") * 10 + "b"
        verdict, seconds = self._decide("/" + "*a" * 11 + "$", path)
        assert verdict is True
        assert seconds < 1.0

    def test_two_thousand_stars(self) -> None:
        """A pattern of 2000 ``*`` (and one more literal) against a 100 000-char path."""
        verdict, seconds = self._decide("*" * 2000, "/" + "a" * 99_999)
        assert verdict is False
        assert seconds < 1.0
        verdict, seconds = self._decide("/" + "*a" * 2000 + "$", "/" + "a" * 1_999 + "b")
        assert verdict is True
        assert seconds < 1.0
