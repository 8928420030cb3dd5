"""Load one origin's robots.txt through the Fetcher port and turn the outcome into rules.

Implements the fetch-outcome table of specs/robots.md (RFC 9309 2.3.1): 2xx is parsed
up to the cap (a larger file is cut at its last complete line, never ignored), 4xx
allows all, and 5xx, a network error, a timeout or a connection reset disallow all
(marked unreachable; a network error or timeout after one retry). A 2xx whose body
cannot be decoded (a Content-Encoding the fetcher does not read) disallows all too:
the file exists but its rules are unknown, which is "undefined" (2.3.1.4), not the
server saying there is none (2.3.1.3, a 4xx). At least :data:`MIN_REDIRECTS` redirects
are followed whatever the operator's ``max_redirects`` (2.3.1.2); redirect trouble
allows all with a warning. It never opens a connection itself (the fetcher does,
through its address guard on every hop), never sends cookies, credentials or a query
string, and never turns the guard's refusal of the robots.txt URL itself into
allow-all.
"""

from __future__ import annotations

import logging
from types import MappingProxyType
from urllib.parse import urlsplit

from sitelore.core.errors import (
    BlockedURLError,
    FetchError,
    FetchTimeoutError,
    HTTPStatusError,
    InvalidURLError,
    NetworkError,
    UnsupportedContentTypeError,
)
from sitelore.core.options import Limits
from sitelore.core.ports import Fetcher
from sitelore.core.robots import (
    RobotsLoader,
    RobotsRules,
    complete_lines,
    parse_robots_txt,
    unavailable_rules,
    unreachable_rules,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_TIMEOUT",
    "MIN_REDIRECTS",
    "ROBOTS_HEADERS",
    "crawl_robots_loader",
    "make_robots_loader",
]

_log = logging.getLogger(__name__)

#: The only header the loader sets; the fetcher adds User-Agent (aiohttp adds Host).
ROBOTS_HEADERS: tuple[tuple[str, str], ...] = (("Accept", "text/plain"),)
#: The robots.txt body cap (decompressed bytes).
DEFAULT_MAX_BYTES = 512 * 1024
#: The robots.txt request's own time limit, in seconds.
DEFAULT_TIMEOUT = 10.0
#: Redirects a robots.txt fetch follows at least (RFC 9309 2.3.1.2: "at least five").
MIN_REDIRECTS = 5

_DEFAULT_PORTS = MappingProxyType({"http": 80, "https": 443})
_SUCCESS, _CLIENT_ERROR, _SERVER_ERROR = 2, 4, 5
_NOT_FOUND = 404


def _url_key(url: str) -> tuple[str, str | None, int | None, str]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, parts.hostname, parts.port or _DEFAULT_PORTS.get(scheme), parts.path or "/"


def _is_robots_url(refused: str, robots_url: str) -> bool:
    """True when the guard's refused URL is the robots.txt URL we asked for."""
    try:
        return _url_key(refused) == _url_key(robots_url)
    except ValueError:
        return refused == robots_url


def _rules_for_status(status: int, body: bytes, *, url: str, loader: _Loader) -> RobotsRules:
    family = status // 100
    if family == _SUCCESS:
        if len(body) > loader.max_bytes:
            _log.warning(
                "robots.txt over %d bytes, parsing up to the cap: %s", loader.max_bytes, url
            )
            body = complete_lines(body, loader.max_bytes)
        return parse_robots_txt(body.decode("utf-8", "replace"), loader.user_agent, base_url=url)
    if family == _CLIENT_ERROR:
        if status != _NOT_FOUND:
            _log.debug("robots.txt answered %d, allowing all: %s", status, url)
        return unavailable_rules(str(status))
    if family == _SERVER_ERROR:
        _log.warning(
            "robots.txt answered %d, disallowing all (--no-robots overrides): %s", status, url
        )
        return unreachable_rules(str(status))
    _log.warning("robots.txt answered %d, allowing all: %s", status, url)
    return unavailable_rules(str(status))


def _rules_for_failure(exc: FetchError, url: str, loader: _Loader) -> RobotsRules:
    if isinstance(exc, HTTPStatusError) and exc.status is not None:
        return _rules_for_status(exc.status, b"", url=url, loader=loader)
    _log.warning("robots.txt could not be read (%s), allowing all: %s", exc, url)
    return unavailable_rules(str(exc.kind))


