"""The per-crawl RobotsPolicy: one load per origin, shared in flight, failures not cached."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from sitelore.core.errors import InvalidURLError
from sitelore.core.robots import (
    ALLOW_ALL,
    RobotsRules,
    allow_all_policy,
    create_robots_policy,
    parse_robots_txt,
    robots_origin,
)


class ScriptedLoader:
    """A loader that records each origin asked and answers from a script."""

    def __init__(self, rules: RobotsRules, *, fail_first: int = 0) -> None:
        self.rules = rules
        self.fail_first = fail_first
        self.calls: list[str] = []
        self.release = asyncio.Event()
        self.release.set()

    async def __call__(self, origin: str) -> RobotsRules:
        self.calls.append(origin)
        await self.release.wait()
        if len(self.calls) <= self.fail_first:
            raise ConnectionError("loader failed")
        return self.rules


DISALLOW_PRIVATE = parse_robots_txt("User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n")


class TestRulesFor:
    async def test_concurrent_askers_share_one_load(self) -> None:
        """Two concurrent is_allowed calls for one origin cause exactly one load."""
        loader = ScriptedLoader(DISALLOW_PRIVATE)
        loader.release.clear()
        policy = create_robots_policy(loader)
        first = asyncio.ensure_future(policy.is_allowed("https://e.com/a"))
        second = asyncio.ensure_future(policy.is_allowed("https://e.com/private/b"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        loader.release.set()
        assert list(await asyncio.gather(first, second)) == [True, False]
        assert loader.calls == ["https://e.com"]

    async def test_many_concurrent_askers_one_load(self) -> None:
        """Fifty concurrent askers on one origin still cause one load."""
        loader = ScriptedLoader(DISALLOW_PRIVATE)
        policy = create_robots_policy(loader)
        urls = [f"https://e.com/p{i}" for i in range(50)]
        assert all(await asyncio.gather(*(policy.is_allowed(u) for u in urls)))
        assert len(loader.calls) == 1

    async def test_cached_after_load(self) -> None:
        """A second ask after the load finished does not load again."""
        loader = ScriptedLoader(DISALLOW_PRIVATE)
        policy = create_robots_policy(loader)
        assert await policy.rules_for("https://e.com/x") is DISALLOW_PRIVATE
        assert await policy.rules_for("https://e.com/y") is DISALLOW_PRIVATE
        assert loader.calls == ["https://e.com"]

    async def test_one_load_per_origin(self) -> None:
        """Scheme, host and port make the origin; default ports are the same origin."""
        loader = ScriptedLoader(ALLOW_ALL)
        policy = create_robots_policy(loader)
        for url in (
            "https://e.com/a",
            "https://E.com:443/b",
            "http://e.com/c",
            "http://e.com:80/d",
            "https://e.com:8443/e",
            "https://sub.e.com/f",
        ):
            await policy.rules_for(url)
        assert loader.calls == [
            "https://e.com",
            "http://e.com",
            "https://e.com:8443",
            "https://sub.e.com",
        ]

    async def test_loader_exception_not_cached(self) -> None:
        """A failing load raises to the asker; the next ask loads again."""
        loader = ScriptedLoader(DISALLOW_PRIVATE, fail_first=1)
        policy = create_robots_policy(loader)
        with pytest.raises(ConnectionError):
            await policy.is_allowed("https://e.com/private/x")
        assert await policy.is_allowed("https://e.com/private/x") is False
        assert loader.calls == ["https://e.com", "https://e.com"]

    async def test_loader_exception_reaches_every_waiter(self) -> None:
        """Concurrent askers of a failing load all see the failure; one load was made."""
        loader = ScriptedLoader(ALLOW_ALL, fail_first=1)
        loader.release.clear()
        policy = create_robots_policy(loader)
        first = asyncio.ensure_future(policy.is_allowed("https://e.com/a"))
        second = asyncio.ensure_future(policy.is_allowed("https://e.com/b"))
        await asyncio.sleep(0)
        loader.release.set()
        results = await asyncio.gather(first, second, return_exceptions=True)
        assert all(isinstance(result, ConnectionError) for result in results)
        assert loader.calls == ["https://e.com"]

    async def test_cancelled_asker_does_not_cancel_shared_load(self) -> None:
        """One asker giving up leaves the load running for the others."""
        loader = ScriptedLoader(DISALLOW_PRIVATE)
        loader.release.clear()
        policy = create_robots_policy(loader)
        quitter = asyncio.ensure_future(policy.is_allowed("https://e.com/a"))
        stayer = asyncio.ensure_future(policy.is_allowed("https://e.com/private/"))
        await asyncio.sleep(0)
        quitter.cancel()
        loader.release.set()
        assert await stayer is False
        assert quitter.cancelled()
        assert loader.calls == ["https://e.com"]

    async def test_non_http_url_refused(self) -> None:
        """A URL with no http(s) origin is an InvalidURLError, not a load."""
        loader = ScriptedLoader(ALLOW_ALL)
        policy = create_robots_policy(loader)
        with pytest.raises(InvalidURLError):
            await policy.rules_for("ftp://e.com/x")
        assert loader.calls == []


class TestCrawlDelay:
    async def test_delay_from_rules(self) -> None:
        """The Crawl-delay of the origin's rules, in ms."""
        policy = create_robots_policy(ScriptedLoader(DISALLOW_PRIVATE))
        assert await policy.crawl_delay_ms("https://e.com/") == 2000

    async def test_delay_absent_is_zero(self) -> None:
        """No Crawl-delay means 0 ms."""
        policy = create_robots_policy(ScriptedLoader(ALLOW_ALL))
        assert await policy.crawl_delay_ms("https://e.com/") == 0

    @pytest.mark.parametrize(("raw", "clamped"), [(60_000, 10_000), (-5, 0), (10_000, 10_000)])
    async def test_delay_clamped_again(self, raw: int, clamped: int) -> None:
        """Rules built by hand (or by a buggy loader) are clamped to [0, 10 000] ms."""
        rules = dataclasses.replace(ALLOW_ALL, crawl_delay_ms=raw)
        policy = create_robots_policy(ScriptedLoader(rules))
        assert await policy.crawl_delay_ms("https://e.com/") == clamped


class TestAllowAllPolicy:
    async def test_never_loads_and_allows(self) -> None:
        """allow_all_policy answers without any loader: allowed, delay 0, ALLOW_ALL."""
        policy = allow_all_policy()
        assert await policy.is_allowed("https://e.com/private/x") is True
        assert await policy.crawl_delay_ms("https://e.com/") == 0
        assert await policy.rules_for("https://e.com/") is ALLOW_ALL


ORIGINS = [
    ("https://Example.COM/a?b#c", "https://example.com"),
    ("http://example.com:80/", "http://example.com"),
    ("https://example.com:443", "https://example.com"),
    ("http://example.com:8080/x", "http://example.com:8080"),
    ("http://[::1]:8080/x", "http://[::1]:8080"),
    ("http://user:pw@example.com/", "http://example.com"),
]


@pytest.mark.parametrize(("url", "origin"), ORIGINS)
def test_robots_origin(url: str, origin: str) -> None:
    assert robots_origin(url) == origin


@pytest.mark.parametrize("url", ["mailto:a@b.c", "https:///x", "http://e.com:99999/", "/path"])
def test_robots_origin_refuses(url: str) -> None:
    with pytest.raises(InvalidURLError):
        robots_origin(url)
