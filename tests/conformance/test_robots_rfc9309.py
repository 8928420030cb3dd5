"""RFC 9309 conformance table for sitelore.core.robots (specs/robots.md), one behaviour per row."""

from __future__ import annotations

import pytest

from sitelore.core.robots import (
    ALLOW_ALL,
    DISALLOW_ALL,
    PARSE_LIMIT_BYTES,
    RobotsRule,
    RobotsState,
    is_allowed,
    normalise_target,
    parse_robots_txt,
    product_token,
    unavailable_rules,
    unreachable_rules,
)

BASE = "https://example.com"


def allowed(robots: str, path: str, user_agent: str = "sitelore") -> bool:
    return is_allowed(parse_robots_txt(robots, user_agent), BASE + path)


# -- grouping: which group applies -------------------------------------------------------

GROUPING = [
    ("star-group-applies", "User-agent: *\nDisallow: /a\n", "/a", False),
    ("star-group-other-path", "User-agent: *\nDisallow: /a\n", "/b", True),
    ("specific-group-applies", "User-agent: sitelore\nDisallow: /a\n", "/a", False),
    ("specific-case-insensitive-upper", "User-agent: SITELORE\nDisallow: /a\n", "/a", False),
    ("specific-case-insensitive-mixed", "User-agent: SiteLore\nDisallow: /a\n", "/a", False),
    ("other-agent-ignored", "User-agent: otherbot\nDisallow: /a\n", "/a", True),
    ("prefix-of-token-not-match", "User-agent: site\nDisallow: /a\n", "/a", True),
    ("token-prefix-of-value-not-match", "User-agent: sitelorebot\nDisallow: /a\n", "/a", True),
    ("token-with-hyphen-suffix-not-match", "User-agent: sitelore-news\nDisallow: /a\n", "/a", True),
    ("substring-not-match", "User-agent: mysitelore\nDisallow: /a\n", "/a", True),
    ("value-with-version-matches", "User-agent: sitelore/1.0\nDisallow: /a\n", "/a", False),
    (
        "specific-replaces-star",
        "User-agent: *\nDisallow: /a\n\nUser-agent: sitelore\nDisallow: /b\n",
        "/a",
        True,
    ),
    (
        "specific-replaces-star-own-rule",
        "User-agent: *\nDisallow: /a\n\nUser-agent: sitelore\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "empty-specific-group-replaces-star",
        "User-agent: *\nDisallow: /\n\nUser-agent: sitelore\n",
        "/a",
        True,
    ),
    (
        "empty-disallow-specific-replaces-star",
        "User-agent: sitelore\nDisallow:\n\nUser-agent: *\nDisallow: /\n",
        "/a",
        True,
    ),
    (
        "specific-groups-merged-first",
        "User-agent: sitelore\nDisallow: /a\n\nUser-agent: sitelore\nDisallow: /b\n",
        "/a",
        False,
    ),
    (
        "specific-groups-merged-second",
        "User-agent: sitelore\nDisallow: /a\n\nUser-agent: sitelore\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "star-groups-merged-first",
        "User-agent: *\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n",
        "/a",
        False,
    ),
    (
        "star-groups-merged-second",
        "User-agent: *\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "consecutive-agents-share-group-first",
        "User-agent: otherbot\nUser-agent: sitelore\nDisallow: /a\n",
        "/a",
        False,
    ),
    (
        "consecutive-agents-share-group-star",
        "User-agent: sitelore\nUser-agent: otherbot\nDisallow: /a\n",
        "/a",
        False,
    ),
    (
        "agent-after-rule-starts-new-group",
        "User-agent: sitelore\nDisallow: /a\nUser-agent: otherbot\nDisallow: /b\n",
        "/b",
        True,
    ),
    (
        "agent-after-empty-rule-starts-new-group",
        "User-agent: sitelore\nDisallow:\nUser-agent: otherbot\nDisallow: /b\n",
        "/b",
        True,
    ),
    # Only allow/disallow rules end a user-agent list (RFC 9309 2.2.4): any other line
    # (crawl-delay, sitemap, unknown keys) between two user-agent lines keeps one group.
    (
        "crawl-delay-does-not-end-agent-list",
        "User-agent: sitelore\nCrawl-delay: 1\nUser-agent: otherbot\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "crawl-delay-first-agent-other",
        "User-agent: otherbot\nCrawl-delay: 1\nUser-agent: sitelore\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "sitemap-does-not-end-agent-list",
        "User-agent: otherbot\nSitemap: https://e.com/s.xml\nUser-agent: sitelore\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "request-rate-does-not-end-agent-list",
        "User-agent: otherbot\nRequest-rate: 1/5\nUser-agent: sitelore\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "unreadable-line-does-not-end-agent-list",
        "User-agent: otherbot\nno colon here\nUser-agent: sitelore\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "agent-after-rule-past-crawl-delay-starts-new-group",
        "User-agent: sitelore\nCrawl-delay: 1\nDisallow: /a\nUser-agent: otherbot\nDisallow: /b\n",
        "/b",
        True,
    ),
    (
        "blank-line-does-not-end-agent-list",
        "User-agent: otherbot\n\nUser-agent: sitelore\nDisallow: /a\n",
        "/a",
        False,
    ),
    (
        "blank-line-does-not-end-group",
        "User-agent: sitelore\nDisallow: /a\n\nDisallow: /b\n",
        "/b",
        False,
    ),
    (
        "comment-does-not-end-group",
        "User-agent: sitelore\n# note\nDisallow: /a\n",
        "/a",
        False,
    ),
    (
        "unknown-key-does-not-end-agent-list",
        "User-agent: otherbot\nFoo: bar\nUser-agent: sitelore\nDisallow: /a\n",
        "/a",
        False,
    ),
    (
        "sitemap-does-not-end-group",
        "User-agent: sitelore\nSitemap: https://e.com/s.xml\nDisallow: /a\n",
        "/a",
        False,
    ),
    ("rules-before-any-agent-ignored", "Disallow: /a\nUser-agent: *\nDisallow: /b\n", "/a", True),
    ("only-rules-no-agent", "Disallow: /\n", "/a", True),
    ("no-group-at-all", "# nothing here\n", "/a", True),
    ("no-star-and-no-match", "User-agent: otherbot\nDisallow: /\n", "/x", True),
    ("star-with-trailing-text-is-star", "User-agent: * # all\nDisallow: /a\n", "/a", False),
    ("star-prefix-word-not-star", "User-agent: *bot\nDisallow: /a\n", "/a", True),
    ("empty-agent-value-matches-nothing", "User-agent:\nDisallow: /a\n", "/a", True),
    (
        "blank-line-between-agents-same-group",
        "User-agent: sitelore\n\nUser-agent: *\nDisallow: /\n",
        "/a",
        False,
    ),
    (
        "group-naming-star-and-token",
        "User-agent: *\nUser-agent: sitelore\nDisallow: /a\n",
        "/a",
        False,
    ),
]


