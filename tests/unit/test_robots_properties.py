"""Properties of sitelore.core.robots: parsing never raises; the matcher agrees with a reference."""

from __future__ import annotations

import ast
import functools
import inspect
import time

from hypothesis import example, given, settings
from hypothesis import strategies as st

import sitelore.core.robots
from sitelore.core.robots import (
    RobotsRule,
    RobotsRules,
    is_allowed,
    normalise_target,
    parse_robots_txt,
)

ALPHABET = "*$/ab"


def reference_match(pattern: str, path: str) -> bool:
    """A plain recursive matcher over the raw strings: the meaning, not the speed.

    ``*`` in the pattern matches any run; a final ``$`` anchors the end; any other
    ``$`` is literal; the match is anchored at the start only; a pattern that starts
    with neither ``/`` nor ``*`` is read with a leading ``/``.
    """
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if not body.startswith(("/", "*")):
        body = "/" + body

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


def brute_force_allowed(rules: RobotsRules, url: str) -> bool:
    """The decision by definition: try every rule, the longest match wins, allow on a tie.

    No bucket index and no pre-sorted order, so it checks both of those in ``is_allowed``.
    """
    target = normalise_target(url)
    if target == "/robots.txt" or target.startswith("/robots.txt?"):
        return True
    if rules.disallow_all:
        return False
    matching = [rule for rule in rules.rules if rule.matches(target)]
    if not matching:
        return True
    return max(matching, key=lambda rule: (rule.length, rule.allow)).allow


#: Robots lines mixed into arbitrary text, so that groups, rules and delays really occur.
FRAGMENTS = st.sampled_from(
    [
        "User-agent: *\n",
        "User-agent: sitelore\n",
        "user-agent: other\n",
        "Disallow: /a\n",
        "Disallow: /a*b$\n",
        "Allow: /a/\n",
        "Allow: /ab\n",
        "Disallow: /ab\n",
        "Allow: /a*\n",
        "Disallow: /\n",
        "Disallow: *\n",
        "Crawl-delay: 3\n",
        "Sitemap: https://example.com/s.xml\n",
        "# Disallow: /\n",
        "\n",
    ]
)
ROBOTS_TEXT = st.tuples(
    st.sampled_from(["", "User-agent: *\n", "User-agent: sitelore\n"]),
    st.lists(st.one_of(st.text(max_size=12), FRAGMENTS), max_size=12),
).map(lambda parts: parts[0] + "".join(parts[1]))
TARGETS = st.text(alphabet="/ab*$?%2A.", max_size=8).map(lambda p: "https://example.com/" + p)


class TestParsingNeverRaises:
    @given(text=st.one_of(st.text(), ROBOTS_TEXT), urls=st.lists(TARGETS, max_size=5))
    @settings(max_examples=500)
    @example(text="User-agent: *\nDisallow: /a\nAllow: /a/\n", urls=["https://example.com/a/"])
    @example(text="User-agent: *\nDisallow: /\n", urls=["https://example.com/robots.txt"])
    @example(text="User-agent: *\nDisallow: /ab\nAllow: /a*\n", urls=["https://example.com/ab"])
    @example(text="User-agent: *\nDisallow: *\nAllow: /ab\n", urls=["https://example.com/b"])
    def test_arbitrary_text(self, text: str, urls: list[str]) -> None:
        """Any text parses into well-formed rules that decide exactly as the definition does."""
        rules = parse_robots_txt(text)
        assert rules == parse_robots_txt(text)  # deterministic: no hidden state
        for rule in rules.rules:
            assert rule.pattern  # an empty Disallow means nothing and is not kept
            assert rule.pattern in text  # every pattern is a value written in the text
        lengths = [rule.length for rule in rules.rules]
        assert lengths == sorted(lengths, reverse=True)  # priority order: longest first
        assert rules.crawl_delay_ms is None or 0 < rules.crawl_delay_ms <= 10_000
        assert is_allowed(rules, "https://example.com/robots.txt") is True
        if ":" not in text:  # no line can be a record: nothing is restricted
            assert rules == parse_robots_txt("")
        for url in [*urls, "https://example.com/a?b", "https://example.com/"]:
            assert is_allowed(rules, url) is brute_force_allowed(rules, url), url

    @given(
        lines=st.lists(
            st.tuples(
                st.sampled_from(
                    ["User-agent", "Allow", "Disallow", "Crawl-delay", "Sitemap", "x", ""]
                ),
                st.sampled_from([":", " :", "", "::"]),
                st.text(alphabet=st.characters(exclude_characters="\r\n"), max_size=20),
            ),
            max_size=20,
        ),
        ending=st.sampled_from(["\n", "\r", "\r\n"]),
        user_agent=st.text(max_size=10),
        url=st.text(max_size=30),
    )
    @example(
        lines=[("User-agent", ":", "*"), ("Disallow", ":", "/a"), ("Crawl-delay", ":", "2")],
        ending="\r",
        user_agent="sitelore",
        url="https://example.com/a",
    )
    def test_robots_shaped_text(
        self, lines: list[tuple[str, str, str]], ending: str, user_agent: str, url: str
    ) -> None:
        """Robots-shaped text never raises, and CR, LF and CRLF endings mean the same."""
        text = ending.join(key + sep + value for key, sep, value in lines)
        rules = parse_robots_txt(text, user_agent)
        assert rules == parse_robots_txt(text.replace(ending, "\n"), user_agent)
        assert is_allowed(rules, url) is brute_force_allowed(rules, url)
        delay = rules.crawl_delay_ms
        assert delay is None or 0 < delay <= 10_000

    @given(data=st.binary(max_size=200))
    @example(data=b"\xff\xfe")
    @example(data=b"caf\xc3\xa9 \xe2\x82")
    def test_decoded_bytes(self, data: bytes) -> None:
        """Bytes decoded with replacement (as the loader does) parse into working rules.

        Garbage before a group cannot hide it (a longer pattern cannot be outranked by
        anything in 200 bytes), and a pattern built from the decoded text (U+FFFD and
        all) is compiled to plain ASCII escapes and matches the same text in a URL.
        """
        decoded = data.decode("utf-8", "replace")
        long_path = "/private-" + "x" * 250
        rules = parse_robots_txt(f"{decoded}\nUser-agent: sitelore\nDisallow: {long_path}\n")
        assert is_allowed(rules, "https://example.com" + long_path) is False
        assert is_allowed(rules, "https://example.com" + long_path + "/more") is False
        assert is_allowed(rules, "https://example.com/robots.txt") is True

        word = "".join(ch for ch in decoded if not ch.isascii() or ch.isalnum())
        rules = parse_robots_txt(f"User-agent: *\nDisallow: /p{word}/end\n")
        [rule] = rules.rules
        assert all(part.isascii() for part in (rule.head, *rule.middle, rule.tail)), rule
        assert is_allowed(rules, f"https://example.com/p{word}/end") is False
        assert is_allowed(rules, f"https://example.com/p{word}/end?x=1") is False
        assert is_allowed(rules, f"https://example.com/p{word}/other") is True


