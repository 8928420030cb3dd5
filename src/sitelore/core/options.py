"""What a crawl request asks for and what the operator allows: pydantic-validated options.

``CrawlOptions`` (CLI flags, REST body, MCP arguments) and ``Limits`` (the operator's
hard caps) are pydantic models, so bad values are refused naming the field. They live
apart from :mod:`sitelore.core.models` because building pydantic models costs start-up time
that read commands (``search``, ``list``, ``show``) never need; ``models`` still
exports these names, importing this module on first use. Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from sitelore.core.models import DEFAULT_DELAY, MiB

__all__ = [
    "CAPPED_OPTIONS",
    "ClampNote",
    "CrawlOptions",
    "Limits",
    "clamped_options",
]

#: The options a request may ask for that the operator caps: (CrawlOptions field, Limits field).
CAPPED_OPTIONS: tuple[tuple[str, str], ...] = (
    ("max_pages", "max_pages"),
    ("max_depth", "max_depth"),
    ("concurrency", "max_concurrency"),
    ("deadline_seconds", "deadline_seconds"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class ClampNote:
    """One option asked above the operator's hard cap, and what was applied instead.

    ``field`` is the option's wire name (``maxPages``): the same object in ``crawl
    --json`` and in the REST answers' ``clamped``.
    """

    field: str
    requested: int | float
    applied: int | float
    option: str = ""  #: the Python name (``max_pages``), for sentences

    def to_json(self) -> dict[str, Any]:
        """``{"field", "requested", "applied"}``."""
        return {"field": self.field, "requested": self.requested, "applied": self.applied}

    def __str__(self) -> str:
        name = self.option or self.field
        if self.applied > self.requested:
            return f"{name} {self.requested} raised to the operator's minimum {self.applied}"
        return f"{name} {self.requested} clamped to the operator's cap {self.applied}"


def clamped_options(requested: CrawlOptions, applied: CrawlOptions) -> list[ClampNote]:
    """Every capped option ``applied`` holds lower than asked, and a delay it holds higher.

    The one description of what the operator's limits changed: ``crawl --json`` and
    the REST and MCP answers (``clamped``) show these same records.
    """
    fields = CrawlOptions.model_fields
    notes: list[ClampNote] = []
    for option, _cap in CAPPED_OPTIONS:
        asked, got = getattr(requested, option), getattr(applied, option)
        if got < asked:
            notes.append(ClampNote(fields[option].alias or option, asked, got, option))
    if applied.delay > requested.delay:  # a server's least delay (REST, MCP)
        notes.append(ClampNote("delay", requested.delay, applied.delay, "delay"))
    return notes


class Limits(BaseModel):
    """The operator's hard caps; requests can ask for less, never more."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    max_pages: Annotated[int, Field(ge=1, description="Hard cap on pages per crawl.")] = 200
    max_depth: Annotated[int, Field(ge=0, description="Hard cap on link depth.")] = 5
    deadline_seconds: Annotated[float, Field(gt=0, description="Whole-crawl wall clock.")] = 600.0
    page_timeout_seconds: Annotated[float, Field(gt=0, description="Per-request total.")] = 30.0
    max_page_bytes: Annotated[int, Field(ge=1024, description="Decompressed body cap.")] = 5 * MiB
    max_robots_bytes: Annotated[int, Field(ge=1024)] = 512 * 1024
    max_redirects: Annotated[int, Field(ge=0, le=20)] = 5
    max_concurrency: Annotated[int, Field(ge=1, le=256)] = 64


class CrawlOptions(BaseModel):
    """What one crawl request asks for (CLI flags, REST body, MCP arguments).

    Field names are snake_case in Python and camelCase on the wire (``maxPages``).
    Unknown fields and wrong types are refused naming the field.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, alias_generator=None
    )

    max_pages: Annotated[int, Field(ge=1, alias="maxPages", description="Pages to fetch.")] = 25
    max_depth: Annotated[
        int, Field(ge=0, alias="maxDepth", description="Hops from the seed; 0 = seed only.")
    ] = 2
    same_domain: Annotated[
        bool, Field(alias="sameDomain", description="Follow only the seed's host and subdomains.")
    ] = True
    path_prefix: Annotated[
        str | None, Field(alias="pathPrefix", description="Follow only paths starting with it.")
    ] = None
    exclude_patterns: Annotated[
        tuple[str, ...],
        Field(
            alias="excludePatterns",
            description="Globs on the whole URL, or on its path if one starts with /; any case.",
        ),
    ] = ()
    # Finite numbers only: JSON's 1e999 reads as infinity, which no answer can show
    # (``clamped`` said ``requested: null``), and NaN passes every comparison.
    delay: Annotated[
        float,
        Field(
            ge=0,
            le=60,
            allow_inf_nan=False,
            description="Minimum seconds between requests to one origin.",
        ),
    ] = DEFAULT_DELAY
    concurrency: Annotated[int, Field(ge=1, description="Requests in flight overall.")] = 4
    respect_robots: Annotated[
        bool, Field(alias="respectRobots", description="Obey robots.txt (false: never fetch it).")
    ] = True
    deadline_seconds: Annotated[
        float,
        Field(
            gt=0,
            allow_inf_nan=False,
            alias="deadlineSeconds",
            description="Whole-crawl wall clock.",
        ),
    ] = 600.0
    render: Annotated[
        bool,
        Field(description="Run each HTML page's JavaScript in headless Chromium (render extra)."),
    ] = False
    sitemap: Annotated[
        bool,
        Field(description="Also seed from robots.txt Sitemap: lines and /sitemap.xml."),
    ] = False
    #: Set in code only (never on the wire): one more test a discovered URL (normalised)
    #: must pass to be followed, e.g. the Firecrawl routes' includePaths under RE2.
    url_filter: Annotated[
        SkipJsonSchema[Callable[[str], bool] | None], Field(exclude=True, repr=False)
    ] = None

    def clamp(self, limits: Limits) -> tuple[CrawlOptions, tuple[str, ...]]:
        """Return these options within ``limits`` and a sentence for each clamped value.

        :func:`clamped_options` gives the same as records.
        """
        caps = {field: getattr(limits, cap) for field, cap in CAPPED_OPTIONS}
        changes = {field: cap for field, cap in caps.items() if getattr(self, field) > cap}
        if not changes:
            return self, ()
        applied = self.model_copy(update=changes)
        return applied, tuple(map(str, clamped_options(self, applied)))
