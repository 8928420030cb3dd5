"""Seed a crawl from its sitemaps: the same reading for a local crawl and a queued one.

The sitemaps a seed's robots.txt declares (and ``/sitemap.xml``) are read through the
crawl's fetcher; before each file, robots.txt must allow it and its origin must give
its turn (spacing); a file whose robots.txt URL the guard refuses is skipped and noted.
The caller offers the URLs found at depth 1 (scope, caps and robots still apply).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sitelore.core.errors import RobotsRefusedError, SiteloreError
from sitelore.core.printable import printable
from sitelore.core.robots import (
    RobotsPolicy,
    RobotsRules,
    is_allowed,
    robots_origin,
    unreachable_reason,
)
from sitelore.core.sitemaps import SitemapLoader
from sitelore.core.urls import origin

__all__ = ["check_seed_rules", "read_sitemaps"]


async def read_sitemaps(
    seed: str,
    *,
    loader: SitemapLoader,
    robots: RobotsPolicy | None,
    wait_turn: Callable[[str], Awaitable[bool]],
) -> tuple[tuple[str, ...], list[str]]:
    """The page URLs of ``seed``'s sitemaps, and the lines for the crawl's warnings.

    ``robots`` None: robots.txt is not respected.
    """
    warnings: list[str] = []
    declared = (await robots.rules_for(seed)).sitemaps if robots is not None else ()

    async def before(url: str) -> bool:
        """May a sitemap file be fetched now? robots.txt first, then the origin's turn."""
        try:
            key = origin(url)
        except SiteloreError as exc:  # a malformed Sitemap: URL: that file is skipped
            warnings.append(f"sitemap: {exc}")
            return False
        try:
            if robots is not None and not await robots.is_allowed(url):
                return False
        except SiteloreError as exc:  # a refused robots.txt: that file is skipped
            warnings.append(f"blocked {key}: {exc}")
            return False
        return await wait_turn(key)

    found = await loader(seed, declared, before)
    warnings += [f"sitemap: {error}" for error in found.errors]
    if not found.urls and not found.errors:  # --sitemap asked for, nothing came of it
        if found.files:
            warnings.append("sitemap: the sitemaps read list no page")
        elif not declared:
            warnings.append("sitemap: none found (robots.txt names none; /sitemap.xml is missing)")
    if found.truncated:
        warnings.append("sitemap: URL cap reached; the rest were not read")
    # A warning may quote a Sitemap: line or a sitemap URL as the site wrote it.
    return found.urls, [printable(line) for line in warnings]


def check_seed_rules(seed: str, rules: RobotsRules) -> None:
    """Refuse a start URL that its robots.txt disallows, or whose robots.txt is unreachable.

    Raises:
        RobotsRefusedError: a usage error, before anything is fetched or queued.
    """
    robots_url = robots_origin(seed) + "/robots.txt"
    if rules.unreachable:
        raise RobotsRefusedError(seed, robots_url, unreachable_reason(rules))
    if not is_allowed(rules, seed):
        raise RobotsRefusedError(seed, robots_url, "the start URL is disallowed by robots.txt")
