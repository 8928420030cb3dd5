"""Firecrawl requests in sitelore's terms: refusals by name, clamps said, RE2 path filters."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sitelore.core.errors import UsageError
from sitelore.core.models import SkipReason
from sitelore.core.options import CrawlOptions, Limits
from sitelore.core.urls import Scope
from sitelore.server.firecrawl.shapes import CrawlRequest, ScrapeRequest
from sitelore.server.firecrawl.translate import crawl_options, path_filter, wanted

SEED = "https://docs.example.com/guide/"


def crawl(**fields: Any) -> CrawlRequest:
    return CrawlRequest.model_validate({"url": SEED, **fields})


class TestScrapeOptions:
    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            ({"formats": ["screenshot"]}, "formats: 'screenshot' is not supported"),
            ({"formats": [{"type": "json"}]}, "formats: 'json' is not supported"),
            ({"formats": ["changeTracking"]}, "formats: 'changeTracking' is not supported"),
            ({"actions": [{"type": "wait"}]}, "actions: "),
            ({"waitFor": 500}, "waitFor: this server does not render pages"),
            ({"mobile": True}, "mobile: "),
            ({"location": {"country": "DE"}}, "location: "),
            ({"skipTlsVerification": True}, "skipTlsVerification: "),
            ({"proxy": "stealth"}, "proxy: "),
            ({"storeInCache": False}, "storeInCache: "),
            ({"zeroDataRetention": True}, "zeroDataRetention: "),
            ({"parsers": ["images"]}, "parsers: "),
            ({"headers": {"Authorization": "Bearer x"}}, "headers.Authorization: "),
            ({"headers": {"Host": "evil"}}, "headers.Host: "),
            ({"headers": {"Accept-Language": "de\r\nX: y"}}, "line breaks"),
            # aiohttp refused these with a ValueError: a 500 naming its internals
            ({"headers": {"Accept-Language": "de\x01"}}, "headers.Accept-Language: control"),
            ({"headers": {"DNT": "\x00"}}, "headers.DNT: control"),
            ({"excludeTags": ["p >"]}, "excludeTags: 'p >' is not a CSS selector"),
        ],
    )
    def test_what_sitelore_does_not_do_is_refused_by_name(
        self, fields: dict[str, Any], message: str
    ) -> None:
        request = ScrapeRequest.model_validate({"url": SEED, **fields})
        with pytest.raises(UsageError, match=message.replace("(", r"\(")):
            wanted(request)

    def test_supported_options_are_kept(self) -> None:
        request = ScrapeRequest.model_validate(
            {"url": SEED, "formats": ["markdown", {"type": "rawHtml"}, "links"],
             "headers": {"Accept-Language": "de"}, "timeout": 5000, "proxy": "basic",
             "parsers": ["pdf"], "maxAge": 0, "excludeTags": ["nav"]}
        )  # fmt: skip
        want = wanted(request)
        assert want.formats == ("markdown", "rawHtml", "links")
        assert want.headers == (("accept-language", "de"),)
        assert want.timeout_seconds == 5.0
        assert want.max_age_ms == 0
        assert want.needs_body
        assert not want.default_cut

    def test_markdown_only_needs_no_body(self) -> None:
        want = wanted(ScrapeRequest.model_validate({"url": SEED}))
        assert want.formats == ("markdown",)
        assert not want.needs_body


class TestCrawlOptions:
    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            ({"ignoreRobotsTxt": True}, "ignoreRobotsTxt: this server always obeys robots.txt"),
            ({"robotsUserAgent": "x"}, "robotsUserAgent: "),
            ({"webhook": "https://hooks.example/"}, "webhook: not supported"),
            ({"prompt": "docs only"}, "prompt: "),
            ({"sitemap": "only"}, "sitemap: 'only' is not supported for crawls"),
            ({"zeroDataRetention": True}, "zeroDataRetention: "),
            ({"includePaths": ["(a"]}, "includePaths: '\\(a' is not a regular expression"),
            ({"excludePaths": [r"(a)\1"]}, "excludePaths: "),
            ({"includePaths": ["x"] * 101}, "includePaths: at most 100 patterns"),
        ],
    )
    def test_refused_fields_are_named(self, fields: dict[str, Any], message: str) -> None:
        with pytest.raises(UsageError, match=message):
            crawl_options(crawl(**fields), Limits(), 1.0)

    def test_defaults_follow_firecrawl_within_the_operator_caps(self) -> None:
        """No limit or depth asked: the caps (Firecrawl has none); concurrency: sitelore's
        default; the start URL's directory; sitemap included."""
        options, notes = crawl_options(crawl(), Limits(max_pages=50, max_depth=3), 0.5)
        assert (options.max_pages, options.max_depth, options.delay) == (50, 3, 0.5)
        assert options.concurrency == CrawlOptions().concurrency  # sitelore's, not the cap
        assert options.path_prefix == "/guide/"
        assert options.sitemap is True
        assert options.same_domain is True
        assert notes == []

    @pytest.mark.parametrize(
        ("fields", "note", "field", "applied"),
        [
            ({"limit": 10_000}, "limit 10000 clamped to this server's cap 200", "max_pages", 200),
            ({"maxDiscoveryDepth": 9}, "maxDiscoveryDepth 9 clamped", "max_depth", 5),
            ({"maxConcurrency": 500}, "maxConcurrency 500 clamped", "concurrency", 64),
            ({"delay": 0.1}, "delay 0.1 raised to this server's minimum 1", "delay", 1.0),
            ({"delay": 90}, "delay 90 lowered to 60", "delay", 60.0),
        ],
    )
    def test_asks_beyond_the_operator_are_clamped_and_said(
        self, fields: dict[str, Any], note: str, field: str, applied: float
    ) -> None:
        options, notes = crawl_options(crawl(**fields), Limits(), 1.0)
        assert getattr(options, field) == applied
        assert any(n.startswith(note) for n in notes), notes

    @pytest.mark.parametrize(
        ("fields", "prefix", "same_domain", "sitemap"),
        [
            ({"crawlEntireDomain": True}, None, True, True),
            ({"allowExternalLinks": True}, "/guide/", False, True),
            ({"sitemap": "skip"}, "/guide/", True, False),
        ],
    )
    def test_scope_fields(
        self, fields: dict[str, Any], prefix: str | None, same_domain: bool, sitemap: bool
    ) -> None:
        options, _ = crawl_options(crawl(**fields), Limits(), 1.0)
        assert (options.path_prefix, options.same_domain, options.sitemap) == (
            prefix,
            same_domain,
            sitemap,
        )