@pytest.mark.parametrize(
    ("robots", "path", "expected"),
    [pytest.param(r, p, e, id=i) for i, r, p, e in GROUPING],
)
def test_grouping(robots: str, path: str, expected: bool) -> None:
    assert allowed(robots, path) is expected


AGENTS = [
    ("bare-token", "sitelore", "sitelore"),
    ("full-user-agent", "sitelore/0.1 (+https://example.org/bot)", "sitelore"),
    ("with-underscore-and-dash", "Foo_Bar-baz/2.1", "Foo_Bar-baz"),
    ("leading-space", "  FooBot/1", "FooBot"),
    ("digits-end-token", "Bot2/1", "Bot"),
    ("empty", "", ""),
]


@pytest.mark.parametrize(("user_agent", "token"), [pytest.param(u, t, id=i) for i, u, t in AGENTS])
def test_product_token(user_agent: str, token: str) -> None:
    assert product_token(user_agent) == token


AGENT_MATCH = [
    ("full-ua-string-selects-group", "FooBot/2.1 (+https://x)", False),
    ("token-case-insensitive", "FOOBOT", False),
    ("other-crawler-gets-star", "BarBot/1.0", True),
]


@pytest.mark.parametrize(
    ("user_agent", "expected"), [pytest.param(u, e, id=i) for i, u, e in AGENT_MATCH]
)
def test_user_agent_argument(user_agent: str, expected: bool) -> None:
    robots = "User-agent: foobot\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n"
    assert allowed(robots, "/a", user_agent) is expected


# -- parsing: lines, keys, comments, BOM ---------------------------------------------------

PARSING = [
    ("key-lowercase", "user-agent: *\ndisallow: /a\n", "/a", False),
    ("key-uppercase", "USER-AGENT: *\nDISALLOW: /a\n", "/a", False),
    ("key-mixed-case", "User-Agent: *\nDisAllow: /a\n", "/a", False),
    ("space-before-colon", "User-agent : *\nDisallow : /a\n", "/a", False),
    ("no-space-after-colon", "User-agent:*\nDisallow:/a\n", "/a", False),
    ("tabs-around-value", "User-agent:\t*\t\nDisallow:\t/a\t\n", "/a", False),
    ("leading-whitespace-line", "   User-agent: *\n   Disallow: /a\n", "/a", False),
    ("crlf-line-endings", "User-agent: *\r\nDisallow: /a\r\n", "/a", False),
    ("cr-line-endings", "User-agent: *\rDisallow: /a\r", "/a", False),
    ("mixed-line-endings", "User-agent: *\r\nDisallow: /a\rDisallow: /b\n", "/b", False),
    ("final-line-without-newline", "User-agent: *\nDisallow: /a", "/a", False),
    ("bom-skipped", "\ufeffUser-agent: *\nDisallow: /a\n", "/a", False),
    ("bom-then-crlf", "\ufeffUser-agent: *\r\nDisallow: /a\r\n", "/a", False),
    ("comment-line", "# hello\nUser-agent: *\nDisallow: /a\n", "/a", False),
    ("comment-after-value", "User-agent: *\nDisallow: /a # secret\n", "/a", False),
    ("comment-after-value-not-part", "User-agent: *\nDisallow: /a # secret\n", "/b", True),
    ("comment-glued-to-value", "User-agent: *\nDisallow: /a#x\n", "/ab", False),
    ("comment-after-agent", "User-agent: sitelore # us\nDisallow: /a\n", "/a", False),
    ("commented-out-rule", "User-agent: *\n# Disallow: /a\n", "/a", True),
    ("comment-only-value-is-empty", "User-agent: *\nDisallow: # nothing\n", "/a", True),
    ("empty-disallow-adds-no-rule", "User-agent: *\nDisallow:\n", "/a", True),
    ("empty-allow-adds-no-rule", "User-agent: *\nAllow:\nDisallow: /\n", "/a", False),
    ("unknown-key-ignored", "User-agent: *\nNoindex: /a\n", "/a", True),
    ("line-without-colon-skipped", "User-agent: *\nDisallow /a\nDisallow: /b\n", "/a", True),
    ("line-after-bad-line-counts", "User-agent: *\nDisallow /a\nDisallow: /b\n", "/b", False),
    ("only-first-colon-splits", "User-agent: *\nDisallow: /a:b\n", "/a:b", False),
    ("only-first-colon-splits-miss", "User-agent: *\nDisallow: /a:b\n", "/a", True),
    ("allow-parsed", "User-agent: *\nDisallow: /\nAllow: /public\n", "/public/x", True),
    ("pattern-case-sensitive", "User-agent: *\nDisallow: /Private\n", "/private", True),
    ("pattern-case-sensitive-hit", "User-agent: *\nDisallow: /Private\n", "/Private", False),
    ("empty-file", "", "/a", True),
    ("whitespace-only", "  \n\t\n  ", "/a", True),
    (
        "non-utf8-replacement-harmless",
        "User-agent: *\nDisallow: /\ufffd\nDisallow: /a\n",
        "/a",
        False,
    ),
    ("nul-bytes-harmless", "User-agent: *\x00\nDisallow: /a\n", "/a", True),
    ("form-feed-is-not-a-line-break", "User-agent: *\x0cDisallow: /a\n", "/a", True),
    ("html-body-no-rules", "<html><body>Not found</body></html>", "/a", True),
]


