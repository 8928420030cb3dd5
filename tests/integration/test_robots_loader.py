"""The robots.txt loader against real loopback servers, through the real HttpFetcher.

One test per row of the fetch-outcome table in specs/robots.md, plus the request's
exact headers. Servers (``tests.loopback``) listen on 127.0.0.1 and 127.0.0.2 (allowed
by the fetcher's policy in these tests); 127.0.0.3 is deliberately not allowed.
"""

from __future__ import annotations

import asyncio
import gzip
import logging
import socket
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from tests.loopback import Handler, oversized_robots, redirect, resetting, serve, stalling, text

from sitelore.adapters.fetcher import HttpFetcher
from sitelore.core.errors import BlockedURLError
from sitelore.core.guard import AddressPolicy
from sitelore.core.options import Limits
from sitelore.core.robots import RobotsRules, RobotsState, create_robots_policy, is_allowed
from sitelore.crawl.robots_loader import crawl_robots_loader, make_robots_loader

UA = "sitelore/0.1 (+https://example.org/bot)"
LOGGER = "sitelore.crawl.robots_loader"
ROBOTS = "User-agent: *\nDisallow: /private/\nCrawl-delay: 1.5\nSitemap: https://e.org/s.xml\n"


@pytest.fixture(name="fetcher")
async def _fetcher() -> AsyncIterator[HttpFetcher]:
    policy = AddressPolicy(["127.0.0.1", "127.0.0.2"])
    async with HttpFetcher(user_agent=UA, policy=policy) as fetcher:
        yield fetcher


def warnings_from_loader(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= 30]