class _Loader:
    """The loader :func:`make_robots_loader` returns: origin -> rules."""

    def __init__(
        self, fetcher: Fetcher, max_bytes: int, timeout: float, user_agent: str, max_redirects: int
    ) -> None:
        self.fetcher = fetcher
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.user_agent = user_agent
        self.max_redirects = max_redirects

    async def __call__(self, origin: str) -> RobotsRules:
        url = origin.rstrip("/") + "/robots.txt"
        try:
            return await self._load(url)
        except (NetworkError, FetchTimeoutError) as exc:
            _log.info("robots.txt not read (%s), trying once more: %s", exc, url)
        try:
            return await self._load(url)
        except (NetworkError, FetchTimeoutError) as exc:
            _log.warning(
                "robots.txt unreachable (%s), disallowing all (--no-robots overrides): %s", exc, url
            )
            return unreachable_rules(f"{exc.kind}: {exc.message}")

    async def _load(self, url: str) -> RobotsRules:
        """One attempt; a network error or timeout propagates (the caller retries once)."""
        hops: list[str] = []

        async def note_hop(hop: str) -> None:
            hops.append(hop)

        try:
            # One byte over the cap says whether the file was cut (then at its last full line).
            snapshot = await self.fetcher.fetch(
                url,
                max_bytes=self.max_bytes + 1,
                headers=dict(ROBOTS_HEADERS),
                check_hop=note_hop,
                timeout=self.timeout,
                truncate=True,
                max_redirects=self.max_redirects,
            )
        except (BlockedURLError, InvalidURLError) as exc:
            if not hops and _is_robots_url(exc.url, url):
                raise
            _log.warning("robots.txt redirect refused (%s), allowing all: %s", exc, url)
            return unavailable_rules("redirect refused")
        except (NetworkError, FetchTimeoutError):
            raise
        except UnsupportedContentTypeError as exc:
            # Only a final 2xx body is decoded (the fetcher ignores an error page's body).
            _log.warning(
                "robots.txt body unreadable (%s), disallowing all (--no-robots overrides): %s",
                exc.message,
                url,
            )
            return unreachable_rules(f"{exc.kind}: {exc.message}")
        except FetchError as exc:
            return _rules_for_failure(exc, url, self)
        return _rules_for_status(snapshot.status, snapshot.body, url=url, loader=self)


def make_robots_loader(
    fetcher: Fetcher,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout: float = DEFAULT_TIMEOUT,
    user_agent: str = "sitelore",
    max_redirects: int = MIN_REDIRECTS,
) -> RobotsLoader:
    """Return a loader: origin (``"https://example.com"``) -> that origin's rules.

    The loader fetches ``<origin>/robots.txt`` through ``fetcher`` with only
    ``Accept: text/plain`` added (the fetcher sets User-Agent). ``user_agent`` picks
    the robots.txt group by its product token; ``max_bytes`` caps the body (a longer
    one is parsed up to it); ``timeout`` bounds each attempt; ``max_redirects`` hops
    are followed (never fewer than :data:`MIN_REDIRECTS`). The guard's refusal of the
    robots.txt URL itself propagates; a refused redirect hop allows all.
    """
    return _Loader(fetcher, max_bytes, timeout, user_agent, max(MIN_REDIRECTS, max_redirects))


def crawl_robots_loader(fetcher: Fetcher, limits: Limits, user_agent: str) -> RobotsLoader:
    """The loader every crawl uses, local or scaled out (enqueue and workers alike).

    The body is capped at ``limits.max_robots_bytes``; each attempt gets the shorter of
    :data:`DEFAULT_TIMEOUT` and a page's time budget; redirects follow
    ``limits.max_redirects``, but never fewer than :data:`MIN_REDIRECTS` (a lowered
    page limit must not turn a site's robots.txt into "unavailable", allow all).
    """
    timeout = min(DEFAULT_TIMEOUT, limits.page_timeout_seconds)
    return make_robots_loader(
        fetcher,
        max_bytes=limits.max_robots_bytes,
        timeout=timeout,
        user_agent=user_agent,
        max_redirects=limits.max_redirects,
    )
