"""The robots.txt loader against a scripted Fetcher: the outcome table, branch by branch."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence

import pytest
from tests.fakes import Call, FakeFetcher, Route

from sitelore.core.errors import (
    BlockedURLError,
    FetchError,
    FetchTimeoutError,
    HTTPStatusError,
    InvalidURLError,
    NetworkError,
    NoSnapshotError,
    ResponseTooLargeError,
    SiteloreError,
    TooManyRedirectsError,
)
from sitelore.core.robots import RobotsState, is_allowed
from sitelore.crawl.robots_loader import make_robots_loader

ORIGIN = "https://docs.example.com"
ROBOTS_URL = ORIGIN + "/robots.txt"


def robots_site(*answers: Route, hops: Sequence[str] = ()) -> FakeFetcher:
    """A site whose robots.txt redirects through ``hops``, then gives ``answers`` in turn."""
    chain = [ROBOTS_URL, *hops]
    routes: dict[str, Route | Sequence[Route]] = {
        url: Route(redirect=target) for url, target in itertools.pairwise(chain)
    }
    routes[chain[-1]] = answers or (Route(),)
    return FakeFetcher(routes)


def plain(body: bytes = b"", status: int = 200) -> Route:
    return Route(body, status=status, content_type="text/plain")


async def test_request_shape() -> None:
    """One request: <origin>/robots.txt, Accept: text/plain only, the cap, timeout and hops.

    The body is asked truncated at one byte over the cap: that byte says whether the
    file was cut. Five redirects are followed (RFC 9309 2.3.1.2), whatever the fetcher's
    own limit.
    """
    fetcher = robots_site(plain(b"User-agent: *\nDisallow: /\n"))
    await make_robots_loader(fetcher, max_bytes=4096, timeout=2.5)(ORIGIN)
    assert fetcher.calls == [
        Call(
            url=ROBOTS_URL,
            max_bytes=4097,
            headers={"Accept": "text/plain"},
            timeout=2.5,
            truncate=True,
            max_redirects=5,
        )
    ]


async def test_defaults() -> None:
    """The defaults are a 512 KiB cap and a 10 s timeout."""
    fetcher = robots_site()
    await make_robots_loader(fetcher)(ORIGIN + "/")
    assert fetcher.calls[0].url == ROBOTS_URL
    assert fetcher.calls[0].max_bytes == 512 * 1024 + 1
    assert fetcher.calls[0].timeout == 10.0


STATUSES = [
    (200, RobotsState.PARSED, False, "parsed"),
    (206, RobotsState.PARSED, False, "parsed"),
    (304, RobotsState.UNAVAILABLE, True, "unavailable (304)"),
    (404, RobotsState.UNAVAILABLE, True, "unavailable (404)"),
    (418, RobotsState.UNAVAILABLE, True, "unavailable (418)"),
    (500, RobotsState.UNREACHABLE, False, "unreachable (500)"),
    (599, RobotsState.UNREACHABLE, False, "unreachable (599)"),
    (103, RobotsState.UNAVAILABLE, True, "unavailable (103)"),
    (600, RobotsState.UNAVAILABLE, True, "unavailable (600)"),
]


@pytest.mark.parametrize(("status", "state", "allowed", "source"), STATUSES)
async def test_status_table(status: int, state: RobotsState, allowed: bool, source: str) -> None:
    """Each status family maps to its row of the outcome table."""
    fetcher = robots_site(plain(b"User-agent: *\nDisallow: /\n", status))
    rules = await make_robots_loader(fetcher)(ORIGIN)
    assert rules.state is state
    assert rules.source == source
    assert is_allowed(rules, ORIGIN + "/page") is allowed


CUT_BODIES = [
    # (body, cap, path, allowed): a longer body is parsed up to the cap, at a full line
    ("rule-before-cap", b"User-agent: *\nDisallow: /\n" + b"#" * 2000, 1024, "/x", False),
    (
        "rule-past-cap-ignored",
        b"User-agent: *\nDisallow: /a\n" + b"#" * 1100 + b"\nDisallow: /b\n",
        1024,
        "/b",
        True,
    ),
    (
        "rule-cut-by-cap-dropped",
        b"User-agent: *\nDisallow: /a\n" + b"#" * 980 + b"\nDisallow: /bcdefghijklmnop\n",
        1024,
        "/bcdefX",
        True,
    ),
    ("line-ending-at-cap-kept", b"User-agent: *\nDisallow: /b\n" + b"#" * 2000, 26, "/b", False),
    ("exactly-the-cap-parsed-whole", b"User-agent: *\nDisallow: /b", 26, "/b", False),
]


@pytest.mark.parametrize(
    ("body", "cap", "path", "allowed"),
    [pytest.param(b, c, p, a, id=i) for i, b, c, p, a in CUT_BODIES],
)
async def test_body_over_cap_parsed_up_to_its_last_complete_line(
    body: bytes, cap: int, path: str, allowed: bool
) -> None:
    """A 2xx body longer than the cap is parsed up to it, never ignored."""
    rules = await make_robots_loader(robots_site(plain(body)), max_bytes=cap)(ORIGIN)
    assert rules.state is RobotsState.PARSED
    assert is_allowed(rules, ORIGIN + path) is allowed


@pytest.mark.parametrize(
    "error",
    [NetworkError(ROBOTS_URL, "reset"), FetchTimeoutError(ROBOTS_URL, "slow")],
    ids=["network", "timeout"],
)
async def test_unreachable_after_one_retry(error: FetchError) -> None:
    """A network error or timeout is tried once more, then disallows all (unreachable)."""
    fetcher = robots_site(Route(error=error))
    rules = await make_robots_loader(fetcher)(ORIGIN)
    assert len(fetcher.calls) == 2
    assert rules.unreachable
    # The cause is named, so "the site is down" reads as such in the start URL's error.
    assert rules.source == f"unreachable ({error.kind}: {error.message})"
    assert not is_allowed(rules, ORIGIN + "/page")


async def test_retry_that_succeeds_is_parsed() -> None:
    """One failed attempt then a good answer: the rules are the answer's."""
    fetcher = robots_site(
        Route(error=NetworkError(ROBOTS_URL, "reset")), plain(b"User-agent: *\nDisallow: /a\n")
    )
    rules = await make_robots_loader(fetcher)(ORIGIN)
    assert len(fetcher.calls) == 2
    assert rules.state is RobotsState.PARSED
    assert is_allowed(rules, ORIGIN + "/b")
    assert not is_allowed(rules, ORIGIN + "/a")