@pytest.mark.parametrize(
    ("robots", "path", "expected"),
    [pytest.param(r, p, e, id=i) for i, r, p, e in PARSING],
)
def test_parsing(robots: str, path: str, expected: bool) -> None:
    assert allowed(robots, path) is expected


def _padded_robots(rule_line: str, *, fill_to: int) -> str:
    head = "User-agent: *\n"
    filler = ("# " + "x" * 97 + "\n") * ((fill_to - len(head)) // 100)
    filler += "#" * (fill_to - len(head) - len(filler) - 1) + "\n"
    return head + filler + rule_line


LIMIT_CASES = [
    ("rule-inside-limit-counts", PARSE_LIMIT_BYTES - 2000, "/a", False),
    ("rule-after-limit-ignored", PARSE_LIMIT_BYTES + 10, "/a", True),
    ("rule-cut-by-limit-ignored", PARSE_LIMIT_BYTES - 5, "/a", True),
]


@pytest.mark.parametrize(
    ("fill_to", "path", "expected"),
    [pytest.param(f, p, e, id=i) for i, f, p, e in LIMIT_CASES],
)
def test_parse_limit(fill_to: int, path: str, expected: bool) -> None:
    robots = _padded_robots("Disallow: /a\n", fill_to=fill_to)
    assert allowed(robots, path) is expected


def test_rule_ending_exactly_at_limit_counts() -> None:
    """A line whose newline falls just past the limit is complete and still counts."""
    line = "Disallow: /a"
    robots = _padded_robots(line + "\nDisallow: /b\n", fill_to=PARSE_LIMIT_BYTES - len(line))
    assert robots.encode()[PARSE_LIMIT_BYTES - len(line) : PARSE_LIMIT_BYTES] == line.encode()
    assert allowed(robots, "/a") is False
    assert allowed(robots, "/b") is True


def test_parse_limit_counts_utf8_bytes() -> None:
    """The limit is in UTF-8 bytes: multi-byte comment filler pushes a rule past it."""
    filler = "# " + "\u00e9" * 200 + "\n"
    robots = "User-agent: *\n" + filler * (PARSE_LIMIT_BYTES // 300) + "Disallow: /a\n"
    assert len(robots) < PARSE_LIMIT_BYTES < len(robots.encode())
    assert allowed(robots, "/a") is True


# -- matching ----------------------------------------------------------------------------

MATCHING = [
    # plain prefixes
    ("prefix-exact", "/fish", "/fish", False),
    ("prefix-longer-path", "/fish", "/fish.html", False),
    ("prefix-subdir", "/fish", "/fish/salmon.html", False),
    ("prefix-word", "/fish", "/fishheads", False),
    ("prefix-query", "/fish", "/fish.php?id=anything", False),
    ("prefix-case-differs", "/fish", "/Fish.asp", True),
    ("prefix-not-at-start", "/fish", "/catfish", True),
    ("prefix-query-only", "/fish", "/?id=fish", True),
    ("root-blocks-all", "/", "/anything", False),
    ("root-blocks-root", "/", "/", False),
    ("private-blocks-privateer", "/private", "/privateer", False),
    ("dir-slash-no-match-without-slash", "/private/", "/private", True),
    ("dir-slash-matches-children", "/private/", "/private/x", False),
    ("dir-slash-matches-dir", "/private/", "/private/", False),
    ("dir-slash-matches-deep", "/private/", "/private/a/b/c?d=e", False),
    ("dir-slash-not-sibling", "/private/", "/private-notes/x", True),
    ("dir-slash-encoded-slash-is-distinct", "/private/", "/private%2Fx", True),
    ("dir-slash-dot-segments-no-bypass", "/private/", "/public/../private/x", False),
    ("dir-slash-encoded-dots-no-bypass", "/private/", "/public/%2e%2e/private/x", False),
    ("dir-slash-single-dot-no-bypass", "/private/", "/./private/x", False),
    ("dir-slash-double-slash-distinct", "/private/", "//private/x", True),
    ("question-prefix-no-match-elsewhere", "/?q=", "/search?q=1", True),
    ("star-question-matches", "/*?q=", "/search?q=1", False),
    ("query-in-pattern", "/search?q=", "/search?q=x", False),
    ("query-in-pattern-other", "/search?q=", "/search?p=x", True),
    ("regex-dot-is-literal", "/a.c", "/abc", True),
    ("regex-plus-is-literal", "/a+", "/aa", True),
    ("regex-brackets-literal", "/[ab]", "/a", True),
    ("regex-brackets-literal-hit", "/[ab]", "/[ab]x", False),
    # patterns that start with neither "/" nor "*": read with a leading "/" (Google)
    ("pattern-without-slash-gets-one", "fish", "/fish", False),
    ("pattern-without-slash-still-anchored", "fish", "/a/fish", True),
    ("pattern-without-slash-dir", "fish/", "/fish/salmon.htm", False),
    ("pattern-without-slash-dir-miss", "fish/", "/fish", True),
    ("pattern-without-slash-star", "a*c", "/abc", False),
    ("pattern-dollar-alone-is-root", "$", "/", False),
    ("pattern-dollar-alone-miss", "$", "/a", True),
    # patterns that start with "*": the star matches any start, so they match anywhere
    ("leading-star-letter-allows-other", "*m", "/foo", True),
    ("leading-star-letter-anywhere", "*m", "/a/m", False),
    ("leading-star-letter-first", "*m", "/moo", False),
    ("leading-star-letter-in-query", "*m", "/a?x=m", False),
    ("leading-star-letter-root-miss", "*m", "/", True),
    ("leading-star-anchored", "*m$", "/am", False),
    ("leading-star-anchored-miss", "*m$", "/ma", True),
    ("leading-star-slash-matches-all", "*/", "/x", False),
    ("leading-star-two-segments", "*a*b", "/xbxa", True),
    # wildcards
    ("star-suffix", "/fish*", "/fish", False),
    ("star-suffix-longer", "/fish*", "/fishheads/yummy.html", False),
    ("star-suffix-miss", "/fish*", "/Fish.bar", True),
    ("star-middle", "/*.php", "/index.php", False),
    ("star-middle-deep", "/*.php", "/folder/any.php.file.html", False),
    ("star-middle-query", "/*.php", "/filename.php?parameters", False),
    ("star-middle-miss", "/*.php", "/windows.PHP", True),
    ("star-middle-miss-root", "/*.php", "/", True),
    ("star-leading", "*.gif", "/a/b.gif", False),
    ("star-only", "*", "/anything", False),
    ("double-star", "/a**b", "/axxb", False),
    ("many-stars", "/a*b*c", "/a1b2c3", False),
    ("many-stars-order-matters", "/a*b*c", "/a1c2b3", True),
    ("star-matches-empty", "/a*b", "/ab", False),
    ("star-overlapping-segments", "/*aba", "/ababa", False),
    ("star-repeated-segment", "/*a*a", "/a", True),
    ("star-repeated-segment-hit", "/*a*a", "/aa", False),
    ("star-crosses-slash", "/a*/c", "/a/b/c", False),
    ("star-crosses-query", "/a*c", "/a?x=c", False),
    # end anchor
    ("dollar-exact", "/fish$", "/fish", False),
    ("dollar-longer", "/fish$", "/fish2", True),
    ("dollar-query", "/fish$", "/fish?x", True),
    ("dollar-star", "/*.php$", "/filename.php", False),
    ("dollar-star-deep", "/*.php$", "/folder/filename.php", False),
    ("dollar-star-query", "/*.php$", "/filename.php?parameters", True),
    ("dollar-star-suffix", "/*.php$", "/filename.php/", True),
    ("dollar-star-name", "/*.php$", "/filename.php5", True),
    ("pdf-dollar", "/*.pdf$", "/a.pdf", False),
    ("pdf-dollar-query", "/*.pdf$", "/a.pdf?v=1", True),
    ("dollar-root-only", "/$", "/", False),
    ("dollar-root-only-miss", "/$", "/a", True),
    ("dollar-in-middle-literal", "/a$b", "/a$b", False),
    ("dollar-in-middle-literal-miss", "/a$b", "/a", True),
    ("dollar-in-middle-encoded-target", "/a$b", "/a%24b", False),
    ("double-dollar-last-anchors", "/a$$", "/a$", False),
    ("double-dollar-last-anchors-miss", "/a$$", "/a$x", True),
    ("star-dollar-means-prefix", "/a*$", "/abc", False),
    ("dollar-after-star-tail-overlap", "/*ab$", "/ab", False),
    ("dollar-tail-must-follow-middle", "/*b*ab$", "/ab", True),
    # percent-encoding normalisation
    ("unreserved-escape-in-target", "/secret/", "/%73ecret/x", False),
    ("unreserved-escape-in-pattern", "/%73ecret/", "/secret/x", False),
    ("tilde-escape-lowercase", "/~user", "/%7euser", False),
    ("tilde-escape-pattern", "/%7Euser", "/~user", False),
    ("reserved-escape-kept", "/a%2Fb", "/a%2fb", False),
    ("reserved-escape-not-decoded", "/a/b", "/a%2Fb", True),
    ("hex-case-pattern-lower", "/a%3cb", "/a%3Cb", False),
    ("non-ascii-pattern-vs-encoded-target", "/caf\u00e9", "/caf%C3%A9", False),
    ("encoded-pattern-vs-non-ascii-target", "/caf%c3%a9", "/caf\u00e9", False),
    ("non-ascii-both", "/\u65e5\u672c", "/\u65e5\u672c/x", False),
    ("non-ascii-different", "/caf\u00e9", "/cafe", True),
    ("percent-2a-is-literal-star", "/a%2Ab", "/axxb", True),
    ("percent-2a-matches-star", "/a%2Ab", "/a*b", False),
    ("percent-2a-lowercase-literal", "/a%2ab", "/a*b", False),
    ("percent-2a-matches-encoded", "/a%2Ab", "/a%2Ab", False),
    ("percent-24-is-not-anchor", "/a%24", "/a$x", False),
    ("percent-24-literal-miss", "/a%24", "/ax", True),
    ("bad-escape-literal", "/a%zz", "/a%zz", False),
    ("bad-escape-literal-miss", "/a%zz", "/a", True),
    ("truncated-escape-literal", "/a%2", "/a%2", False),
    # characters a URL cannot carry as they are: percent-encoded alike on both sides
    ("lt-raw-pattern-encoded-target", "/a<b", "/a%3Cb", False),
    ("lt-encoded-pattern-raw-target", "/a%3cb", "/a<b", False),
    ("gt-raw-pattern-lower-target", "/a>b", "/a%3eb", False),
    ("quote-raw-pattern", '/a"b', "/a%22b", False),
    ("quote-raw-both", '/a"b', '/a"b/x', False),
    ("space-raw-pattern", "/a b", "/a%20b", False),
    ("space-encoded-pattern-raw-target", "/a%20b", "/a b", False),
    ("backslash-raw-pattern", "/a\\b", "/a%5Cb", False),
    ("braces-pipe-raw-pattern", "/{x|y}", "/%7Bx%7Cy%7D", False),
    ("caret-backtick-raw-pattern", "/a^`", "/a%5E%60", False),
    ("control-char-encoded", "/a\x7fb", "/a%7Fb", False),
    ("non-ascii-in-query", "/s?q=\u00e9", "/s?q=%C3%A9", False),
    ("non-ascii-astral", "/\U0001f600", "/%F0%9F%98%80", False),
    ("tilde-lower-and-upper-escapes", "/%7e", "/%7E", False),
    ("letter-escape-vs-raw", "/%41", "/A", False),
    ("digit-escape-vs-raw", "/v%31", "/v1/x", False),
    ("bad-escape-vs-encoded-percent", "/a%zz", "/a%25zz", False),
    ("encoded-percent-vs-bare-percent", "/a%25", "/a%", False),
    ("encoded-percent-not-decoded", "/a%25", "/a", True),
    ("plus-not-decoded", "/a+b", "/a%2Bb", True),
    ("encoded-plus-kept", "/a%2bb", "/a%2Bb", False),
    ("lt-different-char-miss", "/a<b", "/a%3Eb", True),
]


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [pytest.param(pa, p, e, id=i) for i, pa, p, e in MATCHING],
)
def test_matching(pattern: str, path: str, expected: bool) -> None:
    """``expected`` is whether ``path`` is allowed under ``Disallow: <pattern>``."""
    assert allowed(f"User-agent: *\nDisallow: {pattern}\n", path) is expected
    rule = RobotsRule.compile(pattern, allow=False)  # the matcher alone, no precedence
    assert rule.matches(normalise_target(BASE + path)) is (not expected)


PRECEDENCE = [
    ("longer-allow-wins", "Disallow: /\nAllow: /p\n", "/page", True),
    ("longer-disallow-wins", "Allow: /\nDisallow: /p\n", "/page", False),
    ("allow-longer-specific", "Allow: /folder/page\nDisallow: /folder/\n", "/folder/page", True),
    (
        "disallow-longer-specific",
        "Allow: /folder/\nDisallow: /folder/page\n",
        "/folder/page",
        False,
    ),
    ("tie-allow-wins", "Allow: /page\nDisallow: /page\n", "/page", True),
    ("tie-allow-wins-order", "Disallow: /page\nAllow: /page\n", "/page", True),
    ("tie-wildcard-same-length", "Allow: /a*\nDisallow: /a/\n", "/a/x", True),
    ("dollar-anchored-allow-root", "Allow: /$\nDisallow: /\n", "/", True),
    ("dollar-anchored-allow-root-miss", "Allow: /$\nDisallow: /\n", "/page.htm", False),
    ("dollar-counted-in-length", "Disallow: /page$\nAllow: /page\n", "/page", False),
    ("wildcard-longer-wins", "Allow: /page\nDisallow: /*.htm\n", "/page.htm", False),
    ("plain-longer-wins", "Allow: /page.htm\nDisallow: /*.htm\n", "/page.htm", True),
    ("allow-dir-inside-disallow", "Disallow: /\nAllow: /docs/\n", "/docs/intro", True),
    ("allow-dir-inside-disallow-other", "Disallow: /\nAllow: /docs/\n", "/blog/", False),
    ("allow-dir-inside-disallow-root", "Disallow: /\nAllow: /docs/\n", "/docs", False),
    ("length-as-written-not-normalised", "Allow: /%61b\nDisallow: /ab/\n", "/ab/c", True),
    # RFC 9309 2.2.2: the most octets wins; "/ééé" is 7 octets as written, like "/*bbbbb".
    ("length-in-octets-tie-allow-wins", "Allow: /ééé\nDisallow: /*bbbbb\n", "/ééébbbbb", True),
    ("length-in-octets-longer-wins", "Disallow: /éééé\nAllow: /*bbbbbb\n", "/éééébbbbbb", False),
    ("no-matching-rule-allowed", "Disallow: /a\nAllow: /b\n", "/c", True),
    ("robots-txt-always-allowed", "Disallow: /\n", "/robots.txt", True),
    ("robots-txt-star-disallow", "Disallow: /*\n", "/robots.txt", True),
    ("robots-txt-explicit-disallow", "Disallow: /robots.txt\n", "/robots.txt", True),
    ("robots-txt-with-query", "Disallow: /\n", "/robots.txt?x=1", True),
    ("robots-txt-subpath-not-exempt", "Disallow: /\n", "/robots.txt/x", False),
    ("robots-txt-prefix-not-exempt", "Disallow: /\n", "/robots.txtx", False),
]


@pytest.mark.parametrize(
    ("rules", "path", "expected"),
    [pytest.param(r, p, e, id=i) for i, r, p, e in PRECEDENCE],
)
def test_precedence(rules: str, path: str, expected: bool) -> None:
    assert allowed("User-agent: *\n" + rules, path) is expected


TARGETS = [
    ("path-and-query", "https://e.com/a/b?c=d", "/a/b?c=d"),
    ("fragment-dropped", "https://e.com/a#frag", "/a"),
    ("fragment-after-query-dropped", "https://e.com/a?q=1#f", "/a?q=1"),
    ("empty-path-is-slash", "https://e.com", "/"),
    ("empty-path-with-query", "https://e.com?x=1", "/?x=1"),
    ("port-and-userinfo-skipped", "http://u@e.com:8080/p", "/p"),
    ("scheme-inside-query-not-authority", "https://e.com/r?to=http://x/y", "/r?to=http://x/y"),
    ("unreserved-decoded", "https://e.com/%41%2d%5F%7e", "/A-_~"),
    ("reserved-upper-cased", "https://e.com/a%2fb%3f", "/a%2Fb%3F"),
    ("non-ascii-encoded", "https://e.com/\u00fc", "/%C3%BC"),
    ("literal-star-escaped", "https://e.com/a*b", "/a%2Ab"),
    ("literal-dollar-escaped", "https://e.com/a$b", "/a%24b"),
    ("bare-path-accepted", "/x?y", "/x?y"),
    ("dot-segments-resolved", "https://e.com/a/./b/../c", "/a/c"),
    ("dot-dot-at-root-stays-root", "https://e.com/../a", "/a"),
    ("trailing-dot-dot-keeps-slash", "https://e.com/a/b/..", "/a/"),
    ("dots-in-query-untouched", "https://e.com/a?p=/../b", "/a?p=/../b"),
    ("dotted-names-untouched", "https://e.com/.well-known/x..y", "/.well-known/x..y"),
    ("space-encoded", "https://e.com/a b", "/a%20b"),
    ("lt-gt-encoded", "https://e.com/<x>", "/%3Cx%3E"),
    ("quote-encoded", 'https://e.com/"q"', "/%22q%22"),
    ("bare-percent-encoded", "https://e.com/%zz", "/%25zz"),
    ("reserved-kept", "https://e.com/a:b@c!d&e'f(g)h+i,j;k=l", "/a:b@c!d&e'f(g)h+i,j;k=l"),
    ("lower-escape-of-reserved-upper", "https://e.com/%3c", "/%3C"),
]


@pytest.mark.parametrize(("url", "target"), [pytest.param(u, t, id=i) for i, u, t in TARGETS])
def test_normalise_target(url: str, target: str) -> None:
    assert normalise_target(url) == target


# -- crawl-delay ---------------------------------------------------------------------------

DELAYS = [
    ("integer-seconds", "Crawl-delay: 2", 2000),
    ("fraction", "Crawl-delay: 0.5", 500),
    ("fraction-rounded", "Crawl-delay: 2.5", 2500),
    ("fraction-of-millisecond-rounded", "Crawl-delay: 0.0016", 2),
    ("leading-dot", "Crawl-delay: .25", 250),
    ("trailing-dot", "Crawl-delay: 3.", 3000),
    ("plus-sign", "Crawl-delay: +1", 1000),
    ("exponent", "Crawl-delay: 1e0", 1000),
    ("at-cap", "Crawl-delay: 10", 10_000),
    ("over-cap-clamped", "Crawl-delay: 11", 10_000),
    ("hour-clamped", "Crawl-delay: 3600", 10_000),
    ("huge-clamped", "Crawl-delay: 1e9", 10_000),
    ("overflowing-literal-clamped", "Crawl-delay: 1e999", 10_000),
    ("zero-is-explicit", "Crawl-delay: 0", 0),
    ("zero-fraction-is-explicit", "Crawl-delay: 0.0", 0),
    ("rounds-to-zero-is-zero", "Crawl-delay: 0.0001", 0),
    ("negative-ignored", "Crawl-delay: -1", None),
    ("negative-zero-is-zero", "Crawl-delay: -0", 0),
    ("zero-beside-larger-largest-wins", "Crawl-delay: 0\nCrawl-delay: 2", 2000),
    ("word-ignored", "Crawl-delay: abc", None),
    ("empty-ignored", "Crawl-delay:", None),
    ("nan-ignored", "Crawl-delay: NaN", None),
    ("infinity-ignored", "Crawl-delay: Infinity", None),
    ("inf-ignored", "Crawl-delay: inf", None),
    ("unit-suffix-ignored", "Crawl-delay: 5s", None),
    ("underscore-ignored", "Crawl-delay: 1_0", None),
    ("comma-decimal-ignored", "Crawl-delay: 0,5", None),
    ("two-numbers-ignored", "Crawl-delay: 1 2", None),
    ("fullwidth-digit-ignored", "Crawl-delay: \uff15", None),
    ("hex-ignored", "Crawl-delay: 0x10", None),
    ("comment-stripped", "Crawl-delay: 3 # polite", 3000),
    ("key-case-insensitive", "CRAWL-DELAY: 1", 1000),
    ("largest-in-one-group", "Crawl-delay: 1\nCrawl-delay: 4", 4000),
    ("invalid-does-not-hide-valid", "Crawl-delay: 2\nCrawl-delay: nan", 2000),
]


@pytest.mark.parametrize(("lines", "millis"), [pytest.param(li, m, id=i) for i, li, m in DELAYS])
def test_crawl_delay(lines: str, millis: int | None) -> None:
    rules = parse_robots_txt(f"User-agent: *\n{lines}\nDisallow: /x\n")
    assert rules.crawl_delay_ms == millis


DELAY_GROUPS = [
    (
        "largest-of-specific-groups",
        "User-agent: sitelore\nCrawl-delay: 1\n\nUser-agent: sitelore\nCrawl-delay: 3\n",
        3000,
    ),
    (
        "largest-of-star-groups",
        "User-agent: *\nCrawl-delay: 5\n\nUser-agent: *\nCrawl-delay: 2\n",
        5000,
    ),
    (
        "specific-group-delay-replaces-star",
        "User-agent: *\nDisallow: /y\nCrawl-delay: 5\n\nUser-agent: sitelore\nCrawl-delay: 1\n",
        1000,
    ),
    (
        "specific-group-without-delay-replaces-star",
        "User-agent: *\nDisallow: /y\nCrawl-delay: 5\n\nUser-agent: sitelore\nDisallow: /x\n",
        None,
    ),
    ("other-agent-delay-ignored", "User-agent: otherbot\nCrawl-delay: 5\n", None),
    ("delay-before-any-agent-ignored", "Crawl-delay: 5\nUser-agent: *\nDisallow: /x\n", None),
    ("shared-group-delay", "User-agent: otherbot\nUser-agent: sitelore\nCrawl-delay: 2\n", 2000),
    ("absent", "User-agent: *\nDisallow: /\n", None),
    (
        "specific-zero-replaces-star",
        "User-agent: *\nDisallow: /y\nCrawl-delay: 5\n\nUser-agent: sitelore\nCrawl-delay: 0\n",
        0,
    ),
    (
        "delay-between-agents-applies-to-both",
        "User-agent: otherbot\nCrawl-delay: 4\nUser-agent: sitelore\nDisallow: /x\n",
        4000,
    ),
    (
        "delay-between-star-and-token-one-group",
        "User-agent: *\nCrawl-delay: 5\n\nUser-agent: sitelore\nCrawl-delay: 1\n",
        5000,
    ),
    (
        "delay-after-rule-stays-in-group",
        "User-agent: sitelore\nDisallow: /x\nCrawl-delay: 3\n",
        3000,
    ),
]


@pytest.mark.parametrize(
    ("robots", "millis"), [pytest.param(r, m, id=i) for i, r, m in DELAY_GROUPS]
)
def test_crawl_delay_groups(robots: str, millis: int | None) -> None:
    assert parse_robots_txt(robots).crawl_delay_ms == millis


REQUESTED_DELAYS = [
    ("within-cap", "Crawl-delay: 2", 2000, 2000),
    ("zero", "Crawl-delay: 0", 0, 0),
    ("just-over-cap", "Crawl-delay: 10.5", 10_000, 10_500),
    ("a-day", "Crawl-delay: 86400", 10_000, 86_400_000),
    ("overflowing-literal-bounded", "Crawl-delay: 1e999", 10_000, 10**12),
    ("invalid", "Crawl-delay: soon", None, None),
    ("absent", "Disallow: /x", None, None),
]


@pytest.mark.parametrize(
    ("lines", "clamped", "requested"),
    [pytest.param(li, c, r, id=i) for i, li, c, r in REQUESTED_DELAYS],
)
def test_requested_crawl_delay_kept_beside_the_clamped_one(
    lines: str, clamped: int | None, requested: int | None
) -> None:
    """The clamp is for pacing; the value as asked says whether the crawl can honour it."""
    rules = parse_robots_txt(f"User-agent: *\n{lines}\n")
    assert (rules.crawl_delay_ms, rules.requested_crawl_delay_ms) == (clamped, requested)


# -- sitemaps ------------------------------------------------------------------------------

SITEMAPS: list[tuple[str, str, tuple[str, ...]]] = [
    ("one", "Sitemap: https://e.com/s.xml\n", ("https://e.com/s.xml",)),
    (
        "in-order",
        "Sitemap: https://e.com/b.xml\nSitemap: https://e.com/a.xml\n",
        ("https://e.com/b.xml", "https://e.com/a.xml"),
    ),
    (
        "deduplicated",
        "Sitemap: https://e.com/a.xml\nSitemap: http://e.com/a.xml\nSitemap: https://e.com/a.xml\n",
        ("https://e.com/a.xml", "http://e.com/a.xml"),
    ),
    ("relative-ignored", "Sitemap: /sitemap.xml\n", ()),
    ("no-scheme-ignored", "Sitemap: e.com/sitemap.xml\n", ()),
    ("ftp-ignored", "Sitemap: ftp://e.com/s.xml\n", ()),
    ("empty-ignored", "Sitemap:\n", ()),
    ("key-case-insensitive", "SITEMAP: https://e.com/s.xml\n", ("https://e.com/s.xml",)),
    ("comment-stripped", "Sitemap: https://e.com/s.xml # main\n", ("https://e.com/s.xml",)),
    (
        "global-inside-other-agent-group",
        "User-agent: otherbot\nSitemap: https://e.com/s.xml\nDisallow: /\n",
        ("https://e.com/s.xml",),
    ),
    ("before-any-group", "Sitemap: https://e.com/s.xml\nUser-agent: *\n", ("https://e.com/s.xml",)),
    ("unbalanced-ipv6-ignored", "Sitemap: http://[::1/s.xml\n", ()),
    (
        "crlf",
        "Sitemap: https://e.com/a.xml\r\nSitemap: https://e.com/b.xml\r\n",
        ("https://e.com/a.xml", "https://e.com/b.xml"),
    ),
    ("none", "User-agent: *\nDisallow: /\n", ()),
]


@pytest.mark.parametrize(("robots", "sitemaps"), [pytest.param(r, s, id=i) for i, r, s in SITEMAPS])
def test_sitemaps(robots: str, sitemaps: tuple[str, ...]) -> None:
    assert parse_robots_txt(robots).sitemaps == sitemaps


def test_sitemaps_do_not_depend_on_user_agent() -> None:
    """Sitemaps are global: every crawler sees the same list."""
    robots = "User-agent: a\nSitemap: https://e.com/1.xml\nUser-agent: b\nDisallow: /\n"
    assert parse_robots_txt(robots, "a").sitemaps == parse_robots_txt(robots, "zzz").sitemaps


# -- rule-set values ---------------------------------------------------------------------

DISALLOW_ALL_FLAG = [
    ("disallow-root", "Disallow: /\n", True),
    ("disallow-star", "Disallow: *\n", True),
    ("disallow-slash-star", "Disallow: /*\n", True),
    ("disallow-root-with-allow", "Disallow: /\nAllow: /docs/\n", False),
    ("disallow-some", "Disallow: /a\n", False),
    ("disallow-root-anchored", "Disallow: /$\n", False),
    ("disallow-star-letter", "Disallow: *m\n", False),
    ("disallow-star-slash-letter", "Disallow: */m\n", False),
    ("disallow-star-anchored", "Disallow: *$\n", True),
    ("disallow-slash-star-anchored", "Disallow: /*$\n", True),
    ("disallow-double-star", "Disallow: **\n", True),
    ("disallow-star-letter-anchored", "Disallow: *m$\n", False),
    ("disallow-word-without-slash", "Disallow: x\n", False),
    ("nothing", "", False),
]


@pytest.mark.parametrize(
    ("rules", "flag"), [pytest.param(r, f, id=i) for i, r, f in DISALLOW_ALL_FLAG]
)
def test_disallow_all_flag(rules: str, flag: bool) -> None:
    assert parse_robots_txt("User-agent: *\n" + rules).disallow_all is flag


def test_constants() -> None:
    """ALLOW_ALL allows everything; DISALLOW_ALL allows only /robots.txt."""
    assert is_allowed(ALLOW_ALL, BASE + "/x")
    assert not ALLOW_ALL.disallow_all
    assert ALLOW_ALL.crawl_delay_ms is None
    assert ALLOW_ALL.sitemaps == ()
    assert DISALLOW_ALL.disallow_all
    assert not is_allowed(DISALLOW_ALL, BASE + "/x")
    assert is_allowed(DISALLOW_ALL, BASE + "/robots.txt")


def test_unreachable_and_unavailable_are_told_apart() -> None:
    """A 5xx disallow-all says so; a written Disallow: / does not."""
    unreachable = unreachable_rules("503")
    assert unreachable.disallow_all
    assert unreachable.unreachable
    assert unreachable.state is RobotsState.UNREACHABLE
    assert unreachable.source == "unreachable (503)"
    written = parse_robots_txt("User-agent: *\nDisallow: /\n")
    assert written.disallow_all
    assert not written.unreachable
    assert written.source == "parsed"
    unavailable = unavailable_rules("404")
    assert not unavailable.disallow_all
    assert unavailable.source == "unavailable (404)"
    assert unavailable.state is RobotsState.UNAVAILABLE


def test_rules_are_immutable() -> None:
    """RobotsRules is frozen."""
    rules = parse_robots_txt("User-agent: *\nDisallow: /\n")
    with pytest.raises(AttributeError):
        rules.disallow_all = False  # type: ignore[misc]
