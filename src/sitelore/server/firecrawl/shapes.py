"""The request bodies of the Firecrawl v2 routes, with Firecrawl's field names and defaults.

Pure data: every field a Firecrawl client may send is declared, so the translation can
refuse the ones sitelore does not do by name. Fields nobody declared are kept aside
(``extra="allow"``) and reported in the answer's ``warning``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ERROR_RESPONSES",
    "BatchScrapeRequest",
    "CrawlRequest",
    "ErrorAnswer",
    "Format",
    "MapRequest",
    "RequestBody",
    "ScrapeOptions",
    "ScrapeRequest",
    "SitemapMode",
]

#: Firecrawl's default ``maxAge`` (two days, in milliseconds).
DEFAULT_MAX_AGE_MS = 172_800_000

SitemapMode = Literal["include", "skip", "only"]
#: A format: its name, or an object with a ``type`` (``{"type": "json", "schema": ...}``).
Format = str | dict[str, Any]

#: Keys the official SDKs add to every body; accepted and ignored.
CLIENT_KEYS = frozenset({"origin", "integration"})


class RequestBody(BaseModel):
    """A Firecrawl request body: fields nobody declared are kept aside (``model_extra``)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, strict=False)

    def unknown_fields(self) -> list[str]:
        """Fields sent that no model declares (client bookkeeping left out)."""
        return sorted(k for k in (self.model_extra or {}) if k not in CLIENT_KEYS)


class ScrapeOptions(RequestBody):
    """What to fetch and return for each page (``/v2/scrape`` and ``scrapeOptions``)."""

    formats: list[Format] = Field(default_factory=lambda: list[Format](["markdown"]))
    only_main_content: bool = Field(True, alias="onlyMainContent")
    include_tags: list[str] = Field(default_factory=list, alias="includeTags")
    exclude_tags: list[str] = Field(default_factory=list, alias="excludeTags")
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: Annotated[int, Field(ge=1)] | None = None
    wait_for: int = Field(0, alias="waitFor")
    mobile: bool = False
    parsers: list[Any] | None = None
    actions: list[Any] | None = None
    location: dict[str, Any] | None = None
    skip_tls_verification: bool = Field(False, alias="skipTlsVerification")
    remove_base64_images: bool = Field(True, alias="removeBase64Images")
    fast_mode: bool = Field(False, alias="fastMode")
    block_ads: bool = Field(True, alias="blockAds")
    proxy: str | None = None
    max_age: Annotated[int, Field(ge=0, alias="maxAge")] = DEFAULT_MAX_AGE_MS
    min_age: int | None = Field(None, alias="minAge")
    store_in_cache: bool = Field(True, alias="storeInCache")
    zero_data_retention: bool = Field(False, alias="zeroDataRetention")


class ScrapeRequest(ScrapeOptions):
    """``POST /v2/scrape``."""

    url: Annotated[str, Field(min_length=1, max_length=2048)]


class BatchScrapeRequest(ScrapeOptions):
    """``POST /v2/batch/scrape``: scrape options flattened beside the URLs."""

    urls: Annotated[list[str], Field(min_length=1, max_length=1000)]
    webhook: Any = None
    append_to_id: str | None = Field(None, alias="appendToId")
    ignore_invalid_urls: bool = Field(False, alias="ignoreInvalidURLs")
    max_concurrency: Annotated[int, Field(ge=1)] | None = Field(None, alias="maxConcurrency")


class CrawlRequest(RequestBody):
    """``POST /v2/crawl``."""

    url: Annotated[str, Field(min_length=1, max_length=2048)]
    prompt: str | None = None
    include_paths: list[str] = Field(default_factory=list, alias="includePaths")
    exclude_paths: list[str] = Field(default_factory=list, alias="excludePaths")
    regex_on_full_url: bool = Field(False, alias="regexOnFullURL")
    max_discovery_depth: Annotated[int, Field(ge=0)] | None = Field(None, alias="maxDiscoveryDepth")
    sitemap: SitemapMode = "include"
    ignore_query_parameters: bool = Field(False, alias="ignoreQueryParameters")
    deduplicate_similar_urls: bool = Field(True, alias="deduplicateSimilarURLs")
    limit: Annotated[int, Field(ge=1)] | None = None
    crawl_entire_domain: bool = Field(False, alias="crawlEntireDomain")
    allow_external_links: bool = Field(False, alias="allowExternalLinks")
    allow_subdomains: bool = Field(False, alias="allowSubdomains")
    ignore_robots_txt: bool = Field(False, alias="ignoreRobotsTxt")
    robots_user_agent: str | None = Field(None, alias="robotsUserAgent")
    delay: Annotated[float, Field(ge=0)] | None = None
    max_concurrency: Annotated[int, Field(ge=1)] | None = Field(None, alias="maxConcurrency")
    webhook: Any = None
    scrape_options: ScrapeOptions = Field(default_factory=ScrapeOptions, alias="scrapeOptions")
    zero_data_retention: bool = Field(False, alias="zeroDataRetention")


class MapRequest(RequestBody):
    """``POST /v2/map``."""

    url: Annotated[str, Field(min_length=1, max_length=2048)]
    search: str | None = None
    sitemap: SitemapMode = "include"
    include_subdomains: bool = Field(True, alias="includeSubdomains")
    ignore_query_parameters: bool = Field(True, alias="ignoreQueryParameters")
    limit: Annotated[int, Field(ge=1, le=100_000)] = 5000
    timeout: Annotated[int, Field(ge=1)] | None = None
    location: dict[str, Any] | None = None


class ErrorAnswer(BaseModel):
    """What a refused or failed Firecrawl request answers (``success`` is false)."""

    success: Literal[False]
    code: str
    error: str


#: The error answers every ``/v2`` route may give, documented in the OpenAPI.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorAnswer, "description": description}
    for status, description in (
        (400, "A refused option, a bad body or a bad URL."),
        (403, "The address guard or robots.txt refused the URL."),
        (404, "No such crawl or batch."),
        (408, "The page was not fetched in time."),
        (409, "The crawl or batch has already ended."),
        (429, "Every crawl slot is busy."),
        (500, "The page could not be fetched."),
    )
}
