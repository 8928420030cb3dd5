"""Fetch a site's sitemaps through the Fetcher port and collect the page URLs they list.

Reads robots.txt's ``Sitemap:`` files and ``/sitemap.xml``, follows sitemap indexes
(bounded depth, files on the index's own host only), and returns page URLs in the
order found. It never opens a connection itself (the fetcher guards every request and
redirect), never fetches a file the caller's ``before_fetch`` refuses (robots.txt,
politeness, the deadline), and never reads more files, bytes or URLs than its caps.
A sitemap that cannot be read is reported in ``errors``; a missing ``/sitemap.xml``
that robots.txt did not promise is normal and silent. Scope, page caps and robots for
the listed pages are the crawl's business: these URLs only seed its frontier.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Sequence

from sitelore.core.errors import SiteloreError
from sitelore.core.ports import Fetcher
from sitelore.core.sitemaps import (
    MAX_SITEMAP_BYTES,
    MAX_SITEMAP_FILES,
    MAX_SITEMAP_URLS,
    BeforeFetch,
    SitemapError,
    SitemapLoader,
    SitemapResult,
    parse_sitemap,
    same_host,
    sitemap_candidates,
)

__all__ = ["make_sitemap_loader"]

_log = logging.getLogger(__name__)

_HEADERS = {"Accept": "application/xml, text/xml;q=0.9, text/plain;q=0.5, */*;q=0.1"}
_MAX_NESTING = 3
_OK = 200


@dataclasses.dataclass(slots=True)
class _Walk:
    """One loader call in progress."""

    declared: frozenset[str]
    urls: dict[str, None] = dataclasses.field(default_factory=dict)
    files: list[str] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    truncated: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class _Loader:
    fetcher: Fetcher
    _: dataclasses.KW_ONLY
    max_bytes: int
    max_files: int
    max_urls: int
    timeout: float

    async def __call__(
        self, seed: str, declared: Sequence[str], before_fetch: BeforeFetch
    ) -> SitemapResult:
        walk = _Walk(frozenset(declared))
        queue = deque((url, 0) for url in sitemap_candidates(seed, declared))
        seen = {url for url, _ in queue}
        while queue and len(walk.files) < self.max_files and not walk.truncated:
            url, nesting = queue.popleft()
            if not await before_fetch(url):
                continue
            children = await self._read(url, walk)
            if nesting + 1 > _MAX_NESTING:
                continue
            for child in children:
                if child not in seen and same_host(child, [url]):
                    seen.add(child)
                    queue.append((child, nesting + 1))
        if queue and len(walk.files) >= self.max_files:
            walk.errors.append(f"stopped after {self.max_files} sitemap files")
        return SitemapResult(
            tuple(walk.urls), tuple(walk.files), tuple(walk.errors), walk.truncated
        )

    async def _read(self, url: str, walk: _Walk) -> tuple[str, ...]:
        """Fetch and parse one file; add its pages to ``walk``; return child sitemaps."""
        try:
            snapshot = await self.fetcher.fetch(
                url, max_bytes=self.max_bytes, headers=_HEADERS, timeout=self.timeout
            )
        except SiteloreError as exc:
            walk.errors.append(f"{url}: {exc}")
            return ()
        if snapshot.status != _OK:
            if url in walk.declared or snapshot.status < 400 or snapshot.status >= 500:
                walk.errors.append(f"{url}: HTTP {snapshot.status}")
            else:
                _log.debug("no sitemap at %s (HTTP %d)", url, snapshot.status)
            return ()
        try:
            parsed = parse_sitemap(
                snapshot.body,
                snapshot.final_url,
                max_bytes=self.max_bytes,
                max_urls=self.max_urls - len(walk.urls),
            )
        except SitemapError as exc:
            walk.errors.append(f"{url}: {exc}")
            return ()
        walk.files.append(url)
        if parsed.index:
            return parsed.locs
        walk.urls.update(dict.fromkeys(parsed.locs))
        if parsed.truncated or len(walk.urls) >= self.max_urls:
            walk.truncated = True
        return ()


def make_sitemap_loader(
    fetcher: Fetcher,
    *,
    max_bytes: int = MAX_SITEMAP_BYTES,
    max_files: int = MAX_SITEMAP_FILES,
    max_urls: int = MAX_SITEMAP_URLS,
    timeout: float = 30.0,
) -> SitemapLoader:
    """Return a loader that reads a seed's sitemaps through ``fetcher`` within the caps."""
    return _Loader(
        fetcher, max_bytes=max_bytes, max_files=max_files, max_urls=max_urls, timeout=timeout
    )
