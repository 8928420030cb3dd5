"""Firecrawl requests in sitelore's terms: refuse what it does not do, clamp what it caps.

Pure rules over the request models: a field sitelore cannot honour is a ``UsageError``
naming it; an ask above the operator's caps (or below its delay) is clamped and said in
a warning, as Firecrawl says so in ``warning``. ``includePaths`` / ``excludePaths`` run
under RE2 (linear time: no catastrophic backtracking whatever the pattern).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import re2

from sitelore.app.pages import check_headers
from sitelore.core.convert import check_selectors
from sitelore.core.errors import UsageError
from sitelore.core.options import CrawlOptions, Limits
from sitelore.core.urls import normalize_url
from sitelore.server.firecrawl.shapes import CrawlRequest, Format, ScrapeOptions

__all__ = ["MAX_PATTERNS", "Wanted", "crawl_options", "path_filter", "scrape_options", "wanted"]

#: Formats this server returns; every other Firecrawl format is refused by name.
FORMATS = ("markdown", "html", "rawHtml", "links")
#: Most include/exclude patterns per request, and longest pattern (characters).
MAX_PATTERNS = 100
MAX_PATTERN_LENGTH = 1000
_MAX_DELAY = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class Wanted:
    """What a caller wants back for each page, checked."""

    formats: tuple[str, ...]
    only_main_content: bool = True
    include_tags: tuple[str, ...] = ()
    exclude_tags: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    max_age_ms: int = 0
    timeout_seconds: float | None = None

    @property
    def default_cut(self) -> bool:
        """True when the stored Markdown is what was asked (main content, no tag rules)."""
        return self.only_main_content and not self.include_tags and not self.exclude_tags

    @property
    def needs_body(self) -> bool:
        """True when the answer needs the page's response body, not only the store."""
        return not self.default_cut or any(f != "markdown" for f in self.formats)


def _format_name(value: Format) -> str:
    if isinstance(value, str):
        return value
    kind = value.get("type")
    return kind if isinstance(kind, str) else repr(value)


def _refuse(field: str, reason: str) -> UsageError:
    return UsageError(f"{field}: {reason}")


def wanted(options: ScrapeOptions, prefix: str = "") -> Wanted:
    """Check scrape options; UsageError naming the first one this server does not do."""
    names = tuple(dict.fromkeys(_format_name(f) for f in options.formats))
    for name in names:
        if name not in FORMATS:
            raise _refuse(
                f"{prefix}formats",
                f"{name!r} is not supported by this server (it returns {', '.join(FORMATS)})",
            )
    refusals: Sequence[tuple[bool, str, str]] = (
        (bool(options.actions), "actions", "this server does not run page actions"),
        (options.wait_for > 0, "waitFor", "this server does not render pages"),
        (options.mobile, "mobile", "this server does not emulate devices"),
        (options.location is not None, "location", "this server fetches from one place"),
        (options.skip_tls_verification, "skipTlsVerification", "TLS is always verified"),
        (
            options.proxy not in (None, "basic", "auto"),
            "proxy",
            "only 'basic' (direct fetches) is available",
        ),
        (not options.store_in_cache, "storeInCache", "every page fetched here is stored"),
        (options.zero_data_retention, "zeroDataRetention", "every page fetched here is stored"),
        (options.min_age is not None, "minAge", "not supported (use maxAge)"),
        (
            any(p != "pdf" and not (isinstance(p, dict) and p.get("type") == "pdf")
                for p in options.parsers or ()),
            "parsers",
            "only 'pdf' is available",
        ),
    )  # fmt: skip
    for refused, field, reason in refusals:
        if refused:
            raise _refuse(prefix + field, reason)
    check_selectors(prefix + "includeTags", options.include_tags)
    check_selectors(prefix + "excludeTags", options.exclude_tags)
    headers = check_headers(prefix + "headers", options.headers)
    return Wanted(
        formats=names or ("markdown",),
        only_main_content=options.only_main_content,
        include_tags=tuple(options.include_tags),
        exclude_tags=tuple(options.exclude_tags),
        headers=tuple(headers.items()),
        max_age_ms=options.max_age,
        timeout_seconds=options.timeout / 1000 if options.timeout is not None else None,
    )


def scrape_options(
    want: Wanted, limits: Limits, delay: float, *, left: float | None = None
) -> CrawlOptions:
    """The one-page crawl of a scrape: the operator's delay, the caller's timeout (within
    ``left`` seconds, what a batch has left of the operator's deadline)."""
    deadline = min(want.timeout_seconds or limits.page_timeout_seconds, limits.deadline_seconds)
    if left is not None:
        deadline = min(deadline, left)
    return CrawlOptions(
        max_pages=1, max_depth=0, concurrency=1, delay=delay, deadline_seconds=deadline
    )