FAILURES: list[tuple[str, SiteloreError, RobotsState]] = [
    ("network", NetworkError(ROBOTS_URL, "refused"), RobotsState.UNREACHABLE),
    ("timeout", FetchTimeoutError(ROBOTS_URL, "slow"), RobotsState.UNREACHABLE),
    ("too-large", ResponseTooLargeError(ROBOTS_URL, "big"), RobotsState.UNAVAILABLE),
    ("redirects", TooManyRedirectsError(ROBOTS_URL, "loop"), RobotsState.UNAVAILABLE),
    ("no-snapshot", NoSnapshotError(ROBOTS_URL, "not archived"), RobotsState.UNAVAILABLE),
    (
        "status-error-3xx",
        HTTPStatusError(ROBOTS_URL, "no Location", status=302),
        RobotsState.UNAVAILABLE,
    ),
    (
        "status-error-5xx",
        HTTPStatusError(ROBOTS_URL, "failed", status=503),
        RobotsState.UNREACHABLE,
    ),
]


@pytest.mark.parametrize(("error", "state"), [pytest.param(e, s, id=i) for i, e, s in FAILURES])
async def test_fetch_failures(
    error: SiteloreError, state: RobotsState, caplog: pytest.LogCaptureFixture
) -> None:
    """Fetch errors become rules, with a warning; none escapes."""
    rules = await make_robots_loader(robots_site(Route(error=error)))(ORIGIN)
    assert rules.state is state
    assert any(r.levelno == logging.WARNING for r in caplog.records)


@pytest.mark.parametrize(
    "error",
    [
        BlockedURLError(ROBOTS_URL, "loopback", "127.0.0.1"),
        BlockedURLError("HTTPS://Docs.Example.com:443/robots.txt", "private"),
        InvalidURLError(ROBOTS_URL, "bad host"),
    ],
)
async def test_refusal_of_robots_url_itself_propagates(error: SiteloreError) -> None:
    """The guard refusing the robots.txt URL itself is raised, never allow-all."""
    with pytest.raises(type(error)):
        await make_robots_loader(robots_site(Route(error=error)))(ORIGIN)


@pytest.mark.parametrize(
    ("hops", "error"),
    [
        pytest.param(
            (), BlockedURLError("http://10.0.0.1/robots.txt", "private"), id="hop-refused-by-url"
        ),
        pytest.param(
            ("http://evil.example/robots.txt",),
            BlockedURLError("http://evil.example/robots.txt", "resolves to 10.0.0.1"),
            id="hop-refused-at-connect",
        ),
        pytest.param(
            ("http://evil.example/x",),
            BlockedURLError(ROBOTS_URL, "odd"),
            id="after-a-hop-even-if-url-is-ours",
        ),
        pytest.param((), InvalidURLError("http://[bad/robots.txt", "bad host"), id="hop-invalid"),
    ],
)
async def test_refused_redirect_hop_allows_all(
    hops: tuple[str, ...], error: SiteloreError, caplog: pytest.LogCaptureFixture
) -> None:
    """A refused redirect hop is an unreadable robots.txt: allow all, with a warning."""
    rules = await make_robots_loader(robots_site(Route(error=error), hops=hops))(ORIGIN)
    assert rules.state is RobotsState.UNAVAILABLE
    assert rules.source == "unavailable (redirect refused)"
    assert any(r.levelno == logging.WARNING for r in caplog.records)


async def test_redirected_body_parsed() -> None:
    """A body reached through redirects is parsed as the asked origin's robots.txt."""
    fetcher = robots_site(
        plain(b"User-agent: *\nDisallow: /a\n"), hops=("https://cdn.example.net/robots.txt",)
    )
    rules = await make_robots_loader(fetcher)(ORIGIN)
    assert not is_allowed(rules, ORIGIN + "/a")


async def test_other_exceptions_propagate() -> None:
    """Errors that are not fetch outcomes (bugs, cancellation) are not swallowed."""
    fetcher = robots_site(Route(error=RuntimeError("bug")))
    with pytest.raises(RuntimeError):
        await make_robots_loader(fetcher)(ORIGIN)