class TestPathFilter:
    @pytest.mark.parametrize(
        ("fields", "url", "followed"),
        [
            ({}, "https://docs.example.com/guide/a", True),
            ({}, "https://api.docs.example.com/guide/a", False),
            ({"allowSubdomains": True}, "https://api.docs.example.com/guide/a", True),
            ({"includePaths": ["^/guide/a"]}, "https://docs.example.com/guide/a", True),
            ({"includePaths": ["^/guide/a"]}, "https://docs.example.com/guide/b", False),
            ({"includePaths": ["^/guide/a"]}, "https://docs.example.com/x?/guide/a", False),
            ({"excludePaths": ["private"]}, "https://docs.example.com/guide/private/k", False),
            ({"includePaths": ["^https://docs"]}, "https://docs.example.com/guide/a", False),
            (
                {"includePaths": ["^https://docs"], "regexOnFullURL": True},
                "https://docs.example.com/guide/a",
                True,
            ),
            ({"ignoreQueryParameters": True}, "https://docs.example.com/guide/a?x=1", False),
            ({}, "https://docs.example.com/guide/a?x=1", True),
        ],
    )
    def test_table(self, fields: dict[str, Any], url: str, followed: bool) -> None:
        assert path_filter(crawl(**fields))(url) is followed

    def test_a_catastrophic_pattern_runs_in_linear_time(self) -> None:
        """(a+)+$ against a long run of a's and a b: backtracking engines take ages."""
        allows = path_filter(crawl(includePaths=["^/(a+)+$"]))
        url = "https://docs.example.com/" + "a" * 50_000 + "b"
        started = time.monotonic()
        assert allows(url) is False
        assert time.monotonic() - started < 5  # a guard against a blow-up, not a benchmark

    def test_scope_applies_the_filter_but_always_the_seed_rule_first(self) -> None:
        """CrawlOptions.url_filter reaches Scope; a URL it refuses is FILTERED."""
        options = CrawlOptions(url_filter=lambda url: "keep" in url)
        scope = Scope.from_options(SEED, options)
        assert scope.allows("https://docs.example.com/keep") is None
        assert scope.allows("https://docs.example.com/drop") is SkipReason.FILTERED
        assert scope.allows("https://other.example/keep") is SkipReason.FILTERED

    def test_the_filter_never_reaches_the_wire(self) -> None:
        options = CrawlOptions(url_filter=lambda url: True)
        assert "url_filter" not in options.model_dump()
        assert "url_filter" not in CrawlOptions.model_json_schema()["properties"]