class TestNoBacktracking:
    """The adversarial patterns of the spec are decided in far under a second.

    The bound is a blow-up guard, not a benchmark: a backtracking matcher takes minutes
    (or forever) on these, the forward scan milliseconds.
    """

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

    def test_the_issue_pattern_is_decided_both_ways(self) -> None:
        """``/*a*a*a*a*a*a*a*a*a*a*a$`` (the issue's): a near miss, then a hit, same size."""
        pattern = "/*a*a*a*a*a*a*a*a*a*a*a$"
        assert pattern == "/" + "*a" * 11 + "$"
        verdict, seconds = self._decide(pattern, "/" + "a" * 99_998 + "b")
        assert (verdict, seconds < 1.0) == (True, True)
        verdict, seconds = self._decide(pattern, "/" + "a" * 99_999)
        assert (verdict, seconds < 1.0) == (False, True)

    def test_two_thousand_stars(self) -> None:
        """2000 ``*`` then ``b$`` against a 100 000-char path that has a ``b``, not at the end."""
        pattern = "*" * 2000 + "b$"
        near_miss = "/" + "a" * 50_000 + "b" + "a" * 49_998
        assert len(near_miss) == 100_000
        verdict, seconds = self._decide(pattern, near_miss)
        assert verdict is True  # no match: allowed
        assert seconds < 1.0
        verdict, seconds = self._decide(pattern, near_miss[:-1] + "b")
        assert verdict is False  # the same path ending in b: disallowed
        assert seconds < 1.0

    def test_two_thousand_star_a_segments(self) -> None:
        """``/*a`` x 2000 then ``$`` against a path with one ``a`` too few before the ``b``."""
        verdict, seconds = self._decide("/" + "*a" * 2000 + "$", "/" + "a" * 1_999 + "b")
        assert verdict is True
        assert seconds < 1.0
        verdict, seconds = self._decide("/" + "*a" * 2000 + "$", "/" + "a" * 99_999)
        assert verdict is False
        assert seconds < 1.0


def _imported_modules(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            in ("__import__", "import_module")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(str(node.args[0].value))
    return names


def test_the_matcher_uses_no_regular_expressions() -> None:
    """sitelore.core.robots imports neither ``re`` nor ``regex`` (in any form, at any depth)."""
    tree = ast.parse(inspect.getsource(sitelore.core.robots))
    roots = {name.split(".")[0] for name in _imported_modules(tree)}
    assert roots, "the module's imports were not found"
    assert "asyncio" in roots  # the walk does see the module's real imports
    assert not roots & {"re", "regex", "sre_compile", "sre_parse", "_sre"}
