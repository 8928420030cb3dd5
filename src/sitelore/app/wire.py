"""The JSON shapes of the service surfaces (REST and MCP): the submit request and every answer.

One pydantic model per shape, camelCase on the wire and every field described, so the
OpenAPI document and the MCP tool schemas come from the same source and a field means
one thing on both surfaces. Pure data and conversions from sitelore's records: no I/O,
no web or MCP library.
"""

from __future__ import annotations

import copy
import dataclasses
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sitelore.app.jobs import Job
from sitelore.core.document_wire import DocumentOut
from sitelore.core.document_wire import WireModel as _Wire
from sitelore.core.errors import UsageError
from sitelore.core.models import (
    DEFAULT_DELAY,
    CrawlSummary,
    JobRecord,
    PageOutcome,
    SearchHit,
)
from sitelore.core.options import CAPPED_OPTIONS, CrawlOptions, Limits, clamped_options

__all__ = [
    "DEFAULT_DELAY",
    "MAX_OFFSET",
    "MAX_URL_LENGTH",
    "Clamped",
    "CrawlJobRequest",
    "CrawlResult",
    "DocumentItem",
    "DocumentList",
    "DocumentOut",
    "DocumentRef",
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "Hit",
    "JobBrief",
    "JobList",
    "JobOut",
    "JobProgress",
    "PageFailure",
    "RemoteOptionError",
    "RemotePolicy",
    "SearchResult",
    "SubmitRequest",
    "annotate_request_schema",
    "clamped_fields",
    "integral_floats",
    "submit_schema",
]

#: Longest URL a request may submit (characters).
MAX_URL_LENGTH = 2048
#: Largest offset a listing accepts (well inside SQLite's and PostgreSQL's 64-bit range).
MAX_OFFSET = 1_000_000_000

_CAP_KEY = "x-hard-cap"
#: A JSON Schema pattern for text without C0 controls or DEL.
_NO_CONTROLS = "^[^\\u0000-\\u001f\\u007f]*$"