def _compile(field: str, patterns: Sequence[str]) -> list[Any]:
    if len(patterns) > MAX_PATTERNS:
        raise _refuse(field, f"at most {MAX_PATTERNS} patterns")
    compiled = []
    for pattern in patterns:
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise _refuse(field, f"a pattern longer than {MAX_PATTERN_LENGTH} characters")
        try:
            compiled.append(re2.compile(pattern))
        except re2.error as exc:
            raise _refuse(field, f"{pattern!r} is not a regular expression RE2 accepts") from exc
    return compiled


def path_filter(request: CrawlRequest) -> Callable[[str], bool]:
    """The test every discovered URL must pass, beyond sitelore's own scope.

    ``includePaths`` (any must match) and ``excludePaths`` (none may) are searched in
    the URL's path, or the whole URL with ``regexOnFullURL``; hosts: the start URL's
    only, unless ``allowSubdomains`` or ``allowExternalLinks``; ``ignoreQueryParameters``
    follows no URL with a query.
    """
    include = _compile("includePaths", request.include_paths)
    exclude = _compile("excludePaths", request.exclude_paths)
    seed_host = urlsplit(normalize_url(request.url)).hostname
    same_host = not (request.allow_subdomains or request.allow_external_links)
    full = request.regex_on_full_url
    no_query = request.ignore_query_parameters

    def allows(url: str) -> bool:
        parts = urlsplit(url)
        if same_host and parts.hostname != seed_host:
            return False
        if no_query and parts.query:
            return False
        text = url if full else parts.path
        if include and not any(p.search(text) for p in include):
            return False
        return not any(p.search(text) for p in exclude)

    return allows


def _capped(
    name: str, asked: int | None, cap: int, notes: list[str], default: int | None = None
) -> int:
    """The ask within ``cap`` (noted when lowered); no ask: ``default``, else the cap."""
    if asked is None:
        return cap if default is None else min(default, cap)
    if asked > cap:
        notes.append(f"{name} {asked} clamped to this server's cap {cap}")
        return cap
    return asked


def crawl_options(
    request: CrawlRequest, limits: Limits, min_delay: float
) -> tuple[CrawlOptions, list[str]]:
    """The crawl a Firecrawl request asks for, within the operator's rules, and the notes.

    Raises:
        UsageError: a field this server refuses (named), or a bad pattern.
    """
    refusals = (
        (request.prompt is not None, "prompt", "this server does not turn prompts into options"),
        (request.ignore_robots_txt, "ignoreRobotsTxt",
         "this server always obeys robots.txt (an operator setting)"),
        (request.robots_user_agent is not None, "robotsUserAgent",
         "robots.txt is read for this server's own user agent (an operator setting)"),
        (request.webhook is not None, "webhook",
         "not supported: poll GET /v2/crawl/{id} instead"),
        (request.zero_data_retention, "zeroDataRetention", "every page fetched here is stored"),
        (request.sitemap == "only", "sitemap",
         "'only' is not supported for crawls (use /v2/map, then /v2/batch/scrape)"),
    )  # fmt: skip
    for refused, field, reason in refusals:
        if refused:
            raise _refuse(field, reason)
    notes: list[str] = []
    delay = min_delay if request.delay is None else request.delay
    if delay < min_delay:
        notes.append(f"delay {request.delay:g} raised to this server's minimum {min_delay:g}")
        delay = min_delay
    if delay > _MAX_DELAY:
        notes.append(f"delay {delay:g} lowered to {_MAX_DELAY:g}")
        delay = _MAX_DELAY
    path = urlsplit(normalize_url(request.url)).path
    options = CrawlOptions(
        max_pages=_capped("limit", request.limit, limits.max_pages, notes),
        max_depth=_capped(
            "maxDiscoveryDepth", request.max_discovery_depth, limits.max_depth, notes
        ),
        concurrency=_capped(
            "maxConcurrency",
            request.max_concurrency,
            limits.max_concurrency,
            notes,
            default=CrawlOptions.model_fields["concurrency"].default,
        ),
        same_domain=not request.allow_external_links,
        path_prefix=None if request.crawl_entire_domain else path[: path.rfind("/") + 1],
        delay=delay,
        sitemap=request.sitemap == "include",
        url_filter=path_filter(request),
    )
    return options, notes