class TestSuccess:
    async def test_200_parsed(self, fetcher: HttpFetcher) -> None:
        """A 2xx body is parsed: rules, delay and sitemaps."""
        async with serve({"/robots.txt": text(ROBOTS)}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.PARSED
        assert rules.source == "parsed"
        assert not is_allowed(rules, site.origin + "/private/x")
        assert is_allowed(rules, site.origin + "/public")
        assert rules.crawl_delay_ms == 1500
        assert rules.sitemaps == ("https://e.org/s.xml",)

    async def test_user_agent_selects_group(self, fetcher: HttpFetcher) -> None:
        """The loader's user agent picks the group by its product token."""
        body = "User-agent: sitelore\nDisallow: /a\n\nUser-agent: *\nDisallow: /\n"
        async with serve({"/robots.txt": text(body)}) as site:
            ours = await make_robots_loader(fetcher, user_agent=UA)(site.origin)
            other = await make_robots_loader(fetcher, user_agent="OtherBot/1")(site.origin)
        assert is_allowed(ours, site.origin + "/b")
        assert not is_allowed(other, site.origin + "/b")

    async def test_204_empty_allows_all(self, fetcher: HttpFetcher) -> None:
        """An empty 2xx body is an empty robots.txt: everything allowed."""

        async def no_content(request: web.Request) -> web.StreamResponse:
            return web.Response(status=204)

        async with serve({"/robots.txt": no_content}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.PARSED
        assert is_allowed(rules, site.origin + "/anything")

    async def test_invalid_utf8_replaced(self, fetcher: HttpFetcher) -> None:
        """Bytes that are not UTF-8 are replaced; the other lines still count."""
        body = b"User-agent: *\nDisallow: /caf\xe9\nDisallow: /private/\n"
        async with serve({"/robots.txt": text(body)}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert not is_allowed(rules, site.origin + "/private/x")

    async def test_gzip_body(self, fetcher: HttpFetcher) -> None:
        """A gzip-encoded robots.txt is decoded by the fetcher and parsed."""

        async def zipped(request: web.Request) -> web.StreamResponse:
            return web.Response(
                body=gzip.compress(ROBOTS.encode()),
                headers={"Content-Encoding": "gzip", "Content-Type": "text/plain"},
            )

        async with serve({"/robots.txt": zipped}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert not is_allowed(rules, site.origin + "/private/x")


class TestRequest:
    async def test_exact_headers_and_no_query(self, fetcher: HttpFetcher) -> None:
        """Only User-Agent, Accept: text/plain, and aiohttp's Host/Accept-Encoding are sent."""
        async with serve({"/robots.txt": text(ROBOTS)}) as site:
            await make_robots_loader(fetcher)(site.origin)
        [seen] = site.requests
        assert seen.path == "/robots.txt"
        assert seen.query == ""
        assert set(seen.headers) <= {"Host", "User-Agent", "Accept", "Accept-Encoding"}
        assert seen.headers["User-Agent"] == UA
        assert seen.headers["Accept"] == "text/plain"
        lowered = {name.lower() for name in seen.headers}
        assert not lowered & {"cookie", "authorization", "proxy-authorization", "referer"}


class TestClientErrors:
    async def test_404_allows_all_silently(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture
    ) -> None:
        """404: unavailable, allow all, nothing logged."""
        caplog.set_level(logging.DEBUG, logger=LOGGER)
        async with serve({"/other": text("")}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.UNAVAILABLE
        assert rules.source == "unavailable (404)"
        assert is_allowed(rules, site.origin + "/private/x")
        assert [r for r in caplog.records if r.name == LOGGER] == []

    @pytest.mark.parametrize("status", [401, 403, 410, 429])
    async def test_other_4xx_allow_all_with_debug_log(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture, status: int
    ) -> None:
        """Other 4xx: unavailable, allow all, logged at debug only."""
        caplog.set_level(logging.DEBUG, logger=LOGGER)
        async with serve({"/robots.txt": text("User-agent: *\nDisallow: /\n", status)}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.source == f"unavailable ({status})"
        assert not rules.disallow_all
        assert is_allowed(rules, site.origin + "/x")
        levels = {r.levelno for r in caplog.records if r.name == LOGGER}
        assert levels == {logging.DEBUG}


class TestServerErrors:
    @pytest.mark.parametrize("status", [500, 503])
    async def test_5xx_disallows_all_marked_unreachable(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture, status: int
    ) -> None:
        """5xx: disallow all, marked unreachable (so the crawl can name the server failure)."""
        async with serve({"/robots.txt": text("oops", status)}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.disallow_all
        assert rules.unreachable
        assert rules.state is RobotsState.UNREACHABLE
        assert rules.source == f"unreachable ({status})"
        assert not is_allowed(rules, site.origin + "/")
        assert is_allowed(rules, site.origin + "/robots.txt")
        assert any("--no-robots" in message for message in warnings_from_loader(caplog))


class TestUndecodable:
    """A body in a Content-Encoding the fetcher does not read (br, zstd, three layers)."""

    @pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, gzip, gzip"])
    async def test_2xx_body_that_cannot_be_decoded_disallows_all(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture, encoding: str
    ) -> None:
        """The file exists but its rules are unknown: "undefined", so disallow all.

        RFC 9309 2.3.1.3 allows all only when the server says there is no file (4xx);
        2.3.1.4 makes a file the crawler cannot have "undefined": complete disallow,
        as for a corrupt gzip (a network error). It allowed all.
        """
        async with serve({"/robots.txt": encoded("User-agent: *\nAllow: /\n", encoding)}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.UNREACHABLE
        assert rules.source.startswith("unreachable (unsupported-content-type: ")
        assert not is_allowed(rules, site.origin + "/x")
        assert any("--no-robots" in message for message in warnings_from_loader(caplog))

    @pytest.mark.parametrize(
        ("status", "state"), [(404, RobotsState.UNAVAILABLE), (503, RobotsState.UNREACHABLE)]
    )
    async def test_an_error_status_decides_whatever_its_body(
        self, fetcher: HttpFetcher, status: int, state: RobotsState
    ) -> None:
        """A 404 in br still allows all; a 503 in br still disallows all (it allowed all)."""
        async with serve({"/robots.txt": encoded("oops", "br", status)}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is state
        assert rules.source.endswith(f"({status})")


def encoded(body: str, encoding: str, status: int = 200) -> Handler:
    """``body`` sent as is, labelled with a Content-Encoding the fetcher does not read."""

    async def handler(request: web.Request) -> web.StreamResponse:
        headers = {"Content-Encoding": encoding, "Content-Type": "text/plain"}
        return web.Response(body=body.encode(), status=status, headers=headers)

    return handler


class TestRedirects:
    async def test_cross_origin_redirect_followed_and_cached_under_asked_origin(
        self, fetcher: HttpFetcher
    ) -> None:
        """A redirect to another origin is followed; the rules belong to the asked origin."""
        async with (
            serve({"/robots.txt": text(ROBOTS)}, host="127.0.0.2") as other,
            serve({"/robots.txt": redirect(other.origin + "/robots.txt")}) as asked,
        ):
            loads: list[str] = []
            loader = make_robots_loader(fetcher)

            async def counting(origin: str) -> RobotsRules:
                loads.append(origin)
                return await loader(origin)

            policy = create_robots_policy(counting)
            assert not await policy.is_allowed(asked.origin + "/private/x")
            assert await policy.is_allowed(asked.origin + "/public")
            assert loads == [asked.origin]
            assert len(other.requests) == 1
            await policy.is_allowed(other.origin + "/x")
            assert loads == [asked.origin, other.origin]

    async def test_five_hops_followed(self, fetcher: HttpFetcher) -> None:
        """Up to five redirect hops are followed."""
        routes = {"/robots.txt": redirect("/r1")}
        routes.update({f"/r{i}": redirect(f"/r{i + 1}") for i in range(1, 5)})
        routes["/r5"] = text(ROBOTS)
        async with serve(routes) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.PARSED
        assert not is_allowed(rules, site.origin + "/private/")

    @pytest.mark.parametrize("operator_limit", [0, 2])
    async def test_five_hops_followed_when_the_operator_allows_fewer(
        self, operator_limit: int
    ) -> None:
        """RFC 9309 2.3.1.2: at least five hops, whatever ``max_redirects`` pages get.

        With the limit lowered, the crawl loader stopped at the operator's limit and took
        the file as unavailable: allow all, /private/ crawled.
        """
        routes = {"/robots.txt": redirect("/r1")}
        routes.update({f"/r{i}": redirect(f"/r{i + 1}") for i in range(1, 5)})
        routes["/r5"] = text(ROBOTS)
        limits = Limits(max_redirects=operator_limit)
        policy = AddressPolicy(["127.0.0.1"])
        async with serve(routes) as site, HttpFetcher(policy=policy, limits=limits) as fetcher:
            rules = await crawl_robots_loader(fetcher, limits, UA)(site.origin)
        assert rules.state is RobotsState.PARSED
        assert not is_allowed(rules, site.origin + "/private/")
        assert len(site.requests) == 6

    async def test_too_many_redirects_allow_all(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture
    ) -> None:
        """More than five hops: unavailable, allow all, with a warning."""
        routes = {"/robots.txt": redirect("/r1")}
        routes.update({f"/r{i}": redirect(f"/r{i + 1}") for i in range(1, 7)})
        routes["/r7"] = text("User-agent: *\nDisallow: /\n")
        async with serve(routes) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.UNAVAILABLE
        assert is_allowed(rules, site.origin + "/x")
        assert warnings_from_loader(caplog)

    async def test_redirect_to_refused_address_allows_all(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A redirect hop the guard refuses: allow all, warn, never contact that host.

        Decision: the table's last row ("the address guard refuses the robots.txt URL
        itself: the refusal propagates") is about the URL we asked for. A refused
        redirect *hop* is a robots.txt that could not be read, like a network error or
        too many redirects: unavailable, allow all, with a warning (as in the seed's
        table: "a redirect to a forbidden host -> allow all, and that host is never
        contacted"). Turning it into an error would let any site abort a crawl by
        redirecting its robots.txt to 127.0.0.1.
        """
        async with (
            serve({"/robots.txt": text("User-agent: *\nDisallow: /\n")}, host="127.0.0.3") as bad,
            serve({"/robots.txt": redirect(bad.origin + "/robots.txt")}) as site,
        ):
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.UNAVAILABLE
        assert is_allowed(rules, site.origin + "/x")
        assert bad.requests == []
        assert warnings_from_loader(caplog)

    async def test_redirect_to_refused_name_allows_all(self, fetcher: HttpFetcher) -> None:
        """A redirect to a name refused without lookup (localhost) also allows all."""
        async with serve({"/robots.txt": redirect("http://localhost/robots.txt")}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.UNAVAILABLE

    async def test_redirect_to_non_http_scheme_allows_all(self, fetcher: HttpFetcher) -> None:
        """A redirect to a non-http(s) URL is a refused hop: allow all, no error."""
        async with serve({"/robots.txt": redirect("file:///etc/passwd")}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.UNAVAILABLE

    async def test_redirect_without_location_allows_all(self, fetcher: HttpFetcher) -> None:
        """A 3xx that cannot be followed (no Location) is unavailable: allow all."""

        async def bare(request: web.Request) -> web.StreamResponse:
            return web.Response(status=302)

        async with serve({"/robots.txt": bare}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.UNAVAILABLE
        assert is_allowed(rules, site.origin + "/x")


class TestOversized:
    async def test_oversized_body_parsed_up_to_the_cap(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture
    ) -> None:
        """600 KiB: the rule near the start counts, the one past 512 KiB does not."""
        body = oversized_robots()
        async with serve({"/robots.txt": text(body)}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert rules.state is RobotsState.PARSED
        assert not is_allowed(rules, site.origin + "/private/x")
        assert is_allowed(rules, site.origin + "/late/x")
        assert warnings_from_loader(caplog)

    async def test_custom_cap(self, fetcher: HttpFetcher) -> None:
        """``max_bytes`` is the cap: a rule past it is not read, one before it is."""
        body = "User-agent: *\nDisallow: /a\n" + "#" * 2000 + "\nDisallow: /b\n"
        async with serve({"/robots.txt": text(body)}) as site:
            rules = await make_robots_loader(fetcher, max_bytes=1024)(site.origin)
        assert rules.state is RobotsState.PARSED
        assert not is_allowed(rules, site.origin + "/a")
        assert is_allowed(rules, site.origin + "/b")


class TestUnreachable:
    async def test_slow_body_times_out_and_disallows_all(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A body that stalls past the loader's own timeout: tried twice, then disallow all."""
        release = asyncio.Event()
        async with serve({"/robots.txt": stalling(release)}) as site:
            started = time.monotonic()
            try:
                rules = await make_robots_loader(fetcher, timeout=0.3)(site.origin)
            finally:
                release.set()
        assert time.monotonic() - started < 3
        assert len(site.requests) == 2
        assert rules.unreachable
        assert rules.source.startswith("unreachable (timeout: ")
        assert not is_allowed(rules, site.origin + "/x")
        assert any("--no-robots" in message for message in warnings_from_loader(caplog))

    async def test_reset_mid_body_disallows_all(self, fetcher: HttpFetcher) -> None:
        """A connection cut inside the body is a network error: disallow all after a retry."""
        async with serve({"/robots.txt": resetting}) as site:
            rules = await make_robots_loader(fetcher)(site.origin)
        assert len(site.requests) == 2
        assert rules.unreachable
        assert rules.source.startswith("unreachable (network: ")
        assert not is_allowed(rules, site.origin + "/x")

    async def test_connection_refused_disallows_all(
        self, fetcher: HttpFetcher, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Nothing listening: a network error, disallow all, with a warning."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        rules = await make_robots_loader(fetcher)(f"http://127.0.0.1:{port}")
        assert rules.state is RobotsState.UNREACHABLE
        assert warnings_from_loader(caplog)


class TestRefusedRobotsURL:
    async def test_refused_address_propagates(self, fetcher: HttpFetcher) -> None:
        """The guard refusing the robots.txt URL itself raises; it is never allow-all."""
        async with serve({"/robots.txt": text("")}, host="127.0.0.3") as bad:
            with pytest.raises(BlockedURLError):
                await make_robots_loader(fetcher)(bad.origin)
        assert bad.requests == []

    async def test_refused_name_propagates(self, fetcher: HttpFetcher) -> None:
        """A refused name (localhost) for the robots.txt URL itself raises."""
        with pytest.raises(BlockedURLError):
            await make_robots_loader(fetcher)("http://localhost:8080")

    async def test_refusal_through_policy_not_cached(self, fetcher: HttpFetcher) -> None:
        """Through the policy the refusal reaches the asker each time (not cached)."""
        policy = create_robots_policy(make_robots_loader(fetcher))
        for _ in range(2):
            with pytest.raises(BlockedURLError):
                await policy.is_allowed("http://localhost:8080/page")