class SubmitRequest(CrawlOptions):
    """A URL to ingest, plus the crawl options (the REST body and the MCP tool arguments).

    Without ``spider`` only ``url`` is fetched; with it, links are followed within
    ``maxPages`` and ``maxDepth``. Requests above the operator's hard caps are clamped.
    There is deliberately no field for private addresses: that is an operator setting,
    and what a remote caller may change about politeness is :class:`RemotePolicy`'s call.

    Validation is strict, as JSON means it: ``"10"`` is not a number, ``1`` and ``"yes"``
    are not booleans (422 naming the field); an integer is still a valid number of
    seconds and, as in JSON Schema, ``10.0`` a valid integer. Arrays are read as the
    tuples the options hold. Text must be valid Unicode (no lone surrogates, which
    JSON's ``\\ud800`` escapes can carry), and ``pathPrefix`` and ``excludePatterns``
    hold no control characters, so nothing fails later when it is stored.
    """

    model_config = ConfigDict(strict=True)

    url: Annotated[
        str,
        Field(
            min_length=1,
            max_length=MAX_URL_LENGTH,
            description="The http(s) page to ingest, or the start of the crawl.",
        ),
    ]
    spider: Annotated[
        bool,
        Field(description="Follow links from the page (false: ingest that one page only)."),
    ] = False

    @model_validator(mode="before")
    @classmethod
    def _arrays_as_tuples(cls, data: Any) -> Any:
        # FastAPI and the MCP SDK hand over parsed JSON, where arrays are lists; strict
        # validation takes only tuples for the tuple fields.
        if isinstance(data, dict):
            data = integral_floats(cls, data)
            return {key: tuple(v) if isinstance(v, list) else v for key, v in data.items()}
        return data

    @field_validator("url", "path_prefix", "exclude_patterns")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        for text in value if isinstance(value, tuple) else (value,):
            if isinstance(text, str) and not _encodes(text):
                raise ValueError("not valid Unicode text (a lone surrogate)")
        return value

    @field_validator("path_prefix", "exclude_patterns")
    @classmethod
    def _no_controls(cls, value: Any) -> Any:
        # No URL the crawl compares them with holds a control character (they are
        # escaped), and PostgreSQL cannot store NUL in the job's record.
        for text in value if isinstance(value, tuple) else (value,):
            if isinstance(text, str) and any(ch < " " or ch == "\x7f" for ch in text):
                raise ValueError("control characters (NUL, line breaks, ...) are not allowed")
        return value

    def crawl_options(self) -> CrawlOptions:
        """The crawl this request asks for: one page without ``spider``."""
        values = self.model_dump(exclude={"url", "spider"})
        if not self.spider:
            values.update(max_pages=1, max_depth=0, concurrency=1)
        return CrawlOptions.model_validate(values)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def integral_floats(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with integral floats (``10.0``) as ints where ``model`` has an int field.

    JSON Schema's ``integer`` includes 10.0; strict pydantic validation does not. Keys
    are matched by field name or alias; other values are left for validation to judge.
    """
    ints = {
        key
        for name, field in model.model_fields.items()
        if field.annotation is int
        for key in (name, field.alias)
        if key
    }
    return {
        key: int(value)
        if key in ints and isinstance(value, float) and value.is_integer()
        else value
        for key, value in data.items()
    }


class CrawlJobRequest(SubmitRequest):
    """A crawl to run as a background job: the submit request, following links by default."""

    spider: Annotated[
        bool,
        Field(description="Follow links from the page (false: a job for that one page)."),
    ] = True


_Request = TypeVar("_Request", bound=SubmitRequest)

#: The delay a request gets when neither it nor the operator says otherwise (seconds).


class RemoteOptionError(UsageError):
    """A remote request asked for an option only the operator may set (HTTP 422)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{field}: {reason}")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RemotePolicy:
    """What REST and MCP callers may change about politeness; the operator decides the rest.

    * ``respectRobots: false`` is refused: a remote caller never switches robots.txt off.
    * ``delay`` is at least the operator's (``delay`` here, ``serve --delay``); a smaller
      ask is raised to it and the answer's ``clamped`` says so. A request that does not
      mention it gets the operator's.
    * ``render: true`` is refused unless the operator allowed it (``--allow-render``).
    """

    delay: float = DEFAULT_DELAY
    allow_render: bool = False

    def admit(self, request: _Request) -> tuple[CrawlOptions, _Request]:
        """Return (what the caller asked, operator defaults filled in; the request to run).

        Raises:
            RemoteOptionError: the request asks for something only the operator may set.
        """
        if not request.respect_robots:
            raise RemoteOptionError(
                "respectRobots",
                "set by the operator only: this server always obeys robots.txt",
            )
        if request.render and not self.allow_render:
            raise RemoteOptionError(
                "render",
                "JavaScript rendering is not enabled on this server "
                "(set by the operator only: --allow-render)",
            )
        asked = request
        if "delay" not in request.model_fields_set:
            asked = request.model_copy(update={"delay": self.delay})
        run = asked if asked.delay >= self.delay else asked.model_copy(update={"delay": self.delay})
        return asked.crawl_options(), run


def _cap_of(limits: Limits) -> dict[str, float | int]:
    fields = CrawlOptions.model_fields
    return {
        (fields[option].alias or option): getattr(limits, cap) for option, cap in CAPPED_OPTIONS
    }


def _remote_notes(remote: RemotePolicy) -> dict[str, str]:
    render = "allowed" if remote.allow_render else "refused (422)"
    return {
        "respectRobots": (
            "Set by the operator only: remote requests cannot switch robots.txt off; "
            "false is refused (422)."
        ),
        "delay": (
            f"This server's default and minimum: {remote.delay:g} s (set by the operator); "
            "a smaller ask is raised to it and listed in clamped."
        ),
        "render": f"Needs the operator's --allow-render; on this server true is {render}.",
    }


def annotate_request_schema(
    schema: dict[str, Any], limits: Limits, remote: RemotePolicy | None = None
) -> dict[str, Any]:
    """Write defaults, this server's hard caps and remote rules into a request schema (in place).

    Every optional property shows its default (``null`` included, which generators drop);
    each capped one gets ``x-hard-cap`` and a sentence saying larger asks are clamped. The
    schema keeps no ``maximum`` there, because a larger ask is clamped, not refused. The
    options only the operator controls (:class:`RemotePolicy`) say so, and allow only
    the values a request may ask for (``respectRobots`` true; ``render`` false unless
    allowed); ``delay`` shows the operator's default.
    """
    remote = remote or RemotePolicy()
    properties = schema.get("properties", {})
    for name, field in SubmitRequest.model_fields.items():
        prop = properties.get(field.alias or name)
        if prop is not None and not field.is_required() and "default" not in prop:
            prop["default"] = field.get_default(call_default_factory=True)
    sentences = _remote_notes(remote)
    for name, cap in _cap_of(limits).items():
        if name in properties:
            properties[name][_CAP_KEY] = cap
            sentences[name] = f"Hard cap on this server: {cap}; a larger ask is clamped to it."
    if "delay" in properties:
        properties["delay"]["default"] = remote.delay
    # What only the operator may set is refused (422): the schema allows only the rest.
    if "respectRobots" in properties:
        properties["respectRobots"]["enum"] = [True]
    if "render" in properties and not remote.allow_render:
        properties["render"]["enum"] = [False]
    # No control characters (SubmitRequest refuses them, 422): the schema says so.
    for string in (
        *properties.get("pathPrefix", {}).get("anyOf", ()),
        properties.get("excludePatterns", {}).get("items", {}),
    ):
        if string.get("type") == "string":
            string["pattern"] = _NO_CONTROLS
    for name, sentence in sentences.items():
        prop = properties.get(name)
        if prop is not None:
            prop["description"] = f"{prop.get('description', '').rstrip()} {sentence}".strip()
    return schema


def submit_schema(limits: Limits, remote: RemotePolicy | None = None) -> dict[str, Any]:
    """The JSON schema of :class:`SubmitRequest` (wire names), url and spider first, caps shown."""
    schema = copy.deepcopy(SubmitRequest.model_json_schema(by_alias=True))
    properties = schema["properties"]
    first = {key: properties.pop(key) for key in ("url", "spider")}
    schema["properties"] = {**first, **properties}
    return annotate_request_schema(schema, limits, remote)


class DocumentRef(_Wire):
    """A stored document, by id."""

    id: str = Field(description="Stable document id (derived from the URL).")
    url: str = Field(description="The page's final URL (after redirects).")
    title: str = Field(description="The page title.")


class PageFailure(_Wire):
    """A page that ended in a typed error instead of a document."""

    url: str = Field(description="The URL that was requested.")
    kind: str = Field(description="Error kind: network, timeout, http-status, too-large, ...")
    message: str = Field(description="One line naming the URL and the reason.")
    status: int | None = Field(None, description="HTTP status, when the error is about one.")


class Clamped(_Wire):
    """One option held to this server's limits: lowered to a hard cap, or delay raised."""

    field: str = Field(description="The option's wire name, e.g. maxPages or delay.")
    requested: int | float = Field(description="What the request asked for.")
    applied: int | float = Field(
        description="What was applied instead: the operator's cap, or for delay its minimum."
    )


def clamped_fields(requested: CrawlOptions, applied: CrawlOptions) -> list[Clamped]:
    """Every capped option ``applied`` holds lower than asked, and a delay it holds higher."""
    return [Clamped(**note.to_json()) for note in clamped_options(requested, applied)]


def _failure(page: PageOutcome) -> PageFailure | None:
    if page.error is None:
        return None
    return PageFailure(
        url=page.url, kind=str(page.error.kind), message=page.error.message, status=page.status
    )


class CrawlResult(_Wire):
    """What a crawl did (``spider: true``): documents, errors, truncation, options applied."""

    documents: list[DocumentRef] = Field(description="Documents stored, in crawl order.")
    pages_indexed: int = Field(description="Pages stored as documents.")
    pages_crawled: int = Field(description="Pages requested (robots.txt not counted).")
    errors: list[PageFailure] = Field(
        description="Pages that failed; a failure never stops the crawl."
    )
    truncated: bool = Field(description="True when the crawl stopped with URLs left unfetched.")
    truncated_reason: str | None = Field(description="max_pages or deadline, when truncated.")
    unfetched: int = Field(description="Discovered URLs left unfetched.")
    skipped: dict[str, int] = Field(
        description="URLs not fetched, by reason (robots, filtered, ...)."
    )
    skipped_urls: dict[str, list[str]] = Field(
        description="Why a URL was not fetched: the first 20 skipped URLs of each reason "
        "(duplicate excluded)."
    )
    elapsed_ms: int = Field(description="Wall time of the crawl in milliseconds.")
    applied: CrawlOptions = Field(description="The options the crawl ran with, after clamping.")
    clamped: list[Clamped] = Field(
        description="Options held to this server's limits (caps lowered, delay raised)."
    )
    warnings: list[str] = Field(description="Notes for the caller, e.g. why the crawl stopped.")

    @classmethod
    def from_summary(cls, summary: CrawlSummary, requested: CrawlOptions) -> CrawlResult:
        """Shape a crawl summary; ``requested`` is what was asked before clamping."""
        return cls.shape(
            summary,
            documents=[
                DocumentRef(id=p.document_id, url=p.final_url or p.url, title=p.title or "")
                for p in summary.pages
                if p.indexed and p.document_id is not None
            ],
            errors=[f for f in map(_failure, summary.pages) if f is not None],
            skipped=summary.skipped_by_reason(),
            elapsed_ms=round(summary.elapsed_ms),
            applied=summary.options,
            clamped=clamped_fields(requested, summary.options),
        )


class DocumentItem(_Wire):
    """A document in a listing (no Markdown)."""

    id: str = Field(description="Stable document id.")
    url: str = Field(description="The page's final URL.")
    title: str = Field(description="The page title.")
    fetched_at: datetime = Field(description="When the page was fetched (UTC).")
    updated_at: datetime = Field(description="When the document last changed (UTC).")


class DocumentList(_Wire):
    """One page of the document listing, most recently updated first."""

    total: int = Field(description="Documents in the store.")
    limit: int = Field(description="Page size asked for.")
    offset: int = Field(description="Documents skipped before this page.")
    next_offset: int | None = Field(description="Offset of the next page; null on the last.")
    documents: list[DocumentItem] = Field(description="The documents of this page.")


class Hit(_Wire):
    """One search result: a page shown by its best section; lower score is better (BM25)."""

    id: str = Field(description="Document id.")
    url: str = Field(description="Document URL.")
    title: str = Field(description="Document title.")
    heading_path: list[str] = Field(description="Headings above the best section, outermost first.")
    anchor_url: str = Field(description="URL#fragment of the best section (the URL without one).")
    section: int | None = Field(description="Number of the section in the page (from 0).")
    snippet: str = Field(description="Matching text around the query terms (fetched text).")
    score: float = Field(description="BM25 rank, or fused ranks when hybrid; lower is better.")

    @classmethod
    def from_hit(cls, hit: SearchHit) -> Hit:
        """Shape a store hit (its URL stands for a missing anchor URL)."""
        return cls.shape(hit, anchor_url=hit.anchor_url or hit.url)


class SearchResult(_Wire):
    """Search results, and how they were ranked."""

    query: str = Field(description="The query, as plain text.")
    ranking: Literal["lexical", "hybrid"] = Field(
        "lexical",
        description="hybrid: BM25 and nearness of meaning fused (the server has the semantic "
        "extra and the store has section vectors); lexical: BM25 alone.",
    )
    ranking_note: str | None = Field(None, description="Why search stayed lexical, if it did.")
    hits: list[Hit] = Field(description="Best first.")


class ErrorDetail(_Wire):
    """What went wrong, in one line, and which input caused it."""

    code: str = Field(description="Machine-readable kind, e.g. validation, blocked, not-found.")
    message: str = Field(description="One line naming the input and the reason.")
    field: str | None = Field(None, description="The request field at fault, when one is.")


class ErrorBody(_Wire):
    """Every error answer: ``{"error": {"code", "message", "field"}}``."""

    error: ErrorDetail


class Health(_Wire):
    """Liveness answer."""

    status: str = Field(description="Always ok when the server answers.")
    version: str = Field(description="sitelore version.")


class JobProgress(_Wire):
    """How far a crawl job has got."""

    pages_crawled: int = Field(description="Pages requested so far.")
    pages_indexed: int = Field(description="Pages stored so far.")
    errors: int = Field(description="Pages failed so far.")
    max_pages: int = Field(description="The page budget applied to this crawl.")


def _job_links(base: str, job_id: str) -> dict[str, str]:
    return {"self": f"{base}/{job_id}", "events": f"{base}/{job_id}/events"}


class JobBrief(_Wire):
    """A crawl job in a list: what it is and how far it got (its result at ``links.self``)."""

    id: str = Field(description="Job id.")
    status: str = Field(description="running, done, failed, cancelled or interrupted.")
    seed: str = Field(description="The start URL.")
    created_at: datetime = Field(description="When the job was accepted (UTC).")
    finished_at: datetime | None = Field(description="When it ended (UTC); null while running.")
    progress: JobProgress = Field(description="Pages so far.")
    links: dict[str, str] = Field(description="URLs of this job and of its event stream.")


class JobList(_Wire):
    """The crawl jobs this server knows, newest first."""

    crawls: list[JobBrief] = Field(
        description="Running jobs and the latest finished ones (an earlier job, or one "
        "from before a restart, still answers at its own URL)."
    )


class JobOut(_Wire):
    """A crawl job: status, progress, and the crawl result once it has ended."""

    id: str = Field(description="Job id.")
    status: str = Field(
        description="running, done, failed, cancelled, or interrupted (by a server shutdown "
        "or restart)."
    )
    seed: str = Field(description="The start URL.")
    created_at: datetime = Field(description="When the job was accepted (UTC).")
    finished_at: datetime | None = Field(description="When it ended (UTC); null while running.")
    applied: CrawlOptions = Field(description="The options the crawl runs with, after clamping.")
    clamped: list[Clamped] = Field(
        description="Options held to this server's limits (caps lowered, delay raised)."
    )
    progress: JobProgress = Field(description="Pages so far.")
    result: CrawlResult | None = Field(
        description="The crawl summary once the job has ended (partial when cancelled)."
    )
    error: ErrorDetail | None = Field(
        description="Why the job failed or was interrupted, when it was."
    )
    links: dict[str, str] = Field(description="URLs of this job and of its event stream.")

    def to_record(self) -> JobRecord:
        """The record the store keeps of this job."""
        shown = {"applied", "clamped", "result"}
        detail = self.model_dump(mode="json", by_alias=True, include=shown)
        return JobRecord(
            id=self.id,
            seed=self.seed,
            status=self.status,
            created_at=self.created_at,
            finished_at=self.finished_at,
            pages_crawled=self.progress.pages_crawled,
            pages_indexed=self.progress.pages_indexed,
            errors=self.progress.errors,
            error_code=None if self.error is None else self.error.code,
            error_message=None if self.error is None else self.error.message,
            detail=detail,
        )

    @classmethod
    def from_record(cls, record: JobRecord, *, base: str) -> JobOut:
        """Shape a stored record; one still ``running`` was cut by a restart: interrupted."""
        status, code, message = record.status, record.error_code, record.error_message
        if status == "running":
            status, code = "interrupted", "interrupted"
            message = "the server stopped before the job ended (it was not shut down cleanly)"
        applied = CrawlOptions.model_validate(record.detail["applied"])
        return cls.shape(
            record,
            status=status,
            applied=applied,
            clamped=record.detail.get("clamped", []),
            progress=JobProgress.shape(record, max_pages=applied.max_pages),
            result=record.detail.get("result"),
            error=None if code is None else ErrorDetail(code=code, message=message or code),
            links=_job_links(base, record.id),
        )

    @classmethod
    def from_job(
        cls,
        job: Job,
        *,
        base: str,
        error: ErrorDetail | None = None,
        requested: CrawlOptions | None = None,
    ) -> JobOut:
        """Shape a job; ``base`` is the job collection path, ``error`` why it failed.

        ``requested`` is what the caller asked, when the server changed it before
        starting the job (default: the options the job was started with).
        """
        pages = job.pages
        summary = job.summary
        asked = requested if requested is not None else job.requested
        return cls.shape(
            job,
            status=str(job.status),
            clamped=clamped_fields(asked, job.applied),
            progress=JobProgress(
                pages_crawled=len(pages),
                pages_indexed=sum(1 for p in pages if p.indexed),
                errors=sum(1 for p in pages if p.error is not None),
                max_pages=job.applied.max_pages,
            ),
            result=None if summary is None else CrawlResult.from_summary(summary, asked),
            error=error,
            links=_job_links(base, job.id),
        )

    def brief(self) -> JobBrief:
        """This job as a list shows it."""
        return JobBrief.model_validate(self.model_dump(include=set(JobBrief.model_fields)))
